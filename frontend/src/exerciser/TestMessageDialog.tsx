/**
 * Send a test message to an input node of the deployed flow: the body in the node's domain, the
 * MQMD fields and an MQRFH2 (or, for HTTPInput, the request's method and headers). Test messages
 * are kept by name on the input node (its `ui.testMessages`), so they are saved and versioned
 * with the flow. The server parses the body first; a body that does not parse comes back with the
 * parser's line and column, marked in the editor.
 */
import { useState, type FormEvent } from 'react';
import { ApiProblem, problemText, type Schemas } from '../api/client';
import type { FlowCanvasNode } from '../designer/document';
import { testInput } from '../designer/spec';
import { useSpecs } from '../designer/specs-context';
import { EMPTY_RFH2, rfh2Request, type Rfh2Form } from '../pages/Queues';
import { exerciser, type TestMessageSent } from './api';
import { BodyEditor, type BodyError } from './BodyEditor';

type PutIn = Schemas['PutIn'];
type HttpIn = Schemas['HttpIn'];
type Format = NonNullable<PutIn['format']>;
type Method = NonNullable<HttpIn['method']>;

/** One named test message as the input node keeps it. */
export interface NamedTestMessage {
  name: string;
  message: PutIn;
  http?: HttpIn | null;
}

const FORMATS: Format[] = ['MQSTR', 'XML', 'JSON', 'NONE'];
const METHODS: Method[] = ['POST', 'PUT', 'GET', 'DELETE', 'PATCH'];
const RFH2_DOMAINS: Rfh2Form['domain'][] = ['', 'XMLNSC', 'XMLNS', 'XML', 'JSON', 'BLOB', 'MRM'];

/** The named test messages an input node keeps (anything malformed in `ui` is left out). */
export function namedTestMessages(node: FlowCanvasNode): NamedTestMessage[] {
  const kept = node.data.ui?.testMessages;
  if (!Array.isArray(kept)) return [];
  return kept.filter(
    (m): m is NamedTestMessage =>
      !!m && typeof m === 'object' && typeof (m as NamedTestMessage).name === 'string' && typeof (m as NamedTestMessage).message?.body === 'string',
  );
}

/** `Name: value` lines of HTTP headers; throws naming the line that is wrong. */
export function parseHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon).trim();
    if (!/^[A-Za-z0-9-]{1,64}$/.test(name)) throw new Error(`headers, line ${i + 1}: write Name: value`);
    headers[name] = line.slice(colon + 1).trim();
  });
  return headers;
}

/** The parser's position from a refusal of the server, when it gave one. */
export function bodyError(error: unknown): BodyError | null {
  if (!(error instanceof ApiProblem) || !Array.isArray(error.detail)) return null;
  const first = error.detail[0] as { pointer?: string; line?: number; column?: number; message?: string } | undefined;
  if (!first || first.pointer !== '/message/body') return null;
  return { line: first.line ?? 0, column: first.column ?? 0, message: first.message ?? error.message };
}

