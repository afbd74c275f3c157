/**
 * The step debugger of the flow on the canvas: breakpoints on its connections and ESQL lines, the
 * flow threads paused at them with their message (editable) and the ESQL variables in scope, and
 * resume, step and abort. Only a development group pauses; a production group says so.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { api, problemText, unwrap } from '../api/client';
import { groups, type Deployment } from '../api/runtime';
import { useCan } from '../auth';
import { esqlProperty } from '../designer/spec';
import { useSpecs } from '../designer/specs-context';
import { useDesigner } from '../designer/store';
import { MessageTreeView } from '../exerciser/MessageTreeView';
import type { FieldEdit, MessageView } from '../exerciser/message-view';
import { connectionId, debug, type Breakpoints, type DebugAction, type Pause } from './debug-api';
import { debugTarget } from './esql-breakpoints';

const LIVE = new Set(['running', 'waiting', 'stopped']);

interface Target {
  deployment: Deployment;
  group: { id: number; name: string; broker: string; development: boolean };
}

/** Where the flow named ``flow`` is deployed, with each group's development flag. */
async function deploymentsOf(flow: string): Promise<Target[]> {
  const brokers = await unwrap(api.GET('/api/brokers'));
  const found: Target[] = [];
  for (const broker of brokers) {
    for (const group of broker.groups) {
      for (const d of await groups.flows(group.id)) {
        if (d.flow === flow && LIVE.has(d.status))
          found.push({ deployment: d, group: { id: group.id, name: group.name, broker: broker.name, development: group.development } });
      }
    }
  }
  // development groups first: that is where a flow can be debugged
  return found.sort((a, b) => Number(b.group.development) - Number(a.group.development));
}

export function DebugPanel({ flowName }: { flowName: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details className="debug-panel" data-testid="debug-panel" open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Debugger</summary>
      {open && <DebugBody flowName={flowName} />}
    </details>
  );
}

function DebugBody({ flowName }: { flowName: string }) {
  const targets = useQuery({ queryKey: ['debug-targets', flowName], queryFn: () => deploymentsOf(flowName), refetchInterval: 3000 });
  const [chosen, setChosen] = useState<number | null>(null);
  const list = targets.data ?? [];
  const target = list.find((t) => t.deployment.id === chosen) ?? list[0];
  if (targets.error) return <p className="error">{problemText(targets.error)}</p>;
  if (!targets.data) return <p className="muted">Loading…</p>;
  if (!target) return <p className="muted">Deploy the flow to a development group to debug it.</p>;
  return (
    <div className="debug-body">
      <label>
        Deployment{' '}
        <select aria-label="Deployment to debug" value={target.deployment.id} onChange={(e) => setChosen(Number(e.target.value))}>
          {list.map((t) => (
            <option key={t.deployment.id} value={t.deployment.id}>
              {t.group.broker}/{t.group.name} · v{t.deployment.version}
              {t.group.development ? ' · development' : ' · production'}
            </option>
          ))}
        </select>
      </label>
      {target.group.development ? (
        <DeploymentDebugger deploymentId={target.deployment.id} />
      ) : (
        <p className="notice" role="status" data-testid="debug-production">
          {target.group.name} is a production group: its flows never pause. Mark it as a development group on the Topology page to
          debug this flow.
        </p>
      )}
    </div>
  );
}

function DeploymentDebugger({ deploymentId }: { deploymentId: number }) {
  const canDebug = useCan('deploy');
  const queryClient = useQueryClient();
  const edges = useDesigner((s) => s.edges);
  const nodes = useDesigner((s) => s.nodes);
  const specs = useSpecs();
  const breakpoints = useQuery({
    queryKey: ['breakpoints', deploymentId],
    queryFn: () => debug.breakpoints(deploymentId),
    refetchInterval: 1500,
  });
  const pauses = useQuery({ queryKey: ['pauses', deploymentId], queryFn: () => debug.pauses(deploymentId), refetchInterval: 800 });
  const [error, setError] = useState<string | null>(null);

  const connections = useMemo(
    () =>
      edges.map((e) => ({
        id: connectionId(e.source, e.sourceHandle ?? 'out', e.target, e.targetHandle ?? 'in'),
        label: `${nameOf(nodes, e.source)}.${e.sourceHandle ?? 'out'} → ${nameOf(nodes, e.target)}.${e.targetHandle ?? 'in'}`,
      })),
    [edges, nodes],
  );
  const esqlNodes = nodes.filter((n) => esqlProperty(specs[n.data.type]) !== '');

  const save = async (next: { connections: string[]; esql: { node: string; line: number }[] }) => {
    setError(null);
    try {
      const saved = await debug.setBreakpoints(deploymentId, next);
      queryClient.setQueryData(['breakpoints', deploymentId], saved);
    } catch (err) {
      setError(problemText(err));
    }
  };
  const current = breakpoints.data;
  // the Compute editor's breakpoint gutter follows this deployment while the panel is open
  const saveRef = useRef(save);
  saveRef.current = save;
  useEffect(() => {
    if (!current) return;
    debugTarget.setState({ target: { deploymentId, breakpoints: current, save: (next) => saveRef.current(next) } });
  }, [current, deploymentId]);
  useEffect(() => () => debugTarget.setState({ target: null }), []);
  const toggle = (id: string, on: boolean) => {
    if (!current) return;
    const set = new Set(current.connections);
    if (on) set.add(id);
    else set.delete(id);
    void save({ connections: [...set], esql: current.esql });
  };
  const setLines = (node: string, lines: number[]) => {
    if (!current) return;
    void save({ connections: current.connections, esql: [...current.esql.filter((b) => b.node !== node), ...lines.map((line) => ({ node, line }))] });
  };

  return (
    <div className="debug-deployment">
      {error && (
        <p className="error" role="alert" data-testid="debug-error">
          {error}
        </p>
      )}
      <h3>
        Breakpoints{' '}
        {current && hasAny(current) && (
          <span className="muted" data-testid="breakpoints-state">
            {current.armed ? 'armed' : 'arming…'}
          </span>
        )}
      </h3>
      <ul className="plain">
        {connections.map((c) => (
          <li key={c.id}>
            <label>
              <input
                type="checkbox"
                aria-label={`Break on ${c.id}`}
                disabled={!canDebug || !current}
                checked={current?.connections.includes(c.id) ?? false}
                onChange={(e) => toggle(c.id, e.target.checked)}
              />{' '}
              {c.label}
            </label>
          </li>
        ))}
      </ul>
      {esqlNodes.map((n) => (
        <EsqlLines
          key={n.id}
          node={n.id}
          name={n.data.name}
          lines={(current?.esql ?? []).filter((b) => b.node === n.id).map((b) => b.line)}
          disabled={!canDebug || !current}
          onSet={(lines) => setLines(n.id, lines)}
        />
      ))}
      <h3>Paused</h3>
      {pauses.error && <p className="error">{problemText(pauses.error)}</p>}
      {pauses.data && pauses.data.length === 0 && <p className="muted">No flow thread is paused.</p>}
      {pauses.data?.map((p) => (
        <PauseView
          key={p.id}
          pause={p}
          nodes={nodes}
          canDebug={canDebug}
          onCommand={async (action, edits) => {
            setError(null);
            try {
              await debug.command(deploymentId, p.id, action, edits);
            } catch (err) {
              if (!action) throw new Error(problemText(err), { cause: err });
              setError(problemText(err));
            }
            await queryClient.invalidateQueries({ queryKey: ['pauses', deploymentId] });
          }}
        />
      ))}
    </div>
  );
}

