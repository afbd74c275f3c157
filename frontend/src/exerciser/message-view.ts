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
