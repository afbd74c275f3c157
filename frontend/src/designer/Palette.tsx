/** The palette: every node type from the specs, by category, searchable, draggable and keyboard-usable. */
import { useMemo, useState } from 'react';
import type { NodeSpec } from './spec';
import { ICON_GLYPHS, useSpecs } from './specs-context';

export const DRAG_TYPE = 'application/x-flowbroker-node';

const ORDER = ['input', 'output', 'transformation', 'routing', 'database', 'construction', 'diagnostics', 'subflow'];

export function Palette({ onAdd, disabled }: { onAdd: (spec: NodeSpec) => void; disabled: boolean }) {
  const specs = useSpecs();
  const [search, setSearch] = useState('');
  const groups = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const byCategory = new Map<string, NodeSpec[]>();
    for (const spec of Object.values(specs)) {
      // a placeholder (an imported node of a type flowbroker lacks) is drawn, never added
      if (spec.extra?.placeholder === true) continue;
      const hay = `${spec.type} ${spec.label} ${spec.category} ${spec.description}`.toLowerCase();
      if (needle && !hay.includes(needle)) continue;
      byCategory.set(spec.category, [...(byCategory.get(spec.category) ?? []), spec]);
    }
    const rank = (c: string) => (ORDER.indexOf(c) === -1 ? ORDER.length : ORDER.indexOf(c));
    return [...byCategory.entries()].sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
  }, [specs, search]);
  return (
    <aside className="palette" aria-label="Palette">
      <input
        type="search"
        placeholder="Search nodes"
        aria-label="Search node types"
        value={search}
        onChange={(e) => setSearch(e.target.value)}
      />
      {groups.map(([category, list]) => (
        <section key={category}>
          <h3>{category}</h3>
          {list.map((spec) => (
            <button
              key={spec.type}
              type="button"
              className={`palette-item cat-${spec.category}`}
              draggable={!disabled}
              disabled={disabled}
              data-type={spec.type}
              title={`${spec.description}\n(drag onto the canvas, or press Enter to add)`}
              aria-label={`Add ${spec.label} node`}
              onDragStart={(e) => {
                e.dataTransfer.setData(DRAG_TYPE, spec.type);
                e.dataTransfer.effectAllowed = 'copy';
              }}
              onClick={() => onAdd(spec)}
            >
              <span aria-hidden className="fb-node-icon">
                {ICON_GLYPHS[spec.icon] ?? '□'}
              </span>
              {spec.label}
            </button>
          ))}
        </section>
      ))}
      {!groups.length && <p className="muted">No node type matches “{search}”.</p>}
    </aside>
  );
}
