/**
 * The flow exerciser under the canvas: record the deployed flow, click a connection to see what
 * crossed it (per message: the trees and the serialized body), and send a test message to the
 * focused input node. Operators record and send; viewers see the recordings.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { problemText } from '../api/client';
import { useCan } from '../auth';
import { takesTestMessages } from '../designer/spec';
import { useSpecs } from '../designer/specs-context';
import { useDesigner, useDesignerStore } from '../designer/store';
import { crossingCounts, exerciser, isLive, type CrossingSummary, type Recording } from './api';
import { MessageTreeView } from './MessageTreeView';
import { RecordedCaseForm } from './RecordedCaseForm';
import { TestMessageDialog, type NamedTestMessage } from './TestMessageDialog';

const OPEN_KEY = 'flowbroker.exerciser.open';

function when(seconds: number): string {
  return new Date(seconds * 1000).toLocaleTimeString();
}

function describe(r: Recording): string {
  const counts = `${r.messages} message${r.messages === 1 ? '' : 's'}, ${r.crossings} crossing${r.crossings === 1 ? '' : 's'}`;
  return `${when(r.requestedAt)} · ${r.status} · ${counts}`;
}

/** Highlight the connections a recording saw cross (the canvas is not touched: a style sheet does it). */
function CrossedStyle({ connections, selected }: { connections: string[]; selected: string | null }) {
  const quote = (id: string) => id.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  const rules = connections.map(
    (id) => `.react-flow__edge[data-id="${quote(id)}"] .react-flow__edge-path { stroke: #0a7; stroke-width: 3; }`,
  );
  if (selected) rules.push(`.react-flow__edge[data-id="${quote(selected)}"] .react-flow__edge-path { stroke: #e80; stroke-width: 4; }`);
  return <style data-testid="crossed-style">{rules.join('\n')}</style>;
}

