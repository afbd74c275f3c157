/**
 * ESQL breakpoints in the Compute editor: a gutter beside the line numbers, active while the
 * Debugger panel follows a deployment of the flow on a development group. Clicking a line sets or
 * clears a breakpoint there through the panel (which saves it on the deployment).
 */
import { RangeSet, StateEffect, StateField, type EditorState, type Extension } from '@codemirror/state';
import { EditorView, gutter, GutterMarker } from '@codemirror/view';
import { createStore } from 'zustand/vanilla';
import type { Breakpoints } from './debug-api';

export interface DebugTarget {
  deploymentId: number;
  breakpoints: Breakpoints;
  /** Save the deployment's breakpoints (the panel's own save: errors are shown there). */
  save: (next: { connections: string[]; esql: { node: string; line: number }[] }) => Promise<void>;
}

/** The deployment the Debugger panel follows, or null while it is closed or cannot pause. */
export const debugTarget = createStore<{ target: DebugTarget | null }>(() => ({ target: null }));

/** The ESQL lines of ``node`` that have a breakpoint in the followed deployment. */
export function linesOf(node: string): number[] {
  const target = debugTarget.getState().target;
  return target ? target.breakpoints.esql.filter((b) => b.node === node).map((b) => b.line) : [];
}

export async function toggleLine(node: string, line: number): Promise<void> {
  const target = debugTarget.getState().target;
  if (!target) return;
  const { connections, esql } = target.breakpoints;
  const had = esql.some((b) => b.node === node && b.line === line);
  const next = had ? esql.filter((b) => !(b.node === node && b.line === line)) : [...esql, { node, line }];
  await target.save({ connections, esql: next });
}

class BreakpointMarker extends GutterMarker {
  constructor(private readonly kind: string) {
    super();
  }
  toDOM() {
    const dot = document.createElement('span');
    dot.className = this.kind;
    dot.textContent = '●';
    return dot;
  }
}
const marker = new BreakpointMarker('cm-breakpoint');
/** Gives the gutter its width (CodeMirror draws it hidden). */
const spacer = new BreakpointMarker('cm-breakpoint-spacer');

/** Replace the lines marked as breakpoints. */
export const setBreakpointLines = StateEffect.define<number[]>();

const marks = StateField.define<RangeSet<GutterMarker>>({
  create: () => RangeSet.empty,
  update(value, tr) {
    for (const effect of tr.effects) {
      if (effect.is(setBreakpointLines)) {
        const doc = tr.state.doc;
        const lines = [...new Set(effect.value)].filter((n) => n >= 1 && n <= doc.lines).sort((a, b) => a - b);
        return RangeSet.of(lines.map((n) => marker.range(doc.line(n).from)));
      }
    }
    return value.map(tr.changes);
  },
});

/** The breakpoint gutter of the ESQL of node ``node``. */
export function esqlBreakpoints(node: string): Extension {
  return [
    marks,
    gutter({
      class: 'cm-breakpoint-gutter',
      markers: (view) => view.state.field(marks),
      initialSpacer: () => spacer,
      domEventHandlers: {
        mousedown(view, block) {
          if (!debugTarget.getState().target) return false;
          void toggleLine(node, view.state.doc.lineAt(block.from).number);
          return true;
        },
      },
    }),
  ];
}

/** Keep ``view``'s markers in step with the followed deployment; returns the unsubscribe. */
export function followBreakpoints(view: EditorView, node: string): () => void {
  const show = () => view.dispatch({ effects: setBreakpointLines.of(linesOf(node)) });
  show();
  return debugTarget.subscribe(show);
}

/** The lines marked in an editor state (for tests and tools). */
export function markedLines(state: EditorState): number[] {
  const found: number[] = [];
  const set = state.field(marks, false);
  if (!set) return found;
  for (let cursor = set.iter(); cursor.value; cursor.next()) found.push(state.doc.lineAt(cursor.from).number);
  return found;
}
