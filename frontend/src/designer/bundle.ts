/**
 * A flow exported with every subflow it uses (recursively), and reading such a file back.
 *
 * A Subflow node names a saved flow by `{name, version?}` (no version: the current one) or embeds a
 * document. Embedded documents travel inside the flow already; named ones are fetched and carried
 * beside it, so the file imports on a system that has never seen them.
 */
import { parseDocument, type FlowDocument } from './document';

export const BUNDLE_FORMAT = 'flowbroker.flow-bundle';
/** How many subflow documents one bundle may carry (a guard against runaway nesting). */
export const MAX_SUBFLOWS = 256;

export interface SubflowRef {
  name: string;
  version?: number;
}

export interface BundledSubflow {
  name: string;
  /** The version the document was when exported. */
  version: number;
  document: FlowDocument;
}

export interface FlowBundle {
  format: typeof BUNDLE_FORMAT;
  flow: FlowDocument;
  subflows: BundledSubflow[];
}

type Ref = Record<string, unknown>;

function subflowProperty(node: unknown, subflowType: string | undefined): Ref | null {
  if (subflowType === undefined || !node || typeof node !== 'object') return null;
  const n = node as { type?: unknown; properties?: Record<string, unknown> };
  if (n.type !== subflowType || !n.properties || typeof n.properties.flow !== 'object' || n.properties.flow === null) return null;
  return n.properties.flow as Ref;
}

/**
 * The saved flows a document's subflow nodes (of type `subflowType`, the spec whose `extra.subflow`
 * is "node") name, embedded subflows searched too; each once, by name.
 */
export function subflowRefs(doc: FlowDocument, subflowType: string | undefined): SubflowRef[] {
  const found = new Map<string, SubflowRef>();
  const pending: unknown[] = [doc];
  while (pending.length) {
    const current = pending.pop() as { nodes?: unknown };
    for (const node of Array.isArray(current?.nodes) ? current.nodes : []) {
      const ref = subflowProperty(node, subflowType);
      if (!ref) continue;
      if (Array.isArray(ref.nodes)) {
        pending.push(ref);
        continue;
      }
      if (typeof ref.name !== 'string' || !ref.name) continue;
      const version = typeof ref.version === 'number' && ref.version > 0 ? ref.version : undefined;
      const key = `${ref.name}@${version ?? ''}`;
      if (!found.has(key)) found.set(key, version === undefined ? { name: ref.name } : { name: ref.name, version });
    }
  }
  return [...found.values()].sort((a, b) => (a.name === b.name ? (a.version ?? 0) - (b.version ?? 0) : a.name < b.name ? -1 : 1));
}

/**
 * The flow with every subflow it uses. `fetchFlow` reads a saved flow by name (at `version`, or
 * its current one) and answers its version number and document; a subflow that cannot be read
 * refuses the export, since the file would not import whole.
 */
export async function collectBundle(
  doc: FlowDocument,
  fetchFlow: (ref: SubflowRef) => Promise<{ version: number; document: FlowDocument }>,
  subflowType: string | undefined,
): Promise<FlowBundle> {
  const subflows: BundledSubflow[] = [];
  const seen = new Set<string>();
  const pending = subflowRefs(doc, subflowType);
  while (pending.length) {
    const ref = pending.shift() as SubflowRef;
    const key = `${ref.name}@${ref.version ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    let got;
    try {
      got = await fetchFlow(ref);
    } catch (err) {
      throw new Error(`subflow ${ref.name}${ref.version ? ` version ${ref.version}` : ''}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (!subflows.some((s) => s.name === ref.name && s.version === got.version)) {
      if (subflows.length >= MAX_SUBFLOWS) throw new Error(`more than ${MAX_SUBFLOWS} subflows`);
      subflows.push({ name: ref.name, version: got.version, document: got.document });
      pending.push(...subflowRefs(got.document, subflowType));
    }
  }
  return { format: BUNDLE_FORMAT, flow: doc, subflows };
}

/** A file's content as a flow and its subflows: a bundle, or a plain flow document (no subflows). */
export function readBundle(raw: unknown): { flow: FlowDocument; subflows: BundledSubflow[] } {
  if (!raw || typeof raw !== 'object' || (raw as Ref).format !== BUNDLE_FORMAT) return { flow: parseDocument(raw), subflows: [] };
  const r = raw as Ref;
  const at = (pointer: string, run: () => FlowDocument) => {
    try {
      return run();
    } catch (err) {
      throw new Error(`${pointer}${(err as Error).message}`, { cause: err });
    }
  };
  const flow = at('/flow', () => parseDocument(r.flow));
  if (r.subflows !== undefined && !Array.isArray(r.subflows)) throw new Error('/subflows: must be a list');
  const subflows = ((r.subflows ?? []) as unknown[]).map((s, i) => {
    const entry = (s ?? {}) as Ref;
    if (typeof entry.name !== 'string' || !entry.name) throw new Error(`/subflows/${i}/name: required: a string`);
    const document = at(`/subflows/${i}/document`, () => parseDocument(entry.document));
    return { name: entry.name, version: typeof entry.version === 'number' ? entry.version : 1, document };
  });
  return { flow, subflows };
}

/**
 * The document with its Subflow references rewritten: `renames` maps an exported subflow
 * (`name@version` for a pinned reference, `name` for a current one) to the name and version it
 * got on import. Embedded subflows are rewritten too.
 */
export function rewriteRefs(
  doc: FlowDocument,
  target: (ref: SubflowRef) => SubflowRef | undefined,
  subflowType: string | undefined,
): FlowDocument {
  const walk = (d: FlowDocument): FlowDocument => ({
    ...d,
    nodes: (d.nodes ?? []).map((node) => {
      const ref = subflowProperty(node, subflowType);
      if (!ref) return node;
      if (Array.isArray(ref.nodes)) return { ...node, properties: { ...node.properties, flow: walk(ref as unknown as FlowDocument) } };
      if (typeof ref.name !== 'string') return node;
      const version = typeof ref.version === 'number' && ref.version > 0 ? ref.version : undefined;
      const to = target(version === undefined ? { name: ref.name } : { name: ref.name, version });
      if (!to) return node;
      const flow: Ref = { ...ref, name: to.name };
      if (version !== undefined && to.version !== undefined) flow.version = to.version;
      return { ...node, properties: { ...node.properties, flow } };
    }),
  });
  return walk(doc);
}

/** Whether two documents are the same flow, whatever version number each carries. */
export function sameDocument(a: FlowDocument, b: FlowDocument): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v as Ref)
              .filter(([, x]) => x !== undefined)
              .sort(([x], [y]) => (x < y ? -1 : 1))
              .map(([k, x]) => [k, canonical(x)]),
          )
        : v;
  const strip = (d: FlowDocument) =>
    canonical({ ...d, version: undefined, properties: d.properties ?? {}, connections: d.connections ?? [] });
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}
