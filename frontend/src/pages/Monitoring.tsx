/** The execution-group monitoring page: process status, per-flow rates and latency, per-node statistics, queues. */
import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useState } from 'react';
import { api, ApiProblem, problemText, unwrap } from '../api/client';
import { followStats, queues, stats, type GroupStatistics } from '../api/runtime';

const Chart = lazy(() => import('./Chart'));
const WINDOW_SECONDS = 15 * 60;

export function uptime(seconds: number | undefined): string {
  if (seconds === undefined) return '—';
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${d ? `${d}d ` : ''}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}

export function bytes(v: number | undefined): string {
  if (v === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** Cumulative counters of one flow at one moment. */
interface Point {
  t: number;
  messages: number;
  elapsedUs: number;
}
export interface RatePoint {
  t: number;
  rate: number | null;
  latencyMs: number | null;
}

/** Messages per second and mean latency between consecutive samples of cumulative counters. */
export function rates(points: Point[]): RatePoint[] {
  const out: RatePoint[] = [];
  for (let i = 1; i < points.length; i += 1) {
    const a = points[i - 1];
    const b = points[i];
    const dt = b.t - a.t;
    const dm = b.messages - a.messages;
    if (dt <= 0 || dm < 0) continue; // a restarted group resets its counters
    out.push({ t: b.t, rate: dm / dt, latencyMs: dm > 0 ? (b.elapsedUs - a.elapsedUs) / dm / 1000 : null });
  }
  return out;
}

const flowKey = (g: GroupStatistics, flow: string) => `${g.broker}/${g.group}/${flow}`;

/** The latest statistics of every group, live over server-sent events (polling when the stream is refused). */
function useLiveStatistics(): { latest: GroupStatistics[] | null; history: Record<string, Point[]>; error: unknown } {
  const [latest, setLatest] = useState<GroupStatistics[] | null>(null);
  const [history, setHistory] = useState<Record<string, Point[]>>({});
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setInterval> | undefined;
    const take = (groups: GroupStatistics[]) => {
      setLatest(groups);
      setError(null);
      const now = Date.now() / 1000;
      setHistory((prev) => {
        const next: Record<string, Point[]> = {};
        for (const g of groups)
          for (const [name, f] of Object.entries(g.flows ?? {})) {
            const key = flowKey(g, name);
            const point = { t: g.time ?? now, messages: f.messages_in ?? 0, elapsedUs: f.elapsed_us ?? 0 };
            const old = (prev[key] ?? []).filter((p) => p.t > now - WINDOW_SECONDS && p.t < point.t);
            next[key] = [...old, point];
          }
        return next;
      });
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
  return { latest, history, error };
}

export default function Monitoring() {
  const health = useQuery({ queryKey: ['health'], queryFn: () => unwrap(api.GET('/api/health')), refetchInterval: 5000 });
  const queueList = useQuery({ queryKey: ['queues'], queryFn: queues.list, refetchInterval: 3000, retry: false });
  const { latest, history, error } = useLiveStatistics();
  const [selected, setSelected] = useState<string | null>(null);
  const groups = latest ?? [];
  const flows = groups.flatMap((g) => Object.entries(g.flows ?? {}).map(([name, f]) => ({ g, name, f, key: flowKey(g, name) })));
  const chosen = flows.find((x) => x.key === selected);
  const trace = useQuery({
    queryKey: ['trace', selected],
    enabled: !!chosen,
    queryFn: () => stats.trace(chosen!.g.broker, chosen!.g.group, chosen!.name),
    refetchInterval: 5000,
    retry: false,
  });
  const series = flows.map((x) => ({ key: x.key, points: rates(history[x.key] ?? []) }));
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => p.t)))].sort((a, b) => a - b);
  const at = (points: RatePoint[], field: 'rate' | 'latencyMs') => {
    const byT = new Map(points.map((p) => [p.t, p[field]]));
    return times.map((t) => byT.get(t) ?? null);
  };
  const queuesAbsent = queueList.error instanceof ApiProblem && queueList.error.code === 'not_available';
  const processes = (health.data?.components ?? []) as { name: string; state: string; pid?: number | null; since?: number }[];
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
            const stale = g.time !== undefined && Date.now() / 1000 - g.time > 30;
            const state = proc?.state ?? (stale ? 'stopped' : 'running');
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
                <td>{g.cpu_percent === undefined ? '—' : `${g.cpu_percent.toFixed(1)} %`}</td>
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
            const last = rates(history[key] ?? []).at(-1);
            return (
              <tr key={key} className={selected === key ? 'selected' : undefined}>
                <td>
                  <button type="button" className="link" onClick={() => setSelected(key)}>
                    {name}
                  </button>
                </td>
                <td>
                  {g.broker}/{g.group}
                </td>
                <td>
                  <span className={`status status-${f.state}`}>{f.state}</span>
                </td>
                <td data-testid={`flow-messages-${name}`}>{f.messages_in ?? 0}</td>
                <td>{last?.rate === null || last === undefined ? '—' : last.rate.toFixed(1)}</td>
                <td>{f.errors ?? 0}</td>
                <td>{f.backouts ?? 0}</td>
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
      {times.length > 1 && (
        <Suspense fallback={<p className="muted">Loading charts…</p>}>
          <div className="charts">
            <Chart
              title="Messages per second (last 15 minutes)"
              times={times}
              series={series.map((s) => ({ label: s.key, values: at(s.points, 'rate') }))}
            />
            <Chart
              title="Mean latency, ms (last 15 minutes)"
              times={times}
              series={series.map((s) => ({ label: s.key, values: at(s.points, 'latencyMs') }))}
            />
          </div>
        </Suspense>
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
          {trace.error && <p className="muted">{problemText(trace.error)}</p>}
          <pre className="trace" aria-label="User trace">
            {trace.data || 'No user trace for this flow (set the flow’s user trace level to record one).'}
          </pre>
        </>
      )}

      <h2>Queues</h2>
      {queuesAbsent && <p className="muted">Queue depths are not served by this server yet.</p>}
      {queueList.error && !queuesAbsent && <p className="error">{problemText(queueList.error)}</p>}
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
              <td>{q.backoutQueue ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
