/** The flow document (the one JSON shape of the design) and its canvas form, both ways. */
import type { Edge, Node } from '@xyflow/react';
import type { Schemas } from '../api/client';
import { seenValue } from './problems';
import { propertyProblem, subflowTypes, type NodeSpec, type SpecIndex, type Terminal } from './spec';

export type FlowDocument = Schemas['FlowDocument'];
export type FlowNodeDoc = Schemas['FlowNodeDoc'];
export type ConnectionDoc = Schemas['ConnectionDoc'];

/** What a canvas node carries: the document node's own fields, never a bag of per-type options. */
export interface FlowNodeData extends Record<string, unknown> {
  type: string;
  name: string;
  properties: Record<string, unknown>;
  ui?: Record<string, unknown>;
  problem?: string;
}
export type FlowCanvasNode = Node<FlowNodeData, 'flowNode'>;
/** What validation reads of a canvas node: its id and its document fields, not where it is drawn. */
export type DesignNode = Pick<FlowCanvasNode, 'id' | 'data'>;
export type FlowCanvasEdge = Edge;

export function edgeId(c: ConnectionDoc): string {
  return `${c.from.node}.${c.from.terminal}->${c.to.node}.${c.to.terminal}`;
}

/** A problem found by the designer or the server; `node` names the node it belongs to. */
export interface Problem {
  node: string | null;
  property: string | null;
  message: string;
  line?: number;
  column?: number;
  /** The connection (edge id) the problem is about: it goes when the connection does. */
  connection?: string;
  /** For a problem the server reported: the value it was about then (see problems.ts). */
  seen?: string;
}

/** Read a document from untrusted JSON (an import or the server); throws with the exact field. */
export function parseDocument(raw: unknown): FlowDocument {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('a flow document must be a JSON object');
  const r = raw as Record<string, unknown>;
  if (typeof r.name !== 'string') throw new Error('/name: required: a string');
  if (r.nodes !== undefined && !Array.isArray(r.nodes)) throw new Error('/nodes: must be a list');
  if (r.connections !== undefined && !Array.isArray(r.connections)) throw new Error('/connections: must be a list');
  const nodes = (r.nodes ?? []) as unknown[];
  nodes.forEach((n, i) => {
    if (!n || typeof n !== 'object') throw new Error(`/nodes/${i}: must be an object`);
    const node = n as Record<string, unknown>;
    if (typeof node.id !== 'string' || !node.id) throw new Error(`/nodes/${i}/id: required: a string`);
    if (typeof node.type !== 'string' || !node.type) throw new Error(`/nodes/${i}/type: required: a string`);
  });
  const connections = (r.connections ?? []) as unknown[];
  connections.forEach((c, i) => {
    const conn = c as ConnectionDoc | null;
    if (
      !conn ||
      typeof conn.from?.node !== 'string' ||
      typeof conn.from?.terminal !== 'string' ||
      typeof conn.to?.node !== 'string' ||
      typeof conn.to?.terminal !== 'string'
    )
      throw new Error(`/connections/${i}: needs from.node, from.terminal, to.node and to.terminal`);
  });
  return { ...(r as unknown as FlowDocument), nodes: nodes as FlowNodeDoc[], connections: connections as ConnectionDoc[] };
}

export function toCanvas(doc: FlowDocument): { nodes: FlowCanvasNode[]; edges: FlowCanvasEdge[] } {
  const nodes = doc.nodes.map((n, i) => ({
    id: n.id,
    type: 'flowNode' as const,
    position: {
      x: n.position?.x ?? 40 + (i % 8) * 200,
      y: n.position?.y ?? 40 + Math.floor(i / 8) * 120,
    },
    data: {
      type: n.type,
      name: n.name ?? n.id,
      properties: { ...(n.properties ?? {}) },
      ...(n.ui ? { ui: n.ui } : {}),
    },
  }));
  const edges = (doc.connections ?? []).map((c) => ({
    id: edgeId(c),
    source: c.from.node,
    sourceHandle: c.from.terminal,
    target: c.to.node,
    targetHandle: c.to.terminal,
  }));
  return { nodes, edges };
}

export function toDocument(
  meta: {
    name: string;
    version?: number;
    description?: string;
    properties?: FlowDocument['properties'];
    tests?: FlowDocument['tests'];
  },
  nodes: FlowCanvasNode[],
  edges: FlowCanvasEdge[],
): FlowDocument {
  const doc: FlowDocument = {
    name: meta.name,
    nodes: nodes.map((n) => ({
      id: n.id,
      type: n.data.type,
      name: n.data.name,
      properties: n.data.properties,
      position: { x: Math.round(n.position.x), y: Math.round(n.position.y) },
      ...(n.data.ui ? { ui: n.data.ui } : {}),
    })),
    connections: edges.map((e) => ({
      from: { node: e.source, terminal: e.sourceHandle ?? 'out' },
      to: { node: e.target, terminal: e.targetHandle ?? 'in' },
    })),
  };
  if (meta.version !== undefined) doc.version = meta.version;
  if (meta.description) doc.description = meta.description;
  if (meta.properties) doc.properties = meta.properties;
  if (meta.tests) doc.tests = meta.tests;
  return doc;
}