export function ExerciserPanel() {
  const store = useDesignerStore();
  const specs = useSpecs();
  const flowId = useDesigner((s) => (s.meta.imported ? null : s.meta.flowId));
  const focused = useDesigner((s) => (s.focused ? (s.nodes.find((n) => n.id === s.focused) ?? null) : null));
  const selectedEdge = useDesigner((s) => s.edges.find((e) => e.selected)?.id ?? null);
  const canRecord = useCan('deploy');
  const canSend = useCan('queues.write') && canRecord;
  const canEdit = useCan('flows.edit');
  const queryClient = useQueryClient();
  // Closed, it floats over the page's corner and takes no room from the canvas; the choice is remembered.
  const [open, setOpenState] = useState(() => localStorage.getItem(OPEN_KEY) === 'true');
  const setOpen = (value: boolean) => {
    localStorage.setItem(OPEN_KEY, String(value));
    setOpenState(value);
  };
  const [deploymentId, setDeploymentId] = useState<number | null>(null);
  const [recordingId, setRecordingId] = useState<string | null>(null);
  const [seq, setSeq] = useState<number | null>(null);
  const [maxMessages, setMaxMessages] = useState(10);
  const [seconds, setSeconds] = useState(60);
  const [error, setError] = useState<string | null>(null);
  /** Making a test case of the shown message; then the name of the case last saved. */
  const [makingCase, setMakingCase] = useState(false);
  const [savedCase, setSavedCase] = useState<string | null>(null);
  /** The input node whose test message dialog is open (kept when the graph is replaced). */
  const [sendTo, setSendTo] = useState<string | null>(null);
  const sendNode = useDesigner((s) => (sendTo ? (s.nodes.find((n) => n.id === sendTo) ?? null) : null));

  const deployments = useQuery({
    queryKey: ['exerciser', 'deployments', flowId],
    queryFn: () => exerciser.deployments(flowId as number),
    enabled: flowId !== null && open,
    refetchInterval: 5000,
  });
  const running = (deployments.data ?? []).filter((d) => d.status === 'running' || d.status === 'waiting');
  const deployment = running.find((d) => d.id === deploymentId) ?? running[0] ?? null;

  const recordings = useQuery({
    queryKey: ['exerciser', 'recordings', deployment?.id],
    queryFn: () => exerciser.recordings(deployment?.id as number),
    enabled: deployment !== null && open,
    refetchInterval: 5000,
  });
  const chosen = recordingId ?? recordings.data?.[0]?.id ?? null;
  const detail = useQuery({
    queryKey: ['exerciser', 'recording', deployment?.id, chosen],
    queryFn: () => exerciser.recording(deployment?.id as number, chosen as string),
    enabled: deployment !== null && chosen !== null && open,
    refetchInterval: (q) => (isLive(q.state.data) ? 700 : false),
  });
  const crossings = useMemo(() => detail.data?.crossingsList ?? [], [detail.data]);
  const counts = useMemo(() => crossingCounts(crossings), [crossings]);
  const onEdge = crossings.filter((c) => c.connection === selectedEdge);
  const shownSeq = onEdge.some((c) => c.seq === seq) ? seq : (onEdge[0]?.seq ?? null);

  const crossing = useQuery({
    queryKey: ['exerciser', 'crossing', deployment?.id, chosen, shownSeq],
    queryFn: () => exerciser.crossing(deployment?.id as number, chosen as string, shownSeq as number),
    enabled: deployment !== null && chosen !== null && shownSeq !== null,
    staleTime: Infinity,
  });

  useEffect(() => setSeq(null), [selectedEdge, chosen]);
  useEffect(() => setMakingCase(false), [selectedEdge, chosen, shownSeq]);

  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['exerciser'] });

  const act = async (what: () => Promise<unknown>) => {
    setError(null);
    try {
      await what();
      refresh();
    } catch (err) {
      setError(problemText(err));
    }
  };

  const selectConnection = (id: string) => {
    const { edges, onEdgesChange } = store.getState();
    onEdgesChange(edges.map((e) => ({ type: 'select' as const, id: e.id, selected: e.id === id })));
  };

  const keepTestMessages = (nodeId: string, messages: NamedTestMessage[]) => {
    const { nodes, edges, replaceGraph } = store.getState();
    replaceGraph(
      nodes.map((n) => (n.id === nodeId ? { ...n, data: { ...n.data, ui: { ...(n.data.ui ?? {}), testMessages: messages } } } : n)),
      edges,
    );
  };

  return (
    <section className={open ? 'exerciser' : 'exerciser closed'} aria-label="Flow exerciser">
      <h2>
        <button type="button" className="link" onClick={() => setOpen(!open)} aria-expanded={open}>
          Flow exerciser
        </button>
        {detail.data && <span className="muted"> · {describe(detail.data)}</span>}
      </h2>
      {open && (
        <div className="exerciser-body">
          {flowId === null ? (
            <p className="muted">Save and deploy the flow to record it.</p>
          ) : deployment === null ? (
            <p className="muted">{deployments.isLoading ? 'Looking for deployments…' : 'The flow is not running in any execution group.'}</p>
          ) : (
            <>
              <div className="row">
                {running.length > 1 && (
                  <select aria-label="Deployment" value={deployment.id} onChange={(e) => setDeploymentId(Number(e.target.value))}>
                    {running.map((d) => (
                      <option key={d.id} value={d.id}>
                        {d.broker}/{d.group} v{d.version}
                      </option>
                    ))}
                  </select>
                )}
                <span className="muted">
                  {deployment.broker}/{deployment.group} v{deployment.version}
                </span>
                {canRecord && (
                  <>
                    <label>
                      messages{' '}
                      <input type="number" min={1} value={maxMessages} onChange={(e) => setMaxMessages(Number(e.target.value))} aria-label="Messages to record" style={{ width: 56 }} />
                    </label>
                    <label>
                      seconds{' '}
                      <input type="number" min={1} value={seconds} onChange={(e) => setSeconds(Number(e.target.value))} aria-label="Seconds to record" style={{ width: 56 }} />
                    </label>
                    <button
                      type="button"
                      onClick={() =>
                        void act(async () => {
                          const started = await exerciser.record(deployment.id, maxMessages, seconds);
                          setRecordingId(started.id);
                        })
                      }
                    >
                      Record
                    </button>
                    {chosen && isLive(detail.data) && (
                      <button type="button" onClick={() => void act(() => exerciser.stop(deployment.id, chosen))}>
                        Stop
                      </button>
                    )}
                  </>
                )}
                {(recordings.data?.length ?? 0) > 0 && (
                  <select aria-label="Recording" value={chosen ?? ''} onChange={(e) => setRecordingId(e.target.value)}>
                    {recordings.data?.map((r) => (
                      <option key={r.id} value={r.id}>
                        {describe(r.id === detail.data?.id ? detail.data : r)}
                      </option>
                    ))}
                  </select>
                )}
                {canRecord && chosen && !isLive(detail.data) && (
                  <button
                    type="button"
                    onClick={() =>
                      void act(async () => {
                        await exerciser.remove(deployment.id, chosen);
                        setRecordingId(null);
                      })
                    }
                  >
                    Delete recording
                  </button>
                )}
                {canSend && focused && takesTestMessages(specs[focused.data.type]) && (
                  <button type="button" className="primary" onClick={() => setSendTo(focused.id)}>
                    Send test message…
                  </button>
                )}
              </div>
              {error && (
                <p className="error" role="alert">
                  {error}
                </p>
              )}
              {detail.data?.reason && <p className="muted">Ended: {detail.data.reason}</p>}
              <CrossedStyle connections={[...counts.keys()]} selected={selectedEdge && counts.has(selectedEdge) ? selectedEdge : null} />
              {selectedEdge === null ? (
                <CrossedList crossings={crossings} counts={counts} onSelect={selectConnection} />
              ) : (
                <div className="crossings" data-testid="connection-crossings">
                  <h3>
                    {selectedEdge}{' '}
                    <span className="muted">
                      {onEdge.length} crossing{onEdge.length === 1 ? '' : 's'}
                    </span>
                  </h3>
                  {onEdge.length === 0 && <p className="muted">Nothing crossed this connection in this recording.</p>}
                  <div className="row">
                    {onEdge.map((c) => (
                      <button
                        type="button"
                        key={c.seq}
                        className={c.seq === shownSeq ? 'chosen' : ''}
                        aria-pressed={c.seq === shownSeq}
                        onClick={() => setSeq(c.seq)}
                      >
                        message {c.message} · {when(c.time)}
                        {c.truncated ? ' · truncated' : ''}
                      </button>
                    ))}
                  </div>
                  {crossing.error && <p className="error">{problemText(crossing.error)}</p>}
                  {savedCase && (
                    <p className="muted" role="status">
                      Test case “{savedCase}” saved with the flow; run it in Tests.
                    </p>
                  )}
                  {crossing.data && chosen && makingCase ? (
                    <RecordedCaseForm
                      deploymentId={deployment.id}
                      recordingId={chosen}
                      message={crossing.data.message}
                      view={crossing.data.view}
                      onCancel={() => setMakingCase(false)}
                      onSaved={(saved) => {
                        // the case is the flow's new version: the open flow takes it as saved, keeping any edits
                        const { meta } = store.getState();
                        const tests = Array.isArray(meta.tests) ? meta.tests : [];
                        store.setState({ meta: { ...meta, tests: [...tests, saved.case], version: saved.version } });
                        setSavedCase(String(saved.case.name));
                        setMakingCase(false);
                      }}
                    />
                  ) : (
                    crossing.data && (
                      <>
                        {canEdit && (
                          <button type="button" onClick={() => {
                              setSavedCase(null);
                              setMakingCase(true);
                            }}>
                            Create test case…
                          </button>
                        )}
                        <MessageTreeView view={crossing.data.view} />
                      </>
                    )
                  )}
                </div>
              )}
            </>
          )}
        </div>
      )}
      {sendNode && deployment && (
        <TestMessageDialog
          deploymentId={deployment.id}
          node={sendNode}
          canSave={canEdit}
          onSave={(messages) => keepTestMessages(sendNode.id, messages)}
          onClose={() => setSendTo(null)}
          onSent={(sent) => {
            setSendTo(null);
            if (sent.recording) setRecordingId(sent.recording.id);
            refresh();
          }}
        />
      )}
    </section>
  );
}

function CrossedList({
  crossings,
  counts,
  onSelect,
}: {
  crossings: CrossingSummary[];
  counts: Map<string, number>;
  onSelect: (connection: string) => void;
}) {
  if (crossings.length === 0) return <p className="muted">Nothing recorded yet. Record, or send a test message to an input node.</p>;
  return (
    <div className="crossed" data-testid="crossed-connections">
      <p className="muted">Click a connection on the canvas (or here) to see what crossed it:</p>
      <ul>
        {[...counts.entries()].map(([connection, n]) => (
          <li key={connection}>
            <button type="button" className="link" onClick={() => onSelect(connection)}>
              {connection}
            </button>{' '}
            <span className="muted">×{n}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
