/** The ESQL editor (CodeMirror 6, loaded on demand): highlighting, completion and the backend's diagnostics. */
import { autocompletion } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { forceLinting, linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { EditorState } from '@codemirror/state';
import { EditorView, keymap, lineNumbers } from '@codemirror/view';
import { useEffect, useRef, useState } from 'react';
import { api, unwrap } from '../api/client';
import { esqlBreakpoints, followBreakpoints } from '../debugger/esql-breakpoints';
import type { Problem } from './document';
import { esqlCompletion, esqlLanguage, offsetOf, type EsqlEnvironment } from './esql-language';

let environment: Promise<EsqlEnvironment> | null = null;

function loadEnvironment(): Promise<EsqlEnvironment> {
  environment ??= unwrap(api.GET('/api/esql/environment')).catch(() => {
    environment = null;
    return { keywords: [], functions: [], functionDetails: [], correlationNames: [] };
  });
  return environment;
}

export async function checkEsql(source: string): Promise<Problem[]> {
  const result = await unwrap(api.POST('/api/esql/check', { body: { source, filename: 'main.esql' } }));
  return result.diagnostics.map((d) => ({
    node: null,
    property: null,
    message: d.message,
    line: d.line,
    column: d.column,
  }));
}

interface EditorProps {
  /** Problems the deployment's compile reported for this text (line and column). */
  external?: Problem[];
  id: string;
  value: string;
  readOnly: boolean;
  onChange: (v: string) => void;
  onDiagnostics: (problems: Problem[]) => void;
  /** The node whose ESQL this is: its lines take step-debugger breakpoints. */
  node?: string;
}

/** One CodeMirror view of the text; the panel's and the wide overlay's are kept in sync through `value`. */
function EsqlCode({ id, value, readOnly, onChange, onDiagnostics, external = [], node, className }: EditorProps & { className: string }) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // The callbacks change identity each render; the editor is built once and reads them through refs.
  const changeRef = useRef(onChange);
  const diagRef = useRef(onDiagnostics);
  const externalRef = useRef(external);
  useEffect(() => {
    changeRef.current = onChange;
    diagRef.current = onDiagnostics;
  });
  const externalKey = external.map((p) => `${p.line}:${p.column}:${p.message}`).join('|');
  useEffect(() => {
    externalRef.current = external;
    if (view.current) forceLinting(view.current);
    // The key stands for the list's content; a new array with the same problems changes nothing.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [externalKey]);

  useEffect(() => {
    let cancelled = false;
    let unfollow: (() => void) | null = null;
    loadEnvironment().then((env) => {
      if (cancelled || !host.current) return;
      const lint = linter(
        async (v): Promise<Diagnostic[]> => {
          const text = v.state.doc.toString();
          let found: Problem[];
          try {
            found = await checkEsql(text);
          } catch (err) {
            return [{ from: 0, to: 0, severity: 'warning', message: `cannot check ESQL: ${(err as Error).message}` }];
          }
          diagRef.current(found);
          const compiled = externalRef.current.filter((p) => p.line !== undefined);
          return [...found, ...compiled].map((p) => {
            const from = offsetOf(text, p.line ?? 1, p.column ?? 1);
            const word = /^[A-Za-z0-9_]+/.exec(text.slice(from));
            return {
              from,
              to: Math.min(text.length, from + (word ? word[0].length : 1)),
              severity: 'error',
              message: `${p.line}:${p.column}: ${p.message}`,
              source: compiled.includes(p) ? 'deployment' : 'editor',
            };
          });
        },
        { delay: 300 },
      );
      view.current = new EditorView({
        parent: host.current,
        state: EditorState.create({
          doc: value,
          extensions: [
            lineNumbers(),
            history(),
            bracketMatching(),
            keymap.of([...defaultKeymap, ...historyKeymap]),
            esqlLanguage(env),
            syntaxHighlighting(defaultHighlightStyle),
            autocompletion({ override: [esqlCompletion(env)] }),
            ...(node ? [esqlBreakpoints(node)] : []),
            lintGutter(),
            lint,
            EditorState.readOnly.of(readOnly),
            EditorView.contentAttributes.of({ 'aria-label': 'ESQL', id }),
            EditorView.updateListener.of((u) => {
              if (u.docChanged) changeRef.current(u.state.doc.toString());
            }),
          ],
        }),
      });
      if (node) unfollow = followBreakpoints(view.current, node);
    });
    return () => {
      cancelled = true;
      unfollow?.();
      view.current?.destroy();
      view.current = null;
    };
    // The editor is rebuilt only for another node or property; typing goes through the view itself.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id, readOnly, node]);

  useEffect(() => {
    // An undo in the designer replaces the text from outside the editor.
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  return <div className={className} ref={host} data-testid={className} />;
}

/**
 * The ESQL editor of a node's property: offers the node's module skeleton while the text is empty,
 * and opens the same text in a wide overlay for room to work.
 */
export default function EsqlEditor({ skeleton, label, ...props }: EditorProps & { skeleton?: string | null; label?: string }) {
  const [wide, setWide] = useState(false);
  useEffect(() => {
    if (!wide) return;
    const close = (e: KeyboardEvent) => {
      if (e.key === 'Escape') setWide(false);
    };
    window.addEventListener('keydown', close);
    return () => window.removeEventListener('keydown', close);
  }, [wide]);
  const offerSkeleton = !props.readOnly && !!skeleton && !props.value.trim();
  const insert = offerSkeleton && (
    <button type="button" onClick={() => props.onChange(skeleton)} title="Start from the module the node runs">
      Insert module skeleton
    </button>
  );
  return (
    <>
      <div className="esql-actions">
        {insert}
        <button type="button" onClick={() => setWide(true)} title="Open the editor in a wide panel">
          Expand
        </button>
      </div>
      <EsqlCode {...props} className="esql-editor" />
      {wide && (
        <div className="dialog-backdrop" role="dialog" aria-modal="true" aria-label={`ESQL of ${label ?? 'the node'}`}>
          <div className="dialog esql-wide">
            <div className="esql-actions">
              <strong>{label ?? 'ESQL'}</strong>
              {insert}
              <button type="button" onClick={() => setWide(false)}>
                Close
              </button>
            </div>
            <EsqlCode {...props} id={`${props.id}-wide`} className="esql-editor-wide" />
          </div>
        </div>
      )}
    </>
  );
}
