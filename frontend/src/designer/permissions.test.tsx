import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useAuth, type Role } from '../auth';
import { Topology } from '../pages/Topology';
import Designer from './Designer';
import { SPECS } from './fixtures';
import { SpecsContext } from './specs-context';

// What the server's permission table grants each role (GET /api/auth/me); the pages follow it.
const PERMISSIONS: Record<Role, string[]> = {
  viewer: ['read'],
  developer: ['read', 'flows.edit'],
  operator: ['read', 'flows.edit', 'deploy', 'topology.manage', 'queues.write'],
  admin: ['read', 'flows.edit', 'deploy', 'topology.manage', 'queues.write', 'users.manage'],
};

beforeAll(() => {
  // jsdom has no layout: React Flow only needs these to exist.
  globalThis.ResizeObserver ??= class {
    observe() {}
    unobserve() {}
    disconnect() {}
  } as unknown as typeof ResizeObserver;
});
afterEach(() => {
  cleanup();
  useAuth.getState().logout();
});

function designerAs(role: Role) {
  useAuth.getState().login('token', role, role, PERMISSIONS[role]);
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <SpecsContext.Provider value={SPECS}>
        <Designer />
      </SpecsContext.Provider>
    </QueryClientProvider>,
  );
  return within(screen.getByRole('toolbar', { name: 'Designer actions' }));
}

describe('designer actions follow the permissions the server grants', () => {
  it('a developer edits and saves but is not offered Deploy', () => {
    const toolbar = designerAs('developer');
    expect(toolbar.getByRole('button', { name: 'Save' })).toBeTruthy();
    expect(toolbar.getByLabelText('Version comment')).toBeTruthy();
    expect(toolbar.getByRole('button', { name: 'Import ACE…' })).toBeTruthy();
    expect(toolbar.queryByRole('button', { name: 'Deploy' })).toBeNull();
    expect((screen.getAllByRole('button', { name: /^Add .* node$/ })[0] as HTMLButtonElement).disabled).toBe(false);
  });

  it('an operator is offered Deploy', () => {
    const toolbar = designerAs('operator');
    expect(toolbar.getByRole('button', { name: 'Deploy' })).toBeTruthy();
  });

  it('a viewer only looks', () => {
    const toolbar = designerAs('viewer');
    for (const name of ['Save', 'Deploy', 'Undo', 'Import', 'Import ACE…', 'Make subflow', 'Connect…'])
      expect(toolbar.queryByRole('button', { name })).toBeNull();
    expect((screen.getAllByRole('button', { name: /^Add .* node$/ })[0] as HTMLButtonElement).disabled).toBe(true);
    expect(toolbar.getByRole('button', { name: 'Export' })).toBeTruthy();
  });

  it('group and flow actions need topology.manage and deploy', () => {
    const group = {
      id: 2,
      brokerId: 1,
      name: 'orders',
      description: '',
      createdAt: '2026-01-01T00:00:00Z',
      desiredState: 'running' as const,
      state: 'running' as const,
      pid: 4242,
      host: 'eg1.example',
      detail: '',
      restarts: 0,
      since: null,
    };
    const broker = {
      id: 1,
      name: 'default',
      description: '',
      qmUrl: '',
      createdAt: '2026-01-01T00:00:00Z',
      updatedAt: '2026-01-01T00:00:00Z',
      local: true,
      groups: [group],
    };
    const topologyAs = (role: Role) => {
      useAuth.getState().login('token', role, role, PERMISSIONS[role]);
      const client = new QueryClient({ defaultOptions: { queries: { retry: false, staleTime: Infinity } } });
      client.setQueryData(['brokers'], [broker]);
      render(
        <QueryClientProvider client={client}>
          <Topology />
        </QueryClientProvider>,
      );
      return within(screen.getByTestId('group-orders'));
    };
    let row = topologyAs('developer');
    expect(row.getByTestId('group-state-orders').textContent).toBe('running');
    expect(row.getByText(/pid 4242/)).toBeTruthy();
    expect(row.getByTestId('group-host-orders').textContent).toBe(' · on eg1.example');
    expect(row.queryByRole('button', { name: 'Stop group' })).toBeNull();
    expect(screen.queryByLabelText('New execution group')).toBeNull();
    cleanup();
    row = topologyAs('operator');
    expect(row.getByRole('button', { name: 'Stop group' })).toBeTruthy();
    expect(screen.getByLabelText('New execution group')).toBeTruthy();
  });
});
