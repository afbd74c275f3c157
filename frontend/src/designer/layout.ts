/** Auto-layout with elkjs (layered, left to right), loaded only when first asked for. */
import type { FlowCanvasEdge, FlowCanvasNode } from './document';

const NODE_WIDTH = 170;
const NODE_HEIGHT = 70;

export async function layoutPositions(
  nodes: FlowCanvasNode[],
  edges: FlowCanvasEdge[],
): Promise<Record<string, { x: number; y: number }>> {
  const { default: ELK } = await import('elkjs/lib/elk.bundled.js');
  const elk = new ELK();
  const graph = await elk.layout({
    id: 'flow',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.spacing.nodeNode': '40',
      'elk.layered.spacing.nodeNodeBetweenLayers': '80',
    },
    children: nodes.map((n) => ({
      id: n.id,
      width: n.measured?.width ?? NODE_WIDTH,
      height: n.measured?.height ?? NODE_HEIGHT,
    })),
    edges: edges.map((e) => ({ id: e.id, sources: [e.source], targets: [e.target] })),
  });
  const positions: Record<string, { x: number; y: number }> = {};
  for (const child of graph.children ?? []) positions[child.id] = { x: child.x ?? 0, y: child.y ?? 0 };
  return positions;
}
