/** The property panel, generated from the focused node's spec: one control per declared property. */
import { lazy, Suspense, useState } from 'react';
import type { Problem } from './document';
import { moduleSkeleton } from './esql-skeleton';
import { seenValue } from './problems';
import { propertyProblem, type PropertySpec } from './spec';
import { useSpecs } from './specs-context';
import { useDesigner } from './store';
import { FlowTestsButton } from './FlowTestsPanel';

const EsqlEditor = lazy(() => import('./EsqlEditor'));

export interface EsqlDiagnosticsSink {
  (nodeId: string, property: string, problems: Problem[]): void;
}

function JsonField({
  id,
  value,
  readOnly,
  onChange,
}: {
  id: string;
  value: unknown;
  readOnly: boolean;
  onChange: (v: unknown) => void;
}) {
  const [text, setText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 2)));
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <textarea
        id={id}
        rows={4}
        value={text}
        readOnly={readOnly}
        onChange={(e) => {
          setText(e.target.value);
          if (!e.target.value.trim()) {
            setError(null);
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(e.target.value));
            setError(null);
          } catch (err) {
            setError(`invalid JSON: ${(err as Error).message}`);
          }
        }}
      />
      {error && <div className="field-error">{error}</div>}
    </>
  );
}

export function PropertyField({
  nodeId,
  spec,
  value,
  readOnly,
  onChange,
  onEsqlDiagnostics,
  serverProblem,
  compileProblems = [],
  skeleton,
  label,
}: {
  compileProblems?: Problem[];
  /** For an ESQL property: the module the node runs, offered while the text is empty. */
  skeleton?: string | null;
  label?: string;
  nodeId: string;
  spec: PropertySpec;
  value: unknown;
  readOnly: boolean;
  onChange: (v: unknown) => void;
  onEsqlDiagnostics?: EsqlDiagnosticsSink;
  serverProblem?: string;
}) {
  const id = `prop-${nodeId}-${spec.name}`;
  const problem = serverProblem ?? propertyProblem(spec, value);
  let control;
  if (spec.type === 'enum') {
    control = (
      <select id={id} value={String(value ?? '')} disabled={readOnly} onChange={(e) => onChange(e.target.value)}>
        {!spec.required && <option value="">(default)</option>}
        {spec.enum.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (spec.type === 'boolean') {
    control = (
      <input
        id={id}
        type="checkbox"
        checked={value === true}
        disabled={readOnly}
        onChange={(e) => onChange(e.target.checked)}
      />
    );
  } else if (spec.type === 'integer') {
    control = (
      <input
        id={id}
        type="number"
        value={value === undefined || value === null ? '' : String(value)}
        min={spec.minimum ?? undefined}
        max={spec.maximum ?? undefined}
        step={1}
        readOnly={readOnly}
        onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))}
      />
    );
  } else if (spec.editor === 'esql' || spec.type === 'esql') {
    control = (
      <Suspense fallback={<div className="muted">loading the ESQL editor…</div>}>
        <EsqlEditor
          id={id}
          value={typeof value === 'string' ? value : ''}
          readOnly={readOnly}
          onChange={onChange}
          onDiagnostics={(found) => onEsqlDiagnostics?.(nodeId, spec.name, found)}
          external={compileProblems}
          skeleton={skeleton}
          label={label}
          node={nodeId}
        />
      </Suspense>
    );
  } else if (spec.type === 'json') {
    control = <JsonField key={id} id={id} value={value} readOnly={readOnly} onChange={onChange} />;
  } else if (spec.type === 'sql' || spec.type === 'text' || spec.editor === 'multiline') {
    control = (
      <textarea
        id={id}
        rows={spec.type === 'sql' ? 6 : 3}
        className={spec.type === 'sql' ? 'code' : undefined}
        value={typeof value === 'string' ? value : ''}
        readOnly={readOnly}
        onChange={(e) => onChange(e.target.value)}
      />
    );
  } else {
    control = (
      <input
        id={id}
        type="text"
        value={typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value)}
        placeholder={spec.type === 'queue' ? 'QUEUE.NAME' : spec.type === 'topic' ? 'a/topic/string' : ''}
        readOnly={readOnly}
        onChange={(e) => onChange(e.target.value)}
      />
    );
  }
  return (
    <div className={`field${problem ? ' invalid' : ''}`} data-property={spec.name}>
      <label htmlFor={id}>
        {spec.label}
        {spec.required && <span className="required" aria-label="required"> *</span>}
      </label>
      {control}
      {spec.description && <div className="hint">{spec.description}</div>}
      {problem && (
        <div className="field-error" role="alert">
          {problem}
        </div>
      )}
    </div>
  );
}

