/**
 * Node specs as GET /api/node-types serves them (the generated API types), and what the designer
 * derives from them: defaults, value checks, and the types that play a part in subflows.
 */
import type { Schemas } from '../api/client';

export type NodeSpec = Schemas['NodeSpec'];
export type PropertySpec = Schemas['PropertySpec'];
export type Terminal = Schemas['Terminal'];
export type SpecIndex = Record<string, NodeSpec>;

export function indexSpecs(specs: readonly NodeSpec[]): SpecIndex {
  const index: SpecIndex = {};
  for (const spec of specs) index[spec.type] = spec;
  return index;
}

/** The node types a subflow is made of, as the specs declare them; null when the specs have none. */
export interface SubflowTypes {
  /** A flow used as one node. */
  node: NodeSpec;
  /** Each becomes an entry terminal of the subflow node, named by `terminalProperty`. */
  input: NodeSpec & { terminalProperty: string };
  /** Each becomes an exit terminal of the subflow node. */
  output: NodeSpec & { terminalProperty: string };
}

export function subflowTypes(specs: SpecIndex): SubflowTypes | null {
  const all = Object.values(specs);
  const node = all.find((s) => s.subflowRole === 'node');
  const input = all.find((s) => s.subflowRole === 'input' && s.terminalProperty);
  const output = all.find((s) => s.subflowRole === 'output' && s.terminalProperty);
  if (!node || !input || !output) return null;
  return { node, input, output } as SubflowTypes;
}

/** How flow tests start the flow at a node of this type (its spec's `extra.testInput`): put on the
 * queue it reads, written into the directory it reads, sent to the path it serves; '' for none. */
export type TestInput = 'queue' | 'file' | 'http' | '';

export function testInput(spec: NodeSpec | undefined): TestInput {
  const kind = spec?.extra?.testInput;
  return kind === 'queue' || kind === 'file' || kind === 'http' ? kind : '';
}

/** Whether the designer can send a test message to a node of this type (to the queue or the path it serves). */
export function takesTestMessages(spec: NodeSpec | undefined): boolean {
  const kind = testInput(spec);
  return kind === 'queue' || kind === 'http';
}

/** The property holding the ESQL a node of this type runs (its spec's `extra.esqlProperty`), where
 * the step debugger takes ESQL breakpoints; '' for a node that runs no ESQL. */
export function esqlProperty(spec: NodeSpec | undefined): string {
  const name = spec?.extra?.esqlProperty;
  return typeof name === 'string' ? name : '';
}

/** The kind of ESQL module a node of this type runs (its spec's `extra.esqlModule`: its
 * CREATE … MODULE), which a new node's skeleton declares; '' for a node that runs none. */
export function esqlModule(spec: NodeSpec | undefined): 'COMPUTE' | 'FILTER' | 'DATABASE' | '' {
  const kind = spec?.extra?.esqlModule;
  return kind === 'COMPUTE' || kind === 'FILTER' || kind === 'DATABASE' ? kind : '';
}

/** The default property values of a new node of this type. */
export function defaultProperties(spec: NodeSpec): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (const p of spec.properties) if (p.default !== null && p.default !== undefined) props[p.name] = p.default;
  return props;
}

const QUEUE_NAME = /^[A-Za-z0-9._/%]{1,48}$/;

/** The message of one property's value against its spec, or null when it is acceptable. */
export function propertyProblem(p: PropertySpec, value: unknown): string | null {
  const empty = value === undefined || value === null || value === '';
  if (empty) return p.required ? `${p.label} is required` : null;
  switch (p.type) {
    case 'integer': {
      const n = typeof value === 'number' ? value : Number(value);
      if (!Number.isFinite(n)) return `${p.label} must be a number`;
      if (!Number.isInteger(n)) return `${p.label} must be a whole number`;
      if (p.minimum !== null && p.minimum !== undefined && n < p.minimum) return `${p.label} must be at least ${p.minimum}`;
      if (p.maximum !== null && p.maximum !== undefined && n > p.maximum) return `${p.label} must be at most ${p.maximum}`;
      return null;
    }
    case 'boolean':
      return typeof value === 'boolean' ? null : `${p.label} must be true or false`;
    case 'enum':
      return p.enum.includes(String(value)) ? null : `${p.label} must be one of ${p.enum.join(', ')}`;
    case 'queue':
      return QUEUE_NAME.test(String(value)) ? null : `${p.label}: at most 48 characters of A-Z a-z 0-9 . _ / %`;
    case 'json':
      return null;
    default:
      return typeof value === 'string' ? null : `${p.label} must be text`;
  }
}
