/** The designer page: palette, canvas, property panel, problems, and the save/version/deploy toolbar. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection,
  type Edge,
} from '@xyflow/react';
import { useShallow } from 'zustand/react/shallow';
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import { api, ApiProblem, problemText, unwrap, type Schemas } from '../api/client';
import { stats } from '../api/runtime';
import { useCan } from '../auth';
import { ConnectDialog } from './ConnectDialog';
import { DebugPanel } from '../debugger/DebugPanel';
import { DeployDialog } from './DeployDialog';
import {
  connectionProblem,
  parseDocument,
  problemsFromPointers,
  validateCanvas,
  type FlowCanvasNode,
  type FlowDocument,
  type Problem,
} from './document';
import { FlowNode } from './FlowNode';
import { layoutPositions } from './layout';
import { DRAG_TYPE, Palette } from './Palette';
import { PropertyPanel } from './PropertyPanel';
import { ProblemsPanel } from './ProblemsPanel';
import { listProblems } from './problems';
import { subflowTypes, type NodeSpec, type SpecIndex } from './spec';
import { useSpecs } from './specs-context';
import { createDesignerStore, DesignerContext, useDesigner, useDesignerStore } from './store';
import { extractSubflow } from './subflow';
import { collectBundle, readBundle, type BundledSubflow, type SubflowRef } from './bundle';
import { AceImportDialog } from './AceImportDialog';
import { ImportDialog } from './ImportDialog';
import { applyImport, findConflicts, restImportApi, type Choice, type NameConflict } from './import-flow';
import { VersionsDialog } from './VersionsDialog';
import { ExerciserPanel } from '../exerciser/ExerciserPanel';

// Module scope: a new object each render would make React Flow rebuild every node.
const nodeTypes = { flowNode: FlowNode };
const defaultEdgeOptions = { interactionWidth: 16 };
const fitViewOptions = { maxZoom: 1, padding: 0.2 };

/** The node a keyboard connection starts from: the focused one, else the only selected one. */
function connectSource(focused: string | null, nodes: FlowCanvasNode[]): string | null {
  if (focused && nodes.some((n) => n.id === focused)) return focused;
  const selected = nodes.filter((n) => n.selected);
  return selected.length === 1 ? selected[0].id : null;
}

/** A saved subflow's document for an export: by name, at the version a reference pins or the current one. */
async function fetchSubflow(ref: SubflowRef): Promise<{ version: number; document: FlowDocument }> {
  const status = await unwrap(api.GET('/api/flows/names', { params: { query: { name: ref.name } } }));
  if (!status.taken || status.flowId === null) throw new Error(`no saved flow named ${ref.name}`);
  const path = { flow_id: status.flowId };
  if (ref.version === undefined) {
    const flow = await unwrap(api.GET('/api/flows/{flow_id}', { params: { path } }));
    return { version: flow.currentVersion, document: flow.document };
  }
  const row = await unwrap(api.GET('/api/flows/{flow_id}/versions/{number}', { params: { path: { ...path, number: ref.version } } }));
  return { version: row.version, document: row.document };
}

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

