/**
 * The topology drawn as a graph: brokers, their execution groups and the flows deployed to each,
 * in columns left to right, with the queues each flow reads (queue → flow) and writes (flow → queue)
 * in the rightmost column.
 */
import { MarkerType, type Edge, type Node } from '@xyflow/react';
import type { Schemas } from '../api/client';

export type TopologyGraph = Schemas['TopologyGraphOut'];

export type BrokerNode = Node<{ name: string; local: boolean }, 'broker'>;
export type GroupNode = Node<{ name: string; state: string; host: string | null }, 'egroup'>;
export type DeployedFlowNode = Node<{ name: string; flowId: number; version: number; status: string }, 'flow'>;
export type QueueNode = Node<{ name: string; reads: number; writes: number }, 'queue'>;
export type TopologyNode = BrokerNode | GroupNode | DeployedFlowNode | QueueNode;

export const COLUMN_X = { broker: 0, group: 240, flow: 500, queue: 800 } as const;
export const ROW_HEIGHT = 80;

const arrow = { type: MarkerType.ArrowClosed, width: 16, height: 16 };

/** Nodes and edges of the graph, each column stacked top-down; a parent sits at the middle of its children. */
export function buildTopology(graph: TopologyGraph): { nodes: TopologyNode[]; edges: Edge[] } {
  const nodes: TopologyNode[] = [];
  const edges: Edge[] = [];
  const flowY = new Map<number, number>();
  let row = 0;
  for (const broker of graph.brokers) {
    const groupYs: number[] = [];
    for (const group of graph.groups.filter((g) => g.brokerId === broker.id)) {
      const ys: number[] = [];
      for (const flow of graph.flows.filter((f) => f.groupId === group.id)) {
        const y = row++ * ROW_HEIGHT;
        ys.push(y);
        flowY.set(flow.deploymentId, y);
        nodes.push({
          id: `flow:${flow.deploymentId}`,
          type: 'flow',
          position: { x: COLUMN_X.flow, y },
          data: { name: flow.flow, flowId: flow.flowId, version: flow.version, status: flow.status },
        });
        edges.push({ id: `group:${group.id}->flow:${flow.deploymentId}`, source: `group:${group.id}`, target: `flow:${flow.deploymentId}` });
      }
      if (!ys.length) ys.push(row++ * ROW_HEIGHT);
      const y = (ys[0] + ys[ys.length - 1]) / 2;
      groupYs.push(y);
      nodes.push({ id: `group:${group.id}`, type: 'egroup', position: { x: COLUMN_X.group, y }, data: { name: group.name, state: group.state, host: group.host ?? null } });
      edges.push({ id: `broker:${broker.id}->group:${group.id}`, source: `broker:${broker.id}`, target: `group:${group.id}` });
    }
    if (!groupYs.length) groupYs.push(row++ * ROW_HEIGHT);
    nodes.push({
      id: `broker:${broker.id}`,
      type: 'broker',
      position: { x: COLUMN_X.broker, y: (groupYs[0] + groupYs[groupYs.length - 1]) / 2 },
      data: { name: broker.name, local: broker.local },
    });
  }
  // Each queue near the flows that use it, in that order, never two on one row.
  const mean = (ids: number[]) => {
    const ys = ids.map((id) => flowY.get(id)).filter((y): y is number => y !== undefined);
    return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : 0;
  };
  const queues = [...graph.queues].map((q) => ({ q, want: mean([...q.readBy, ...q.writtenBy]) })).sort((a, b) => a.want - b.want);
  let next = -Infinity;
  for (const { q, want } of queues) {
    const y = Math.max(want, next);
    next = y + ROW_HEIGHT * 0.75;
    nodes.push({
      id: `queue:${q.name}`,
      type: 'queue',
      position: { x: COLUMN_X.queue, y },
      data: { name: q.name, reads: q.readBy.length, writes: q.writtenBy.length },
    });
    for (const d of q.writtenBy)
      edges.push({
        id: `flow:${d}->queue:${q.name}`,
        source: `flow:${d}`,
        sourceHandle: 'writes',
        target: `queue:${q.name}`,
        targetHandle: 'writes',
        label: 'writes',
        markerEnd: arrow,
        className: 'topo-writes',
      });
    for (const d of q.readBy)
      edges.push({
        id: `queue:${q.name}->flow:${d}`,
        source: `queue:${q.name}`,
        sourceHandle: 'reads',
        target: `flow:${d}`,
        targetHandle: 'reads',
        label: 'reads',
        markerEnd: arrow,
        animated: true,
        className: 'topo-reads',
      });
  }
  return { nodes, edges };
}
