/** The queues page: depths, put a test message, browse and get, move a dead-letter message back. */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ApiProblem, problemText } from '../api/client';
import { queues, type QueueMessage } from '../api/runtime';
import { atLeast, useAuth } from '../auth';

type BodyKind = 'text' | 'xml' | 'json';

/** `name=value` lines of the MQRFH2 <usr> folder; throws naming the line that is wrong. */
export function parseUsrFolder(text: string): Record<string, string> {
  const usr: Record<string, string> = {};
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const eq = line.indexOf('=');
    const name = eq === -1 ? line : line.slice(0, eq).trim();
    if (eq === -1 || !/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(name))
      throw new Error(`usr folder, line ${i + 1}: write name=value with a name of letters, digits, _ . -`);
    usr[name] = line.slice(eq + 1).trim();
  });
  return usr;
}

/** A body the user typed, checked for its kind before it is sent. */
export function checkBody(kind: BodyKind, body: string): string | null {
  if (kind === 'json') {
    try {
      JSON.parse(body);
    } catch (err) {
      return `JSON body: ${(err as Error).message}`;
    }
  }
  if (kind === 'xml') {
    const doc = new DOMParser().parseFromString(body, 'application/xml');
    const error = doc.getElementsByTagName('parsererror')[0];
    if (error) return `XML body: ${error.textContent?.split('\n')[0] ?? 'not well-formed'}`;
  }
  return null;
}

