/** The message view the backend builds (flowbroker.runtime.message_view): trees, body, notices. */
import type { Schemas } from '../api/client';

/** One field of a message tree: `ref` is its child positions below the tree, `path` its ESQL name. */
export type MessageField = Schemas['MessageFieldOut'];
/** The body as its domain writes it: xml and json pretty printed, hex a hex dump, none no body. */
export type MessageBody = Schemas['MessageBodyOut'];
/** The four trees, the serialized body, and what the view left out (`notices`). */
export type MessageView = Schemas['MessageViewOut'];

/** An edit of one field's value, as the backend's set_value takes it. */
export interface FieldEdit {
  tree: string;
  ref: number[];
  value: string | null;
  valueType: string;
}

/** The value types an edit may give (ESQL's names). */
export const EDIT_TYPES = [
  'CHARACTER',
  'INTEGER',
  'DECIMAL',
  'FLOAT',
  'BOOLEAN',
  'BLOB',
  'DATE',
  'TIME',
  'TIMESTAMP',
  'NULL',
] as const;

/** The tree a field belongs to: the first step of its path. */
export function treeOf(field: MessageField): string {
  return field.path.split('.')[0] ?? field.path;
}

/** The path a test gives a queue message's own property by (compared and ignored like a tree field). */
export const PROPERTIES_PATH = '(properties)';

/**
 * The queue message's own properties (not part of its trees) as a folder of fields, so they show
 * and can be marked like the trees' fields; null when the message has none (or the view has none,
 * as a paused message's view).
 */
export function propertiesFolder(view: { properties?: MessageView['properties'] }): MessageField | null {
  const entries = Object.entries(view.properties ?? {});
  if (entries.length === 0) return null;
  const field = (name: string, value: string | number | boolean | null, index: number): MessageField => ({
    name,
    namespace: '',
    fieldType: 'Property',
    valueType: value === null ? 'NULL' : typeof value === 'string' ? 'CHARACTER' : typeof value === 'boolean' ? 'BOOLEAN' : Number.isInteger(value) ? 'INTEGER' : 'FLOAT',
    value: value === null ? null : String(value),
    path: `${PROPERTIES_PATH}.${name}`,
    ref: [index],
    children: [],
    valueCut: false,
    unparsed: null,
  });
  return {
    name: 'Message properties',
    namespace: '',
    fieldType: 'Folder',
    valueType: 'NULL',
    value: null,
    path: PROPERTIES_PATH,
    ref: [],
    children: entries.map(([name, value], index) => field(name, value, index)),
    valueCut: false,
    unparsed: null,
  };
}
