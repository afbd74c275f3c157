/**
 * The queues page: depths; define, purge and delete a queue; put a test message with any MQRFH2
 * folders; browse and get; move a message to another queue, or a dead letter back to its origin.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { problemText, type Schemas } from '../api/client';
import { queues, type QueueMessage } from '../api/runtime';
import { useCan } from '../auth';

type BodyKind = 'text' | 'xml' | 'json';
type Domain = Schemas['Rfh2In']['domain'];
type Jms = NonNullable<Schemas['JmsIn']>;
const DOMAINS: Domain[] = ['XMLNSC', 'XMLNS', 'XML', 'JSON', 'BLOB', 'MRM'];
/** The <jms> folder's fields, each with what it holds. */
const JMS_FIELDS: [keyof Jms, string][] = [
  ['dst', 'Dst: destination'],
  ['rto', 'Rto: reply to'],
  ['tms', 'Tms: timestamp (ms)'],
  ['exp', 'Exp: expiration (ms)'],
  ['pri', 'Pri: priority 0-9'],
  ['dlv', 'Dlv: delivery mode 1|2'],
  ['cid', 'Cid: correlation id'],
  ['gid', 'Gid: group id'],
  ['seq', 'Seq: group sequence'],
];

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

export interface Rfh2Form {
  domain: Domain | '';
  set: string;
  type: string;
  format: string;
  usr: string;
  topics: string;
  jms: Partial<Record<keyof Jms, string>>;
}

export const EMPTY_RFH2: Rfh2Form = { domain: '', set: '', type: '', format: '', usr: '', topics: '', jms: {} };

/** The MQRFH2 of the request from what the form holds; null without a domain (no RFH2). */
export function rfh2Request(form: Rfh2Form): Schemas['Rfh2In'] | null {
  if (!form.domain) return null;
  const topics = form.topics
    .split('\n')
    .map((t) => t.trim())
    .filter(Boolean);
  const jms = Object.fromEntries(Object.entries(form.jms).filter(([, v]) => v && v.trim())) as Jms;
  return {
    domain: form.domain,
    set: form.set.trim(),
    type: form.type.trim(),
    format: form.format.trim(),
    usr: parseUsrFolder(form.usr),
    psc: topics.length ? { command: 'Publish', topics } : null,
    jms: Object.keys(jms).length ? jms : null,
  };
}

function MessageView({
  message,
  index,
  queue,
  canWrite,
  run,
}: {
  message: QueueMessage;
  index: number;
  queue: string;
  canWrite: boolean;
  run: (what: () => Promise<unknown>, done: string) => Promise<boolean>;
}) {
  const [moveTo, setMoveTo] = useState('');
  const msgId = typeof message.descriptor.msgId === 'string' ? message.descriptor.msgId : null;
  return (
    <article className="message" data-testid="message">
      <pre className="code">{message.body}</pre>
      {message.reason && (
        <p className="muted" data-testid="dead-letter-reason">
          Failed{message.origin ? ` on ${message.origin}` : ''}: {message.reason}
        </p>
      )}
      <details>
        <summary>Descriptor{message.rfh2 ? ', MQRFH2' : ''} and properties</summary>
        <pre>{JSON.stringify(message.descriptor, null, 2)}</pre>
        {message.rfh2 && <pre data-testid="rfh2">{JSON.stringify(message.rfh2, null, 2)}</pre>}
        {Object.keys(message.properties).length > 0 && <pre>{JSON.stringify(message.properties, null, 2)}</pre>}
      </details>
      {message.bodyBase64 && <p className="muted">The body is not UTF-8 text; shown with replacement characters.</p>}
      {canWrite && msgId && (
        <div className="inline">
          {message.origin && (
            <button
              type="button"
              onClick={() => void run(() => queues.moveToOrigin(queue, msgId), `Moved back to ${message.origin}`)}
            >
              Move back to {message.origin}
            </button>
          )}
          <form
            className="inline"
            onSubmit={(e) => {
              e.preventDefault();
              void run(() => queues.move(queue, msgId, moveTo), `Moved to ${moveTo}`);
            }}
          >
            <label htmlFor={`move-${index}`}>Move to queue</label>
            <input id={`move-${index}`} value={moveTo} onChange={(e) => setMoveTo(e.target.value)} required />
            <button type="submit">Move</button>
          </form>
        </div>
      )}
    </article>
  );
}

