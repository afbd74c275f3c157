/** The canvas: React Flow over the store's nodes and connections, refusing connections the specs forbid. */
import { Background, Controls, MiniMap, ReactFlow, useReactFlow, type Connection, type Edge, type FinalConnectionState } from '@xyflow/react';
import { useCallback, useState, type DragEvent } from 'react';
import { fitViewOptions } from './canvas-view';
import { connectionProblem, type FlowCanvasNode } from './document';
import { FlowNode } from './FlowNode';
import { DRAG_TYPE } from './Palette';
import { useSpecs } from './specs-context';
import { useDesigner, useDesignerStore } from './store';

// Module scope: a new object each render would make React Flow rebuild every node.
const nodeTypes = { flowNode: FlowNode };
const defaultEdgeOptions = { interactionWidth: 16 };
const deleteKeys = ['Delete', 'Backspace'];
const multiSelectionKeys = ['Shift', 'Meta', 'Control'];

export function Canvas({ readOnly, onOpenSubflow }: { readOnly: boolean; onOpenSubflow: (node: FlowCanvasNode) => void }) {
  const specs = useSpecs();
  const store = useDesignerStore();
  const nodes = useDesigner((s) => s.nodes);
  const edges = useDesigner((s) => s.edges);
  const onNodesChange = useDesigner((s) => s.onNodesChange);
  const onEdgesChange = useDesigner((s) => s.onEdgesChange);
  const connect = useDesigner((s) => s.connect);
  const addNode = useDesigner((s) => s.addNode);
  const focus = useDesigner((s) => s.focus);
  const checkpoint = useDesigner((s) => s.checkpoint);
  const { screenToFlowPosition } = useReactFlow();
  const [refusal, setRefusal] = useState<string | null>(null);

  /** Why the specs refuse the connection `c` between the nodes as they are now, or null. */
  const refusalOf = useCallback(
    (c: Connection | Edge) => {
      const { nodes: now, edges: wired } = store.getState();
      return connectionProblem(specs, now, wired, c);
    },
    [specs, store],
  );

  const isValidConnection = useCallback((c: Connection | Edge) => refusalOf(c) === null, [refusalOf]);

  const onConnect = useCallback(
    (c: Connection) => {
      const problem = refusalOf(c);
      setRefusal(problem);
      if (!problem) connect(c);
    },
    [refusalOf, connect],
  );

  /** A drag that ended on a terminal the connection may not reach: say why. */
  const onConnectEnd = useCallback(
    (_event: MouseEvent | TouchEvent, state: FinalConnectionState) => {
      if (!state.toHandle || state.isValid || !state.fromHandle) return;
      const fromSource = state.fromHandle.type === 'source';
      const from = fromSource ? state.fromHandle : state.toHandle;
      const to = fromSource ? state.toHandle : state.fromHandle;
      setRefusal(
        refusalOf({ source: from.nodeId, sourceHandle: from.id ?? null, target: to.nodeId, targetHandle: to.id ?? null }) ??
          'this connection is not allowed',
      );
    },
    [refusalOf],
  );

  const onDrop = useCallback(
    (event: DragEvent) => {
      event.preventDefault();
      const spec = specs[event.dataTransfer.getData(DRAG_TYPE)];
      if (!spec || readOnly) return;
      addNode(spec, screenToFlowPosition({ x: event.clientX, y: event.clientY }));
    },
    [specs, addNode, screenToFlowPosition, readOnly],
  );

  return (
    <div className="canvas" onDragOver={(e) => e.preventDefault()} onDrop={onDrop} data-testid="canvas">
      <ReactFlow<FlowCanvasNode>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        defaultEdgeOptions={defaultEdgeOptions}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onConnectEnd={onConnectEnd}
        isValidConnection={isValidConnection}
        onNodeClick={(_e, node) => focus(node.id)}
        onNodeDoubleClick={(_e, node) => onOpenSubflow(node)}
        onPaneClick={() => focus(null)}
        onNodeDragStart={() => checkpoint()}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        edgesFocusable={!readOnly}
        deleteKeyCode={readOnly ? null : deleteKeys}
        multiSelectionKeyCode={multiSelectionKeys}
        selectionOnDrag={false}
        fitViewOptions={fitViewOptions}
        minZoom={0.1}
        maxZoom={2}
        onlyRenderVisibleElements={nodes.length > 150}
      >
        <Background gap={16} />
        <MiniMap pannable zoomable ariaLabel="Minimap" />
        <Controls showInteractive={false} />
      </ReactFlow>
      {refusal && (
        <div className="refusal" role="status">
          Connection refused: {refusal}
          <button type="button" aria-label="Dismiss" onClick={() => setRefusal(null)}>
            ×
          </button>
        </div>
      )}
    </div>
  );
}
