/** A side-by-side diff of two flow versions: nodes, properties and connections. */
import { edgeId, type FlowDocument } from './document';

export interface PropertyChange {
  name: string;
  before: unknown;
  after: unknown;
}
export interface NodeChangeRow {
  id: string;
  type: string;
  status: 'added' | 'removed' | 'changed';
  changes: PropertyChange[];
}
export interface FlowDiff {
  nodes: NodeChangeRow[];
  connectionsAdded: string[];
  connectionsRemoved: string[];
  flowProperties: PropertyChange[];
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function propertyChanges(
  before: Record<string, unknown> = {},
  after: Record<string, unknown> = {},
): PropertyChange[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return names
    .filter((name) => !same(before[name], after[name]))
    .map((name) => ({ name, before: before[name], after: after[name] }));
}

export function diffFlows(left: FlowDocument, right: FlowDocument): FlowDiff {
  const leftNodes = new Map(left.nodes.map((n) => [n.id, n]));
  const rightNodes = new Map(right.nodes.map((n) => [n.id, n]));
  const nodes: NodeChangeRow[] = [];
  for (const [id, n] of leftNodes) {
    const other = rightNodes.get(id);
    if (!other) {
      nodes.push({ id, type: n.type, status: 'removed', changes: [] });
      continue;
    }
    const changes = propertyChanges(n.properties, other.properties);
    if ((n.name ?? id) !== (other.name ?? id)) changes.unshift({ name: '(name)', before: n.name, after: other.name });
    if (n.type !== other.type) changes.unshift({ name: '(type)', before: n.type, after: other.type });
    if (changes.length) nodes.push({ id, type: other.type, status: 'changed', changes });
  }
  for (const [id, n] of rightNodes) {
    if (!leftNodes.has(id)) nodes.push({ id, type: n.type, status: 'added', changes: propertyChanges({}, n.properties) });
  }
  const leftEdges = new Set((left.connections ?? []).map(edgeId));
  const rightEdges = new Set((right.connections ?? []).map(edgeId));
  return {
    nodes,
    connectionsAdded: [...rightEdges].filter((e) => !leftEdges.has(e)).sort(),
    connectionsRemoved: [...leftEdges].filter((e) => !rightEdges.has(e)).sort(),
    flowProperties: propertyChanges(left.properties, right.properties),
  };
}
