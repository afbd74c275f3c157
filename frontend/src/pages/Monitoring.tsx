/**
 * The monitoring page: execution-group processes, per-flow throughput and latency over the last
 * quarter hour (kept by the server, so the charts are full when the page opens), per-node
 * statistics, the user trace and its setting, and where failed messages wait.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { api, problemText, unwrap } from '../api/client';
import { deployments, followStats, groups as groupApi, queues, stats, type FlowHistory, type GroupStatistics } from '../api/runtime';
import { useCan } from '../auth';

const Chart = lazy(() => import('./Chart'));

export function uptime(seconds: number | null | undefined): string {
  if (seconds === undefined || seconds === null) return '—';
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${d ? `${d}d ` : ''}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}

export function bytes(v: number | null | undefined): string {
  if (v === undefined || v === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** Red when a flow gave messages up (backout or dead-letter queue), amber when it backed any out. */
export function flowHealth(f: { backouts?: number | null; failures?: number | null }): string {
  if ((f.failures ?? 0) > 0) return 'flow-failing';
  return (f.backouts ?? 0) > 0 ? 'flow-backing-out' : '';
}

export const flowKey = (broker: string, group: string, flow: string) => `${broker}/${group}/${flow}`;

/** The server's history as chart data: one time axis, one series per flow, gaps where a flow had no sample. */
export function chartData(history: FlowHistory[]): {
  times: number[];
  rate: { label: string; values: (number | null)[] }[];
  latency: { label: string; values: (number | null)[] }[];
} {
  const times = [...new Set(history.flatMap((h) => h.points.map((p) => p.t)))].sort((a, b) => a - b);
  const column = (h: FlowHistory, pick: (p: FlowHistory['points'][number]) => number | null) => {
    const byT = new Map(h.points.map((p) => [p.t, pick(p)]));
    return times.map((t) => byT.get(t) ?? null);
  };
  const label = (h: FlowHistory) => flowKey(h.broker, h.group, h.flow);
  return {
    times,
    rate: history.map((h) => ({ label: label(h), values: column(h, (p) => p.msgs_per_s) })),
    latency: history.map((h) => ({ label: label(h), values: column(h, (p) => p.latency_ms) })),
  };
}

/** The latest statistics of every group, live over server-sent events (polling when the stream is refused). */
function useLiveStatistics(): { latest: GroupStatistics[] | null; error: unknown } {
  const [latest, setLatest] = useState<GroupStatistics[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setInterval> | undefined;
    const take = (groups: GroupStatistics[]) => {
      setLatest(groups);
      setError(null);
    };
    followStats(take, abort.signal).catch((err) => {
      if (abort.signal.aborted) return;
      setError(err);
      const poll = () => stats.groups().then(take, setError);
      void poll();
      timer = setInterval(poll, 3000);
    });
    return () => {
      abort.abort();
      if (timer) clearInterval(timer);
    };
  }, []);
  return { latest, error };
}

/** The user trace setting of one deployed flow: what the group runs with, and a form to change it. */
function TraceControl({ broker, group, flow, current }: { broker: string; group: string; flow: string; current?: { level: string; mode: string } | null }) {
  const canDeploy = useCan('deploy');
  const queryClient = useQueryClient();
  const brokers = useQuery({ queryKey: ['brokers'], queryFn: () => unwrap(api.GET('/api/brokers')) });
  const groupId = brokers.data?.find((b) => b.name === broker)?.groups.find((g) => g.name === group)?.id;
  const deployed = useQuery({
    queryKey: ['group-flows', groupId],
    enabled: groupId !== undefined,
    queryFn: () => groupApi.flows(groupId as number),
  });
  const deployment = deployed.data?.find((d) => d.flow === flow);
  const [level, setLevel] = useState(current?.level ?? 'none');
  const [mode, setMode] = useState(current?.mode ?? 'fast');
  const set = useMutation({
    mutationFn: () => deployments.setTrace(deployment!.id, { level, mode }),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['trace'] }),
  });
  return (
    <form
      className="inline card"
      aria-label="User trace setting"
      onSubmit={(e) => {
        e.preventDefault();
        if (deployment) set.mutate();
      }}
    >
      <span data-testid="trace-current">
        Now: {current ? `${current.level}, ${current.mode}` : 'not reported'}
      </span>
      <label htmlFor="trace-level">Trace level</label>
      <select id="trace-level" value={level} disabled={!canDeploy} onChange={(e) => setLevel(e.target.value)}>
        <option value="none">none</option>
        <option value="normal">normal</option>
        <option value="debug">debug</option>
      </select>
      <label htmlFor="trace-mode">Mode</label>
      <select id="trace-mode" value={mode} disabled={!canDeploy} onChange={(e) => setMode(e.target.value)}>
        <option value="fast">fast (buffered)</option>
        <option value="safe">safe (each record written through)</option>
      </select>
      {canDeploy && (
        <button type="submit" disabled={!deployment || set.isPending}>
          Set trace
        </button>
      )}
      {set.isSuccess && <span role="status">Trace set: {level}, {mode}</span>}
      {set.error && (
        <span className="error" role="alert">
          {problemText(set.error)}
        </span>
      )}
    </form>
  );
}

