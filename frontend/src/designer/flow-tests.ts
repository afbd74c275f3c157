/** What the Tests panel shows of a flow's test cases and of a run's results. */
import type { Schemas } from '../api/client';

export type TestRun = Schemas['TestRunOut'];
export type CaseResult = Schemas['CaseResultOut'];

export interface CaseRow {
  name: string;
  /** Where the case's input goes and which outputs it checks, e.g. "in → out, ORDERS.OUT, HTTP reply". */
  summary: string;
  status: 'not run' | 'passed' | 'failed' | 'error';
  result?: CaseResult;
}

export interface DiffRow {
  where: string;
  path: string;
  kind: string;
  expected: string;
  actual: string;
}

function text(value: string | null | undefined): string {
  return value === null || value === undefined ? 'NULL' : value;
}

/** One row per stored case (by name), with its result in ``run`` when it ran. */
export function caseRows(tests: unknown, run: TestRun | null): CaseRow[] {
  const list = Array.isArray(tests) ? tests : [];
  return list.map((raw, index) => {
    const c = (raw ?? {}) as {
      name?: unknown;
      input?: { node?: unknown };
      expect?: { queue?: unknown; node?: unknown }[];
      reply?: unknown;
    };
    const name = typeof c.name === 'string' ? c.name : `case ${index + 1}`;
    const targets = (Array.isArray(c.expect) ? c.expect : []).map((e) => String(e?.node ?? e?.queue ?? '?'));
    if (c.reply) targets.push('HTTP reply');
    const input = typeof c.input?.node === 'string' ? c.input.node : 'input';
    const result = run?.results.find((r) => r.case === name);
    const status: CaseRow['status'] = !result ? 'not run' : result.error ? 'error' : result.passed ? 'passed' : 'failed';
    return { name, summary: `${input} → ${targets.join(', ')}`, status, result };
  });
}

/** Where an expected message belongs: its output node with the node's queue, or the queue (or HTTP reply). */
export function messagePlace(message: { queue: string; node?: string }): string {
  return message.node ? `${message.node} (${message.queue})` : message.queue;
}

/** How a result row names an expected message (``out (Q) #2``) or a FileOutput node's file (``fo file a.xml``). */
export function resultPlace(message: { queue: string; node?: string; file?: string; index: number }): string {
  return message.file ? `${message.node} file ${message.file}` : `${messagePlace(message)} #${message.index + 1}`;
}

/** The differences of a case's messages as table rows; problems without a path get a row of their own. */
export function diffRows(result: CaseResult): DiffRow[] {
  const rows: DiffRow[] = [];
  if (result.error) rows.push({ where: '', path: '', kind: 'error', expected: '', actual: result.error });
  for (const problem of result.problems) rows.push({ where: '', path: '', kind: 'problem', expected: '', actual: problem });
  for (const message of result.messages) {
    const where = resultPlace(message);
    if (message.problem) rows.push({ where, path: '', kind: 'problem', expected: '', actual: message.problem });
    for (const d of message.differences) {
      rows.push({
        where,
        path: d.path,
        kind: d.kind,
        expected: d.kind === 'unexpected' ? '' : text(d.expected),
        actual: d.kind === 'missing' ? '' : text(d.actual),
      });
    }
  }
  return rows;
}
