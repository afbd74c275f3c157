/**
 * The designer's canvas store: nodes, connections, selection, clipboard and undo history of the
 * flow being edited. Built by a factory behind a provider; server data lives in TanStack Query.
 * The live message counts of a running flow are kept beside the graph, never in its nodes: the
 * undo history records the design, and undoing an edit does not bring back an old count.
 */
import {
  addEdge,
  applyEdgeChanges,
  applyNodeChanges,
  type Connection,
  type EdgeChange,
  type NodeChange,
} from '@xyflow/react';
import { createContext, useContext } from 'react';
import { createStore, type StoreApi } from 'zustand/vanilla';
import { useStore } from 'zustand';
import {
  edgeId,
  toCanvas,
  toDocument,
  type FlowCanvasEdge,
  type FlowCanvasNode,
  type FlowDocument,
} from './document';
import { defaultProperties, type NodeSpec } from './spec';

const HISTORY_LIMIT = 100;

interface Snapshot {
  nodes: FlowCanvasNode[];
  edges: FlowCanvasEdge[];
}

export interface FlowMeta {
  flowId: number | null;
  name: string;
  version: number | undefined;
  description: string;
  properties: Record<string, unknown>;
  /** The flow's test cases: not drawn on the canvas, but kept with every version saved. */
  tests?: FlowDocument['tests'];
  /** Loaded from a file: not the document whatever runs under the name runs, until reopened. */
  imported?: boolean;
}

export interface DesignerState {
  meta: FlowMeta;
  nodes: FlowCanvasNode[];
  edges: FlowCanvasEdge[];
  past: Snapshot[];
  future: Snapshot[];
  clipboard: Snapshot | null;
  dirty: boolean;
  /** Node whose properties the panel shows. */
  focused: string | null;
  /** Messages each node of the running flow has processed, by node id (monitoring's figures). */
  counts: Record<string, number>;
}

export interface DesignerActions {
  load: (doc: FlowDocument, flowId: number | null, version?: number) => void;
  setMeta: (patch: Partial<FlowMeta>) => void;
  /** Record the current graph so the next change can be undone (called before a drag). */
  checkpoint: () => void;
  onNodesChange: (changes: NodeChange<FlowCanvasNode>[]) => void;
  onEdgesChange: (changes: EdgeChange<FlowCanvasEdge>[]) => void;
  connect: (c: Connection) => void;
  addNode: (spec: NodeSpec, position: { x: number; y: number }) => string;
  setProperty: (nodeId: string, name: string, value: unknown) => void;
  renameNode: (nodeId: string, name: string) => void;
  focus: (nodeId: string | null) => void;
  selectAll: () => void;
  deleteSelected: () => void;
  copySelection: () => void;
  paste: (offset?: { x: number; y: number }) => void;
  undo: () => void;
  redo: () => void;
  applyPositions: (positions: Record<string, { x: number; y: number }>) => void;
  /** Replace the whole graph in one undoable step (making a subflow). */
  replaceGraph: (nodes: FlowCanvasNode[], edges: FlowCanvasEdge[]) => void;
  /** Show monitoring's message counts: not a change of the design (no undo step, not dirty). */
  setCounts: (counts: Record<string, number>) => void;
  markSaved: (flowId: number, version: number) => void;
  document: () => FlowDocument;
}

export type DesignerStore = StoreApi<DesignerState & DesignerActions>;

function uniqueId(base: string, taken: Set<string>): string {
  const stem = base.replace(/[^A-Za-z0-9_.-]/g, '').toLowerCase() || 'node';
  let i = 1;
  while (taken.has(`${stem}${i}`)) i += 1;
  return `${stem}${i}`;
}

function uniqueName(base: string, taken: Set<string>): string {
  if (!taken.has(base)) return base;
  let i = 1;
  while (taken.has(`${base}${i}`)) i += 1;
  return `${base}${i}`;
}