/**
 * A node's terminals: its spec's, or for a subflow node those of its flow's input and output
 * nodes (from an embedded flow document, or remembered when the subflow was made). Which types
 * those are, and which property names the terminal, the specs say.
 */
export function terminalsOf(specs: SpecIndex, data: FlowNodeData): { inputs: Terminal[]; outputs: Terminal[] } {
  const spec: NodeSpec | undefined = specs[data.type];
  if (!spec) return { inputs: [], outputs: [] };
  if (!spec.dynamicTerminals) {
    const derived = derivedOutputs(spec, data.properties);
    const derivedIn = derivedTerminals(spec, data.properties, 'inputTerminalsFrom', 'in');
    const inputs = derivedIn.length ? [...spec.inputs, ...derivedIn] : spec.inputs;
    if (!derived.length) return { inputs, outputs: spec.outputs };
    const failure = spec.outputs.filter((t) => t.kind === 'failure');
    return { inputs, outputs: [...spec.outputs.filter((t) => t.kind !== 'failure'), ...derived, ...failure] };
  }
  const roles = subflowTypes(specs);
  const flow = data.properties.flow as { nodes?: FlowNodeDoc[] } | undefined;
  let inputs: string[] | undefined;
  let outputs: string[] | undefined;
  if (roles && flow && Array.isArray(flow.nodes)) {
    const named = (role: NodeSpec & { terminalProperty: string }, fallback: string) =>
      flow.nodes!.filter((n) => n.type === role.type).map((n) => String(n.properties?.[role.terminalProperty] ?? fallback));
    inputs = named(roles.input, 'in');
    outputs = named(roles.output, 'out');
  } else {
    const remembered = data.ui?.terminals as { inputs?: string[]; outputs?: string[] } | undefined;
    inputs = remembered?.inputs;
    outputs = remembered?.outputs;
  }
  const make = (names: string[] | undefined, fallback: Terminal[], kind: 'in' | 'out'): Terminal[] =>
    names ? names.map((name) => ({ name, kind, label: name })) : fallback;
  return {
    inputs: make(inputs, spec.inputs, 'in'),
    outputs: [
      ...make(outputs, spec.outputs.filter((t) => t.kind !== 'failure'), 'out'),
      ...spec.outputs.filter((t) => t.kind === 'failure'),
    ],
  };
}

/**
 * Output terminals a node names in its own properties (a Route node's filter table rows), where
 * its spec's `extra.outputTerminalsFrom` ({property, key}) says; the backend accepts the same.
 */
export function derivedOutputs(spec: NodeSpec, properties: Record<string, unknown>): Terminal[] {
  return derivedTerminals(spec, properties, 'outputTerminalsFrom', 'out');
}

/**
 * Terminals a node names in its own properties, where its spec's `extra[from]` ({property, key})
 * says: `outputTerminalsFrom` (a Route node's rows) or `inputTerminalsFrom` (an Unsupported
 * node's, which keeps the terminals of the imported node it stands for).
 */
export function derivedTerminals(
  spec: NodeSpec,
  properties: Record<string, unknown>,
  from: 'outputTerminalsFrom' | 'inputTerminalsFrom',
  kind: 'in' | 'out',
): Terminal[] {
  const where = spec.extra?.[from] as { property?: unknown; key?: unknown } | undefined;
  if (!where || typeof where.property !== 'string' || typeof where.key !== 'string') return [];
  const rows = properties[where.property];
  if (!Array.isArray(rows)) return [];
  const seen = new Set((kind === 'out' ? spec.outputs : spec.inputs).map((t) => t.name));
  const found: Terminal[] = [];
  for (const row of rows as unknown[]) {
    const name = row && typeof row === 'object' ? (row as Record<string, unknown>)[where.key] : undefined;
    if (typeof name === 'string' && name && !seen.has(name)) {
      seen.add(name);
      found.push({ name, kind, label: name });
    }
  }
  return found;
}

