/** The report of an ACE / IIB workspace import: what each flow became, what is to replace, what failed. */
import type { Schemas } from '../api/client';

export interface AceFlowLine {
  name: string;
  kind: string;
  outcome: string;
  mapped: number;
  total: number;
  /** one line per unsupported node (kept as a placeholder), per ESQL module not found and per problem that stops a deploy */
  notes: string[];
}

export interface AceReportView {
  headline: string;
  flows: AceFlowLine[];
  errors: string[];
  queues: string[];
  /** the MQSC scripts' durable subscriptions: defined, or why not */
  subscriptions: string[];
  /** message sets and schemas of the workspace, each with why it is not imported */
  models: string[];
}

type Row = Record<string, unknown>;

const text = (value: unknown): string => (typeof value === 'string' ? value : value === undefined ? '' : String(value));
const rows = (value: unknown): Row[] => (Array.isArray(value) ? (value.filter((v) => v && typeof v === 'object') as Row[]) : []);

/** The parts of the report the dialog shows, read defensively (its rows are free-form objects). */
export function aceReportView(report: Schemas['AceImportOut']): AceReportView {
  const s = report.summary as Row;
  const unsupported = Object.entries((s.unsupportedNodeTypes as Record<string, number>) ?? {})
    .map(([type, count]) => `${type} ×${count}`)
    .join(', ');
  const headline =
    `${text(s.flows)} flows, ${text(s.nodesMapped)}/${text(s.nodes)} nodes mapped (${text(s.nodesMappedPercent)}%), ` +
    `${text(s.esqlModulesResolved)} ESQL modules resolved, ${text(s.esqlModulesMissing)} missing` +
    (unsupported ? `; not supported: ${unsupported}` : '');
  const flows = rows(report.flows).map((f) => ({
    name: text(f.name),
    kind: text(f.kind),
    outcome: text(f.outcome),
    mapped: Number(f.nodesMapped ?? 0),
    total: Number(f.nodesTotal ?? 0),
    notes: [
      ...rows(f.unsupportedNodes).map((n) => `to replace ${text(n.node)} (${text(n.type)}): ${text(n.reason)}`),
      ...rows(f.esqlMissing).map((m) => `ESQL: ${text(m.reason)}`),
      ...rows(f.problems).map((p) => `problem: ${text(p.message)}`),
    ],
  }));
  const queues = rows(report.queues).map((q) => `${text(q.name)}: ${text(q.problem) || text(q.outcome) || 'converted'}`);
  const subscriptions = rows(report.subscriptions).map(
    (s) => `${text(s.name)} (${text(s.topic)} → ${text(s.queue)}): ${text(s.problem) || text(s.outcome) || 'converted'}`,
  );
  const models = rows(report.models).map((m) => `${text(m.kind)} ${text(m.file)}: ${text(m.outcome)}: ${text(m.reason)}`);
  return { headline, flows, errors: rows(report.errors).map((e) => text(e.message)), queues, subscriptions, models };
}

export function AceImportDialog({ report, onClose }: { report: Schemas['AceImportOut']; onClose: () => void }) {
  const view = aceReportView(report);
  return (
    <div className="dialog-backdrop" role="dialog" aria-modal="true" aria-label="ACE import report">
      <div className="dialog">
        <h2>ACE import</h2>
        <p data-testid="ace-import-headline">{view.headline}</p>
        <ul data-testid="ace-import-flows">
          {view.flows.map((f) => (
            <li key={f.name}>
              {f.kind} <strong>{f.name}</strong>: {f.outcome}, {f.mapped}/{f.total} nodes
              {f.notes.length > 0 && (
                <ul>
                  {f.notes.map((note) => (
                    <li key={note} className="muted">
                      {note}
                    </li>
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ul>
        {view.queues.length > 0 && (
          <>
            <h3>Queues</h3>
            <ul>
              {view.queues.map((q) => (
                <li key={q}>{q}</li>
              ))}
            </ul>
          </>
        )}
        {view.subscriptions.length > 0 && (
          <>
            <h3>Subscriptions</h3>
            <ul data-testid="ace-import-subscriptions">
              {view.subscriptions.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          </>
        )}
        {view.models.length > 0 && (
          <>
            <h3>Message models</h3>
            <ul data-testid="ace-import-models">
              {view.models.map((line) => (
                <li key={line} className="muted">
                  {line}
                </li>
              ))}
            </ul>
          </>
        )}
        {view.errors.length > 0 && (
          <ul className="problems" data-testid="ace-import-errors">
            {view.errors.map((e) => (
              <li key={e}>{e}</li>
            ))}
          </ul>
        )}
        <div className="actions">
          <button type="button" className="primary" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
