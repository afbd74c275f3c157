/** The test message's body in CodeMirror, highlighted in the syntax of the input node's domain, with the parser's error marked. */
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { defaultHighlightStyle, StreamLanguage, syntaxHighlighting } from '@codemirror/language';
import { json } from '@codemirror/legacy-modes/mode/javascript';
import { xml } from '@codemirror/legacy-modes/mode/xml';
import { lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorState, type Extension } from '@codemirror/state';
import { EditorView, keymap, lineNumbers } from '@codemirror/view';
import { useEffect, useRef } from 'react';

/** Where the parser stopped (1-based line and column), and what it said. */
export interface BodyError {
  line: number;
  column: number;
  message: string;
}

function language(domain: string): Extension[] {
  const d = domain.toUpperCase();
  if (d === 'XMLNSC' || d === 'XMLNS' || d === 'XML') return [StreamLanguage.define(xml)];
  if (d === 'JSON') return [StreamLanguage.define(json)];
  return [];
}

/** The character offset of a 1-based line and column in `text` (clamped to it). */
export function offsetAt(text: string, line: number, column: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const next = text.indexOf('\n', offset);
    if (next === -1) return text.length;
    offset = next + 1;
  }
  const end = text.indexOf('\n', offset);
  return Math.min(offset + Math.max(0, column - 1), end === -1 ? text.length : end);
}

export function BodyEditor({
  value,
  domain,
  error,
  onChange,
}: {
  value: string;
  domain: string;
  error: BodyError | null;
  onChange: (text: string) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changeRef = useRef(onChange);
  useEffect(() => {
    changeRef.current = onChange;
  });

  useEffect(() => {
    if (!host.current) return;
    view.current = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          keymap.of([...defaultKeymap, ...historyKeymap]),
          ...language(domain),
          syntaxHighlighting(defaultHighlightStyle),
          lintGutter(),
          EditorView.contentAttributes.of({ 'aria-label': 'Message body' }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) changeRef.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    return () => {
      view.current?.destroy();
      view.current = null;
    };
    // Rebuilt for another domain only; the text goes through the view itself.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [domain]);

  useEffect(() => {
    // A named test message loaded from outside replaces the text.
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const text = v.state.doc.toString();
    const diagnostics = error
      ? (() => {
          let from = offsetAt(text, error.line || 1, error.column || 1);
          // a parser that stops at the end of a line points past its last character: mark that one
          if ((from >= text.length || text[from] === '\n') && from > 0 && text[from - 1] !== '\n') from -= 1;
          return [{ from, to: Math.min(text.length, from + 1), severity: 'error' as const, message: error.message }];
        })()
      : [];
    v.dispatch(setDiagnostics(v.state, diagnostics));
  }, [error]);

  return <div className="body-editor" ref={host} data-testid="body-editor" />;
}
