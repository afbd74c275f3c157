/** The designer's toolbar: it draws the open flow's title and the buttons; the hooks do the work. */
import { useQuery } from '@tanstack/react-query';
import { useRef, type RefObject } from 'react';
import { api, unwrap } from '../api/client';
import { AceImportDialog } from './AceImportDialog';
import { useFitView } from './canvas-view';
import type { Problem } from './document';
import { ImportDialog } from './ImportDialog';
import { useDesigner } from './store';
import type { FlowDocumentActions } from './use-flow-document';
import { useFlowFiles } from './use-flow-files';

export interface ToolbarProps {
  canEdit: boolean;
  canDeploy: boolean;
  flow: FlowDocumentActions;
  onAutoLayout: () => void;
  onMakeSubflow: () => void;
  onConnect: () => void;
  onOpenVersions: () => void;
  onDeploy: () => void;
  report: (message: string) => void;
  onProblems: (problems: Problem[]) => void;
  onNotice: (text: string | null) => void;
}

/** Pick a file with a hidden input; the input is cleared so the same file can be picked again. */
function FilePicker({
  label,
  accept,
  testId,
  onFile,
  input,
}: {
  label: string;
  accept: string;
  testId: string;
  onFile: (file: File) => void;
  input: RefObject<HTMLInputElement | null>;
}) {
  return (
    <input
      ref={input}
      type="file"
      accept={accept}
      className="sr-only"
      aria-label={label}
      data-testid={testId}
      onChange={(e) => {
        const file = e.target.files?.[0];
        if (file) onFile(file);
        e.target.value = '';
      }}
    />
  );
}

export function Toolbar({
  canEdit,
  canDeploy,
  flow,
  onAutoLayout,
  onMakeSubflow,
  onConnect,
  onOpenVersions,
  onDeploy,
  report,
  onProblems,
  onNotice,
}: ToolbarProps) {
  const flowId = useDesigner((s) => s.meta.flowId);
  const name = useDesigner((s) => s.meta.name);
  const version = useDesigner((s) => s.meta.version);
  const dirty = useDesigner((s) => s.dirty);
  const canUndo = useDesigner((s) => s.past.length > 0);
  const canRedo = useDesigner((s) => s.future.length > 0);
  const undo = useDesigner((s) => s.undo);
  const redo = useDesigner((s) => s.redo);
  const { fit } = useFitView();
  const files = useFlowFiles({ report, onProblems, onNotice });
  const flows = useQuery({ queryKey: ['flows'], queryFn: () => unwrap(api.GET('/api/flows')) });
  const fileInput = useRef<HTMLInputElement>(null);
  const aceInput = useRef<HTMLInputElement>(null);

  return (
    <div className="toolbar" role="toolbar" aria-label="Designer actions">
      <label htmlFor="open-flow" className="sr-only">
        Open flow
      </label>
      <select
        id="open-flow"
        value={flowId ?? ''}
        onChange={(e) => (e.target.value ? void flow.open(Number(e.target.value)) : flow.openNew())}
      >
        <option value="">(new flow)</option>
        {flows.data?.map((f) => (
          <option key={f.id} value={f.id}>
            {f.name} (v{f.currentVersion})
          </option>
        ))}
      </select>
      <span className="flow-title" data-testid="flow-title">
        {name}
        {version !== undefined && ` · v${version}`}
        {dirty && ' •'}
      </span>
      {canEdit && (
        <>
          <label htmlFor="version-comment" className="sr-only">
            Version comment
          </label>
          <input
            id="version-comment"
            className="comment"
            placeholder="why this version (optional)"
            maxLength={2000}
            value={flow.comment}
            onChange={(e) => flow.setComment(e.target.value)}
          />
          <button type="button" className="primary" onClick={flow.save} disabled={flow.saving} title="Save (Ctrl+S)">
            {flow.saving ? 'Saving…' : 'Save'}
          </button>
        </>
      )}
      <button type="button" onClick={onOpenVersions} disabled={flowId === null}>
        Versions
      </button>
      {canEdit && (
        <>
          <button type="button" onClick={undo} disabled={!canUndo} title="Undo (Ctrl+Z)">
            Undo
          </button>
          <button type="button" onClick={redo} disabled={!canRedo} title="Redo (Ctrl+Y)">
            Redo
          </button>
          <button type="button" onClick={onAutoLayout} title="Auto-layout (Ctrl+L)">
            Layout
          </button>
          <button type="button" onClick={onMakeSubflow} title="Make a subflow from the selected nodes">
            Make subflow
          </button>
          <button type="button" onClick={onConnect} title="Connect a terminal of the selected node (C)">
            Connect…
          </button>
        </>
      )}
      <button type="button" onClick={fit} title="Zoom to fit (F)">
        Fit
      </button>
      {canEdit && (
        <>
          <button type="button" onClick={() => fileInput.current?.click()}>
            Import
          </button>
          <FilePicker
            input={fileInput}
            label="Import flow JSON"
            accept="application/json,.json"
            testId="import-file"
            onFile={(file) => void files.importJson(file)}
          />
          <button
            type="button"
            onClick={() => aceInput.current?.click()}
            disabled={files.aceBusy}
            title="Import an ACE or IIB workspace (a zip of Toolkit project folders)"
          >
            {files.aceBusy ? 'Importing…' : 'Import ACE…'}
          </button>
          <FilePicker
            input={aceInput}
            label="Import ACE workspace zip"
            accept=".zip,application/zip"
            testId="import-ace-file"
            onFile={(file) => void files.importAce(file)}
          />
        </>
      )}
      {files.aceReport && <AceImportDialog report={files.aceReport} onClose={files.closeAceReport} />}
      <button type="button" onClick={() => void files.exportJson()} title="Export the flow with the subflows it uses">
        Export
      </button>
      {files.pendingImport && (
        <ImportDialog conflicts={files.pendingImport.conflicts} onClose={files.cancelImport} onChoose={files.resolveImport} />
      )}
      {canDeploy && (
        <button
          type="button"
          onClick={onDeploy}
          disabled={flowId === null || dirty}
          title={dirty ? 'save before deploying' : 'Deploy to an execution group'}
        >
          Deploy
        </button>
      )}
    </div>
  );
}
