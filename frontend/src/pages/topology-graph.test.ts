import { describe, expect, it } from 'vitest';
import { buildTopology, COLUMN_X, type TopologyGraph } from './topology-graph';

const graph: TopologyGraph = {
  brokers: [{ id: 1, name: 'default', local: true }],
  groups: [
    { id: 10, brokerId: 1, name: 'default', state: 'running', host: 'eg1.example' },
    { id: 11, brokerId: 1, name: 'empty', state: 'stopped', host: null },
  ],
  flows: [
    { deploymentId: 100, flowId: 5, flow: 'Orders', version: 2, groupId: 10, status: 'running', reads: ['ORDERS.IN'], writes: ['ORDERS.OUT'] },
    { deploymentId: 101, flowId: 6, flow: 'Billing', version: 1, groupId: 10, status: 'stopped', reads: ['ORDERS.OUT'], writes: [] },
  ],
  queues: [
    { name: 'ORDERS.IN', readBy: [100], writtenBy: [] },
    { name: 'ORDERS.OUT', readBy: [101], writtenBy: [100] },
  ],
};

describe('buildTopology', () => {
  const { nodes, edges } = buildTopology(graph);
  const node = (id: string) => nodes.find((n) => n.id === id);

  it('draws one node per broker, group, deployed flow and queue, each in its column', () => {
    expect(nodes.map((n) => n.id).sort()).toEqual(
      ['broker:1', 'flow:100', 'flow:101', 'group:10', 'group:11', 'queue:ORDERS.IN', 'queue:ORDERS.OUT'].sort(),
    );
    expect(node('broker:1')?.position.x).toBe(COLUMN_X.broker);
    expect(node('group:11')?.position.x).toBe(COLUMN_X.group);
    expect(node('flow:100')?.data).toEqual({ name: 'Orders', flowId: 5, version: 2, status: 'running' });
    expect(node('queue:ORDERS.OUT')?.position.x).toBe(COLUMN_X.queue);
    expect(node('group:10')?.data).toEqual({ name: 'default', state: 'running', host: 'eg1.example' });
    expect(node('group:11')?.data).toEqual({ name: 'empty', state: 'stopped', host: null });
  });

  it('links broker to group to flow, and each flow to the queues it reads and writes', () => {
    const pairs = edges.map((e) => `${e.source}>${e.target}:${e.label ?? ''}`).sort();
    expect(pairs).toEqual(
      [
        'broker:1>group:10:',
        'broker:1>group:11:',
        'group:10>flow:100:',
        'group:10>flow:101:',
        'flow:100>queue:ORDERS.OUT:writes',
        'queue:ORDERS.IN>flow:100:reads',
        'queue:ORDERS.OUT>flow:101:reads',
      ].sort(),
    );
  });

  it('never puts two nodes of a column on one spot', () => {
    for (const x of Object.values(COLUMN_X)) {
      const ys = nodes.filter((n) => n.position.x === x).map((n) => n.position.y);
      expect(new Set(ys).size).toBe(ys.length);
    }
  });

  it('draws an empty topology as nothing', () => {
    expect(buildTopology({ brokers: [], groups: [], flows: [], queues: [] })).toEqual({ nodes: [], edges: [] });
  });
});
