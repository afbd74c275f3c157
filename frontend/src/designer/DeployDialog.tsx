/** Deploy the saved flow to an execution group and follow the deployment's status live. */
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, problemText, unwrap } from '../api/client';
import { deployments, FINAL_STATES, type Deployment } from '../api/runtime';
import type { Problem } from './document';

/** Compile errors of a deployment, on their node, property and ESQL line. */
export function deploymentProblems(d: Deployment): Problem[] {
  return d.diagnostics.map((x) => ({
    node: x.node || null,
    property: x.property || null,
    message: x.message,
    line: x.line || undefined,
    column: x.column || undefined,
  }));
}

export function DeployDialog({
  flowId,
  version,
  onProblems,
  onDeployed,
  onClose,
}: {
  flowId: number;
  version: number | undefined;
  onProblems: (p: Problem[]) => void;
  onDeployed: (d: Deployment) => void;
  onClose: () => void;
}) {
  const brokers = useQuery({ queryKey: ['brokers'], queryFn: () => unwrap(api.GET('/api/brokers')) });
  const [brokerId, setBrokerId] = useState<number | null>(null);
  const [groupId, setGroupId] = useState<number | null>(null);
  const [instances, setInstances] = useState(0);
  const [defineQueues, setDefineQueues] = useState(false);
  const [deployment, setDeployment] = useState<Deployment | null>(null);
  const [error, setError] = useState<string | null>(null);
  const list = brokers.data ?? [];
  const broker = list.find((b) => b.id === brokerId) ?? list[0];
  const group = broker?.groups.find((g) => g.id === groupId) ?? broker?.groups[0];

  useEffect(() => {
    if (!deployment || FINAL_STATES.has(deployment.status)) return;
    const timer = setTimeout(() => {
      deployments
        .get(deployment.id)
        .then((d) => {
          setDeployment(d);
          if (d.diagnostics?.length && d.status !== 'waiting') onProblems(deploymentProblems(d));
        })
        .catch((err) => setError(problemText(err)));
    }, 700);
    return () => clearTimeout(timer);
  }, [deployment, onProblems]);

  const deploy = () => {
    if (!broker || !group) return;
    setError(null);
    deployments
      .create({ flowId, version, broker: broker.name, group: group.name, additionalInstances: instances, defineQueues })
      .then((d) => {
        setDeployment(d);
        if (d.diagnostics?.length) onProblems(deploymentProblems(d));
        onDeployed(d);
      })
      .catch((err) => setError(problemText(err)));
  };

  return (
    <div className="dialog-backdrop" role="dialog" aria-modal="true" aria-label="Deploy">
      <div className="dialog">
        <h2>Deploy version {version}</h2>
        {brokers.error && <p className="error">{problemText(brokers.error)}</p>}
        <div className="field">
          <label htmlFor="deploy-broker">Broker</label>
          <select id="deploy-broker" value={broker?.id ?? ''} onChange={(e) => setBrokerId(Number(e.target.value))}>
            {list.map((b) => (
              <option key={b.id} value={b.id}>
                {b.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="deploy-group">Execution group</label>
          <select id="deploy-group" value={group?.id ?? ''} onChange={(e) => setGroupId(Number(e.target.value))}>
            {broker?.groups.map((g) => (
              <option key={g.id} value={g.id}>
                {g.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="deploy-instances">Additional instances</label>
          <input
            id="deploy-instances"
            type="number"
            min={0}
            max={64}
            value={instances}
            onChange={(e) => setInstances(Math.max(0, Math.min(64, Number(e.target.value) || 0)))}
          />
        </div>
        <div className="field">
          <label>
            <input type="checkbox" checked={defineQueues} onChange={(e) => setDefineQueues(e.target.checked)} /> Define
            missing input and output queues
          </label>
        </div>
        {deployment && (
          <p className={`status status-${deployment.status}`} role="status" data-testid="deploy-status">
            Deployment {deployment.id} of {deployment.flow} v{deployment.version} to {deployment.broker}/{deployment.group}:{' '}
            {deployment.status}
          </p>
        )}
        {deployment?.detail && (
          <p className={`status status-${deployment.status}`} data-testid="deploy-detail">
            {deployment.detail}
          </p>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="button" className="primary" disabled={!group} onClick={deploy}>
            Deploy
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
