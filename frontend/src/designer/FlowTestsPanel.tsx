/** The Tests panel: the open flow's test cases, run on a private engine, green or red with a diff of trees. */
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api, problemText, unwrap } from '../api/client';
import { useCan } from '../auth';
import { MessageTreeView } from '../exerciser/MessageTreeView';
import type { MessageView } from '../exerciser/message-view';
import { caseRows, diffRows, messagePlace, type TestRun } from './flow-tests';
import { useDesigner } from './store';

const MARK = { 'not run': '○', passed: '✔', failed: '✘', error: '!' } as const;

export function FlowTestsButton() {
  const [open, setOpen] = useState(false);
  const flowId = useDesigner((s) => s.meta.flowId);
  const count = useDesigner((s) => (Array.isArray(s.meta.tests) ? s.meta.tests.length : 0));
  return (
    <>
      <button
        type="button"
        onClick={() => setOpen(true)}
        disabled={flowId === null}
        aria-label={`Tests (${count})`}
        title={`The flow's test cases (${count})`}
      >
        {count === 1 ? '1 test case' : `${count} test cases`}…
      </button>
      {open && flowId !== null && <FlowTestsDialog flowId={flowId} onClose={() => setOpen(false)} />}
    </>
  );
}

export function FlowTestsDialog({ flowId, onClose }: { flowId: number; onClose: () => void }) {
  const canRun = useCan('flows.edit');
  const tests = useDesigner((s) => s.meta.tests);
  const version = useDesigner((s) => s.meta.version);
  const dirty = useDesigner((s) => s.dirty);
  const [opened, setOpened] = useState<string | null>(null);
  const run = useMutation({
    mutationFn: async (): Promise<TestRun> =>
      unwrap(
        api.POST('/api/flows/{flow_id}/tests/run', {
          params: { path: { flow_id: flowId } },
          body: version !== undefined ? { version } : {},
        }),
      ),
  });
  const rows = caseRows(tests, run.data ?? null);
  return (
    <div className="dialog-backdrop" role="dialog" aria-modal="true" aria-label="Flow tests">
      <div className="dialog wide">
        <h2>Tests</h2>
        <p>
          Each case puts its input message on the flow&apos;s input queue (or writes its file, or sends its HTTP
          request) and compares what arrives from each output node, and the HTTP reply, as parsed trees. They run on a
          private queue manager and execution group, against the saved version
          {version !== undefined ? ` (${version})` : ''}.
          {dirty && <strong> Save first: unsaved changes are not tested.</strong>}
        </p>
        <p className="muted" data-testid="tests-setup-note">
          A case that needs setup (database rows, subscriptions, message sets) keeps it in the flow&apos;s{' '}
          <code>NAME.tests.json</code> and runs with <code>flowbroker test</code>.
        </p>
        {rows.length === 0 && <p data-testid="no-tests">This flow has no test cases yet.</p>}
        {rows.length > 0 && (
          <table className="grid" data-testid="test-cases">
            <thead>
              <tr>
                <th />
                <th>Case</th>
                <th>Input → expected</th>
                <th>Result</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.name} className={`test-${row.status.replace(' ', '-')}`} data-testid="test-case">
                  <td aria-hidden="true">{MARK[row.status]}</td>
                  <td>{row.name}</td>
                  <td>{row.summary}</td>
                  <td>
                    {row.status}{' '}
                    {row.result && !row.result.passed && (
                      <button
                        type="button"
                        className="link"
                        onClick={() => setOpened(opened === row.name ? null : row.name)}
                      >
                        {opened === row.name ? 'hide diff' : 'show diff'}
                      </button>
                    )}
                    {row.result && ` ${row.result.seconds.toFixed(2)} s`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {opened !== null &&
          rows
            .filter((row) => row.name === opened && row.result)
            .map((row) => (
              <table className="grid test-diff" key={row.name} data-testid="test-diff" aria-label={`differences of ${row.name}`}>
                <thead>
                  <tr>
                    <th>Message</th>
                    <th>Tree path</th>
                    <th />
                    <th>Expected</th>
                    <th>Actual</th>
                  </tr>
                </thead>
                <tbody>
                  {diffRows(row.result!).map((d, i) => (
                    <tr key={i} className={`diff-${d.kind}`}>
                      <td>{d.where}</td>
                      <td>
                        <code>{d.path}</code>
                      </td>
                      <td>{d.kind}</td>
                      <td>
                        <code>{d.expected}</code>
                      </td>
                      <td>
                        <code>{d.actual}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ))}
        {opened !== null &&
          rows
            .filter((row) => row.name === opened && row.result)
            .flatMap((row) => row.result!.messages)
            .filter((m) => m.actual)
            .map((m) => (
              <details key={`${m.node}-${m.queue}-${m.index}`} className="test-actual" data-testid="test-actual">
                <summary>
                  The message that arrived on {messagePlace(m)} #{m.index + 1}
                </summary>
                <MessageTreeView view={m.actual as unknown as MessageView} />
              </details>
            ))}
        {run.error && <p className="error">{problemText(run.error)}</p>}
        {run.data && (
          <p data-testid="test-summary" className={run.data.passed ? 'test-passed' : 'test-failed'}>
            {run.data.results.filter((r) => r.passed).length} of {run.data.results.length} passed in{' '}
            {run.data.seconds.toFixed(1)} s
          </p>
        )}
        <div className="actions">
          {canRun && (
            <button
              type="button"
              className="primary"
              onClick={() => run.mutate()}
              disabled={run.isPending || rows.length === 0}
            >
              {run.isPending ? 'Running…' : 'Run tests'}
            </button>
          )}
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
