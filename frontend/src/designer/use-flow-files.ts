/**
 * Flows in and out of files: export the open flow with the subflows it uses, import such a file
 * (asking what to do about names already taken), and upload an ACE / IIB workspace zip.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useMemo, useState } from 'react';
import { api, problemText, unwrap, type Schemas } from '../api/client';
import { collectBundle, readBundle, type BundledSubflow, type SubflowRef } from './bundle';
import { useFitView } from './canvas-view';
import type { FlowDocument, Problem } from './document';
import { applyImport, findConflicts, restImportApi, type Choice, type NameConflict } from './import-flow';
import { subflowTypes } from './spec';
import { useSpecs } from './specs-context';
import { useDesignerStore } from './store';

/** A saved subflow's document for an export: by name, at the version a reference pins or the current one. */
async function fetchSubflow(ref: SubflowRef): Promise<{ version: number; document: FlowDocument }> {
  const status = await unwrap(api.GET('/api/flows/names', { params: { query: { name: ref.name } } }));
  if (!status.taken || status.flowId === null) throw new Error(`no saved flow named ${ref.name}`);
  const path = { flow_id: status.flowId };
  if (ref.version === undefined) {
    const flow = await unwrap(api.GET('/api/flows/{flow_id}', { params: { path } }));
    return { version: flow.currentVersion, document: flow.document };
  }
  const row = await unwrap(api.GET('/api/flows/{flow_id}/versions/{number}', { params: { path: { ...path, number: ref.version } } }));
  return { version: row.version, document: row.document };
}

/** An import waiting for the user to say what to do about the names it would take. */
export interface PendingImport {
  flow: FlowDocument;
  subflows: BundledSubflow[];
  conflicts: NameConflict[];
}

export function useFlowFiles({
  report,
  onProblems,
  onNotice,
}: {
  report: (message: string) => void;
  onProblems: (problems: Problem[]) => void;
  onNotice: (text: string | null) => void;
}) {
  const specs = useSpecs();
  const store = useDesignerStore();
  const queryClient = useQueryClient();
  const { fitSoon } = useFitView();
  const importApi = useMemo(() => restImportApi(api, unwrap, 'imported'), []);
  const [pending, setPending] = useState<PendingImport | null>(null);
  const [aceReport, setAceReport] = useState<Schemas['AceImportOut'] | null>(null);
  const [aceBusy, setAceBusy] = useState(false);

  const exportJson = useCallback(async () => {
    const doc = store.getState().document();
    let bundle;
    try {
      bundle = await collectBundle(doc, fetchSubflow, subflowTypes(specs)?.node.type);
    } catch (err) {
      report(`export refused: ${problemText(err)}`);
      return;
    }
    const blob = new Blob([JSON.stringify(bundle, null, 2)], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `${doc.name || 'flow'}.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  }, [store, specs, report]);

  const finishImport = useCallback(
    async (flow: FlowDocument, subflows: BundledSubflow[], choice: Choice, rename: string) => {
      try {
        const done = await applyImport(flow, subflows, choice, importApi, { rename, subflowType: subflowTypes(specs)?.node.type });
        store.getState().load(done.flow, done.flowId, done.version);
        // Not saved yet, and not the document of whatever runs under the name: no live counts.
        store.getState().setMeta({ imported: true });
        onProblems([]);
        onNotice(done.subflows.length ? `Imported; subflows: ${done.subflows.join(', ')}` : null);
        void queryClient.invalidateQueries({ queryKey: ['flows'] });
        fitSoon();
      } catch (err) {
        report(`import refused: ${problemText(err)}`);
      }
    },
    [importApi, specs, store, onProblems, onNotice, queryClient, fitSoon, report],
  );

  const importJson = useCallback(
    async (file: File) => {
      try {
        const text = await file.text();
        let raw: unknown;
        try {
          raw = JSON.parse(text);
        } catch (err) {
          throw new Error(`${file.name}: not JSON: ${(err as Error).message}`, { cause: err });
        }
        const { flow, subflows } = readBundle(raw);
        const conflicts = await findConflicts(flow, subflows, importApi);
        if (conflicts.length) setPending({ flow, subflows, conflicts });
        else await finishImport(flow, subflows, 'rename', '');
      } catch (err) {
        report(`import refused: ${problemText(err)}`);
      }
    },
    [importApi, finishImport, report],
  );

  /** The user's answer to the name conflicts of the pending import. */
  const resolveImport = useCallback(
    (choice: Choice, rename: string) => {
      if (!pending) return;
      setPending(null);
      void finishImport(pending.flow, pending.subflows, choice, rename);
    },
    [pending, finishImport],
  );

  /** Upload a zipped ACE / IIB workspace: the server stores its flows and answers with the report. */
  const importAce = useCallback(
    async (file: File) => {
      setAceBusy(true);
      try {
        const answer = await unwrap(
          api.POST('/api/imports/ace', {
            body: file as never,
            bodySerializer: (body: unknown) => body as Blob,
            headers: { 'Content-Type': 'application/zip' },
          }),
        );
        setAceReport(answer);
        void queryClient.invalidateQueries({ queryKey: ['flows'] });
      } catch (err) {
        report(`ACE import refused: ${problemText(err)}`);
      } finally {
        setAceBusy(false);
      }
    },
    [queryClient, report],
  );

  return {
    exportJson,
    importJson,
    pendingImport: pending,
    resolveImport,
    cancelImport: () => setPending(null),
    importAce,
    aceBusy,
    aceReport,
    closeAceReport: () => setAceReport(null),
  };
}