function Canvas({ readOnly, onOpenSubflow }: { readOnly: boolean; onOpenSubflow: (node: FlowCanvasNode) => void }) {
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

  const isValidConnection = useCallback(
    (c: Connection | Edge) => {
      const { nodes: n, edges: e } = store.getState();
      return connectionProblem(specs, n, e, c) === null;
    },
    [specs, store],
  );

  const onDrop = useCallback(
    (event: DragEvent) => {
      event.preventDefault();
      const type = event.dataTransfer.getData(DRAG_TYPE);
      const spec = specs[type];
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
        onConnect={(c) => {
          const problem = connectionProblem(specs, store.getState().nodes, store.getState().edges, c);
          if (problem) setRefusal(problem);
          else {
            setRefusal(null);
            connect(c);
          }
        }}
        onConnectEnd={(_e, state) => {
          if (state.toHandle && !state.isValid && state.fromHandle && state.toHandle) {
            const from = state.fromHandle.type === 'source' ? state.fromHandle : state.toHandle;
            const to = state.fromHandle.type === 'source' ? state.toHandle : state.fromHandle;
            setRefusal(
              connectionProblem(specs, store.getState().nodes, store.getState().edges, {
                source: from.nodeId,
                sourceHandle: from.id,
                target: to.nodeId,
                targetHandle: to.id,
              }) ?? 'this connection is not allowed',
            );
          }
        }}
        isValidConnection={isValidConnection}
        onNodeClick={(_e, node) => focus(node.id)}
        onNodeDoubleClick={(_e, node) => onOpenSubflow(node)}
        onPaneClick={() => focus(null)}
        onNodeDragStart={() => checkpoint()}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        edgesFocusable={!readOnly}
        deleteKeyCode={readOnly ? null : ['Delete', 'Backspace']}
        multiSelectionKeyCode={['Shift', 'Meta', 'Control']}
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

function Toolbar({
  canEdit,
  canDeploy,
  onSave,
  saving,
  comment,
  onComment,
  onOpenVersions,
  onDeploy,
  onConnect,
  onProblems,
  onNotice,
}: {
  canEdit: boolean;
  canDeploy: boolean;
  onSave: () => void;
  saving: boolean;
  comment: string;
  onComment: (text: string) => void;
  onOpenVersions: () => void;
  onDeploy: () => void;
  onConnect: () => void;
  onProblems: (p: Problem[]) => void;
  onNotice: (text: string | null) => void;
}) {
  const specs = useSpecs();
  const store = useDesignerStore();
  const meta = useDesigner((s) => s.meta);
  const dirty = useDesigner((s) => s.dirty);
  const canUndo = useDesigner((s) => s.past.length > 0);
  const canRedo = useDesigner((s) => s.future.length > 0);
  const { fitView } = useReactFlow();
  const fileInput = useRef<HTMLInputElement>(null);
  const aceInput = useRef<HTMLInputElement>(null);
  const [aceReport, setAceReport] = useState<Schemas['AceImportOut'] | null>(null);
  const [aceBusy, setAceBusy] = useState(false);
  const flows = useQuery({ queryKey: ['flows'], queryFn: () => unwrap(api.GET('/api/flows')) });
  const queryClient = useQueryClient();
  const [pending, setPending] = useState<{ flow: FlowDocument; subflows: BundledSubflow[]; conflicts: NameConflict[] } | null>(
    null,
  );
  const importApi = useMemo(() => restImportApi(api, unwrap, 'imported'), []);

  const open = async (id: number) => {
    try {
      const flow = await queryClient.fetchQuery({
        queryKey: ['flow', id],
        queryFn: () => unwrap(api.GET('/api/flows/{flow_id}', { params: { path: { flow_id: id } } })),
      });
      store.getState().load(parseDocument(flow.document), flow.id, flow.currentVersion);
      onProblems([]);
      setTimeout(() => fitView({ ...fitViewOptions, duration: 200 }), 50);
    } catch (err) {
      onProblems([{ node: null, property: null, message: `cannot open flow ${id}: ${problemText(err)}` }]);
    }
  };

  const exportJson = async () => {
    const doc = store.getState().document();
    let bundle;
    try {
      bundle = await collectBundle(doc, fetchSubflow, subflowTypes(specs)?.node.type);
    } catch (err) {
      onProblems([{ node: null, property: null, message: `export refused: ${problemText(err)}` }]);
      return;
    }
    const blob = new Blob([JSON.stringify(bundle, null, 2)], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `${doc.name || 'flow'}.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  };

  const importJson = async (file: File) => {
    try {
      const text = await file.text();
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch (err) {
        throw new Error(`${file.name}: not JSON: ${(err as Error).message}`, { cause: err });
      }
      const { flow, subflows } = readBundle(raw);
      const conflicts = await findConflicts(flow, subflows, importApi);
      if (conflicts.length) setPending({ flow, subflows, conflicts });
      else await finishImport(flow, subflows, 'rename', '');
    } catch (err) {
      onProblems([{ node: null, property: null, message: `import refused: ${problemText(err)}` }]);
    }
  };

  const finishImport = async (flow: FlowDocument, subflows: BundledSubflow[], choice: Choice, rename: string) => {
    try {
      const done = await applyImport(flow, subflows, choice, importApi, { rename, subflowType: subflowTypes(specs)?.node.type });
      store.getState().load(done.flow, done.flowId, done.version);
      // Not saved yet, and not the document of whatever runs under the name: no live counts.
      store.getState().setMeta({ imported: true });
      onProblems([]);
      onNotice(done.subflows.length ? `Imported; subflows: ${done.subflows.join(', ')}` : null);
      void queryClient.invalidateQueries({ queryKey: ['flows'] });
      setTimeout(() => fitView({ ...fitViewOptions, duration: 200 }), 50);
    } catch (err) {
      onProblems([{ node: null, property: null, message: `import refused: ${problemText(err)}` }]);
    }
  };

  /** Upload a zipped ACE / IIB workspace: the server stores its flows and answers with the report. */
  const importAce = async (file: File) => {
    setAceBusy(true);
    try {
      const report = await unwrap(
        api.POST('/api/imports/ace', {
          body: file as never,
          bodySerializer: (body: unknown) => body as Blob,
          headers: { 'Content-Type': 'application/zip' },
        }),
      );
      setAceReport(report);
      void queryClient.invalidateQueries({ queryKey: ['flows'] });
    } catch (err) {
      onProblems([{ node: null, property: null, message: `ACE import refused: ${problemText(err)}` }]);
    } finally {
      setAceBusy(false);
    }
  };

  const makeSubflow = async () => {
    const { nodes, edges, meta, replaceGraph } = store.getState();
    const selected = new Set(nodes.filter((n) => n.selected).map((n) => n.id));
    if (!selected.size) {
      onProblems([{ node: null, property: null, message: 'select the nodes to make the subflow from' }]);
      return;
    }
    const types = subflowTypes(specs);
    if (!types) {
      onProblems([{ node: null, property: null, message: 'the node types of this server offer no subflows' }]);
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
      onProblems([{ node: null, property: null, message: `cannot make the subflow: ${problemText(err)}` }]);
    }
  };

  const autoLayout = async () => {
    const { nodes, edges, applyPositions } = store.getState();
    applyPositions(await layoutPositions(nodes, edges));
    setTimeout(() => fitView({ ...fitViewOptions, duration: 200 }), 50);
  };

  return (
    <div className="toolbar" role="toolbar" aria-label="Designer actions">
      <label htmlFor="open-flow" className="sr-only">
        Open flow
      </label>
      <select
        id="open-flow"
        value={meta.flowId ?? ''}
        onChange={(e) => (e.target.value ? void open(Number(e.target.value)) : store.getState().load({ name: 'NewFlow', nodes: [], connections: [] }, null))}
      >
        <option value="">(new flow)</option>
        {flows.data?.map((f) => (
          <option key={f.id} value={f.id}>
            {f.name} (v{f.currentVersion})
          </option>
        ))}
      </select>
      <span className="flow-title" data-testid="flow-title">
        {meta.name}
        {meta.version !== undefined && ` · v${meta.version}`}
        {dirty && ' •'}
      </span>
      {canEdit && (
        <>
          <label htmlFor="version-comment" className="sr-only">
            Version comment
          </label>
          <input
            id="version-comment"
            className="comment"
            placeholder="why this version (optional)"
            maxLength={2000}
            value={comment}
            onChange={(e) => onComment(e.target.value)}
          />
          <button type="button" className="primary" onClick={onSave} disabled={saving} title="Save (Ctrl+S)">
            {saving ? 'Saving…' : 'Save'}
          </button>
        </>
      )}
      <button type="button" onClick={onOpenVersions} disabled={meta.flowId === null}>
        Versions
      </button>
      {canEdit && (
        <>
          <button type="button" onClick={() => store.getState().undo()} disabled={!canUndo} title="Undo (Ctrl+Z)">
            Undo
          </button>
          <button type="button" onClick={() => store.getState().redo()} disabled={!canRedo} title="Redo (Ctrl+Y)">
            Redo
          </button>
          <button type="button" onClick={() => void autoLayout()} title="Auto-layout (Ctrl+L)">
            Layout
          </button>
          <button type="button" onClick={() => void makeSubflow()} title="Make a subflow from the selected nodes">
            Make subflow
          </button>
          <button type="button" onClick={onConnect} title="Connect a terminal of the selected node (C)">
            Connect…
          </button>
        </>
      )}
      <button type="button" onClick={() => fitView({ ...fitViewOptions, duration: 200 })} title="Zoom to fit (F)">
        Fit
      </button>
      {canEdit && (
        <>
          <button type="button" onClick={() => fileInput.current?.click()}>
            Import
          </button>
          <input
            ref={fileInput}
            type="file"
            accept="application/json,.json"
            className="sr-only"
            aria-label="Import flow JSON"
            data-testid="import-file"
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void importJson(file);
              e.target.value = '';
            }}
          />
        </>
      )}
      {canEdit && (
        <>
          <button
            type="button"
            onClick={() => aceInput.current?.click()}
            disabled={aceBusy}
            title="Import an ACE or IIB workspace (a zip of Toolkit project folders)"
          >
            {aceBusy ? 'Importing…' : 'Import ACE…'}
          </button>
          <input
            ref={aceInput}
            type="file"
            accept=".zip,application/zip"
            className="sr-only"
            aria-label="Import ACE workspace zip"
            data-testid="import-ace-file"
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void importAce(file);
              e.target.value = '';
            }}
          />
        </>
      )}
      {aceReport && <AceImportDialog report={aceReport} onClose={() => setAceReport(null)} />}
      <button type="button" onClick={() => void exportJson()} title="Export the flow with the subflows it uses">
        Export
      </button>
      {pending && (
        <ImportDialog
          conflicts={pending.conflicts}
          onClose={() => setPending(null)}
          onChoose={(choice, rename) => {
            setPending(null);
            void finishImport(pending.flow, pending.subflows, choice, rename);
          }}
        />
      )}
      {canDeploy && (
        <button
          type="button"
          onClick={onDeploy}
          disabled={meta.flowId === null || dirty}
          title={dirty ? 'save before deploying' : 'Deploy to an execution group'}
        >
          Deploy
        </button>
      )}
    </div>
  );
}

/**
 * The problems panel fed by the canvas. It watches node data and connections only, so dragging
 * (which changes positions, not data) neither revalidates the flow nor re-renders the page.
 */
function CanvasProblems({ specs, others, onFocus }: { specs: SpecIndex; others: Problem[]; onFocus: (id: string) => void }) {
  const store = useDesignerStore();
  const data = useDesigner(useShallow((s) => s.nodes.map((n) => n.data)));
  const edges = useDesigner((s) => s.edges);
  const problems = useMemo(
    () => {
      const nodes = store.getState().nodes;
      return listProblems(specs, nodes, edges, validateCanvas(specs, nodes, edges), others);
    },
    // `data` stands for every node's type, name and properties: the inputs of validation.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [specs, data, edges, store, others],
  );
  return <ProblemsPanel problems={problems} onFocus={onFocus} />;
}

/** Put each node's message count on the canvas while the open flow runs in an execution group. */
function useLiveCounts(flow: string | null) {
  const store = useDesignerStore();
  const groups = useQuery({
    queryKey: ['stats', 'groups'],
    queryFn: stats.groups,
    refetchInterval: 3000,
    retry: false,
    enabled: flow !== null,
  });
  useEffect(() => {
    // A flow that is not the saved one (new, imported) shows nobody's counts.
    if (flow === null) return;
    const counts: Record<string, number> = {};
    let found = false;
    for (const g of groups.data ?? []) {
      const f = g.flows?.[flow];
      if (!f?.nodes) continue;
      found = true;
      for (const [id, n] of Object.entries(f.nodes)) counts[id] = (counts[id] ?? 0) + (n.messages_in ?? 0);
    }
    if (found) store.getState().setCounts(counts);
  }, [groups.data, flow, store]);
}

function DesignerBody({ flowId }: { flowId: number | null }) {
  const specs = useSpecs();
  const store = useDesignerStore();
  const canEdit = useCan('flows.edit');
  const canDeploy = useCan('deploy');
  const focus = useDesigner((s) => s.focus);
  const queryClient = useQueryClient();
  const { fitView, setCenter, getNode, screenToFlowPosition } = useReactFlow();
  const [serverProblems, setServerProblems] = useState<Problem[]>([]);
  const [esqlProblems, setEsqlProblems] = useState<Record<string, Problem[]>>({});
  const [showVersions, setShowVersions] = useState(false);
  const [showDeploy, setShowDeploy] = useState(false);
  const [connectFrom, setConnectFrom] = useState<string | null>(null);
  const [comment, setComment] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const [deployed, setDeployed] = useState<{ broker: string; group: string; flow: string } | null>(null);
  const flowName = useDesigner((s) => s.meta.name);
  const ownCounts = useDesigner((s) => s.meta.flowId !== null && !s.meta.imported);
  useLiveCounts(ownCounts ? (deployed?.flow ?? flowName) : null);

  const others = useMemo(() => [...Object.values(esqlProblems).flat(), ...serverProblems], [esqlProblems, serverProblems]);

  // Problems reported about a node go with it: a later node may be given the same id.
  const nodeIds = useDesigner(useShallow((s) => s.nodes.map((n) => n.id)));
  useEffect(() => {
    const alive = new Set(nodeIds);
    setEsqlProblems((prev) => {
      const kept = Object.entries(prev).filter(([key]) => alive.has(key.slice(0, key.lastIndexOf(':'))));
      return kept.length === Object.keys(prev).length ? prev : Object.fromEntries(kept);
    });
    setServerProblems((prev) => {
      const kept = prev.filter((p) => p.node === null || alive.has(p.node));
      return kept.length === prev.length ? prev : kept;
    });
  }, [nodeIds]);

  // The open flow is in the address (#/designer/<id>), so a reload reopens it.
  const openFlowId = useDesigner((s) => s.meta.flowId);
  const shownFlowId = useRef(openFlowId);
  useEffect(() => {
    if (shownFlowId.current === openFlowId) return;
    shownFlowId.current = openFlowId;
    const hash = openFlowId === null ? '#/designer' : `#/designer/${openFlowId}`;
    // replaceState, not a new hash: the page keeps this designer (and its undo history) as it is
    if (window.location.hash !== hash) window.history.replaceState(window.history.state, '', hash);
  }, [openFlowId]);

  useEffect(() => {
    if (flowId === null) return;
    let cancelled = false;
    queryClient
      .fetchQuery({
        queryKey: ['flow', flowId],
        queryFn: () => unwrap(api.GET('/api/flows/{flow_id}', { params: { path: { flow_id: flowId } } })),
      })
      .then((flow) => {
        if (cancelled) return;
        store.getState().load(parseDocument(flow.document), flow.id, flow.currentVersion);
        setTimeout(() => void fitView(fitViewOptions), 50);
      })
      .catch((err) => setServerProblems([{ node: null, property: null, message: problemText(err) }]));
    return () => {
      cancelled = true;
    };
  }, [flowId, queryClient, store, fitView]);

  const onEsqlDiagnostics = useCallback((nodeId: string, property: string, found: Problem[]) => {
    setEsqlProblems((prev) => ({
      ...prev,
      [`${nodeId}:${property}`]: found.map((p) => ({ ...p, node: nodeId, property })),
    }));
  }, []);

  const focusNode = useCallback(
    (id: string) => {
      const node = getNode(id);
      focus(id);
      if (node) setCenter(node.position.x + 80, node.position.y + 30, { zoom: 1.2, duration: 300 });
    },
    [focus, getNode, setCenter],
  );

  const save = useMutation({
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
      setServerProblems([]);
      setComment('');
      setNotice(`Saved ${flow.name} version ${flow.currentVersion}`);
      void queryClient.invalidateQueries({ queryKey: ['flows'] });
      void queryClient.invalidateQueries({ queryKey: ['flow', flow.id] });
    },
    onError: (err) => {
      setNotice(null);
      const doc = store.getState().document();
      if (err instanceof ApiProblem && Array.isArray(err.detail) && err.detail.length && 'pointer' in (err.detail[0] as object))
        setServerProblems(problemsFromPointers(doc, err.detail as { pointer: string; message: string }[]));
      else setServerProblems([{ node: null, property: null, message: `save refused: ${problemText(err)}` }]);
    },
  });

  /** Open the flow a Subflow node uses: a saved flow by name, or its embedded document. */
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
        setServerProblems([{ node: node.id, property: 'flow', message: `cannot open the subflow: ${problemText(err)}` }]);
      }
    },
    [specs, store, queryClient],
  );

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

  const onKeyDown = (event: KeyboardEvent) => {
    // Shortcuts belong to the canvas: not while typing in a field or working in a dialog.
    if (isTyping(event.target) || document.querySelector('.dialog-backdrop')) return;
    const mod = event.ctrlKey || event.metaKey;
    const s = store.getState();
    const key = event.key.toLowerCase();
    if (mod && key === 's') {
      event.preventDefault();
      if (canEdit) save.mutate();
    } else if (!canEdit) {
      if (key === 'f' && !mod) void fitView({ ...fitViewOptions, duration: 200 });
      return;
    } else if (mod && key === 'z' && !event.shiftKey) {
      event.preventDefault();
      s.undo();
    } else if (mod && (key === 'y' || (key === 'z' && event.shiftKey))) {
      event.preventDefault();
      s.redo();
    } else if (!mod && key === 'c') {
      const from = connectSource(s.focused, s.nodes);
      if (from) {
        event.preventDefault();
        setConnectFrom(from);
      }
    } else if (mod && key === 'c') s.copySelection();
    else if (mod && key === 'v') s.paste();
    else if (mod && key === 'x') {
      s.copySelection();
      s.deleteSelected();
    } else if (mod && key === 'a') {
      event.preventDefault();
      s.selectAll();
    } else if (mod && key === 'l') {
      event.preventDefault();
      void layoutPositions(s.nodes, s.edges).then((p) => store.getState().applyPositions(p));
    } else if (!mod && key === 'f') void fitView({ ...fitViewOptions, duration: 200 });
  };

  const keyHandler = useRef(onKeyDown);
  useEffect(() => {
    keyHandler.current = onKeyDown;
  });
  useEffect(() => {
    const listener = (event: KeyboardEvent) => keyHandler.current(event);
    window.addEventListener('keydown', listener);
    return () => window.removeEventListener('keydown', listener);
  }, []);

  return (
    <div className="designer">
      <Toolbar
        canEdit={canEdit}
        canDeploy={canDeploy}
        onSave={() => save.mutate()}
        saving={save.isPending}
        comment={comment}
        onComment={setComment}
        onOpenVersions={() => setShowVersions(true)}
        onDeploy={() => setShowDeploy(true)}
        onConnect={() => {
          const { focused, nodes } = store.getState();
          const from = connectSource(focused, nodes);
          if (from) setConnectFrom(from);
          else setServerProblems([{ node: null, property: null, message: 'select the node to connect from' }]);
        }}
        onProblems={setServerProblems}
        onNotice={setNotice}
      />
      {notice && (
        <div className="notice" role="status" data-testid="notice">
          {notice}
        </div>
      )}
      <div className="designer-main">
        <Palette onAdd={addAtCentre} disabled={!canEdit} />
        <Canvas readOnly={!canEdit} onOpenSubflow={openSubflow} />
        <PropertyPanel readOnly={!canEdit} serverProblems={serverProblems} onEsqlDiagnostics={onEsqlDiagnostics} />
      </div>
      <CanvasProblems specs={specs} others={others} onFocus={focusNode} />
      {ownCounts && <DebugPanel flowName={flowName} />}
      <ExerciserPanel />
      {showVersions && store.getState().meta.flowId !== null && (
        <VersionsDialog
          flowId={store.getState().meta.flowId as number}
          onClose={() => setShowVersions(false)}
          onOpen={async (version) => {
            const flowId = store.getState().meta.flowId as number;
            try {
              const v = await unwrap(
                api.GET('/api/flows/{flow_id}/versions/{number}', { params: { path: { flow_id: flowId, number: version } } }),
              );
              const current = queryClient.getQueryData<{ currentVersion: number }>(['flow', flowId]);
              // Saving an old version makes it the newest; the save must name the current version.
              store.getState().load(parseDocument(v.document), flowId, current?.currentVersion ?? version);
              setShowVersions(false);
            } catch (err) {
              setServerProblems([{ node: null, property: null, message: problemText(err) }]);
            }
          }}
        />
      )}
      {connectFrom !== null && (
        <ConnectDialog
          specs={specs}
          nodes={store.getState().nodes}
          edges={store.getState().edges}
          sourceId={connectFrom}
          onConnect={(c) => store.getState().connect(c)}
          onClose={() => setConnectFrom(null)}
        />
      )}
      {showDeploy && store.getState().meta.flowId !== null && (
        <DeployDialog
          flowId={store.getState().meta.flowId as number}
          version={store.getState().meta.version}
          onProblems={setServerProblems}
          onDeployed={(d) => setDeployed({ broker: d.broker, group: d.group, flow: d.flow })}
          onClose={() => setShowDeploy(false)}
        />
      )}
    </div>
  );
}

export default function Designer({ flowId = null }: { flowId?: number | null }) {
  const [store] = useState(() => createDesignerStore());
  useEffect(() => {
    // Tests and the benchmark reach the store through the page, as a user's tools would.
    (window as unknown as { __designer?: unknown }).__designer = store;
  }, [store]);
  return (
    <DesignerContext.Provider value={store}>
      <ReactFlowProvider>
        <DesignerBody flowId={flowId} />
      </ReactFlowProvider>
    </DesignerContext.Provider>
  );
}