export function TestMessageDialog({
  deploymentId,
  node,
  canSave,
  onSave,
  onSent,
  onClose,
}: {
  deploymentId: number;
  node: FlowCanvasNode;
  /** Whether the user may change the flow (keep a named test message on the node). */
  canSave: boolean;
  onSave: (messages: NamedTestMessage[]) => void;
  onSent: (sent: TestMessageSent) => void;
  onClose: () => void;
}) {
  const specs = useSpecs();
  const isHttp = testInput(specs[node.data.type]) === 'http';
  const saved = namedTestMessages(node);
  const [name, setName] = useState(saved[0]?.name ?? '');
  const [body, setBody] = useState(saved[0]?.message.body ?? '');
  const [format, setFormat] = useState<Format>(saved[0]?.message.format ?? 'MQSTR');
  const [persistent, setPersistent] = useState(saved[0]?.message.persistent ?? false);
  const [priority, setPriority] = useState(saved[0]?.message.priority ?? -1);
  const [correlId, setCorrelId] = useState(saved[0]?.message.correlId ?? '');
  const [replyToQ, setReplyToQ] = useState(saved[0]?.message.replyToQ ?? '');
  const [rfh2, setRfh2] = useState<Rfh2Form>(() => rfh2Form(saved[0]?.message.rfh2));
  const [method, setMethod] = useState<Method>((saved[0]?.http?.method as Method | undefined) ?? 'POST');
  const [contentType, setContentType] = useState(saved[0]?.http?.contentType ?? '');
  const [headers, setHeaders] = useState(headerText(saved[0]?.http?.headers));
  const [error, setError] = useState<string | null>(null);
  const [parseError, setParseError] = useState<BodyError | null>(null);
  const [sending, setSending] = useState(false);
  const domain = rfh2.domain || String(node.data.properties.messageDomain ?? 'BLOB');

  const load = (m: NamedTestMessage) => {
    setName(m.name);
    setBody(m.message.body);
    setFormat(m.message.format ?? 'MQSTR');
    setPersistent(m.message.persistent ?? false);
    setPriority(m.message.priority ?? -1);
    setCorrelId(m.message.correlId ?? '');
    setReplyToQ(m.message.replyToQ ?? '');
    setRfh2(rfh2Form(m.message.rfh2));
    setMethod((m.http?.method as Method | undefined) ?? 'POST');
    setContentType(m.http?.contentType ?? '');
    setHeaders(headerText(m.http?.headers));
    setParseError(null);
    setError(null);
  };

  /** The request as the form stands; throws naming a malformed field. */
  const current = (): NamedTestMessage => {
    const message: PutIn = { body, format, persistent, priority, rfh2: rfh2Request(rfh2) };
    if (correlId.trim()) message.correlId = correlId.trim();
    if (replyToQ.trim()) message.replyToQ = replyToQ.trim();
    const http: HttpIn | null = isHttp ? { method, contentType: contentType.trim(), headers: parseHeaders(headers) } : null;
    return { name: name.trim(), message, http };
  };

  const save = () => {
    setError(null);
    try {
      const named = current();
      if (!named.name) throw new Error('give the test message a name to keep it with the flow');
      onSave([...saved.filter((m) => m.name !== named.name), named]);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const send = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setParseError(null);
    let named: NamedTestMessage;
    try {
      named = current();
    } catch (err) {
      setError((err as Error).message);
      return;
    }
    setSending(true);
    try {
      const sent = await exerciser.send(deploymentId, { node: node.id, message: named.message, http: named.http ?? null, record: true });
      onSent(sent);
    } catch (err) {
      const position = bodyError(err);
      setParseError(position);
      setError(position ? `line ${position.line}, column ${position.column}: ${position.message}` : problemText(err));
    } finally {
      setSending(false);
    }
  };

  return (
    <div className="dialog-backdrop">
      <form className="dialog wide test-message" role="dialog" aria-label="Send a test message" onSubmit={(e) => void send(e)}>
        <h2>
          Test message to {node.data.name} <span className="muted">({node.data.type}, {domain})</span>
        </h2>
        <div className="row">
          <label>
            Name{' '}
            <input value={name} onChange={(e) => setName(e.target.value)} maxLength={128} list="test-message-names" aria-label="Test message name" />
          </label>
          <datalist id="test-message-names">
            {saved.map((m) => (
              <option key={m.name} value={m.name} />
            ))}
          </datalist>
          {saved.length > 0 && (
            <label>
              Saved{' '}
              <select
                aria-label="Saved test messages"
                value=""
                onChange={(e) => {
                  const found = saved.find((m) => m.name === e.target.value);
                  if (found) load(found);
                }}
              >
                <option value="">(load…)</option>
                {saved.map((m) => (
                  <option key={m.name} value={m.name}>
                    {m.name}
                  </option>
                ))}
              </select>
            </label>
          )}
        </div>
        <BodyEditor value={body} domain={domain} error={parseError} onChange={setBody} />
        {isHttp ? (
          <fieldset>
            <legend>HTTP request</legend>
            <label>
              Method{' '}
              <select value={method} onChange={(e) => setMethod(e.target.value as Method)}>
                {METHODS.map((m) => (
                  <option key={m}>{m}</option>
                ))}
              </select>
            </label>{' '}
            <label>
              Content type <input value={contentType} onChange={(e) => setContentType(e.target.value)} placeholder="application/xml" />
            </label>
            <label className="block">
              Headers (Name: value a line)
              <textarea rows={3} value={headers} onChange={(e) => setHeaders(e.target.value)} aria-label="HTTP headers" />
            </label>
          </fieldset>
        ) : (
          <>
            <fieldset>
              <legend>MQMD</legend>
              <label>
                Format{' '}
                <select value={format} onChange={(e) => setFormat(e.target.value as Format)} aria-label="MQMD format">
                  {FORMATS.map((f) => (
                    <option key={f}>{f}</option>
                  ))}
                </select>
              </label>{' '}
              <label>
                <input type="checkbox" checked={persistent} onChange={(e) => setPersistent(e.target.checked)} /> Persistent
              </label>{' '}
              <label>
                Priority{' '}
                <input type="number" min={-1} max={9} value={priority} onChange={(e) => setPriority(Number(e.target.value))} style={{ width: 48 }} />
              </label>{' '}
              <label>
                CorrelId <input value={correlId} maxLength={24} onChange={(e) => setCorrelId(e.target.value)} aria-label="Correlation id" />
              </label>{' '}
              <label>
                ReplyToQ <input value={replyToQ} maxLength={48} onChange={(e) => setReplyToQ(e.target.value)} aria-label="Reply-to queue" />
              </label>
            </fieldset>
            <fieldset>
              <legend>MQRFH2 and properties</legend>
              <label>
                Domain{' '}
                <select
                  aria-label="MQRFH2 domain"
                  value={rfh2.domain}
                  onChange={(e) => setRfh2({ ...rfh2, domain: e.target.value as Rfh2Form['domain'] })}
                >
                  {RFH2_DOMAINS.map((d) => (
                    <option key={d} value={d}>
                      {d || '(no MQRFH2)'}
                    </option>
                  ))}
                </select>
              </label>
              {rfh2.domain && (
                <label className="block">
                  &lt;usr&gt; properties (name=value a line)
                  <textarea rows={3} value={rfh2.usr} onChange={(e) => setRfh2({ ...rfh2, usr: e.target.value })} aria-label="usr properties" />
                </label>
              )}
            </fieldset>
          </>
        )}
        {error && (
          <p className="error" role="alert" data-testid="test-message-error">
            {error}
          </p>
        )}
        <div className="actions">
          {canSave && (
            <button type="button" onClick={save} title="Keep this test message on the node; save the flow to keep it for good">
              Keep with flow
            </button>
          )}
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="submit" className="primary" disabled={sending}>
            {sending ? 'Sending…' : 'Send and record'}
          </button>
        </div>
      </form>
    </div>
  );
}

function rfh2Form(rfh2: PutIn['rfh2'] | undefined): Rfh2Form {
  if (!rfh2) return EMPTY_RFH2;
  return {
    ...EMPTY_RFH2,
    domain: rfh2.domain,
    set: rfh2.set ?? '',
    type: rfh2.type ?? '',
    format: rfh2.format ?? '',
    usr: Object.entries(rfh2.usr ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
  };
}

function headerText(headers: Record<string, string> | undefined): string {
  return Object.entries(headers ?? {})
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
}
