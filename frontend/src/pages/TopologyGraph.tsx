/** The topology drawn with React Flow: brokers → execution groups → deployed flows ⇄ queues. */
import { Background, Controls, Handle, Position, ReactFlow, type NodeProps } from '@xyflow/react';
import { memo, useMemo } from 'react';
import { buildTopology, type BrokerNode, type DeployedFlowNode, type GroupNode, type QueueNode, type TopologyGraph } from './topology-graph';

const BrokerBox = memo(function BrokerBox({ data }: NodeProps<BrokerNode>) {
  return (
    <div className="topo-node topo-broker" data-testid={`topo-broker-${data.name}`}>
      <small>broker</small>
      <strong>{data.name}</strong>
      {data.local && <small className="muted">this machine</small>}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const GroupBox = memo(function GroupBox({ data }: NodeProps<GroupNode>) {
  return (
    <div className="topo-node topo-group" data-testid={`topo-group-${data.name}`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <small>execution group</small>
      <strong>{data.name}</strong>
      <span className={`status status-${data.state}`}>{data.state}</span>
      {data.host && <small className="muted">on {data.host}</small>}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const FlowBox = memo(function FlowBox({ data }: NodeProps<DeployedFlowNode>) {
  return (
    <div className="topo-node topo-flow" data-testid={`topo-flow-${data.name}`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <small>flow v{data.version}</small>
      <a href={`#/designer/${data.flowId}`} className="nodrag">
        <strong>{data.name}</strong>
      </a>
      <span className={`status status-${data.status}`}>{data.status}</span>
      {/* reads arrive on the right from the queue column; writes leave on the right to it */}
      <Handle id="reads" type="target" position={Position.Right} isConnectable={false} style={{ top: '30%' }} />
      <Handle id="writes" type="source" position={Position.Right} isConnectable={false} style={{ top: '70%' }} />
    </div>
  );
});

const QueueBox = memo(function QueueBox({ data }: NodeProps<QueueNode>) {
  return (
    <div className="topo-node topo-queue" data-testid={`topo-queue-${data.name}`}>
      <Handle id="writes" type="target" position={Position.Left} isConnectable={false} />
      <Handle id="reads" type="source" position={Position.Left} isConnectable={false} />
      <small>queue</small>
      <a href={`#/queues`} className="nodrag">
        <strong>{data.name}</strong>
      </a>
    </div>
  );
});

// Module scope: a new object each render would make React Flow rebuild every node.
// (not `group`: React Flow styles that type as a container of other nodes)
const nodeTypes = { broker: BrokerBox, egroup: GroupBox, flow: FlowBox, queue: QueueBox };
const fitViewOptions = { padding: 0.15, maxZoom: 1 };

export function TopologyGraphView({ graph }: { graph: TopologyGraph }) {
  const { nodes, edges } = useMemo(() => buildTopology(graph), [graph]);
  const rows = Math.max(3, ...nodes.map((n) => n.position.y / 80 + 1));
  return (
    <div className="topology-graph" style={{ height: Math.min(640, 120 + rows * 80) }} data-testid="topology-graph">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        fitView
        fitViewOptions={fitViewOptions}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        minZoom={0.2}
        maxZoom={1.5}
        proOptions={{ hideAttribution: true }}
      >
        <Background gap={16} />
        <Controls showInteractive={false} />
      </ReactFlow>
      {!nodes.length && <p className="muted topology-empty">No brokers yet.</p>}
    </div>
  );
}
