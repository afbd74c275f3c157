/**
 * The topology page: brokers, their execution groups with the state of each group's process,
 * and the flows deployed to each group, with start and stop for a group and for one flow: drawn as a
 * graph with the queues each flow reads and writes, and listed in a table below it.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, problemText, unwrap, type Schemas } from '../api/client';
import { deployments, groups, type Deployment } from '../api/runtime';
import { useCan } from '../auth';
import { TopologyGraphView } from './TopologyGraph';

type Act = (run: () => Promise<unknown>) => void;

/** What a flow is doing: its own status, unless its group's process is not running it. */
export function flowState(flow: Pick<Deployment, 'status'>, group: Pick<Schemas['GroupOut'], 'state'>): string {
  if (group.state === 'stopped' && (flow.status === 'running' || flow.status === 'stopped')) return 'stopped (group stopped)';
  return flow.status;
}

/** The port of the group's HTTP listener (empty: the worker's FLOWBROKER_HTTP_PORT), saved on Enter or leaving the field. */
function HttpPortField({ broker, group, act }: { broker: Schemas['BrokerOut']; group: Schemas['GroupOut']; act: Act }) {
  // what is being typed; null while the field shows the group's port
  const [draft, setDraft] = useState<string | null>(null);
  const save = () => {
    if (draft === null) return;
    const text = draft.trim();
    setDraft(null);
    const httpPort = text === '' ? null : Number(text);
    if (httpPort === (group.httpPort ?? null)) return;
    act(() =>
      unwrap(
        api.PATCH('/api/brokers/{broker_id}/groups/{group_id}', {
          params: { path: { broker_id: broker.id, group_id: group.id } },
          body: { httpPort },
        }),
      ),
    );
  };
  return (
    <label
      className="muted development-flag"
      title="The port of this group's HTTP listener, which serves its HTTPInput nodes; empty: the worker's FLOWBROKER_HTTP_PORT. A change counts from the group's next start (or its first HTTP flow)"
    >
      {' '}
      HTTP port{' '}
      <input
        type="number"
        min={1}
        max={65535}
        className="port-field"
        placeholder="default"
        value={draft ?? (group.httpPort ?? '')}
        data-testid={`group-http-port-${group.name}`}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={save}
        onKeyDown={(e) => {
          if (e.key === 'Enter') save();
          if (e.key === 'Escape') setDraft(null);
        }}
      />
    </label>
  );
}

