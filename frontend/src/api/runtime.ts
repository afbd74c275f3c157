/**
 * Calls to the runtime's routes (deployments, group control, statistics, queues). Those routes are
 * still landing, so they go through `rawCall`, which reports an absent route as `not_available`.
 */
import { useAuth } from '../auth';
import { rawCall } from './client';

export interface DeploymentDiagnostic {
  node?: string;
  property?: string;
  line?: number;
  column?: number;
  pointer?: string;
  message: string;
}
/** A deployment as GET /api/deployments/{id} describes it. */
export interface Deployment {
  id: number;
  flow: string;
  flowId: number;
  version: number;
  broker: string;
  group: string;
  groupId: number;
  additionalInstances: number;
  status: string;
  diagnostics: DeploymentDiagnostic[];
}

/** Statuses after which a deployment changes only when someone acts on it again. */
export const FINAL_STATES = new Set(['running', 'stopped', 'failed', 'undeployed', 'replaced']);

export function startDeployment(body: {
  flowId: number;
  version: number | undefined;
  broker: string;
  group: string;
  additionalInstances: number;
}): Promise<Deployment> {
  return rawCall<Deployment>('POST', '/api/deployments', body);
}

export function getDeployment(id: number): Promise<Deployment> {
  return rawCall<Deployment>('GET', `/api/deployments/${id}`);
}

export function groupFlows(groupId: number): Promise<Deployment[]> {
  return rawCall<Deployment[]>('GET', `/api/groups/${groupId}/flows`);
}

export function undeploy(id: number): Promise<Deployment> {
  return rawCall<Deployment>('DELETE', `/api/deployments/${id}`);
}

export function groupAction(groupId: number, action: 'start' | 'stop'): Promise<Deployment[]> {
  return rawCall<Deployment[]>('POST', `/api/groups/${groupId}/${action}`);
}

/** A queue as GET /api/queues lists it. */
export interface QueueInfo {
  name: string;
  depth: number;
  backoutQueue: string;
  backoutThreshold: number;
  attributes: Record<string, unknown>;
}
export interface QueueMessage {
  body: string;
  bodyBase64?: string | null;
  descriptor: Record<string, unknown> & { msgId?: string };
  properties: Record<string, unknown>;
  rfh2?: Record<string, unknown> | null;
}
export interface PutMessage {
  body: string;
  format: 'MQSTR' | 'XML' | 'JSON' | 'NONE';
  persistent: boolean;
  priority: number;
  correlId?: string;
  replyToQ?: string;
  rfh2?: { domain: string; usr?: Record<string, string> };
}

const q = (name: string) => encodeURIComponent(name);

export const queues = {
  list: () => rawCall<QueueInfo[]>('GET', '/api/queues'),
  define: (name: string, backoutThreshold = 0, backoutRequeueQ = '') =>
    rawCall<QueueInfo>('POST', '/api/queues', { name, backoutThreshold, backoutRequeueQ }),
  put: (name: string, message: PutMessage) =>
    rawCall<{ queue: string; msgId: string }>('POST', `/api/queues/${q(name)}/messages`, message),
  browse: (name: string, limit = 50) => rawCall<QueueMessage[]>('GET', `/api/queues/${q(name)}/messages?limit=${limit}`),
  get: (name: string, wait = 0) => rawCall<QueueMessage | null>('POST', `/api/queues/${q(name)}/get?wait=${wait}`),
  move: (from: string, msgId: string, to: string) =>
    rawCall<{ queue: string; msgId: string }>('POST', `/api/queues/${q(from)}/messages/${msgId}/move`, { to }),
};

/** Per-node statistics as an execution group publishes them. */
export interface NodeStatistics {
  messages_in?: number;
  messages_out?: number;
  errors?: number;
  cpu_us?: number;
  elapsed_us?: number;
}
export interface FlowStatistics {
  flow: string;
  version?: number;
  state?: string;
  threads?: number;
  messages_in?: number;
  cpu_us?: number;
  elapsed_us?: number;
  errors?: number;
  backouts?: number;
  nodes?: Record<string, NodeStatistics>;
}
/** One execution group's last published statistics (GET /api/stats/groups). */
export interface GroupStatistics {
  broker: string;
  group: string;
  pid?: number;
  host?: string;
  time?: number;
  uptime_s?: number;
  rss_bytes?: number;
  cpu_percent?: number;
  threads?: number;
  flows?: Record<string, FlowStatistics>;
}

export const stats = {
  groups: () => rawCall<GroupStatistics[]>('GET', '/api/stats/groups'),
  trace: (broker: string, group: string, flow: string) =>
    rawCall<string>(
      'GET',
      `/api/stats/trace/${encodeURIComponent(broker)}/${encodeURIComponent(group)}/${encodeURIComponent(flow)}?limit=65536`,
    ),
};

/**
 * Follow GET /api/stats/stream (server-sent events). EventSource cannot send the bearer token,
 * so the stream is read with fetch. Resolves when the stream ends or `signal` aborts; rejects
 * with the HTTP status when the route refuses.
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
  if (!response.ok || !response.body) throw new Error(`statistics stream: HTTP ${response.status}`);
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

export function parseStatsEvent(data: string): GroupStatistics[] {
  try {
    const parsed = JSON.parse(data) as unknown;
    return Array.isArray(parsed) ? (parsed as GroupStatistics[]) : [];
  } catch {
    return [];
  }
}
