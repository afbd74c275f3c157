import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { connectChoices, ConnectDialog } from './ConnectDialog';
import { toCanvas } from './document';
import { SPECS } from './fixtures';

afterEach(cleanup);

const { nodes, edges } = toCanvas({
  name: 'K',
  nodes: [
    { id: 'in1', type: 'MQInput', name: 'IN', properties: { queueName: 'A' } },
    { id: 'c1', type: 'Compute', name: 'C', properties: { esql: 'x' } },
    { id: 'in2', type: 'MQInput', name: 'IN2', properties: { queueName: 'B' } },
    { id: 'out1', type: 'MQOutput', name: 'OUT', properties: { queueName: 'Z' } },
  ],
  connections: [{ from: { node: 'in1', terminal: 'out' }, to: { node: 'c1', terminal: 'in' } }],
});

describe('connecting from the keyboard', () => {
  it('offers the spec terminals of the node and only nodes that have an input', () => {
    const choices = connectChoices(SPECS, nodes, 'in1');
    expect(choices.outputs.map((t) => t.name)).toEqual(SPECS.MQInput.outputs.map((t) => t.name));
    expect(choices.targets.map((t) => t.node.id)).toEqual(['c1', 'out1']);
    expect(connectChoices(SPECS, nodes, 'out1').outputs.map((t) => t.name)).toEqual(['out', 'failure']);
  });

  it('connects the chosen terminals and refuses what a drag would be refused', () => {
    const made: unknown[] = [];
    let closed = false;
    render(
      <ConnectDialog
        specs={SPECS}
        nodes={nodes}
        edges={edges}
        sourceId="in1"
        onConnect={(c) => made.push(c)}
        onClose={() => (closed = true)}
      />,
    );
    const connect = screen.getByRole('button', { name: 'Connect' }) as HTMLButtonElement;
    // in1.out → c1.in exists already: the same check as the canvas says so
    expect(screen.getByRole('alert').textContent).toBe('these terminals are already connected');
    expect(connect.disabled).toBe(true);
    fireEvent.change(screen.getByLabelText('From terminal'), { target: { value: 'catch' } });
    expect(screen.queryByRole('alert')).toBeNull();
    fireEvent.change(screen.getByLabelText('To node'), { target: { value: 'out1' } });
    expect((screen.getByLabelText('To terminal') as HTMLSelectElement).value).toBe('in');
    fireEvent.click(connect);
    expect(made).toEqual([{ source: 'in1', sourceHandle: 'catch', target: 'out1', targetHandle: 'in' }]);
    expect(closed).toBe(true);
  });
});
