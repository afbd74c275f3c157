/**
 * The problems reported about the flow from outside the canvas check: by the server (save,
 * open, import, deploy) and by the ESQL editors. They go with their node when it is deleted.
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { Problem } from './document';
import { useDesigner } from './store';

export interface ReportedProblems {
  /** The server's problems (shown by the property panel beside their property too). */
  server: Problem[];
  /** Every reported problem: the ESQL editors' and the server's. */
  all: Problem[];
  /** Replace the server's problems ([] clears them). */
  setServer: (problems: Problem[]) => void;
  /** One problem of the flow as a whole, replacing the server's. */
  report: (message: string) => void;
  /** What an ESQL editor found in one property of one node (replaces its earlier findings). */
  onEsqlDiagnostics: (nodeId: string, property: string, found: Problem[]) => void;
}

export function useReportedProblems(): ReportedProblems {
  const [server, setServer] = useState<Problem[]>([]);
  const [esql, setEsql] = useState<Record<string, Problem[]>>({});

  // Problems reported about a node go with it: a later node may be given the same id.
  const nodeIds = useDesigner(useShallow((s) => s.nodes.map((n) => n.id)));
  useEffect(() => {
    const alive = new Set(nodeIds);
    setEsql((prev) => {
      const kept = Object.entries(prev).filter(([key]) => alive.has(key.slice(0, key.lastIndexOf(':'))));
      return kept.length === Object.keys(prev).length ? prev : Object.fromEntries(kept);
    });
    setServer((prev) => {
      const kept = prev.filter((p) => p.node === null || alive.has(p.node));
      return kept.length === prev.length ? prev : kept;
    });
  }, [nodeIds]);

  const onEsqlDiagnostics = useCallback((nodeId: string, property: string, found: Problem[]) => {
    setEsql((prev) => ({ ...prev, [`${nodeId}:${property}`]: found.map((p) => ({ ...p, node: nodeId, property })) }));
  }, []);
  const report = useCallback((message: string) => setServer([{ node: null, property: null, message }]), []);
  const all = useMemo(() => [...Object.values(esql).flat(), ...server], [esql, server]);
  return { server, all, setServer, report, onEsqlDiagnostics };
}
