/**
 * The problems panel fed by the canvas. It watches node ids, node data and connections only, so
 * dragging (which changes positions, not data) neither revalidates the flow nor re-renders it.
 */
import { useMemo } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { validateCanvas, type DesignNode, type Problem } from './document';
import { ProblemsPanel } from './ProblemsPanel';
import { listProblems } from './problems';
import { useSpecs } from './specs-context';
import { useDesigner } from './store';

/** The canvas's nodes as validation reads them: a new list only when an id or a node's data changes. */
export function useDesignNodes(): DesignNode[] {
  const ids = useDesigner(useShallow((s) => s.nodes.map((n) => n.id)));
  const data = useDesigner(useShallow((s) => s.nodes.map((n) => n.data)));
  return useMemo(() => ids.map((id, i) => ({ id, data: data[i] })), [ids, data]);
}

export function CanvasProblems({ reported, onFocus }: { reported: Problem[]; onFocus: (id: string) => void }) {
  const specs = useSpecs();
  const nodes = useDesignNodes();
  const edges = useDesigner((s) => s.edges);
  const problems = useMemo(
    () => listProblems(specs, nodes, edges, validateCanvas(specs, nodes, edges), reported),
    [specs, nodes, edges, reported],
  );
  return <ProblemsPanel problems={problems} onFocus={onFocus} />;
}