function GroupRow({
  broker,
  group,
  canDeploy,
  canManage,
  canAllowCode,
  act,
}: {
  broker: Schemas['BrokerOut'];
  group: Schemas['GroupOut'];
  canDeploy: boolean;
  canManage: boolean;
  canAllowCode: boolean;
  act: Act;
}) {
  const flows = useQuery({
    queryKey: ['group-flows', group.id],
    queryFn: () => groups.flows(group.id),
    refetchInterval: 2000,
    retry: false,
  });
  const running = group.desiredState === 'running';
  return (
    <tr data-testid={`group-${group.name}`}>
      <td>
        {group.name}
        {canManage ? (
          <label className="muted development-flag" title="A development group lets the step debugger pause its flows; a production group never pauses">
            {' '}
            <input
              type="checkbox"
              checked={group.development}
              data-testid={`group-development-${group.name}`}
              onChange={(e) => {
                const development = e.target.checked;
                act(() =>
                  unwrap(
                    api.PATCH('/api/brokers/{broker_id}/groups/{group_id}', {
                      params: { path: { broker_id: broker.id, group_id: group.id } },
                      body: { development },
                    }),
                  ),
                );
              }}
            />{' '}
            development
          </label>
        ) : (
          group.development && <span className="muted"> · development</span>
        )}
        {canAllowCode ? (
          <label
            className="muted development-flag"
            title="Flows with code nodes (PythonCompute: trusted Python with the group's rights) may be deployed here; only an administrator changes this"
          >
            {' '}
            <input
              type="checkbox"
              checked={group.codeNodes}
              data-testid={`group-code-nodes-${group.name}`}
              onChange={(e) => {
                const codeNodes = e.target.checked;
                act(() =>
                  unwrap(
                    api.PATCH('/api/brokers/{broker_id}/groups/{group_id}', {
                      params: { path: { broker_id: broker.id, group_id: group.id } },
                      body: { codeNodes },
                    }),
                  ),
                );
              }}
            />{' '}
            code nodes
          </label>
        ) : (
          group.codeNodes && <span className="muted"> · code nodes</span>
        )}
        {canManage ? (
          <HttpPortField broker={broker} group={group} act={act} />
        ) : (
          group.httpPort != null && <span className="muted"> · HTTP port {group.httpPort}</span>
        )}
      </td>
      <td>
        <span className={`status status-${group.state}`} data-testid={`group-state-${group.name}`}>
          {group.state}
        </span>
        {group.host && (
          <span className="muted" data-testid={`group-host-${group.name}`}>
            {' '}
            · on {group.host}
          </span>
        )}
        {group.pid !== null && <span className="muted"> · pid {group.pid}</span>}
        {group.restarts > 0 && <span className="muted"> · {group.restarts} restarts</span>}
        {group.detail && <div className="muted">{group.detail}</div>}
      </td>
      <td>
        {flows.error && <span className="error">{problemText(flows.error)}</span>}
        {flows.data && !flows.data.length && <span className="muted">none</span>}
        <ul className="plain">
          {flows.data?.map((d) => (
            <li key={d.id} data-testid={`deployed-${d.flow}`}>
              <a href={`#/designer/${d.flowId}`}>{d.flow}</a> v{d.version} ·{' '}
              <span className={`status status-${d.status}`} data-testid={`flow-status-${d.flow}`}>
                {flowState(d, group)}
              </span>
              {d.additionalInstances ? ` · +${d.additionalInstances} instances` : ''}
              {canDeploy && (
                <>
                  {' '}
                  {d.status === 'stopped' && (
                    <button type="button" disabled={!running} onClick={() => act(() => deployments.start(d.id))}>
                      Start flow
                    </button>
                  )}
                  {d.status === 'running' && (
                    <button type="button" disabled={!running} onClick={() => act(() => deployments.stop(d.id))}>
                      Stop flow
                    </button>
                  )}{' '}
                  <button
                    type="button"
                    onClick={() => {
                      if (window.confirm(`Undeploy ${d.flow} from ${broker.name}/${group.name}?`))
                        act(() => deployments.undeploy(d.id));
                    }}
                  >
                    Undeploy
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      </td>
      {canManage && (
        <td>
          {running ? (
            <button
              type="button"
              title="Stop the group's process, and every flow in it"
              onClick={() => act(() => groups.stop(group.id))}
            >
              Stop group
            </button>
          ) : (
            <button type="button" title="Start the group's process; its flows resume" onClick={() => act(() => groups.start(group.id))}>
              Start group
            </button>
          )}{' '}
          <button
            type="button"
            className="danger"
            onClick={() => {
              if (window.confirm(`Delete execution group ${group.name}?`))
                act(() =>
                  unwrap(
                    api.DELETE('/api/brokers/{broker_id}/groups/{group_id}', {
                      params: { path: { broker_id: broker.id, group_id: group.id } },
                    }),
                  ),
                );
            }}
          >
            Delete
          </button>
        </td>
      )}
    </tr>
  );
}

export function Topology() {
  const canManage = useCan('topology.manage');
  const canDeploy = useCan('deploy');
  const canAllowCode = useCan('users.manage');
  const queryClient = useQueryClient();
  const brokers = useQuery({ queryKey: ['brokers'], queryFn: () => unwrap(api.GET('/api/brokers')), refetchInterval: 2000 });
  const graph = useQuery({
    queryKey: ['topology-graph'],
    queryFn: () => unwrap(api.GET('/api/topology/graph')),
    refetchInterval: 3000,
  });
  const [message, setMessage] = useState<string | null>(null);
  const [newGroup, setNewGroup] = useState<Record<number, string>>({});
  // the transport URL being edited, per broker (absent: not being edited)
  const [transportUrl, setTransportUrl] = useState<Record<number, string>>({});

  const run = useMutation({
    mutationFn: (what: () => Promise<unknown>) => what(),
    onSuccess: () => {
      setMessage(null);
      void queryClient.invalidateQueries({ queryKey: ['brokers'] });
      void queryClient.invalidateQueries({ queryKey: ['group-flows'] });
      void queryClient.invalidateQueries({ queryKey: ['topology-graph'] });
    },
    onError: (err) => setMessage(problemText(err)),
  });
  const act: Act = (what) => run.mutate(what);

  const createGroup = (e: FormEvent, brokerId: number) => {
    e.preventDefault();
    const name = (newGroup[brokerId] ?? '').trim();
    if (!name) return;
    act(async () => {
      await unwrap(
        api.POST('/api/brokers/{broker_id}/groups', {
          params: { path: { broker_id: brokerId } },
          body: { name, description: '' },
        }),
      );
      setNewGroup((prev) => ({ ...prev, [brokerId]: '' }));
    });
  };

  const saveTransport = (e: FormEvent, brokerId: number) => {
    e.preventDefault();
    const qmUrl = (transportUrl[brokerId] ?? '').trim();
    act(async () => {
      await unwrap(
        api.PATCH('/api/brokers/{broker_id}', {
          params: { path: { broker_id: brokerId } },
          body: { qmUrl },
        }),
      );
      setTransportUrl((prev) => {
        const next = { ...prev };
        delete next[brokerId];
        return next;
      });
    });
  };

  return (
    <section className="page" aria-label="Topology">
      <h1>Topology</h1>
      {message && (
        <p className="error" role="alert">
          {message}
        </p>
      )}
      {graph.data && <TopologyGraphView graph={graph.data} />}
      {graph.error && <p className="error">{problemText(graph.error)}</p>}
      {brokers.error && <p className="error">{problemText(brokers.error)}</p>}
      {brokers.data?.map((b) => (
        <article key={b.id} className="card" aria-label={`Broker ${b.name}`}>
          <h2>
            Broker {b.name} <small className="muted">{b.local ? 'run by this machine' : b.qmUrl}</small>
          </h2>
          {b.description && <p>{b.description}</p>}
          {canManage && transportUrl[b.id] !== undefined ? (
            <form className="inline" onSubmit={(e) => saveTransport(e, b.id)}>
              <label htmlFor={`transport-${b.id}`}>Transport URL</label>
              <input
                id={`transport-${b.id}`}
                value={transportUrl[b.id]}
                onChange={(e) => setTransportUrl((prev) => ({ ...prev, [b.id]: e.target.value }))}
                placeholder="empty: the embedded queue manager; amqp://user:password@host:5672/vhost: RabbitMQ"
                size={60}
              />
              <button type="submit">Save</button>
              <button
                type="button"
                onClick={() =>
                  setTransportUrl((prev) => {
                    const next = { ...prev };
                    delete next[b.id];
                    return next;
                  })
                }
              >
                Cancel
              </button>
            </form>
          ) : (
            <p aria-label={`Transport of ${b.name}`}>
              Transport: <code>{b.qmUrl || 'the embedded queue manager'}</code>
              {canManage && (
                <>
                  {' '}
                  <button type="button" onClick={() => setTransportUrl((prev) => ({ ...prev, [b.id]: b.qmUrl }))}>
                    Edit
                  </button>
                </>
              )}
            </p>
          )}
          <table className="grid">
            <thead>
              <tr>
                <th>Execution group</th>
                <th>Process</th>
                <th>Flows deployed</th>
                {canManage && <th>Actions</th>}
              </tr>
            </thead>
            <tbody>
              {b.groups.map((g) => (
                <GroupRow key={g.id} broker={b} group={g} canDeploy={canDeploy} canManage={canManage} canAllowCode={canAllowCode} act={act} />
              ))}
            </tbody>
          </table>
          {canManage && (
            <form className="inline" onSubmit={(e) => createGroup(e, b.id)}>
              <label htmlFor={`new-group-${b.id}`}>New execution group</label>
              <input
                id={`new-group-${b.id}`}
                value={newGroup[b.id] ?? ''}
                onChange={(e) => setNewGroup((prev) => ({ ...prev, [b.id]: e.target.value }))}
                placeholder="name"
              />
              <button type="submit">Create</button>
            </form>
          )}
        </article>
      ))}
    </section>
  );
}
