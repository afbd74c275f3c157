/**
 * Make a flow test case of a recorded message: name it, tick the fields its comparison leaves out
 * in the message's tree, save. The server takes the input as it left the input node and what
 * reached each queue-writing node; the case becomes the flow's next version and shows in Tests.
 */
import { useState } from 'react';
import { problemText } from '../api/client';
import { exerciser, type RecordedCase } from './api';
import { MessageTreeView } from './MessageTreeView';
import type { MessageView } from './message-view';

export interface RecordedCaseFormProps {
  deploymentId: number;
  recordingId: string;
  /** Which recorded message (flow invocation), from 1. */
  message: number;
  view: MessageView;
  onSaved: (saved: RecordedCase) => void;
  onCancel: () => void;
}

export function RecordedCaseForm({ deploymentId, recordingId, message, view, onSaved, onCancel }: RecordedCaseFormProps) {
  const [name, setName] = useState('');
  const [ignored, setIgnored] = useState<ReadonlySet<string>>(new Set());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const mark = (path: string, on: boolean) => {
    const next = new Set(ignored);
    if (on) next.add(path);
    else next.delete(path);
    setIgnored(next);
  };
  return (
    <form
      className="recorded-case"
      aria-label="New test case"
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        exerciser
          .testCase(deploymentId, recordingId, { name: name.trim(), message, ignore: [...ignored] })
          .then(onSaved)
          .catch((err: unknown) => setError(problemText(err)))
          .finally(() => setBusy(false));
      }}
    >
      <div className="row">
        <label>
          Test case name <input value={name} onChange={(e) => setName(e.target.value)} aria-label="Test case name" required maxLength={200} />
        </label>
        <button type="submit" className="primary" disabled={busy || !name.trim()}>
          Save test case
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <p className="muted">
        Message {message}: its input and what reached each output node (or the HTTP reply) are expected as recorded, with
        the message properties. Tick the fields to ignore ({ignored.size} ticked; MsgId, PutDate, PutTime, Expiry and BackoutCount always are).
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <MessageTreeView view={view} marked={ignored} onMark={(field, on) => mark(field.path, on)} />
    </form>
  );
}
