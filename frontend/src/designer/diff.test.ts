import { describe, expect, it } from 'vitest';
import { diffFlows } from './diff';

describe('flow diff', () => {
  it('reports added, removed and changed nodes, properties and connections', () => {
    const left = {
      name: 'F',
      properties: { additionalInstances: 0 },
      nodes: [
        { id: 'a', type: 'MQInput', name: 'A', properties: { queueName: 'Q1' } },
        { id: 'b', type: 'Compute', name: 'B', properties: { esql: 'x' } },
      ],
      connections: [{ from: { node: 'a', terminal: 'out' }, to: { node: 'b', terminal: 'in' } }],
    };
    const right = {
      name: 'F',
      properties: { additionalInstances: 2 },
      nodes: [
        { id: 'a', type: 'MQInput', name: 'A2', properties: { queueName: 'Q2' } },
        { id: 'c', type: 'MQOutput', name: 'C', properties: { queueName: 'OUT' } },
      ],
      connections: [{ from: { node: 'a', terminal: 'out' }, to: { node: 'c', terminal: 'in' } }],
    };
    const d = diffFlows(left, right);
    expect(d.flowProperties).toEqual([{ name: 'additionalInstances', before: 0, after: 2 }]);
    expect(d.nodes).toEqual([
      {
        id: 'a',
        type: 'MQInput',
        status: 'changed',
        changes: [
          { name: '(name)', before: 'A', after: 'A2' },
          { name: 'queueName', before: 'Q1', after: 'Q2' },
        ],
      },
      { id: 'b', type: 'Compute', status: 'removed', changes: [] },
      { id: 'c', type: 'MQOutput', status: 'added', changes: [{ name: 'queueName', before: undefined, after: 'OUT' }] },
    ]);
    expect(d.connectionsAdded).toEqual(['a.out->c.in']);
    expect(d.connectionsRemoved).toEqual(['a.out->b.in']);
  });

  it('finds nothing between a version and itself', () => {
    const doc = { name: 'F', nodes: [{ id: 'a', type: 'T', properties: { x: [1, 2] } }], connections: [] };
    expect(diffFlows(doc, structuredClone(doc))).toEqual({
      nodes: [],
      connectionsAdded: [],
      connectionsRemoved: [],
      flowProperties: [],
    });
  });
});
