/** The message view the backend builds (flowbroker.runtime.message_view): trees, body, notices. */

/** One field of a message tree: `ref` is its child positions below the tree, `path` its ESQL name. */
export interface MessageField {
  name: string;
  namespace: string;
  fieldType: string;
  valueType: string;
  value: string | null;
  path: string;
  ref: number[];
  children: MessageField[];
  valueCut?: boolean;
  unparsed?: number;
}

export interface MessageBody {
  domain: string;
  /** xml and json are pretty printed text; hex is a hex dump; none means there is no body. */
  format: 'xml' | 'json' | 'hex' | 'none';
  text: string;
  bytes: number;
}

export interface MessageView {
  trees: MessageField[];
  body: MessageBody;
  truncated: boolean;
  notices: string[];
}

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
