/** Version history of the open flow and a side-by-side diff of two versions. */
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, problemText, unwrap } from '../api/client';
import { diffFlows } from './diff';
import { parseDocument } from './document';

function show(value: unknown): string {
  return value === undefined ? '—' : typeof value === 'string' ? value : JSON.stringify(value);
}

export function VersionsDialog({
  flowId,
  onOpen,
  onClose,
}: {
  flowId: number;
  onOpen: (version: number) => void;
  onClose: () => void;
}) {
  const versions = useQuery({
    queryKey: ['flow', flowId, 'versions'],
    queryFn: () => unwrap(api.GET('/api/flows/{flow_id}/versions', { params: { path: { flow_id: flowId } } })),
  });
  const [left, setLeft] = useState<number | null>(null);
  const [right, setRight] = useState<number | null>(null);
  const list = versions.data ?? [];
  const l = left ?? list[1]?.version ?? null;
  const r = right ?? list[0]?.version ?? null;
  const fetchVersion = (n: number | null) => ({
    queryKey: ['flow', flowId, 'version', n],
    enabled: n !== null,
    queryFn: () =>
      unwrap(
        api.GET('/api/flows/{flow_id}/versions/{number}', {
          params: { path: { flow_id: flowId, number: n as number } },
        }),
      ),
  });
  const leftDoc = useQuery(fetchVersion(l));
  const rightDoc = useQuery(fetchVersion(r));
  let diff = null;
  let diffError = null;
  if (leftDoc.data && rightDoc.data) {
    try {
      diff = diffFlows(parseDocument(leftDoc.data.document), parseDocument(rightDoc.data.document));
    } catch (err) {
      diffError = (err as Error).message;
    }
  }
  return (
    <div className="dialog-backdrop" role="dialog" aria-modal="true" aria-label="Version history">
      <div className="dialog wide">
        <h2>Version history</h2>
        {versions.error && <p className="error">{problemText(versions.error)}</p>}
        <table className="grid">
          <thead>
            <tr>
              <th>Version</th>
              <th>Saved</th>
              <th>By</th>
              <th>Comment</th>
              <th>Left</th>
              <th>Right</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((v) => (
              <tr key={v.version}>
                <td>{v.version}</td>
                <td>{new Date(v.createdAt).toLocaleString()}</td>
                <td>{v.author}</td>
                <td>{v.comment}</td>
                <td>
                  <input
                    type="radio"
                    name="left"
                    aria-label={`compare version ${v.version} on the left`}
                    checked={l === v.version}
                    onChange={() => setLeft(v.version)}
                  />
                </td>
                <td>
                  <input
                    type="radio"
                    name="right"
                    aria-label={`compare version ${v.version} on the right`}
                    checked={r === v.version}
                    onChange={() => setRight(v.version)}
                  />
                </td>
                <td>
                  <button type="button" onClick={() => onOpen(v.version)}>
                    Open
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {diffError && <p className="error">{diffError}</p>}
        {diff && (
          <div className="diff" aria-label={`Differences between version ${l} and version ${r}`}>
            <h3>
              Version {l} ↔ version {r}
            </h3>
            {!diff.nodes.length &&
              !diff.connectionsAdded.length &&
              !diff.connectionsRemoved.length &&
              !diff.flowProperties.length && <p className="muted">The two versions are the same.</p>}
            <table className="grid diff-table">
              <thead>
                <tr>
                  <th>What</th>
                  <th>Version {l}</th>
                  <th>Version {r}</th>
                </tr>
              </thead>
              <tbody>
                {diff.flowProperties.map((c) => (
                  <tr key={`flow-${c.name}`} className="changed">
                    <td>flow · {c.name}</td>
                    <td>{show(c.before)}</td>
                    <td>{show(c.after)}</td>
                  </tr>
                ))}
                {diff.nodes.map((n) =>
                  n.status === 'changed' ? (
                    n.changes.map((c) => (
                      <tr key={`${n.id}-${c.name}`} className="changed">
                        <td>
                          {n.id} ({n.type}) · {c.name}
                        </td>
                        <td>{show(c.before)}</td>
                        <td>{show(c.after)}</td>
                      </tr>
                    ))
                  ) : (
                    <tr key={n.id} className={n.status}>
                      <td>
                        {n.id} ({n.type})
                      </td>
                      <td>{n.status === 'removed' ? 'present' : '—'}</td>
                      <td>{n.status === 'added' ? 'added' : 'removed'}</td>
                    </tr>
                  ),
                )}
                {diff.connectionsRemoved.map((c) => (
                  <tr key={`-${c}`} className="removed">
                    <td>connection</td>
                    <td>{c}</td>
                    <td>—</td>
                  </tr>
                ))}
                {diff.connectionsAdded.map((c) => (
                  <tr key={`+${c}`} className="added">
                    <td>connection</td>
                    <td>—</td>
                    <td>{c}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