/** Why a connection is not allowed by the specs, or null when it is. */
export function connectionProblem(
  specs: SpecIndex,
  nodes: readonly DesignNode[],
  edges: FlowCanvasEdge[],
  c: { source: string | null; sourceHandle?: string | null; target: string | null; targetHandle?: string | null },
  byId?: Map<string, DesignNode>,
): string | null {
  const source = byId ? byId.get(c.source ?? '') : nodes.find((n) => n.id === c.source);
  const target = byId ? byId.get(c.target ?? '') : nodes.find((n) => n.id === c.target);
  if (!source || !target) return 'both ends must be nodes';
  if (source.id === target.id) return 'a node cannot be wired to itself';
  const out = terminalsOf(specs, source.data).outputs.find((t) => t.name === c.sourceHandle);
  if (!out) return `${source.data.type} has no output terminal ${c.sourceHandle ?? ''}`;
  const input = terminalsOf(specs, target.data).inputs.find((t) => t.name === c.targetHandle);
  if (!input) return `${target.data.type} has no input terminal ${c.targetHandle ?? ''}`;
  const duplicate = edges.some(
    (e) =>
      e.source === c.source &&
      e.sourceHandle === c.sourceHandle &&
      e.target === c.target &&
      e.targetHandle === c.targetHandle,
  );
  return duplicate ? 'these terminals are already connected' : null;
}

/** Everything the designer can tell is wrong before the server is asked. */
export function validateCanvas(specs: SpecIndex, nodes: readonly DesignNode[], edges: FlowCanvasEdge[]): Problem[] {
  const found: Problem[] = [];
  const names = new Map<string, string>();
  for (const node of nodes) {
    const spec: NodeSpec | undefined = specs[node.data.type];
    if (!spec) {
      found.push({ node: node.id, property: null, message: `unknown node type ${node.data.type}` });
      continue;
    }
    for (const p of spec.properties) {
      const message = propertyProblem(p, node.data.properties[p.name]);
      if (message) found.push({ node: node.id, property: p.name, message });
    }
    if (spec.extra?.placeholder === true) {
      // saved as it is, refused on deploy (the server says the same): the gap must show
      const original = String(node.data.properties.originalType ?? '') || 'unknown type';
      found.push({
        node: node.id,
        property: null,
        message: `node '${node.data.name}' is an unsupported ACE node (${original}): replace it before deploying`,
      });
    }
    if (names.has(node.data.name)) found.push({ node: node.id, property: null, message: `name ${node.data.name} is also used by another node` });
    names.set(node.data.name, node.id);
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const e of edges) {
    const message = connectionProblem(specs, nodes, [], e, byId);
    if (message)
      found.push({
        node: e.source,
        property: null,
        connection: e.id,
        message: `connection ${connectionText(byId, e.source, e.sourceHandle, e.target, e.targetHandle)}: ${message}`,
      });
  }
  return found;
}

/** A connection as the user sees it: `Name.terminal → Name.terminal`. */
function connectionText(
  byId: Map<string, { data: { name: string } } | FlowNodeDoc>,
  from: string,
  fromTerminal: string | null | undefined,
  to: string,
  toTerminal: string | null | undefined,
): string {
  const name = (id: string) => {
    const n = byId.get(id);
    return (n && ('data' in n ? n.data.name : n.name)) || id;
  };
  return `${name(from)}.${fromTerminal ?? 'out'} → ${name(to)}.${toTerminal ?? 'in'}`;
}

/** Server problems carry a JSON pointer (`/nodes/3/properties/queueName`): name the node and property. */
export function problemsFromPointers(
  doc: FlowDocument,
  problems: { pointer?: string; message?: string }[],
): Problem[] {
  const byId = new Map(doc.nodes.map((n) => [n.id, n]));
  return problems.map((p) => {
    const parts = (p.pointer ?? '').split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    const message = p.message ?? '';
    if (parts[0] === 'nodes' && parts[1] !== undefined) {
      const node = doc.nodes[Number(parts[1])];
      if (!node) return { node: null, property: null, message };
      if (parts[2] === 'properties' && parts[3])
        return { node: node.id, property: parts[3], message, seen: seenValue(node.properties?.[parts[3]]) };
      const field = parts.slice(2).join('.');
      return {
        node: node.id,
        property: null,
        message: field ? `${field}: ${message}` : message,
        seen: seenValue({ type: node.type, name: node.name ?? node.id, properties: node.properties ?? {} }),
      };
    }
    if (parts[0] === 'connections' && parts[1] !== undefined) {
      const c = doc.connections?.[Number(parts[1])];
      if (!c) return { node: null, property: null, message };
      return {
        node: c.from.node,
        property: null,
        connection: edgeId(c),
        message: `connection ${connectionText(byId, c.from.node, c.from.terminal, c.to.node, c.to.terminal)}: ${message}`,
      };
    }
    const field = parts.filter(Boolean).join('.');
    return { node: null, property: null, message: field ? `${field}: ${message}` : message };
  });
}
