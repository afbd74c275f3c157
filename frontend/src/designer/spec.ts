/**
 * Node specs as GET /api/node-types serves them. The route's schema is an untyped object list,
 * so this narrows each entry at the boundary instead of trusting it.
 */
export type TerminalKind = 'in' | 'out' | 'failure' | 'catch' | string;

export interface Terminal {
  name: string;
  kind: TerminalKind;
  label: string;
}

export interface PropertySpec {
  name: string;
  type: string;
  label: string;
  default: unknown;
  required: boolean;
  enum: string[];
  description: string;
  editor: string;
  minimum: number | null;
  maximum: number | null;
}

export interface NodeSpec {
  type: string;
  label: string;
  category: string;
  icon: string;
  description: string;
  version: number;
  inputs: Terminal[];
  outputs: Terminal[];
  properties: PropertySpec[];
  /** A subflow's terminals come from its flow's Input and Output nodes, not from the spec. */
  dynamicTerminals: boolean;
}

export type SpecIndex = Record<string, NodeSpec>;

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function terminals(value: unknown, kind: string): Terminal[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((t): t is Record<string, unknown> => !!t && typeof t === 'object' && typeof t.name === 'string')
    .map((t) => ({ name: t.name as string, kind: str(t.kind, kind), label: str(t.label, t.name as string) }));
}

/** One spec from the wire, or null when it lacks a type name. */
export function parseSpec(raw: unknown): NodeSpec | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.type !== 'string' || !r.type) return null;
  const properties = Array.isArray(r.properties) ? r.properties : [];
  return {
    type: r.type,
    label: str(r.label, r.type),
    category: str(r.category, 'other'),
    icon: str(r.icon),
    description: str(r.description),
    version: typeof r.version === 'number' ? r.version : 1,
    inputs: terminals(r.inputs, 'in'),
    outputs: terminals(r.outputs, 'out'),
    dynamicTerminals: r.dynamic_terminals === true || r.dynamicTerminals === true,
    properties: properties
      .filter((p): p is Record<string, unknown> => !!p && typeof p === 'object' && typeof p.name === 'string')
      .map((p) => ({
        name: p.name as string,
        type: str(p.type, 'string'),
        label: str(p.label, p.name as string),
        default: p.default ?? null,
        required: p.required === true,
        enum: Array.isArray(p.enum) ? p.enum.map(String) : [],
        description: str(p.description),
        editor: str(p.editor),
        minimum: typeof p.minimum === 'number' ? p.minimum : null,
        maximum: typeof p.maximum === 'number' ? p.maximum : null,
      })),
  };
}

export function indexSpecs(raw: unknown[]): SpecIndex {
  const index: SpecIndex = {};
  for (const entry of raw) {
    const spec = parseSpec(entry);
    if (spec) index[spec.type] = spec;
  }
  return index;
}

/** The default property values of a new node of this type. */
export function defaultProperties(spec: NodeSpec): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (const p of spec.properties) if (p.default !== null && p.default !== undefined) props[p.name] = p.default;
  return props;
}

/** The message of one property's value against its spec, or null when it is acceptable. */
export function propertyProblem(p: PropertySpec, value: unknown): string | null {
  const empty = value === undefined || value === null || value === '';
  if (empty) return p.required ? `${p.label} is required` : null;
  switch (p.type) {
    case 'integer':
    case 'number': {
      const n = typeof value === 'number' ? value : Number(value);
      if (!Number.isFinite(n)) return `${p.label} must be a number`;
      if (p.type === 'integer' && !Number.isInteger(n)) return `${p.label} must be a whole number`;
      if (p.minimum !== null && n < p.minimum) return `${p.label} must be at least ${p.minimum}`;
      if (p.maximum !== null && n > p.maximum) return `${p.label} must be at most ${p.maximum}`;
      return null;
    }
    case 'boolean':
      return typeof value === 'boolean' ? null : `${p.label} must be true or false`;
    case 'enum':
      return p.enum.includes(String(value)) ? null : `${p.label} must be one of ${p.enum.join(', ')}`;
    case 'queue':
      return /^[A-Za-z0-9._/%]{1,48}$/.test(String(value))
        ? null
        : `${p.label}: at most 48 characters of A-Z a-z 0-9 . _ / %`;
    default:
      return typeof value === 'string' || typeof value === 'object' ? null : `${p.label} must be text`;
  }
}
