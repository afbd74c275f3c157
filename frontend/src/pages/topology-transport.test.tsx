import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { useAuth, type Role } from '../auth';
import { Topology } from './Topology';

const PERMISSIONS: Record<Role, string[]> = {
  viewer: ['read'],
  developer: ['read', 'flows.edit'],
  operator: ['read', 'flows.edit', 'deploy', 'topology.manage', 'queues.write'],
  admin: ['read', 'flows.edit', 'deploy', 'topology.manage', 'queues.write', 'users.manage'],
};

afterEach(() => {
  cleanup();
  useAuth.getState().logout();
});

function topologyAs(role: Role, qmUrl: string) {
  useAuth.getState().login('token', role, role, PERMISSIONS[role]);
  const client = new QueryClient({ defaultOptions: { queries: { retry: false, staleTime: Infinity } } });
  client.setQueryData(
    ['brokers'],
    [
      {
        id: 1,
        name: 'scaled',
        description: '',
        qmUrl,
        createdAt: '2026-01-01T00:00:00Z',
        updatedAt: '2026-01-01T00:00:00Z',
        local: false,
        groups: [],
      },
    ],
  );
  render(
    <QueryClientProvider client={client}>
      <Topology />
    </QueryClientProvider>,
  );
}

describe("a broker's transport on the topology page", () => {
  it('shows the transport URL, or the embedded queue manager when there is none', () => {
    topologyAs('viewer', 'amqp://guest@rabbit:5672/flows');
    expect(screen.getByLabelText('Transport of scaled').textContent).toContain('amqp://guest@rabbit:5672/flows');
    expect(screen.queryByRole('button', { name: 'Edit' })).toBeNull();
    cleanup();
    topologyAs('viewer', '');
    expect(screen.getByLabelText('Transport of scaled').textContent).toContain('the embedded queue manager');
  });

  it('lets an operator edit it, starting from the current URL', () => {
    topologyAs('operator', 'amqp://guest@rabbit:5672/flows');
    fireEvent.click(screen.getByRole('button', { name: 'Edit' }));
    const input = screen.getByLabelText('Transport URL') as HTMLInputElement;
    expect(input.value).toBe('amqp://guest@rabbit:5672/flows');
    expect(screen.getByRole('button', { name: 'Save' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByLabelText('Transport URL')).toBeNull();
    expect(screen.getByLabelText('Transport of scaled')).toBeTruthy();
  });
});