export function Queues() {
  const role = useAuth((s) => s.role);
  const canPut = atLeast(role, 'operator');
  const queryClient = useQueryClient();
  const list = useQuery({ queryKey: ['queues'], queryFn: queues.list, refetchInterval: 3000, retry: false });
  const [queue, setQueue] = useState('');
  const [kind, setKind] = useState<BodyKind>('xml');
  const [body, setBody] = useState('<Order><Item>Widget</Item><Qty>2</Qty></Order>');
  const [persistent, setPersistent] = useState(true);
  const [correlId, setCorrelId] = useState('');
  const [replyTo, setReplyTo] = useState('');
  const [priority, setPriority] = useState(4);
  const [rfh2Domain, setRfh2Domain] = useState('');
  const [usrText, setUsrText] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<QueueMessage[] | null>(null);
  const [moveTo, setMoveTo] = useState('');
  const [newQueue, setNewQueue] = useState('');

  const run = async (what: () => Promise<unknown>, done: string) => {
    setError(null);
    setMessage(null);
    try {
      await what();
      setMessage(done);
      void queryClient.invalidateQueries({ queryKey: ['queues'] });
    } catch (err) {
      setError(problemText(err));
    }
  };

  const put = (e: FormEvent) => {
    e.preventDefault();
    const bad = checkBody(kind, body);
    if (bad) {
      setError(bad);
      return;
    }
    let usr: Record<string, string> = {};
    try {
      usr = parseUsrFolder(usrText);
    } catch (err) {
      setError((err as Error).message);
      return;
    }
    void run(
      () =>
        queues.put(queue, {
          body,
          format: kind === 'text' ? 'MQSTR' : kind === 'json' ? 'JSON' : 'XML',
          persistent,
          priority,
          correlId: correlId || undefined,
          replyToQ: replyTo || undefined,
          rfh2: rfh2Domain ? { domain: rfh2Domain, usr } : undefined,
        }),
      `Put one message on ${queue}`,
    );
  };

  const notAvailable = list.error instanceof ApiProblem && list.error.code === 'not_available';

  return (
    <section className="page" aria-label="Queues">
      <h1>Queues</h1>
      {notAvailable && <p className="muted">The queue service is not available on this server yet.</p>}
      {list.error && !notAvailable && <p className="error">{problemText(list.error)}</p>}
      <div className="columns">
        <table className="grid" aria-label="Queue depths">
          <thead>
            <tr>
              <th>Queue</th>
              <th>Depth</th>
              <th>Backout queue</th>
            </tr>
          </thead>
          <tbody>
            {(list.data ?? []).map((q) => (
              <tr key={q.name} className={q.name === queue ? 'selected' : undefined}>
                <td>
                  <button type="button" className="link" onClick={() => setQueue(q.name)}>
                    {q.name}
                  </button>
                </td>
                <td data-testid={`depth-${q.name}`}>{q.depth}</td>
                <td>{q.backoutQueue}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div>
        {canPut && (
          <form
            className="inline card"
            aria-label="Define a queue"
            onSubmit={(e) => {
              e.preventDefault();
              const name = newQueue.trim();
              if (!/^[A-Za-z0-9._/%]{1,48}$/.test(name)) {
                setError('Queue name: 1 to 48 characters of A-Z a-z 0-9 . _ / %');
                return;
              }
              void run(() => queues.define(name), `Defined ${name}`).then(() => setNewQueue(''));
            }}
          >
            <label htmlFor="q-define">New queue</label>
            <input id="q-define" value={newQueue} onChange={(e) => setNewQueue(e.target.value)} placeholder="QUEUE.NAME" />
            <button type="submit">Define</button>
          </form>
        )}
        <form onSubmit={put} aria-label="Put a test message" className="card">
          <div className="field">
            <label htmlFor="q-name">Queue</label>
            <input id="q-name" value={queue} required onChange={(e) => setQueue(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="q-kind">Body</label>
            <select id="q-kind" value={kind} onChange={(e) => setKind(e.target.value as BodyKind)}>
              <option value="text">Text</option>
              <option value="xml">XML</option>
              <option value="json">JSON</option>
            </select>
          </div>
          <textarea aria-label="Message body" rows={5} className="code" value={body} onChange={(e) => setBody(e.target.value)} />
          <fieldset>
            <legend>Descriptor (MQMD)</legend>
            <label className="span">
              <input type="checkbox" checked={persistent} onChange={(e) => setPersistent(e.target.checked)} /> Persistent
            </label>
            <label htmlFor="q-priority">Priority</label>
            <input
              id="q-priority"
              type="number"
              min={0}
              max={9}
              value={priority}
              onChange={(e) => setPriority(Math.max(0, Math.min(9, Number(e.target.value) || 0)))}
            />
            <label htmlFor="q-correl">Correlation id</label>
            <input id="q-correl" value={correlId} onChange={(e) => setCorrelId(e.target.value)} />
            <label htmlFor="q-reply">Reply-to queue</label>
            <input id="q-reply" value={replyTo} onChange={(e) => setReplyTo(e.target.value)} />
          </fieldset>
          <fieldset>
            <legend>MQRFH2</legend>
            <label htmlFor="q-rfh2">mcd domain (empty: no RFH2)</label>
            <select id="q-rfh2" value={rfh2Domain} onChange={(e) => setRfh2Domain(e.target.value)}>
              <option value="">none</option>
              {['XMLNSC', 'XMLNS', 'XML', 'JSON', 'BLOB', 'MRM'].map((d) => (
                <option key={d}>{d}</option>
              ))}
            </select>
            <label htmlFor="q-usr">usr folder (name=value per line)</label>
            <textarea
              id="q-usr"
              rows={2}
              className="code"
              disabled={!rfh2Domain}
              value={usrText}
              onChange={(e) => setUsrText(e.target.value)}
            />
          </fieldset>
          <div className="actions">
            {canPut && (
              <button type="submit" className="primary">
                Put
              </button>
            )}
            <button
              type="button"
              disabled={!queue}
              onClick={() => void run(async () => setShown(await queues.browse(queue)), `Browsed ${queue}`)}
            >
              Browse
            </button>
            {canPut && (
              <button
                type="button"
                disabled={!queue}
                onClick={() =>
                  void run(async () => {
                    const got = await queues.get(queue, 2);
                    setShown(got ? [got] : []);
                  }, `Got from ${queue}`)
                }
              >
                Get
              </button>
            )}
          </div>
          {message && <p role="status">{message}</p>}
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
        </form>
        </div>
      </div>
      {shown && (
        <section aria-label="Messages" className="card">
          <h2>Messages ({shown.length})</h2>
          {shown.map((m, i) => (
            <article key={i} className="message" data-testid="message">
              <pre className="code">{m.body}</pre>
              <details>
                <summary>Descriptor</summary>
                <pre>{JSON.stringify(m.descriptor, null, 2)}</pre>
                {m.rfh2 && <pre>{JSON.stringify(m.rfh2, null, 2)}</pre>}
              </details>
              {m.bodyBase64 && <p className="muted">The body is not UTF-8 text; shown with replacement characters.</p>}
              {canPut && typeof m.descriptor.msgId === 'string' && (
                <form
                  className="inline"
                  onSubmit={(e) => {
                    e.preventDefault();
                    void run(() => queues.move(queue, m.descriptor.msgId as string, moveTo), `Moved to ${moveTo}`);
                  }}
                >
                  <label htmlFor={`move-${i}`}>Move to queue</label>
                  <input id={`move-${i}`} value={moveTo} onChange={(e) => setMoveTo(e.target.value)} required />
                  <button type="submit">Move</button>
                </form>
              )}
            </article>
          ))}
        </section>
      )}
    </section>
  );
}
