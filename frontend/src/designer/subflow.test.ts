import { describe, expect, it } from 'vitest';
import { connectionProblem, terminalsOf, toCanvas } from './document';
import { SPECS } from './fixtures';
import { subflowTypes } from './spec';
import { extractSubflow } from './subflow';

const TYPES = subflowTypes(SPECS)!;

const canvas = toCanvas({
  name: 'Main',
  nodes: [
    { id: 'in1', type: 'MQInput', properties: { queueName: 'A' } },
    { id: 'c1', type: 'Compute', properties: { esql: 'x' } },
    { id: 'c2', type: 'Compute', properties: { esql: 'y' } },
    { id: 'out1', type: 'MQOutput', properties: { queueName: 'B' } },
  ],
  connections: [
    { from: { node: 'in1', terminal: 'out' }, to: { node: 'c1', terminal: 'in' } },
    { from: { node: 'c1', terminal: 'out' }, to: { node: 'c2', terminal: 'in' } },
    { from: { node: 'c2', terminal: 'out' }, to: { node: 'out1', terminal: 'in' } },
    { from: { node: 'c2', terminal: 'failure' }, to: { node: 'out1', terminal: 'in' } },
  ],
});

describe('making a subflow', () => {
  it('moves the selection into a flow with Input and Output nodes and rewires the outside', () => {
    const x = extractSubflow(TYPES, canvas.nodes, canvas.edges, new Set(['c1', 'c2']), 'Enrich', 3);
    expect(x.subflow.nodes.map((n) => `${n.id}:${n.type}:${String(n.properties?.terminalName ?? '')}`)).toEqual([
      'c1:Compute:',
      'c2:Compute:',
      'input1:Input:in',
      'output1:Output:out',
      'output2:Output:out2',
    ]);
    expect(x.subflow.connections).toContainEqual({ from: { node: 'c1', terminal: 'out' }, to: { node: 'c2', terminal: 'in' } });
    expect(x.subflow.connections).toContainEqual({ from: { node: 'input1', terminal: 'out' }, to: { node: 'c1', terminal: 'in' } });
    expect(x.subflow.connections).toContainEqual({ from: { node: 'c2', terminal: 'failure' }, to: { node: 'output2', terminal: 'in' } });
    expect(x.nodes.map((n) => n.id)).toEqual(['in1', 'out1', 'subflow1']);
    expect(x.edges.map((e) => e.id).sort()).toEqual(['in1.out->subflow1.in', 'subflow1.out->out1.in', 'subflow1.out2->out1.in']);
    const node = x.nodes[2];
    expect(node.data.properties.flow).toEqual({ name: 'Enrich', version: 3 });
    expect(terminalsOf(SPECS, node.data).outputs.map((t) => t.name)).toEqual(['out', 'out2']);
    // The rewired connections are accepted by the same check the canvas applies while dragging.
    for (const e of x.edges) expect(connectionProblem(SPECS, x.nodes, [], e)).toBeNull();
  });

  it('reads an embedded subflow document for the terminals', () => {
    const data = {
      type: 'Subflow',
      name: 'S',
      properties: {
        flow: {
          name: 'S',
          nodes: [
            { id: 'a', type: 'Input', properties: { terminalName: 'orders' } },
            { id: 'b', type: 'Output' },
          ],
          connections: [],
        },
      },
    };
    const t = terminalsOf(SPECS, data);
    expect(t.inputs.map((i) => i.name)).toEqual(['orders']);
    expect(t.outputs.map((o) => o.name)).toEqual(['out']);
  });

  it('refuses an empty selection', () => {
    expect(() => extractSubflow(TYPES, canvas.nodes, canvas.edges, new Set(), 'X')).toThrow('select the nodes');
  });
});