export function PropertyPanel({
  readOnly,
  serverProblems,
  onEsqlDiagnostics,
}: {
  readOnly: boolean;
  serverProblems: Problem[];
  onEsqlDiagnostics: EsqlDiagnosticsSink;
}) {
  const specs = useSpecs();
  const focused = useDesigner((s) => s.focused);
  const node = useDesigner((s) => s.nodes.find((n) => n.id === s.focused));
  const setProperty = useDesigner((s) => s.setProperty);
  const renameNode = useDesigner((s) => s.renameNode);
  const meta = useDesigner((s) => s.meta);
  const setMeta = useDesigner((s) => s.setMeta);
  if (!focused || !node) {
    const props = meta.properties;
    return (
      <aside className="properties" aria-label="Flow properties">
        <h2>Flow</h2>
        <div className="field">
          <label htmlFor="flow-name">Name</label>
          <input
            id="flow-name"
            value={meta.name}
            readOnly={readOnly}
            onChange={(e) => setMeta({ name: e.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor="flow-instances">Additional instances</label>
          <input
            id="flow-instances"
            type="number"
            min={0}
            value={Number(props.additionalInstances ?? 0)}
            readOnly={readOnly}
            onChange={(e) =>
              setMeta({ properties: { ...props, additionalInstances: Math.max(0, Number(e.target.value) || 0) } })
            }
          />
        </div>
        <div className="field">
          <label htmlFor="flow-coordinated">
            <input
              id="flow-coordinated"
              type="checkbox"
              checked={props.coordinatedTransaction === true}
              disabled={readOnly}
              onChange={(e) => setMeta({ properties: { ...props, coordinatedTransaction: e.target.checked } })}
            />{' '}
            Coordinated transaction
          </label>
        </div>
        <div className="field">
          <span className="field-label">Tests</span>
          <FlowTestsButton />
        </div>
        <p className="muted">Select a node to edit its properties.</p>
      </aside>
    );
  }
  const spec = specs[node.data.type];
  return (
    <aside className="properties" aria-label={`Properties of ${node.data.name}`}>
      <h2>
        {node.data.name} <small>{spec?.label ?? node.data.type}</small>
      </h2>
      <div className="field">
        <label htmlFor={`node-name-${node.id}`}>Node name</label>
        <input
          id={`node-name-${node.id}`}
          value={node.data.name}
          readOnly={readOnly}
          onChange={(e) => renameNode(node.id, e.target.value)}
        />
      </div>
      {!spec && <p className="field-error">Unknown node type {node.data.type}: no spec to edit it with.</p>}
      {spec?.properties.map((p) => (
        <PropertyField
          key={`${node.id}:${p.name}`}
          nodeId={node.id}
          spec={p}
          value={node.data.properties[p.name]}
          readOnly={readOnly}
          onChange={(v) => setProperty(node.id, p.name, v)}
          onEsqlDiagnostics={onEsqlDiagnostics}
          serverProblem={
            serverProblems.find(
              (sp) =>
                sp.node === node.id &&
                sp.property === p.name &&
                sp.line === undefined &&
                // the server saw another value: the designer's own check speaks for this one
                (sp.seen === undefined || sp.seen === seenValue(node.data.properties[p.name])),
            )?.message
          }
          skeleton={moduleSkeleton(spec, meta.name, node.data.name, node.data.properties.module)}
          label={`${node.data.name} · ${p.label}`}
          compileProblems={serverProblems.filter(
            (sp) => sp.node === node.id && sp.line !== undefined && (sp.property === p.name || !sp.property),
          )}
        />
      ))}
    </aside>
  );
}
