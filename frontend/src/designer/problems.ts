/**
 * The problems list as the panel shows it: the designer's own checks, the ESQL editor's and the
 * server's answers merged, each problem once, named by the node's name and the property's label,
 * and without the ones that no longer apply (their node or connection deleted, their value changed).
 */
import type { DesignNode, FlowCanvasEdge, Problem } from './document';
import type { SpecIndex } from './spec';

export interface ListedProblem extends Problem {
  /** The node's name as the user gave it; null for a problem of the whole flow. */
  nodeLabel: string | null;
  /** The property's label from the node's spec (its name when the spec has none). */
  propertyLabel: string | null;
}

/** What a server problem was about when it was reported: it is stale once this changes. */
export function seenValue(value: unknown): string {
  return JSON.stringify(value ?? null);
}

function stale(p: Problem, byId: Map<string, DesignNode>, edgeIds: Set<string>): boolean {
  if (p.connection !== undefined && !edgeIds.has(p.connection)) return true;
  if (p.node === null) return false;
  const node = byId.get(p.node);
  if (!node) return true;
  if (p.seen === undefined) return false;
  const now = p.property ? node.data.properties[p.property] : { type: node.data.type, name: node.data.name, properties: node.data.properties };
  return seenValue(now) !== p.seen;
}

/**
 * Merge the problem sources into the list the panel shows. `local` is the designer's validation
 * of the canvas as it is now; `reported` are the ESQL editor's and the server's. A reported
 * problem is dropped when its node or connection is gone, when the value it was about has changed
 * since, or when the designer's own check already reports that node's property.
 */
export function listProblems(
  specs: SpecIndex,
  nodes: readonly DesignNode[],
  edges: FlowCanvasEdge[],
  local: Problem[],
  reported: Problem[],
): ListedProblem[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const edgeIds = new Set(edges.map((e) => e.id));
  const checked = new Set(local.filter((p) => p.node && p.property).map((p) => `${p.node}\u0000${p.property}`));
  const seen = new Set<string>();
  const out: ListedProblem[] = [];
  const add = (p: Problem) => {
    const key = [p.node, p.property, p.line, p.column, p.message].join('\u0000');
    if (seen.has(key)) return;
    seen.add(key);
    const node = p.node ? byId.get(p.node) : undefined;
    const spec = node ? specs[node.data.type] : undefined;
    const property = p.property ? spec?.properties.find((s) => s.name === p.property) : undefined;
    out.push({
      ...p,
      nodeLabel: node ? node.data.name || node.id : p.node,
      propertyLabel: p.property ? (property?.label ?? p.property) : null,
    });
  };
  for (const p of reported) {
    if (stale(p, byId, edgeIds)) continue;
    // an ESQL line diagnostic stays: it says where in the code, which the designer's check does not
    if (p.line === undefined && p.node && p.property && checked.has(`${p.node}\u0000${p.property}`)) continue;
    add(p);
  }
  for (const p of local) add(p);
  return out;
}
