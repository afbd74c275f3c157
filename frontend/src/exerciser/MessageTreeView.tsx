/** A message assembly as collapsible trees with field types and values, and its serialized body. */
import { memo, useState } from 'react';
import { EDIT_TYPES, type FieldEdit, type MessageBody, type MessageField, type MessageView, propertiesFolder, treeOf } from './message-view';

export interface MessageTreeViewProps {
  view: MessageView;
  /** Given, values can be edited: called with the field and its new value and type. */
  onEdit?: (edit: FieldEdit) => void | Promise<void>;
  /** Fields (by path) drawn as chosen, e.g. fields a test ignores. */
  marked?: ReadonlySet<string>;
  /** Given, each field gets a check box that calls it (e.g. choose fields to ignore). */
  onMark?: (field: MessageField, marked: boolean) => void;
}

export function MessageTreeView({ view, onEdit, marked, onMark }: MessageTreeViewProps) {
  const properties = propertiesFolder(view);
  return (
    <div className="message-view" data-testid="message-view">
      {view.notices.length > 0 && (
        <ul className="message-notices" role="status">
          {view.notices.map((notice) => (
            <li key={notice}>{notice}</li>
          ))}
        </ul>
      )}
      <ul className="message-tree" role="tree">
        {view.trees.map((tree) => (
          <FieldRow key={tree.name} field={tree} depth={0} onEdit={onEdit} marked={marked} onMark={onMark} />
        ))}
        {/* the queue message's own properties: shown and marked, not edited (they are not in its trees) */}
        {properties && <FieldRow field={properties} depth={0} marked={marked} onMark={onMark} />}
      </ul>
      <BodyView body={view.body} />
    </div>
  );
}

interface RowProps {
  field: MessageField;
  depth: number;
  onEdit?: MessageTreeViewProps['onEdit'];
  marked?: ReadonlySet<string>;
  onMark?: MessageTreeViewProps['onMark'];
}

const FieldRow = memo(function FieldRow({ field, depth, onEdit, marked, onMark }: RowProps) {
  // the four trees and the body folder start open; deeper folders too, up to a few levels
  const [open, setOpen] = useState(depth < 4);
  const [editing, setEditing] = useState(false);
  const folder = field.children.length > 0;
  const label = field.namespace ? `${field.namespace}:${field.name}` : field.name || '*';
  return (
    <li role="treeitem" aria-expanded={folder ? open : undefined} data-path={field.path}>
      <div className={marked?.has(field.path) ? 'message-field marked' : 'message-field'}>
        {folder ? (
          <button type="button" className="twisty" aria-label={open ? `Collapse ${label}` : `Expand ${label}`} onClick={() => setOpen(!open)}>
            {open ? '▾' : '▸'}
          </button>
        ) : (
          <span className="twisty" />
        )}
        {onMark && depth > 0 && (
          <input
            type="checkbox"
            aria-label={`Mark ${field.path}`}
            checked={marked?.has(field.path) ?? false}
            onChange={(e) => onMark(field, e.target.checked)}
          />
        )}
        <span className="field-name">{label}</span>
        <span className="field-type" title="field type">
          {field.fieldType}
        </span>
        {field.value !== null && !editing && (
          <>
            <span className="value-type" title="value type">
              {field.valueType}
            </span>
            <span className="field-value" data-testid="field-value">
              {field.value}
              {field.valueCut ? '…' : ''}
            </span>
          </>
        )}
        {field.unparsed != null && <span className="muted"> ({field.unparsed.toLocaleString()} bytes, not parsed)</span>}
        {onEdit && depth > 0 && !folder && !editing && (
          <button type="button" className="link" aria-label={`Edit ${field.path}`} onClick={() => setEditing(true)}>
            edit
          </button>
        )}
        {editing && onEdit && (
          <ValueEditor
            field={field}
            onCancel={() => setEditing(false)}
            onSave={async (value, valueType) => {
              await onEdit({ tree: treeOf(field), ref: field.ref, value, valueType });
              setEditing(false);
            }}
          />
        )}
      </div>
      {folder && open && (
        <ul role="group">
          {field.children.map((kid) => (
            <FieldRow key={kid.ref.join('.')} field={kid} depth={depth + 1} onEdit={onEdit} marked={marked} onMark={onMark} />
          ))}
        </ul>
      )}
    </li>
  );
});

function ValueEditor({
  field,
  onSave,
  onCancel,
}: {
  field: MessageField;
  onSave: (value: string | null, valueType: string) => Promise<void>;
  onCancel: () => void;
}) {
  const [text, setText] = useState(field.value ?? '');
  const [valueType, setValueType] = useState(
    (EDIT_TYPES as readonly string[]).includes(field.valueType) ? field.valueType : 'CHARACTER',
  );
  const [error, setError] = useState('');
  return (
    <form
      className="value-editor"
      onSubmit={(e) => {
        e.preventDefault();
        setError('');
        onSave(valueType === 'NULL' ? null : text, valueType).catch((err: unknown) =>
          setError(err instanceof Error ? err.message : String(err)),
        );
      }}
    >
      <select aria-label={`Type of ${field.path}`} value={valueType} onChange={(e) => setValueType(e.target.value)}>
        {EDIT_TYPES.map((t) => (
          <option key={t}>{t}</option>
        ))}
      </select>
      <input aria-label={`Value of ${field.path}`} value={text} disabled={valueType === 'NULL'} onChange={(e) => setText(e.target.value)} />
      <button type="submit">Set</button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}

/** The body as its domain writes it: XML or JSON pretty printed, anything else as a hex dump. */
export function BodyView({ body }: { body: MessageBody }) {
  if (body.format === 'none') return <p className="muted">No body.</p>;
  return (
    <section className="message-body" aria-label="Serialized body">
      <h3>
        {body.domain} body · {body.bytes.toLocaleString()} bytes{body.format === 'hex' ? ' (hex)' : ''}
      </h3>
      <pre data-testid="message-body">{body.text}</pre>
    </section>
  );
}
