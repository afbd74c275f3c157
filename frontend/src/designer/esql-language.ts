/** ESQL for CodeMirror: a stream tokenizer (keywords, strings, comments, correlation names) and completion. */
import type { CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { StreamLanguage, type StreamParser } from '@codemirror/language';
import type { Schemas } from '../api/client';

/** GET /api/esql/environment: the compiler's keywords, built-in functions and correlation names. */
export type EsqlEnvironment = Schemas['EnvironmentOut'];

interface State {
  inBlock: boolean;
}

export function esqlParser(env: EsqlEnvironment): StreamParser<State> {
  const keywords = new Set(env.keywords.map((k) => k.toUpperCase()));
  const functions = new Set(env.functions.map((f) => f.toUpperCase()));
  const correlation = new Set(env.correlationNames.map((c) => c.toLowerCase()));
  return {
    name: 'esql',
    startState: () => ({ inBlock: false }),
    token(stream, state) {
      if (state.inBlock) {
        if (stream.skipTo('*/')) {
          stream.next();
          stream.next();
          state.inBlock = false;
        } else stream.skipToEnd();
        return 'comment';
      }
      if (stream.eatSpace()) return null;
      if (stream.match('--')) {
        stream.skipToEnd();
        return 'comment';
      }
      if (stream.match('/*')) {
        state.inBlock = true;
        return 'comment';
      }
      if (stream.match(/^'(?:[^']|'')*'?/)) return 'string';
      if (stream.match(/^"(?:[^"]|"")*"?/)) return 'variableName';
      if (stream.match(/^(?:0[xX][0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)/)) return 'number';
      const word = stream.match(/^[A-Za-z_][A-Za-z0-9_]*/) as RegExpMatchArray | null;
      if (word) {
        const w = word[0];
        if (correlation.has(w.toLowerCase())) return 'atom';
        if (functions.has(w.toUpperCase()) && stream.match(/^\s*\(/, false)) return 'function';
        if (keywords.has(w.toUpperCase())) return 'keyword';
        return 'variableName';
      }
      stream.next();
      return 'operator';
    },
    languageData: { commentTokens: { line: '--', block: { open: '/*', close: '*/' } } },
  };
}

export function esqlLanguage(env: EsqlEnvironment) {
  return StreamLanguage.define(esqlParser(env));
}

/** Completion of keywords, built-in functions and correlation names, from the backend's environment. */
export function esqlCompletion(env: EsqlEnvironment) {
  const options = [
    ...env.correlationNames.map((label) => ({ label, type: 'variable', detail: 'correlation name', boost: 2 })),
    ...env.functionDetails.map((f) => ({
      label: f.name,
      type: 'function',
      detail: f.signature || 'built-in function',
      info: f.doc || undefined,
      apply: `${f.name}(`,
    })),
    ...env.keywords.map((label) => ({ label, type: 'keyword' })),
  ];
  return (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/[A-Za-z_][A-Za-z0-9_]*/);
    if (!word || (word.from === word.to && !context.explicit)) return null;
    return { from: word.from, options, validFor: /^[A-Za-z0-9_]*$/ };
  };
}

/** The document offset of a 1-based line and column, clamped into the text. */
export function offsetOf(text: string, line: number, column: number): number {
  let offset = 0;
  for (let l = 1; l < line; l += 1) {
    const next = text.indexOf('\n', offset);
    if (next === -1) return text.length;
    offset = next + 1;
  }
  const end = text.indexOf('\n', offset);
  const lineEnd = end === -1 ? text.length : end;
  return Math.min(offset + Math.max(0, column - 1), lineEnd);
}
