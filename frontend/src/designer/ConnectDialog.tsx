/**
 * Connecting terminals from the keyboard: with a node selected, press C, then choose one of its
 * output terminals, a target node and one of that node's input terminals from labelled lists.
 * The choices come from the specs and the same check as a drag decides what is allowed.
 */
import { useMemo, useState } from 'react';
import { connectionProblem, terminalsOf, type FlowCanvasEdge, type FlowCanvasNode } from './document';
import type { SpecIndex } from './spec';

export function connectChoices(specs: SpecIndex, nodes: FlowCanvasNode[], sourceId: string) {
  const source = nodes.find((n) => n.id === sourceId);
  const outputs = source ? terminalsOf(specs, source.data).outputs : [];
  const targets = nodes
    .filter((n) => n.id !== sourceId)
    .map((n) => ({ node: n, inputs: terminalsOf(specs, n.data).inputs }))
    .filter((t) => t.inputs.length > 0);
  return { source, outputs, targets };
}

export function ConnectDialog({
  specs,
  nodes,
  edges,
  sourceId,
  onConnect,
  onClose,
}: {
  specs: SpecIndex;
  nodes: FlowCanvasNode[];
  edges: FlowCanvasEdge[];
  sourceId: string;
  onConnect: (c: { source: string; sourceHandle: string; target: string; targetHandle: string }) => void;
  onClose: () => void;
}) {
  const { source, outputs, targets } = useMemo(() => connectChoices(specs, nodes, sourceId), [specs, nodes, sourceId]);
  const [terminal, setTerminal] = useState(outputs[0]?.name ?? '');
  const [targetId, setTargetId] = useState(targets[0]?.node.id ?? '');
  const target = targets.find((t) => t.node.id === targetId);
  const [targetTerminal, setTargetTerminal] = useState(target?.inputs[0]?.name ?? '');
  const chosenInput = target?.inputs.some((t) => t.name === targetTerminal) ? targetTerminal : (target?.inputs[0]?.name ?? '');
  const connection = { source: sourceId, sourceHandle: terminal, target: targetId, targetHandle: chosenInput };
  const problem = !source
    ? 'select a node first'
    : !outputs.length
      ? `${source.data.type} has no output terminal`
      : !target
        ? 'no other node has an input terminal'
        : connectionProblem(specs, nodes, edges, connection);

  return (
    <div
      className="dialog-backdrop"
      role="dialog"
      aria-modal="true"
      aria-label="Connect terminals"
      onKeyDown={(e) => {
        if (e.key === 'Escape') onClose();
      }}
    >
      <form
        className="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!problem) {
            onConnect(connection);
            onClose();
          }
        }}
      >
        <h2>Connect from {source?.data.name ?? sourceId}</h2>
        <div className="field">
          <label htmlFor="connect-from">From terminal</label>
          <select id="connect-from" value={terminal} autoFocus onChange={(e) => setTerminal(e.target.value)}>
            {outputs.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name} ({t.kind})
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="connect-node">To node</label>
          <select
            id="connect-node"
            value={targetId}
            onChange={(e) => {
              setTargetId(e.target.value);
              setTargetTerminal('');
            }}
          >
            {targets.map((t) => (
              <option key={t.node.id} value={t.node.id}>
                {t.node.data.name} ({t.node.data.type})
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="connect-to">To terminal</label>
          <select id="connect-to" value={chosenInput} onChange={(e) => setTargetTerminal(e.target.value)}>
            {target?.inputs.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </div>
        {problem && (
          <p className="error" role="alert">
            {problem}
          </p>
        )}
        <div className="actions">
          <button type="submit" className="primary" disabled={!!problem}>
            Connect
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
