/** What the toolbar, the palette and the shortcuts do to the graph beyond one store action. */
import { useQueryClient } from '@tanstack/react-query';
import { useReactFlow } from '@xyflow/react';
import { useCallback, useMemo } from 'react';
import { api, problemText, unwrap } from '../api/client';
import { useFitView } from './canvas-view';
import type { DesignNode, FlowCanvasNode, Problem } from './document';
import { layoutPositions } from './layout';
import { subflowTypes, type NodeSpec } from './spec';
import { useSpecs } from './specs-context';
import { useDesignerStore } from './store';
import { extractSubflow } from './subflow';

/** The node a keyboard connection starts from: the focused one, else the only selected one. */
export function connectSource(focused: string | null, nodes: readonly (DesignNode & Pick<FlowCanvasNode, 'selected'>)[]): string | null {
  if (focused && nodes.some((n) => n.id === focused)) return focused;
  const selected = nodes.filter((n) => n.selected);
  return selected.length === 1 ? selected[0].id : null;
}

export function useCanvasCommands({
  report,
  onProblems,
}: {
  report: (message: string) => void;
  onProblems: (problems: Problem[]) => void;
}) {
  const specs = useSpecs();
  const store = useDesignerStore();
  const queryClient = useQueryClient();
  const { screenToFlowPosition } = useReactFlow();
  const { fitSoon } = useFitView();

  /** Add a node of `spec` in the middle of the visible canvas (the palette's keyboard path). */
  const addAtCentre = useCallback(
    (spec: NodeSpec) => {
      const canvas = document.querySelector('.canvas')?.getBoundingClientRect();
      const jitter = (store.getState().nodes.length % 5) * 24;
      const centre = canvas
        ? screenToFlowPosition({ x: canvas.left + canvas.width / 2 + jitter, y: canvas.top + canvas.height / 2 + jitter })
        : { x: 100 + jitter, y: 100 + jitter };
      store.getState().addNode(spec, centre);
    },
    [screenToFlowPosition, store],
  );

  /** Lay the flow out left to right (one undoable step); the toolbar's button fits it too. */
  const autoLayout = useCallback(
    async ({ fit }: { fit: boolean }) => {
      const { nodes, edges } = store.getState();
      const positions = await layoutPositions(nodes, edges);
      store.getState().applyPositions(positions);
      if (fit) fitSoon();
    },
    [store, fitSoon],
  );

  /** Save the selected nodes as a new subflow and put one Subflow node in their place. */
  const makeSubflow = useCallback(async () => {
    const { nodes, edges, meta, replaceGraph } = store.getState();
    const selected = new Set(nodes.filter((n) => n.selected).map((n) => n.id));
    if (!selected.size) {
      report('select the nodes to make the subflow from');
      return;
    }
    const types = subflowTypes(specs);
    if (!types) {
      report('the node types of this server offer no subflows');
      return;
    }
    const name = window.prompt('Name of the new subflow', `${meta.name}_Sub`)?.trim();
    if (!name) return;
    try {
      const draft = extractSubflow(types, nodes, edges, selected, name);
      const saved = await unwrap(api.POST('/api/flows', { body: draft.subflow, params: { query: { comment: `made from ${meta.name}` } } }));
      const done = extractSubflow(types, nodes, edges, selected, saved.name, saved.currentVersion);
      replaceGraph(done.nodes, done.edges);
      onProblems([]);
      void queryClient.invalidateQueries({ queryKey: ['flows'] });
    } catch (err) {
      report(`cannot make the subflow: ${problemText(err)}`);
    }
  }, [store, specs, report, onProblems, queryClient]);

  /** The node a connection made from the keyboard starts at, or null when none is chosen. */
  const connectFromSelection = useCallback((): string | null => {
    const { focused, nodes } = store.getState();
    return connectSource(focused, nodes);
  }, [store]);

  return useMemo(
    () => ({ addAtCentre, autoLayout, makeSubflow, connectFromSelection }),
    [addAtCentre, autoLayout, makeSubflow, connectFromSelection],
  );
}
