/**
 * The flow on the canvas and the server: open it (from the address, the toolbar, a version, a
 * Subflow node), save it with a comment, and remember where it was last deployed for the live
 * counts. The address follows the open flow (#/designer/<id>) so a reload reopens it.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiProblem, problemText, unwrap } from '../api/client';
import { useFitView } from './canvas-view';
import { parseDocument, problemsFromPointers, type FlowCanvasNode, type Problem } from './document';
import { useSpecs } from './specs-context';
import { useDesigner, useDesignerStore } from './store';

export interface Deployed {
  broker: string;
  group: string;
  flow: string;
}

export interface FlowDocumentActions {
  /** Open a saved flow at its current version. */
  open: (id: number) => Promise<void>;
  /** Start an empty flow. */
  openNew: () => void;
  /** Open an old version of the open flow; saving it makes it the newest. True when it opened. */
  openVersion: (version: number) => Promise<boolean>;
  /** Open the flow a Subflow node uses: a saved flow by name, or its embedded document. */
  openSubflow: (node: FlowCanvasNode) => Promise<void>;
  save: () => void;
  saving: boolean;
  /** The comment the next save records. */
  comment: string;
  setComment: (text: string) => void;
  /** Record a deployment of the open flow: the live counts follow the flow it runs as. */
  onDeployed: (d: Deployed) => void;
  /** The running flow whose counts the canvas shows; null for a new or imported flow. */
  liveFlow: string | null;
}

export function useFlowDocument({
  flowId,
  onProblems,
  onNotice,
}: {
  /** The flow the address names (null: none). */
  flowId: number | null;
  onProblems: (problems: Problem[]) => void;
  onNotice: (text: string | null) => void;
}): FlowDocumentActions {
  const specs = useSpecs();
  const store = useDesignerStore();
  const queryClient = useQueryClient();
  const { fitSoon } = useFitView();
  const [comment, setComment] = useState('');
  const [deployed, setDeployed] = useState<Deployed | null>(null);

  const fetchFlow = useCallback(
    (id: number) =>
      queryClient.fetchQuery({
        queryKey: ['flow', id],
        queryFn: () => unwrap(api.GET('/api/flows/{flow_id}', { params: { path: { flow_id: id } } })),
      }),
    [queryClient],
  );

  // The flow the address names, when the page opens or the address changes.
  useEffect(() => {
    if (flowId === null) return;
    let cancelled = false;
    fetchFlow(flowId)
      .then((flow) => {
        if (cancelled) return;
        store.getState().load(parseDocument(flow.document), flow.id, flow.currentVersion);
        fitSoon(false);
      })
      .catch((err) => onProblems([{ node: null, property: null, message: problemText(err) }]));
    return () => {
      cancelled = true;
    };
  }, [flowId, fetchFlow, store, fitSoon, onProblems]);

  // The address follows the open flow.
  const openFlowId = useDesigner((s) => s.meta.flowId);
  const shownFlowId = useRef(openFlowId);
  useEffect(() => {
    if (shownFlowId.current === openFlowId) return;
    shownFlowId.current = openFlowId;
    const hash = openFlowId === null ? '#/designer' : `#/designer/${openFlowId}`;
    // replaceState, not a new hash: the page keeps this designer (and its undo history) as it is
    if (window.location.hash !== hash) window.history.replaceState(window.history.state, '', hash);
  }, [openFlowId]);

  const open = useCallback(
    async (id: number) => {
      try {
        const flow = await fetchFlow(id);
        store.getState().load(parseDocument(flow.document), flow.id, flow.currentVersion);
        onProblems([]);
        fitSoon();
      } catch (err) {
        onProblems([{ node: null, property: null, message: `cannot open flow ${id}: ${problemText(err)}` }]);
      }
    },
    [fetchFlow, store, onProblems, fitSoon],
  );

  const openNew = useCallback(() => store.getState().load({ name: 'NewFlow', nodes: [], connections: [] }, null), [store]);

  const openVersion = useCallback(
    async (version: number) => {
      const id = store.getState().meta.flowId;
      if (id === null) return false;
      try {
        const v = await unwrap(api.GET('/api/flows/{flow_id}/versions/{number}', { params: { path: { flow_id: id, number: version } } }));
        const current = queryClient.getQueryData<{ currentVersion: number }>(['flow', id]);
        // Saving an old version makes it the newest; the save must name the current version.
        store.getState().load(parseDocument(v.document), id, current?.currentVersion ?? version);
        return true;
      } catch (err) {
        onProblems([{ node: null, property: null, message: problemText(err) }]);
        return false;
      }
    },
    [store, queryClient, onProblems],
  );

  const openSubflow = useCallback(
    async (node: FlowCanvasNode) => {
      if (!specs[node.data.type]?.dynamicTerminals) return;
      const flow = node.data.properties.flow as { name?: string; nodes?: unknown } | undefined;
      if (!flow) return;
      if (Array.isArray(flow.nodes)) {
        if (store.getState().dirty && !window.confirm('Discard unsaved changes and open the embedded subflow?')) return;
        store.getState().load(parseDocument(flow), null);
        return;
      }
      try {
        const all = await queryClient.fetchQuery({ queryKey: ['flows'], queryFn: () => unwrap(api.GET('/api/flows')) });
        const target = all.find((f) => f.name === flow.name);
        if (!target) throw new Error(`no saved flow named ${flow.name}`);
        if (store.getState().dirty && !window.confirm(`Discard unsaved changes and open ${target.name}?`)) return;
        window.location.hash = `#/designer/${target.id}`;
      } catch (err) {
        onProblems([{ node: node.id, property: 'flow', message: `cannot open the subflow: ${problemText(err)}` }]);
      }
    },
    [specs, store, queryClient, onProblems],
  );

  const saving = useMutation({
    mutationFn: async () => {
      const { meta, document } = store.getState();
      const doc = document();
      const query = { comment: comment.trim() };
      if (meta.flowId === null) {
        const { version: _drop, ...fresh } = doc;
        void _drop;
        return unwrap(api.POST('/api/flows', { body: fresh, params: { query } }));
      }
      return unwrap(
        api.PUT('/api/flows/{flow_id}', {
          params: { path: { flow_id: meta.flowId }, query },
          body: { ...doc, version: meta.version },
        }),
      );
    },
    onSuccess: (flow) => {
      store.getState().markSaved(flow.id, flow.currentVersion);
      onProblems([]);
      setComment('');
      onNotice(`Saved ${flow.name} version ${flow.currentVersion}`);
      void queryClient.invalidateQueries({ queryKey: ['flows'] });
      void queryClient.invalidateQueries({ queryKey: ['flow', flow.id] });
    },
    onError: (err) => {
      onNotice(null);
      const doc = store.getState().document();
      if (err instanceof ApiProblem && Array.isArray(err.detail) && err.detail.length && 'pointer' in (err.detail[0] as object))
        onProblems(problemsFromPointers(doc, err.detail as { pointer: string; message: string }[]));
      else onProblems([{ node: null, property: null, message: `save refused: ${problemText(err)}` }]);
    },
  });
  const { mutate } = saving;
  const save = useCallback(() => mutate(), [mutate]);

  const flowName = useDesigner((s) => s.meta.name);
  const ownCounts = useDesigner((s) => s.meta.flowId !== null && !s.meta.imported);

  return {
    open,
    openNew,
    openVersion,
    openSubflow,
    save,
    saving: saving.isPending,
    comment,
    setComment,
    onDeployed: setDeployed,
    liveFlow: ownCounts ? (deployed?.flow ?? flowName) : null,
  };
}
