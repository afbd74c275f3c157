/**
 * Calls to the runtime's routes (deployments, execution groups, statistics, queues) through the
 * typed client: every path, body and answer comes from the generated OpenAPI schema.
 */
import { useAuth } from '../auth';
import { api, toProblem, unwrap, type Schemas } from './client';

export type Deployment = Schemas['DeploymentOut'];
export type GroupStatistics = Schemas['GroupStatistics'];
export type FlowHistory = Schemas['FlowHistory'];
export type QueueMessage = Schemas['MessageOut'];
export type PutMessage = Schemas['PutIn'];

/** Statuses after which a deployment changes only when someone acts on it again. */
export const FINAL_STATES = new Set(['running', 'stopped', 'failed', 'undeployed', 'replaced']);

const deployment = (id: number) => ({ params: { path: { deployment_id: id } } });
const group = (id: number) => ({ params: { path: { group_id: id } } });
const queue = (name: string) => ({ params: { path: { queue: name } } });

export const deployments = {
  create: (body: Schemas['DeploymentIn']) => unwrap(api.POST('/api/deployments', { body })),
  get: (id: number) => unwrap(api.GET('/api/deployments/{deployment_id}', deployment(id))),
  undeploy: (id: number) => unwrap(api.DELETE('/api/deployments/{deployment_id}', deployment(id))),
  start: (id: number) => unwrap(api.POST('/api/deployments/{deployment_id}/start', deployment(id))),
  stop: (id: number) => unwrap(api.POST('/api/deployments/{deployment_id}/stop', deployment(id))),
  setTrace: (id: number, body: Schemas['TraceIn']) =>
    unwrap(api.PUT('/api/deployments/{deployment_id}/trace', { ...deployment(id), body })),
};

export const groups = {
  flows: (id: number) => unwrap(api.GET('/api/groups/{group_id}/flows', group(id))),
  start: (id: number) => unwrap(api.POST('/api/groups/{group_id}/start', group(id))),
  stop: (id: number) => unwrap(api.POST('/api/groups/{group_id}/stop', group(id))),
};

export const queues = {
  list: () => unwrap(api.GET('/api/queues')),
  failed: () => unwrap(api.GET('/api/queues/failed')),
  define: (body: Schemas['DefineIn']) => unwrap(api.POST('/api/queues', { body })),
  alter: (name: string, body: Schemas['QueueAttributesIn']) => unwrap(api.PATCH('/api/queues/{queue}', { ...queue(name), body })),
  remove: (name: string, purge = false) =>
    unwrap(api.DELETE('/api/queues/{queue}', { params: { path: { queue: name }, query: { purge } } })),
  purge: (name: string) => unwrap(api.POST('/api/queues/{queue}/purge', queue(name))),
  put: (name: string, body: PutMessage) => unwrap(api.POST('/api/queues/{queue}/messages', { ...queue(name), body })),
  browse: (name: string, limit = 50) =>
    unwrap(api.GET('/api/queues/{queue}/messages', { params: { path: { queue: name }, query: { limit } } })),
  get: (name: string, wait = 0) =>
    unwrap(api.POST('/api/queues/{queue}/get', { params: { path: { queue: name }, query: { wait } } })),
  move: (from: string, msgId: string, to: string) =>
    unwrap(
      api.POST('/api/queues/{queue}/messages/{msg_id}/move', {
        params: { path: { queue: from, msg_id: msgId } },
        body: { to },
      }),
    ),
  moveToOrigin: (from: string, msgId: string) =>
    unwrap(
      api.POST('/api/queues/{queue}/messages/{msg_id}/move-to-origin', {
        params: { path: { queue: from, msg_id: msgId } },
      }),
    ),
};

export const stats = {
  groups: () => unwrap(api.GET('/api/stats/groups')),
  history: (seconds?: number) => unwrap(api.GET('/api/stats/history', { params: { query: { seconds } } })),
  /** The tail of a flow's user trace; '' while it has none (the empty answer has no body to parse). */
  trace: async (broker: string, group: string, flow: string): Promise<string> =>
    (await unwrap(
      api.GET('/api/stats/trace/{broker}/{group}/{flow}', {
        params: { path: { broker, group, flow }, query: { limit: 65536 } },
        parseAs: 'text',
      }),
    )) ?? '',
};

/**
 * Follow GET /api/stats/stream (server-sent events, each the body of GET /api/stats/groups).
 * EventSource cannot send the bearer token, so the stream is read with fetch. Resolves when the
 * stream ends or `signal` aborts; rejects with the API's problem when the route refuses.
 */
export async function followStats(
  onStats: (groups: GroupStatistics[]) => void,
  signal: AbortSignal,
  interval = 2,
): Promise<void> {
  const token = useAuth.getState().token;
  const response = await fetch(`/api/stats/stream?interval=${interval}`, {
    headers: token ? { Authorization: `Bearer ${token}` } : {},
    signal,
  });
  if (!response.ok || !response.body) {
    if (response.status === 401) useAuth.getState().logout();
    throw toProblem(response.status, await response.json().catch(() => null));
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data) onStats(parseStatsEvent(data));
      end = buffer.indexOf('\n\n');
    }
  }
}

/** One event's data: the JSON of GET /api/stats/groups (anything else is no statistics). */
export function parseStatsEvent(data: string): GroupStatistics[] {
  try {
    const parsed = JSON.parse(data) as unknown;
    return Array.isArray(parsed) ? (parsed as GroupStatistics[]) : [];
  } catch {
    return [];
  }
}
