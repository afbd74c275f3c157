/** Making a subflow from a selection: the selected nodes become a flow of their own, used as one node. */
import { edgeId, type FlowCanvasEdge, type FlowCanvasNode, type FlowDocument, type FlowNodeDoc } from './document';
import type { SubflowTypes } from './spec';

export interface Extraction {
  /** The new flow: the selected nodes, an Input per entry terminal and an Output per exit terminal. */
  subflow: FlowDocument;
  /** The canvas after the selection is replaced by one Subflow node. */
  nodes: FlowCanvasNode[];
  edges: FlowCanvasEdge[];
  subflowNodeId: string;
}

function unique(stem: string, taken: Set<string>): string {
  let i = 1;
  while (taken.has(`${stem}${i}`)) i += 1;
  taken.add(`${stem}${i}`);
  return `${stem}${i}`;
}

/**
 * The selection as a flow of its own, entered through the specs' subflow input type and left
 * through their output type, and the canvas with one node of the subflow type in its place.
 */
export function extractSubflow(
  types: SubflowTypes,
  nodes: FlowCanvasNode[],
  edges: FlowCanvasEdge[],
  selected: Set<string>,
  name: string,
  version = 1,
): Extraction {
  if (!selected.size) throw new Error('select the nodes to make the subflow from');
  const picked = nodes.filter((n) => selected.has(n.id));
  const inside = edges.filter((e) => selected.has(e.source) && selected.has(e.target));
  const entering = edges.filter((e) => !selected.has(e.source) && selected.has(e.target));
  const leaving = edges.filter((e) => selected.has(e.source) && !selected.has(e.target));
  const taken = new Set(nodes.map((n) => n.id));
  const minX = Math.min(...picked.map((n) => n.position.x));
  const minY = Math.min(...picked.map((n) => n.position.y));
  const maxX = Math.max(...picked.map((n) => n.position.x));

  // One entry terminal per distinct inner target, one exit per distinct inner source terminal.
  const entries = new Map<string, string>();
  const exits = new Map<string, string>();
  for (const e of entering) {
    const key = `${e.target}.${e.targetHandle ?? 'in'}`;
    if (!entries.has(key)) entries.set(key, entries.size ? `in${entries.size + 1}` : 'in');
  }
  for (const e of leaving) {
    const key = `${e.source}.${e.sourceHandle ?? 'out'}`;
    if (!exits.has(key)) exits.set(key, exits.size ? `out${exits.size + 1}` : 'out');
  }

  const docNodes: FlowNodeDoc[] = picked.map((n) => ({
    id: n.id,
    type: n.data.type,
    name: n.data.name,
    properties: n.data.properties,
    position: { x: Math.round(n.position.x - minX + 220), y: Math.round(n.position.y - minY + 40) },
    ...(n.data.ui ? { ui: n.data.ui } : {}),
  }));
  const connections = inside.map((e) => ({
    from: { node: e.source, terminal: e.sourceHandle ?? 'out' },
    to: { node: e.target, terminal: e.targetHandle ?? 'in' },
  }));
  const innerIds = new Set(picked.map((n) => n.id));
  let row = 0;
  for (const [key, terminal] of entries) {
    const [node, handle] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1)];
    const id = unique('input', innerIds);
    docNodes.push({
      id,
      type: types.input.type,
      name: `${types.input.label}_${terminal}`,
      properties: { [types.input.terminalProperty]: terminal },
      position: { x: 0, y: 40 + row++ * 100 },
    });
    connections.push({ from: { node: id, terminal: types.input.outputs[0]?.name ?? 'out' }, to: { node, terminal: handle } });
  }
  row = 0;
  for (const [key, terminal] of exits) {
    const [node, handle] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1)];
    const id = unique('output', innerIds);
    docNodes.push({
      id,
      type: types.output.type,
      name: `${types.output.label}_${terminal}`,
      properties: { [types.output.terminalProperty]: terminal },
      position: { x: Math.round(maxX - minX + 440), y: 40 + row++ * 100 },
    });
    connections.push({ from: { node, terminal: handle }, to: { node: id, terminal: types.output.inputs[0]?.name ?? 'in' } });
  }

  const subflowNodeId = unique('subflow', taken);
  const subflowNode: FlowCanvasNode = {
    id: subflowNodeId,
    type: 'flowNode',
    position: { x: minX, y: minY },
    selected: true,
    data: {
      type: types.node.type,
      name: name,
      properties: { flow: { name, version } },
      ui: { terminals: { inputs: [...entries.values()], outputs: [...exits.values()] } },
    },
  };
  const rewired: FlowCanvasEdge[] = [
    ...entering.map((e) => {
      const terminal = entries.get(`${e.target}.${e.targetHandle ?? 'in'}`) as string;
      return { ...e, target: subflowNodeId, targetHandle: terminal };
    }),
    ...leaving.map((e) => {
      const terminal = exits.get(`${e.source}.${e.sourceHandle ?? 'out'}`) as string;
      return { ...e, source: subflowNodeId, sourceHandle: terminal };
    }),
  ].map((e) => ({
    ...e,
    id: edgeId({
      from: { node: e.source, terminal: e.sourceHandle ?? 'out' },
      to: { node: e.target, terminal: e.targetHandle ?? 'in' },
    }),
  }));
  const seen = new Set<string>();
  const outsideEdges = edges.filter((e) => !selected.has(e.source) && !selected.has(e.target));
  return {
    subflow: { name, nodes: docNodes, connections },
    nodes: [...nodes.filter((n) => !selected.has(n.id)).map((n) => ({ ...n, selected: false })), subflowNode],
    edges: [...outsideEdges, ...rewired].filter((e) => (seen.has(e.id) ? false : (seen.add(e.id), true))),
    subflowNodeId,
  };
}
