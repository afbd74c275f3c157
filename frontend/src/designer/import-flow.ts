/**
 * Importing a flow file: its subflows are saved to the repository (a subflow already there with
 * the same document is reused), the flow itself is opened for saving. A name that is taken is
 * either renamed to a free name or saved as a new version of the flow that has it.
 */
import { rewriteRefs, sameDocument, type BundledSubflow, type SubflowRef } from './bundle';
import type { FlowDocument } from './document';

export interface NameStatus {
  taken: boolean;
  flowId: number | null;
  currentVersion: number | null;
  free: string;
}

export interface ImportApi {
  nameStatus: (name: string) => Promise<NameStatus>;
  /** The current document of a saved flow. */
  current: (flowId: number) => Promise<FlowDocument>;
  create: (doc: FlowDocument) => Promise<{ name: string; currentVersion: number }>;
  /** Save `doc` as the next version of the flow (whose current version is `version`). */
  save: (flowId: number, version: number, doc: FlowDocument) => Promise<{ name: string; currentVersion: number }>;
}

/** A name of the file that a flow of the repository has already, with another document. */
export interface NameConflict {
  name: string;
  free: string;
  flowId: number;
  currentVersion: number;
  subflow: boolean;
}

export type Choice = 'rename' | 'overwrite';

export interface Imported {
  /** The flow to open: a new one (`flowId` null) or the next version of `flowId`. */
  flow: FlowDocument;
  flowId: number | null;
  version?: number;
  /** What happened to each subflow, for the notice. */
  subflows: string[];
}

/** The names of the file that are taken by different flows: the choice the user must make. */
export async function findConflicts(
  flow: FlowDocument,
  subflows: BundledSubflow[],
  api: ImportApi,
): Promise<NameConflict[]> {
  const found: NameConflict[] = [];
  const main = await api.nameStatus(flow.name);
  if (main.taken && main.flowId !== null)
    found.push({ name: flow.name, free: main.free, flowId: main.flowId, currentVersion: main.currentVersion ?? 1, subflow: false });
  for (const name of new Set(subflows.map((s) => s.name))) {
    const status = await api.nameStatus(name);
    if (!status.taken || status.flowId === null) continue;
    const current = await api.current(status.flowId);
    if (subflows.some((s) => s.name === name && sameDocument(current, s.document))) continue;
    found.push({ name, free: status.free, flowId: status.flowId, currentVersion: status.currentVersion ?? 1, subflow: true });
  }
  return found;
}

/** Save the subflows (those a bundled subflow uses first) and give the flow to open, references rewritten. */
export async function applyImport(
  flow: FlowDocument,
  subflows: BundledSubflow[],
  choice: Choice,
  api: ImportApi,
  options: { rename?: string; subflowType?: string } = {},
): Promise<Imported> {
  const type = options.subflowType;
  const placed = new Map<string, SubflowRef>();
  const key = (s: { name: string; version: number }) => `${s.name}@${s.version}`;
  const newest = (name: string) =>
    subflows.filter((s) => s.name === name).reduce<BundledSubflow | undefined>((a, s) => (!a || s.version > a.version ? s : a), undefined);
  const bundled = (ref: SubflowRef) =>
    ref.version === undefined ? newest(ref.name) : subflows.find((s) => s.name === ref.name && s.version === ref.version);
  const target = (ref: SubflowRef) => {
    const s = bundled(ref);
    return s ? placed.get(key(s)) : undefined;
  };
  const uses = (s: BundledSubflow) => {
    const refs: BundledSubflow[] = [];
    rewriteRefs(s.document, (ref) => {
      const b = bundled(ref);
      if (b && b !== s) refs.push(b);
      return undefined;
    }, type);
    return refs;
  };
  const report: string[] = [];
  const left = [...subflows];
  while (left.length) {
    // a subflow whose own subflows are placed; in a cycle, the first one left
    const index = Math.max(0, left.findIndex((s) => uses(s).every((u) => placed.has(key(u)))));
    const [entry] = left.splice(index, 1);
    const doc = rewriteRefs({ ...entry.document, name: entry.name }, target, type);
    const status = await api.nameStatus(entry.name);
    if (!status.taken || status.flowId === null) {
      const made = await api.create(doc);
      placed.set(key(entry), { name: made.name, version: made.currentVersion });
      report.push(`${made.name} created`);
      continue;
    }
    const current = await api.current(status.flowId);
    if (sameDocument(current, doc)) {
      placed.set(key(entry), { name: entry.name, version: status.currentVersion ?? 1 });
      continue;
    }
    if (choice === 'rename') {
      const made = await api.create({ ...doc, name: status.free });
      placed.set(key(entry), { name: made.name, version: made.currentVersion });
      report.push(`${entry.name} imported as ${made.name}`);
    } else {
      const saved = await api.save(status.flowId, status.currentVersion ?? 1, doc);
      placed.set(key(entry), { name: saved.name, version: saved.currentVersion });
      report.push(`${saved.name} saved as version ${saved.currentVersion}`);
    }
  }
  const doc = rewriteRefs(flow, target, type);
  const main = await api.nameStatus(flow.name);
  if (!main.taken || main.flowId === null) return { flow: doc, flowId: null, subflows: report };
  if (choice === 'rename') return { flow: { ...doc, name: options.rename?.trim() || main.free }, flowId: null, subflows: report };
  return { flow: doc, flowId: main.flowId, version: main.currentVersion ?? undefined, subflows: report };
}

/** The import's repository: the REST API of this server. */
export function restImportApi(
  api: typeof import('../api/client').api,
  unwrap: typeof import('../api/client').unwrap,
  comment: string,
): ImportApi {
  return {
    nameStatus: (name) => unwrap(api.GET('/api/flows/names', { params: { query: { name } } })),
    current: async (flowId) => (await unwrap(api.GET('/api/flows/{flow_id}', { params: { path: { flow_id: flowId } } }))).document,
    create: (doc) => {
      const { version: _drop, ...fresh } = doc;
      void _drop;
      return unwrap(api.POST('/api/flows', { body: fresh, params: { query: { comment } } }));
    },
    save: (flowId, version, doc) =>
      unwrap(api.PUT('/api/flows/{flow_id}', { params: { path: { flow_id: flowId }, query: { comment } }, body: { ...doc, version } })),
  };
}