function EsqlLines({
  node,
  name,
  lines,
  disabled,
  onSet,
}: {
  node: string;
  name: string;
  lines: number[];
  disabled: boolean;
  onSet: (lines: number[]) => void;
}) {
  const shown = lines.join(', ');
  const [text, setText] = useState(shown);
  useEffect(() => setText(shown), [shown]);
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        onSet(
          text
            .split(/[\s,]+/)
            .filter(Boolean)
            .map(Number)
            .filter((n) => Number.isInteger(n)),
        );
      }}
    >
      <label htmlFor={`esql-lines-${node}`}>ESQL lines of {name}</label>{' '}
      <input id={`esql-lines-${node}`} value={text} disabled={disabled} placeholder="e.g. 4, 7" onChange={(e) => setText(e.target.value)} />{' '}
      <button type="submit" disabled={disabled}>
        Set
      </button>
    </form>
  );
}

function PauseView({
  pause,
  nodes,
  canDebug,
  onCommand,
}: {
  pause: Pause;
  nodes: { id: string; data: { name: string } }[];
  canDebug: boolean;
  onCommand: (action: DebugAction | '', edits?: FieldEdit[]) => Promise<void>;
}) {
  const [busy, setBusy] = useState(false);
  const where =
    pause.kind === 'esql' ? `${nameOf(nodes, pause.node)}, ESQL line ${pause.line}` : `connection ${pause.connection.replace('->', ' → ')}`;
  const act = (action: DebugAction) => {
    setBusy(true);
    void onCommand(action).finally(() => setBusy(false));
  };
  return (
    <article className="debug-pause" data-testid="debug-pause" data-pause={pause.id}>
      <p>
        <strong data-testid="pause-where">Paused at {where}</strong> · {pause.thread} · resumes by itself at{' '}
        {new Date(pause.resumesAt).toLocaleTimeString()}
        {pause.revision > 0 && <span className="muted"> · edited {pause.revision}×</span>}
      </p>
      {canDebug && (
        <div className="toolbar-inline">
          <button type="button" className="primary" disabled={busy} onClick={() => act('resume')}>
            Resume
          </button>{' '}
          <button type="button" disabled={busy} onClick={() => act('step')} title="Go on to the next connection or ESQL line">
            Step
          </button>{' '}
          <button type="button" className="danger" disabled={busy} onClick={() => act('abort')} title="Back the unit of work out">
            Abort
          </button>
        </div>
      )}
      {pause.variables.length > 0 && (
        <table className="grid" aria-label="Variables in scope">
          <thead>
            <tr>
              <th>Variable</th>
              <th>Type</th>
              <th>Value</th>
            </tr>
          </thead>
          <tbody>
            {pause.variables.map((v) => (
              <tr key={v.name} data-testid={`variable-${v.name}`}>
                <td>
                  {v.name}
                  {v.scope && v.scope !== 'local' && <small className="muted"> ({v.scope})</small>}
                </td>
                <td>{v.type}</td>
                <td>{v.value ?? 'NULL'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <MessageTreeView
        key={pause.revision}
        view={pause.message as unknown as MessageView}
        onEdit={canDebug ? (edit) => onCommand('', [edit]) : undefined}
      />
    </article>
  );
}

function hasAny(b: Breakpoints): boolean {
  return b.connections.length + b.esql.length > 0;
}

function nameOf(nodes: { id: string; data: { name: string } }[], id: string): string {
  return nodes.find((n) => n.id === id)?.data.name ?? id;
}
