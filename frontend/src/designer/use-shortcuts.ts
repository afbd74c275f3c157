/**
 * The designer's keyboard shortcuts: Ctrl+S save, Ctrl+Z / Ctrl+Y (Ctrl+Shift+Z) undo and redo,
 * Ctrl+C / Ctrl+X / Ctrl+V the clipboard, Ctrl+A select all, Ctrl+L lay out, C connect from the
 * selected node, F fit. They belong to the canvas: not while typing in a field or in a dialog.
 * A reader may only save (it is refused) and fit.
 */
import { useEffect, useRef } from 'react';
import { useDesignerStore } from './store';

export interface ShortcutActions {
  canEdit: boolean;
  save: () => void;
  fit: () => void;
  autoLayout: () => void;
  /** C: start a keyboard connection; false when no node is chosen to start it from. */
  connect: () => boolean;
}

export function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

export function useShortcuts(actions: ShortcutActions) {
  const store = useDesignerStore();
  // The listener is added once; it reads the newest actions.
  const latest = useRef(actions);
  useEffect(() => {
    latest.current = actions;
  });
  useEffect(() => {
    const onKeyDown = (event: KeyboardEvent) => {
      if (isTyping(event.target) || document.querySelector('.dialog-backdrop')) return;
      const { canEdit, save, fit, autoLayout, connect } = latest.current;
      const mod = event.ctrlKey || event.metaKey;
      const s = store.getState();
      const key = event.key.toLowerCase();
      if (mod && key === 's') {
        event.preventDefault();
        if (canEdit) save();
      } else if (!canEdit) {
        if (key === 'f' && !mod) fit();
      } else if (mod && key === 'z' && !event.shiftKey) {
        event.preventDefault();
        s.undo();
      } else if (mod && (key === 'y' || (key === 'z' && event.shiftKey))) {
        event.preventDefault();
        s.redo();
      } else if (!mod && key === 'c') {
        if (connect()) event.preventDefault();
      } else if (mod && key === 'c') s.copySelection();
      else if (mod && key === 'v') s.paste();
      else if (mod && key === 'x') {
        s.copySelection();
        s.deleteSelected();
      } else if (mod && key === 'a') {
        event.preventDefault();
        s.selectAll();
      } else if (mod && key === 'l') {
        event.preventDefault();
        autoLayout();
      } else if (!mod && key === 'f') fit();
    };
    window.addEventListener('keydown', onKeyDown);
    return () => window.removeEventListener('keydown', onKeyDown);
  }, [store]);
}
