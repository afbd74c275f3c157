/** The topology page: brokers, their execution groups, and the flows deployed to each group. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ApiProblem, problemText, unwrap, type Schemas } from '../api/client';
import { groupAction, groupFlows, undeploy, type GroupStatistics } from '../api/runtime';
import { stats } from '../api/runtime';
import { atLeast, useAuth } from '../auth';

type Act = (run: () => Promise<unknown>) => void;

function GroupRow({
  broker,
  group,
  process,
  canOperate,
  act,
}: {
  broker: Schemas['BrokerOut'];
  group: Schemas['GroupOut'];
  process: GroupStatistics | undefined;
  canOperate: boolean;
  act: Act;
}) {
  const flows = useQuery({
    queryKey: ['group-flows', group.id],
    queryFn: () => groupFlows(group.id),
    refetchInterval: 5000,
    retry: false,
  });
  const absent = flows.error instanceof ApiProblem && flows.error.code === 'not_available';
  return (
    <tr>
      <td>{group.name}</td>
      <td>
        {process ? (
          <span className="status status-running">
            reporting · pid {process.pid ?? '?'} · {process.threads ?? 0} threads
          </span>
        ) : (
          <span className="muted">no statistics published</span>
        )}
      </td>
      <td>
        {absent && <span className="muted">The deployment service is not available on this server yet.</span>}
        {flows.error && !absent && <span className="error">{problemText(flows.error)}</span>}
        {flows.data && !flows.data.length && <span className="muted">none</span>}
        <ul className="plain">
          {flows.data?.map((d) => (
            <li key={d.id} data-testid={`deployed-${d.flow}`}>
              <a href={`#/designer/${d.flowId}`}>{d.flow}</a> v{d.version} ·{' '}
              <span className={`status status-${d.status}`}>{d.status}</span>
              {d.additionalInstances ? ` · +${d.additionalInstances} instances` : ''}
              {canOperate && (
                <>
                  {' '}
                  <button
                    type="button"
                    onClick={() => {
                      if (window.confirm(`Undeploy ${d.flow} from ${broker.name}/${group.name}?`)) act(() => undeploy(d.id));
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
      {canOperate && (
        <td>
          <button type="button" title="Start every flow of the group" onClick={() => act(() => groupAction(group.id, 'start'))}>
            Start
          </button>
          <button type="button" title="Stop every flow of the group" onClick={() => act(() => groupAction(group.id, 'stop'))}>
            Stop
          </button>
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
  const role = useAuth((s) => s.role);
  const canOperate = atLeast(role, 'operator');
  const queryClient = useQueryClient();
  const brokers = useQuery({ queryKey: ['brokers'], queryFn: () => unwrap(api.GET('/api/brokers')) });
  const groupStats = useQuery({ queryKey: ['stats', 'groups'], queryFn: stats.groups, refetchInterval: 5000, retry: false });
  const [message, setMessage] = useState<string | null>(null);
  const [newGroup, setNewGroup] = useState<Record<number, string>>({});

  const run = useMutation({
    mutationFn: (what: () => Promise<unknown>) => what(),
    onSuccess: () => {
      setMessage(null);
      void queryClient.invalidateQueries({ queryKey: ['brokers'] });
      void queryClient.invalidateQueries({ queryKey: ['group-flows'] });
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

  return (
    <section className="page" aria-label="Topology">
      <h1>Topology</h1>
      {message && (
        <p className="error" role="alert">
          {message}
        </p>
      )}
      {brokers.error && <p className="error">{problemText(brokers.error)}</p>}
      {brokers.data?.map((b) => (
        <article key={b.id} className="card" aria-label={`Broker ${b.name}`}>
          <h2>
            Broker {b.name} <small className="muted">{b.qmUrl}</small>
          </h2>
          {b.description && <p>{b.description}</p>}
          <table className="grid">
            <thead>
              <tr>
                <th>Execution group</th>
                <th>Process</th>
                <th>Flows deployed</th>
                {canOperate && <th>Actions</th>}
              </tr>
            </thead>
            <tbody>
              {b.groups.map((g) => (
                <GroupRow
                  key={g.id}
                  broker={b}
                  group={g}
                  process={groupStats.data?.find((s) => s.broker === b.name && s.group === g.name)}
                  canOperate={canOperate}
                  act={act}
                />
              ))}
            </tbody>
          </table>
          {canOperate && (
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