export function createDesignerStore(initial?: Partial<DesignerState>): DesignerStore {
  return createStore<DesignerState & DesignerActions>()((set, get) => {
    /** Apply a change that can be undone: the graph before it goes onto the history. */
    const change = (next: Partial<DesignerState>) => {
      const { nodes, edges, past } = get();
      set({
        ...next,
        past: [...past, { nodes, edges }].slice(-HISTORY_LIMIT),
        future: [],
        dirty: true,
      });
    };
    // React Flow reports one Delete as an edge removal and then a node removal; both belong to
    // one undo step, so the second removal of the same tick joins the snapshot of the first.
    let removing = false;
    const removal = (next: Partial<DesignerState>) => {
      if (removing) {
        set({ ...next, dirty: true });
        return;
      }
      removing = true;
      setTimeout(() => {
        removing = false;
      }, 0);
      change(next);
    };
    return {
      meta: { flowId: null, name: 'NewFlow', version: undefined, description: '', properties: {} },
      nodes: [],
      edges: [],
      past: [],
      future: [],
      clipboard: null,
      dirty: false,
      focused: null,
      counts: {},
      ...initial,

      load: (doc, flowId, version) => {
        const { nodes, edges } = toCanvas(doc);
        set({
          meta: {
            flowId,
            name: doc.name,
            version: version ?? doc.version,
            description: doc.description ?? '',
            properties: doc.properties ?? {},
            ...(doc.tests ? { tests: doc.tests } : {}),
          },
          nodes,
          edges,
          past: [],
          future: [],
          dirty: false,
          focused: null,
          counts: {},
        });
      },
      setMeta: (patch) => set({ meta: { ...get().meta, ...patch }, dirty: true }),
      checkpoint: () => {
        const { nodes, edges, past } = get();
        set({ past: [...past, { nodes, edges }].slice(-HISTORY_LIMIT), future: [] });
      },
      onNodesChange: (changes) => {
        const removes = changes.some((c) => c.type === 'remove');
        const next = applyNodeChanges(changes, get().nodes);
        if (removes) {
          const alive = new Set(next.map((n) => n.id));
          removal({
            nodes: next,
            edges: get().edges.filter((e) => alive.has(e.source) && alive.has(e.target)),
          });
        } else {
          const moved = changes.some((c) => c.type === 'position' && !c.dragging);
          set({ nodes: next, dirty: get().dirty || moved });
        }
      },
      onEdgesChange: (changes) => {
        const next = applyEdgeChanges(changes, get().edges);
        if (changes.some((c) => c.type === 'remove')) removal({ edges: next });
        else set({ edges: next });
      },
      connect: (c) => {
        if (!c.source || !c.target) return;
        const id = edgeId({
          from: { node: c.source, terminal: c.sourceHandle ?? 'out' },
          to: { node: c.target, terminal: c.targetHandle ?? 'in' },
        });
        change({ edges: addEdge({ ...c, id }, get().edges) });
      },
      addNode: (spec, position) => {
        const { nodes } = get();
        const id = uniqueId(spec.type, new Set(nodes.map((n) => n.id)));
        const name = uniqueName(spec.label, new Set(nodes.map((n) => n.data.name)));
        const node: FlowCanvasNode = {
          id,
          type: 'flowNode',
          position,
          selected: true,
          data: { type: spec.type, name, properties: defaultProperties(spec) },
        };
        change({ nodes: [...nodes.map((n) => ({ ...n, selected: false })), node], focused: id });
        return id;
      },
      setProperty: (nodeId, name, value) => {
        change({
          nodes: get().nodes.map((n) => {
            if (n.id !== nodeId) return n;
            const properties = { ...n.data.properties };
            if (value === undefined || value === '') delete properties[name];
            else properties[name] = value;
            return { ...n, data: { ...n.data, properties } };
          }),
        });
      },
      renameNode: (nodeId, name) => {
        change({ nodes: get().nodes.map((n) => (n.id === nodeId ? { ...n, data: { ...n.data, name } } : n)) });
      },
      focus: (nodeId) => set({ focused: nodeId }),
      selectAll: () => set({ nodes: get().nodes.map((n) => ({ ...n, selected: true })) }),
      deleteSelected: () => {
        const { nodes, edges, focused } = get();
        const gone = new Set(nodes.filter((n) => n.selected).map((n) => n.id));
        const edgesLeft = edges.filter((e) => !e.selected && !gone.has(e.source) && !gone.has(e.target));
        if (!gone.size && edgesLeft.length === edges.length) return;
        change({
          nodes: nodes.filter((n) => !gone.has(n.id)),
          edges: edgesLeft,
          focused: focused && gone.has(focused) ? null : focused,
        });
      },
      copySelection: () => {
        const { nodes, edges } = get();
        const picked = nodes.filter((n) => n.selected);
        const ids = new Set(picked.map((n) => n.id));
        if (!picked.length) return;
        set({
          clipboard: {
            nodes: structuredClone(picked),
            edges: structuredClone(edges.filter((e) => ids.has(e.source) && ids.has(e.target))),
          },
        });
      },
      paste: (offset = { x: 40, y: 40 }) => {
        const { clipboard, nodes, edges } = get();
        if (!clipboard) return;
        const taken = new Set(nodes.map((n) => n.id));
        const names = new Set(nodes.map((n) => n.data.name));
        const renamed = new Map<string, string>();
        const pasted = clipboard.nodes.map((n) => {
          const id = uniqueId(n.data.type, taken);
          taken.add(id);
          renamed.set(n.id, id);
          const name = uniqueName(n.data.name, names);
          names.add(name);
          return {
            ...structuredClone(n),
            id,
            selected: true,
            position: { x: n.position.x + offset.x, y: n.position.y + offset.y },
            data: { ...structuredClone(n.data), name },
          };
        });
        const pastedEdges = clipboard.edges.map((e) => {
          const source = renamed.get(e.source) as string;
          const target = renamed.get(e.target) as string;
          return {
            ...e,
            source,
            target,
            selected: false,
            id: edgeId({
              from: { node: source, terminal: e.sourceHandle ?? 'out' },
              to: { node: target, terminal: e.targetHandle ?? 'in' },
            }),
          };
        });
        // the copies are what the user works on next: selected, and the first in the property panel
        change({
          nodes: [...nodes.map((n) => ({ ...n, selected: false })), ...pasted],
          edges: [...edges.map((e) => (e.selected ? { ...e, selected: false } : e)), ...pastedEdges],
          focused: pasted[0]?.id ?? get().focused,
        });
        // The next paste lands beside this one rather than on top of it.
        set({ clipboard: { nodes: pasted.map((n) => ({ ...n, position: { ...n.position } })), edges: pastedEdges } });
      },
      undo: () => {
        const { past, future, nodes, edges } = get();
        const previous = past[past.length - 1];
        if (!previous) return;
        set({ ...previous, past: past.slice(0, -1), future: [{ nodes, edges }, ...future], dirty: true });
      },
      redo: () => {
        const { past, future, nodes, edges } = get();
        const next = future[0];
        if (!next) return;
        set({ ...next, past: [...past, { nodes, edges }], future: future.slice(1), dirty: true });
      },
      applyPositions: (positions) => {
        change({
          nodes: get().nodes.map((n) => (positions[n.id] ? { ...n, position: positions[n.id] } : n)),
        });
      },
      replaceGraph: (nodes, edges) => change({ nodes, edges, focused: null }),
      setCounts: (counts) => {
        const shown = get().counts;
        const same =
          Object.keys(counts).length === Object.keys(shown).length && Object.entries(counts).every(([id, n]) => shown[id] === n);
        if (!same) set({ counts: { ...counts } });
      },
      markSaved: (flowId, version) => set({ meta: { ...get().meta, flowId, version }, dirty: false }),
      document: () => {
        const { meta, nodes, edges } = get();
        return toDocument(meta, nodes, edges);
      },
    };
  });
}

export const DesignerContext = createContext<DesignerStore | null>(null);

export function useDesigner<T>(selector: (s: DesignerState & DesignerActions) => T): T {
  const store = useContext(DesignerContext);
  if (!store) throw new Error('useDesigner outside a DesignerContext provider');
  return useStore(store, selector);
}

export function useDesignerStore(): DesignerStore {
  const store = useContext(DesignerContext);
  if (!store) throw new Error('useDesignerStore outside a DesignerContext provider');
  return store;
}
