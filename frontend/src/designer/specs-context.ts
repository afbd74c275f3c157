/** The node specs of GET /api/node-types, shared by the palette, the nodes and the property panel. */
import { createContext, useContext } from 'react';
import type { SpecIndex } from './spec';

export const SpecsContext = createContext<SpecIndex>({});
export const useSpecs = (): SpecIndex => useContext(SpecsContext);

/** A short badge per icon name the specs use, so nodes are recognisable without image assets. */
export const ICON_GLYPHS: Record<string, string> = {
  'queue-in': '⇥',
  'queue-out': '⇤',
  'queue-reply': '↩',
  compute: 'ƒ',
  filter: '?',
  database: '⛁',
  publish: '⇶',
  trace: '✎',
  'try-catch': '⚑',
  throw: '⚠',
  label: '◆',
  route: '➜',
  'flow-order': '⇉',
  passthrough: '→',
  reset: '↺',
  'subflow-in': '▷',
  'subflow-out': '◁',
  subflow: '⊞',
  'mqtt-in': '↘',
  'mqtt-out': '↗',
  'file-in': '⎗',
  'file-out': '⎘',
  timer: '◷',
  'timer-control': '⏲',
  'fan-out': '⋔',
  'fan-in': '⋲',
  xslt: '⟨⟩',
  python: 'λ',
  'http-in': '⇲',
  'http-out': '⇱',
  'http-request': '⇄',
  unsupported: '⊘',
};