export function Queues() {
  const canWrite = useCan('queues.write');
  const queryClient = useQueryClient();
  const list = useQuery({ queryKey: ['queues'], queryFn: queues.list, refetchInterval: 3000, retry: false });
  const [queue, setQueue] = useState('');
  const [kind, setKind] = useState<BodyKind>('xml');
  const [body, setBody] = useState('<Order><Item>Widget</Item><Qty>2</Qty></Order>');
  const [persistent, setPersistent] = useState(true);
  const [correlId, setCorrelId] = useState('');
  const [replyTo, setReplyTo] = useState('');
  const [priority, setPriority] = useState(4);
  const [rfh2, setRfh2] = useState<Rfh2Form>(EMPTY_RFH2);
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<QueueMessage[] | null>(null);
  const [shownQueue, setShownQueue] = useState('');
  const [newQueue, setNewQueue] = useState('');
  const [backoutThreshold, setBackoutThreshold] = useState(0);
  const [backoutQueue, setBackoutQueue] = useState('');

  const run = async <T,>(what: () => Promise<T>, done: string | ((result: T) => string)): Promise<boolean> => {
    setError(null);
    setMessage(null);
    try {
      const result = await what();
      setMessage(typeof done === 'string' ? done : done(result));
      void queryClient.invalidateQueries({ queryKey: ['queues'] });
      return true;
    } catch (err) {
      setError(problemText(err));
      return false;
    }
  };

  const put = (e: FormEvent) => {
    e.preventDefault();
    const bad = checkBody(kind, body);
    if (bad) {
      setError(bad);
      return;
    }
    let header: Schemas['Rfh2In'] | null;
    try {
      header = rfh2Request(rfh2);
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
          rfh2: header,
        }),
      `Put one message on ${queue}`,
    );
  };

  const show = (name: string, messages: QueueMessage[]) => {
    setShownQueue(name);
    setShown(messages);
  };
  const rfh2Field = (key: 'set' | 'type' | 'format', label: string) => (
    <>
      <label htmlFor={`q-rfh2-${key}`}>{label}</label>
      <input
        id={`q-rfh2-${key}`}
        value={rfh2[key]}
        disabled={!rfh2.domain}
        onChange={(e) => setRfh2({ ...rfh2, [key]: e.target.value })}
      />
    </>
  );

  return (
    <section className="page" aria-label="Queues">
      <h1>Queues</h1>
      {list.error && <p className="error">{problemText(list.error)}</p>}
      <div className="columns">
        <table className="grid" aria-label="Queue depths">
          <thead>
            <tr>
              <th>Queue</th>
              <th>Depth</th>
              <th>Backout queue</th>
              {canWrite && <th>Actions</th>}
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
                <td>
                  {q.backoutQueue}
                  {q.backoutThreshold ? ` after ${q.backoutThreshold}` : ''}
                </td>
                {canWrite && (
                  <td>
                    <button
                      type="button"
                      aria-label={`Purge ${q.name}`}
                      disabled={!q.depth}
                      onClick={() => {
                        if (window.confirm(`Remove all ${q.depth} messages of ${q.name}?`))
                          void run(
                            () => queues.purge(q.name),
                            (r) => `Purged ${r.purged} message${r.purged === 1 ? '' : 's'} of ${q.name}`,
                          );
                      }}
                    >
                      Purge
                    </button>{' '}
                    <button
                      type="button"
                      className="danger"
                      aria-label={`Delete ${q.name}`}
                      onClick={() => {
                        if (window.confirm(`Delete queue ${q.name}${q.depth ? ` and its ${q.depth} messages` : ''}?`))
                          void run(() => queues.remove(q.name, q.depth > 0), `Deleted ${q.name}`);
                      }}
                    >
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
        <div>
          {canWrite && (
            <form
              className="card define-queue"
              aria-label="Define a queue"
              onSubmit={(e) => {
                e.preventDefault();
                const name = newQueue.trim();
                if (!/^[A-Za-z0-9._/%]{1,48}$/.test(name)) {
                  setError('Queue name: 1 to 48 characters of A-Z a-z 0-9 . _ / %');
                  return;
                }
                void run(
                  () => queues.define({ name, backoutThreshold, backoutRequeueQ: backoutQueue.trim() }),
                  `Defined ${name}`,
                ).then(() => setNewQueue(''));
              }}
            >
              <label htmlFor="q-define">New queue</label>
              <input id="q-define" value={newQueue} onChange={(e) => setNewQueue(e.target.value)} placeholder="QUEUE.NAME" />
              <label htmlFor="q-bothresh">Backout threshold</label>
              <input
                id="q-bothresh"
                type="number"
                min={0}
                value={backoutThreshold}
                onChange={(e) => setBackoutThreshold(Math.max(0, Number(e.target.value) || 0))}
              />
              <label htmlFor="q-boqname">Backout queue</label>
              <input id="q-boqname" value={backoutQueue} onChange={(e) => setBackoutQueue(e.target.value)} />
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
            <fieldset aria-label="MQRFH2 folders">
              <legend>MQRFH2</legend>
              <label htmlFor="q-rfh2">mcd domain (empty: no RFH2)</label>
              <select
                id="q-rfh2"
                value={rfh2.domain}
                onChange={(e) => setRfh2({ ...rfh2, domain: e.target.value as Domain | '' })}
              >
                <option value="">none</option>
                {DOMAINS.map((d) => (
                  <option key={d}>{d}</option>
                ))}
              </select>
              {rfh2Field('set', 'mcd message set')}
              {rfh2Field('type', 'mcd message type')}
              {rfh2Field('format', 'mcd message format')}
              <label htmlFor="q-usr">usr folder (name=value per line)</label>
              <textarea
                id="q-usr"
                rows={2}
                className="code"
                disabled={!rfh2.domain}
                value={rfh2.usr}
                onChange={(e) => setRfh2({ ...rfh2, usr: e.target.value })}
              />
              <label htmlFor="q-psc">psc topics (one per line)</label>
              <textarea
                id="q-psc"
                rows={2}
                className="code"
                disabled={!rfh2.domain}
                value={rfh2.topics}
                onChange={(e) => setRfh2({ ...rfh2, topics: e.target.value })}
              />
              <details>
                <summary>jms folder</summary>
                {JMS_FIELDS.map(([key, label]) => (
                  <span key={key} className="field">
                    <label htmlFor={`q-jms-${key}`}>jms {label}</label>
                    <input
                      id={`q-jms-${key}`}
                      value={rfh2.jms[key] ?? ''}
                      disabled={!rfh2.domain}
                      onChange={(e) => setRfh2({ ...rfh2, jms: { ...rfh2.jms, [key]: e.target.value } })}
                    />
                  </span>
                ))}
              </details>
            </fieldset>
            <div className="actions">
              {canWrite && (
                <button type="submit" className="primary">
                  Put
                </button>
              )}
              <button type="button" disabled={!queue} onClick={() => void run(async () => show(queue, await queues.browse(queue)), `Browsed ${queue}`)}>
                Browse
              </button>
              {canWrite && (
                <button
                  type="button"
                  disabled={!queue}
                  onClick={() =>
                    void run(async () => {
                      const got = await queues.get(queue, 2);
                      show(queue, got ? [got] : []);
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
          <h2>
            Messages of {shownQueue} ({shown.length})
          </h2>
          {shown.map((m, i) => (
            <MessageView
              key={`${String(m.descriptor.msgId)}-${i}`}
              message={m}
              index={i}
              queue={shownQueue}
              canWrite={canWrite}
              run={async (what, done) => {
                const moved = await run(what, done);
                // a moved message has left this queue
                if (moved) setShown((prev) => prev?.filter((x) => x !== m) ?? null);
                return moved;
              }}
            />
          ))}
        </section>
      )}
    </section>
  );
}