export default function Monitoring() {
  const health = useQuery({ queryKey: ['health'], queryFn: () => unwrap(api.GET('/api/health')), refetchInterval: 5000 });
  const queueList = useQuery({ queryKey: ['queues'], queryFn: queues.list, refetchInterval: 3000, retry: false });
  const failed = useQuery({ queryKey: ['queues', 'failed'], queryFn: queues.failed, refetchInterval: 3000, retry: false });
  const history = useQuery({ queryKey: ['stats', 'history'], queryFn: () => stats.history(), refetchInterval: 3000 });
  const { latest, error } = useLiveStatistics();
  const [selected, setSelected] = useState<string | null>(null);
  const groups = latest ?? [];
  const flows = groups.flatMap((g) =>
    Object.entries(g.flows ?? {}).map(([name, f]) => ({ g, name, f, key: flowKey(g.broker, g.group, name) })),
  );
  const chosen = flows.find((x) => x.key === selected);
  const trace = useQuery({
    queryKey: ['trace', selected],
    enabled: !!chosen,
    queryFn: () => stats.trace(chosen!.g.broker, chosen!.g.group, chosen!.name),
    refetchInterval: 5000,
    retry: false,
  });
  const charts = useMemo(() => chartData(history.data ?? []), [history.data]);
  const lastRate = (key: string) => {
    const h = history.data?.find((x) => flowKey(x.broker, x.group, x.flow) === key);
    return h?.points.at(-1)?.msgs_per_s;
  };
  const processes = health.data?.components ?? [];
  const nodeRows = chosen ? Object.entries(chosen.f.nodes ?? {}) : [];
  const totalCpu = nodeRows.reduce((sum, [, n]) => sum + (n.cpu_us ?? 0), 0);

  return (
    <section className="page" aria-label="Monitoring">
      <h1>Monitoring</h1>
      <h2>Execution groups</h2>
      {error !== null && latest === null && <p className="muted">Statistics: {problemText(error)}</p>}
      <table className="grid" aria-label="Execution groups">
        <thead>
          <tr>
            <th>Group</th>
            <th>Status</th>
            <th>PID</th>
            <th>Host</th>
            <th>Uptime</th>
            <th>RSS</th>
            <th>CPU</th>
            <th>Threads</th>
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => {
            const proc = processes.find((p) => p.name === `execution-group:${g.broker}/${g.group}`);
            const state = proc?.state ?? (g.reporting ? 'running' : 'stopped');
            return (
              <tr key={`${g.broker}/${g.group}`}>
                <td>
                  {g.broker}/{g.group}
                </td>
                <td>
                  <span className={`status status-${state}`}>{state}</span>
                </td>
                <td>{g.pid ?? proc?.pid ?? '—'}</td>
                <td>{g.host ?? 'localhost'}</td>
                <td>{uptime(g.uptime_s)}</td>
                <td>{bytes(g.rss_bytes)}</td>
                <td>{g.cpu_percent === null || g.cpu_percent === undefined ? '—' : `${g.cpu_percent.toFixed(1)} %`}</td>
                <td>{g.threads ?? '—'}</td>
              </tr>
            );
          })}
          {processes
            .filter((p) => !p.name.startsWith('execution-group:'))
            .map((p) => (
              <tr key={p.name} className="muted">
                <td>{p.name}</td>
                <td>
                  <span className={`status status-${p.state}`}>{p.state}</span>
                </td>
                <td>{p.pid ?? '—'}</td>
                <td>localhost</td>
                <td>{p.since ? uptime(Date.now() / 1000 - p.since) : '—'}</td>
                <td colSpan={3} />
              </tr>
            ))}
        </tbody>
      </table>

      <h2>Flows</h2>
      <table className="grid" aria-label="Flow statistics">
        <thead>
          <tr>
            <th>Flow</th>
            <th>Group</th>
            <th>State</th>
            <th>Messages</th>
            <th>Msgs/s</th>
            <th>Errors</th>
            <th>Backouts</th>
            <th>Threads</th>
          </tr>
        </thead>
        <tbody>
          {flows.map(({ g, name, f, key }) => {
            const rate = lastRate(key);
            return (
              <tr
                key={key}
                className={[selected === key ? 'selected' : '', flowHealth(f)].filter(Boolean).join(' ') || undefined}
                title={f.failures ? `${f.failures} messages given up to a backout or dead-letter queue` : undefined}
              >
                <td>
                  <button type="button" className="link" onClick={() => setSelected(key)}>
                    {name}
                  </button>
                </td>
                <td>
                  {g.broker}/{g.group}
                </td>
                <td>
                  <span className={`status status-${f.state}`} title={f.detail || undefined}>
                    {f.detail || f.state}
                  </span>
                </td>
                <td data-testid={`flow-messages-${name}`}>{f.messages_in ?? 0}</td>
                <td>{rate === undefined ? '—' : rate.toFixed(1)}</td>
                <td>{f.errors ?? 0}</td>
                <td data-testid={`flow-backouts-${name}`}>{f.backouts ?? 0}</td>
                <td>{f.threads ?? 0}</td>
              </tr>
            );
          })}
          {!flows.length && (
            <tr>
              <td colSpan={8} className="muted">
                No flow is reporting statistics.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {history.error && <p className="error">History: {problemText(history.error)}</p>}
      {charts.times.length > 0 ? (
        <Suspense fallback={<p className="muted">Loading charts…</p>}>
          <div className="charts" data-testid="charts" data-points={charts.times.length}>
            <Chart title="Messages per second (last 15 minutes)" times={charts.times} series={charts.rate} />
            <Chart title="Mean latency, ms (last 15 minutes)" times={charts.times} series={charts.latency} />
          </div>
        </Suspense>
      ) : (
        <p className="muted">No flow has reported two statistics yet: the charts start with the second.</p>
      )}

      {chosen && (
        <>
          <h2>Nodes of {chosen.name}</h2>
          <table className="grid" aria-label="Node statistics">
            <thead>
              <tr>
                <th>Node</th>
                <th>Messages in</th>
                <th>Messages out</th>
                <th>CPU share</th>
                <th>CPU µs / msg</th>
                <th>Errors</th>
              </tr>
            </thead>
            <tbody>
              {nodeRows.map(([id, n]) => (
                <tr key={id}>
                  <td>{id}</td>
                  <td>{n.messages_in ?? 0}</td>
                  <td>{n.messages_out ?? 0}</td>
                  <td>{totalCpu ? `${(((n.cpu_us ?? 0) / totalCpu) * 100).toFixed(1)} %` : '—'}</td>
                  <td>{n.messages_in ? ((n.cpu_us ?? 0) / n.messages_in).toFixed(0) : '—'}</td>
                  <td>{n.errors ?? 0}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>User trace</h2>
          <TraceControl
            key={chosen.key}
            broker={chosen.g.broker}
            group={chosen.g.group}
            flow={chosen.name}
            current={chosen.f.trace}
          />
          {trace.error && <p className="muted">{problemText(trace.error)}</p>}
          <pre className="trace" aria-label="User trace">
            {trace.data || 'No user trace yet: set the flow’s user trace level to record one.'}
          </pre>
        </>
      )}

      <h2>Failed messages</h2>
      {failed.error && <p className="error">{problemText(failed.error)}</p>}
      {failed.data && (
        <table className="grid" aria-label="Failed messages">
          <thead>
            <tr>
              <th>Queue</th>
              <th>Holds</th>
              <th>Messages</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <td>{failed.data.deadLetterQueue}</td>
              <td>dead letters</td>
              <td data-testid="dead-letter-depth">{failed.data.deadLetterDepth}</td>
            </tr>
            {failed.data.backoutQueues.map((b) => (
              <tr key={b.name}>
                <td>{b.name}</td>
                <td>
                  backouts of {b.usedBy.join(', ')}
                  {!b.defined && <span className="error"> (not defined: backouts go to the dead-letter queue)</span>}
                </td>
                <td data-testid={`backout-depth-${b.name}`}>{b.depth}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Queues</h2>
      {queueList.error && <p className="error">{problemText(queueList.error)}</p>}
      <table className="grid" aria-label="Queue depths">
        <thead>
          <tr>
            <th>Queue</th>
            <th>Depth</th>
            <th>Backout queue</th>
          </tr>
        </thead>
        <tbody>
          {(queueList.data ?? []).map((q) => (
            <tr key={q.name}>
              <td>{q.name}</td>
              <td>{q.depth}</td>
              <td>{q.backoutQueue}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
