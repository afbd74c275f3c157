/** The problems panel: every validation, compile and ESQL problem; clicking one focuses its node. */
import type { ListedProblem } from './problems';

export function ProblemsPanel({ problems, onFocus }: { problems: ListedProblem[]; onFocus: (nodeId: string) => void }) {
  return (
    <section className="problems" aria-label="Problems">
      <h2>
        Problems <span className="badge">{problems.length}</span>
      </h2>
      {problems.length === 0 ? (
        <p className="muted">No problems.</p>
      ) : (
        <ul>
          {problems.map((p, i) => (
            <li key={`${p.node}:${p.property}:${i}`}>
              <button type="button" disabled={!p.node} onClick={() => p.node && onFocus(p.node)}>
                <strong>{p.nodeLabel ?? 'flow'}</strong>
                {p.propertyLabel && <> · {p.propertyLabel}</>}
                {p.line !== undefined && (
                  <>
                    {' '}
                    · line {p.line}, column {p.column}
                  </>
                )}
                : {p.message}
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
