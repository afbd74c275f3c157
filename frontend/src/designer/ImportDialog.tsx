/** Importing a flow whose name (or a subflow's) is taken: rename to a free name, or save as a new version. */
import { useState } from 'react';
import type { Choice, NameConflict } from './import-flow';

export function ImportDialog({
  conflicts,
  onChoose,
  onClose,
}: {
  conflicts: NameConflict[];
  onChoose: (choice: Choice, rename: string) => void;
  onClose: () => void;
}) {
  const main = conflicts.find((c) => !c.subflow);
  const [rename, setRename] = useState(main?.free ?? '');
  return (
    <div className="dialog-backdrop" role="dialog" aria-modal="true" aria-label="Import conflicts">
      <div className="dialog">
        <h2>Names already taken</h2>
        <ul data-testid="import-conflicts">
          {conflicts.map((c) => (
            <li key={c.name}>
              {c.subflow ? 'Subflow' : 'Flow'} <strong>{c.name}</strong> exists (version {c.currentVersion})
              {c.subflow ? ' with another document' : ''}.
            </li>
          ))}
        </ul>
        {main && (
          <div className="field">
            <label htmlFor="import-rename">Import the flow as</label>
            <input id="import-rename" value={rename} maxLength={128} onChange={(e) => setRename(e.target.value)} />
          </div>
        )}
        <p className="muted">
          Rename imports under free names; overwrite saves each as a new version of the flow that has the name (the flow
          itself when you save it).
        </p>
        <div className="actions">
          <button type="button" className="primary" onClick={() => onChoose('rename', rename)} disabled={!!main && !rename.trim()}>
            Rename
          </button>
          <button type="button" onClick={() => onChoose('overwrite', rename)}>
            Overwrite
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
