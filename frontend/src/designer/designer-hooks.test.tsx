import { act, cleanup, render, renderHook } from '@testing-library/react';
import type { ReactNode } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GroupStatistics } from '../api/runtime';
import { useDesignNodes } from './CanvasProblems';
import { SPECS } from './fixtures';
import { createDesignerStore, DesignerContext, type DesignerStore } from './store';
import { connectSource } from './use-canvas-commands';
import { sumCounts } from './use-live-counts';
import { useReportedProblems } from './use-problems';
import { useShortcuts, type ShortcutActions } from './use-shortcuts';

afterEach(cleanup);

function twoNodes() {
  const store = createDesignerStore();
  const a = store.getState().addNode(SPECS.MQInput, { x: 0, y: 0 });
  const b = store.getState().addNode(SPECS.Compute, { x: 200, y: 0 });
  store.getState().connect({ source: a, sourceHandle: 'out', target: b, targetHandle: 'in' });
  return { store, a, b };
}

function withStore(store: DesignerStore) {
  return ({ children }: { children: ReactNode }) => <DesignerContext.Provider value={store}>{children}</DesignerContext.Provider>;
}

function press(key: string, init: KeyboardEventInit = {}, target: EventTarget = window) {
  const event = new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true, ...init });
  act(() => void target.dispatchEvent(event));
  return event;
}

function shortcuts(store: DesignerStore, overrides: Partial<ShortcutActions> = {}) {
  const actions: ShortcutActions = {
    canEdit: true,
    save: vi.fn(),
    fit: vi.fn(),
    autoLayout: vi.fn(),
    connect: vi.fn(() => true),
    ...overrides,
  };
  renderHook(() => useShortcuts(actions), { wrapper: withStore(store) });
  return actions;
}

describe('useShortcuts', () => {
  it('undoes, redoes, copies, pastes and saves from the keyboard', () => {
    const { store } = twoNodes();
    const actions = shortcuts(store);
    press('z', { ctrlKey: true });
    expect(store.getState().edges).toHaveLength(0);
    press('y', { ctrlKey: true });
    expect(store.getState().edges).toHaveLength(1);
    press('z', { ctrlKey: true, shiftKey: true });
    expect(store.getState().edges).toHaveLength(1);
    press('a', { ctrlKey: true });
    press('c', { ctrlKey: true });
    press('v', { ctrlKey: true });
    expect(store.getState().nodes).toHaveLength(4);
    expect(press('s', { ctrlKey: true }).defaultPrevented).toBe(true);
    expect(actions.save).toHaveBeenCalledTimes(1);
    press('l', { ctrlKey: true });
    press('f');
    press('c');
    expect([actions.autoLayout, actions.fit, actions.connect].map((f) => (f as ReturnType<typeof vi.fn>).mock.calls.length)).toEqual([1, 1, 1]);
  });

  it('leaves keys alone while the user types in a field or works in a dialog', () => {
    const { store } = twoNodes();
    shortcuts(store);
    const input = document.body.appendChild(document.createElement('input'));
    press('z', { ctrlKey: true }, input);
    expect(store.getState().edges).toHaveLength(1);
    input.remove();
    const backdrop = document.body.appendChild(document.createElement('div'));
    backdrop.className = 'dialog-backdrop';
    press('z', { ctrlKey: true });
    expect(store.getState().edges).toHaveLength(1);
    backdrop.remove();
    press('z', { ctrlKey: true });
    expect(store.getState().edges).toHaveLength(0);
  });

  it('lets a reader only fit (and not save, undo or delete)', () => {
    const { store } = twoNodes();
    const actions = shortcuts(store, { canEdit: false });
    press('s', { ctrlKey: true });
    press('z', { ctrlKey: true });
    press('a', { ctrlKey: true });
    press('x', { ctrlKey: true });
    press('f');
    expect(actions.save).not.toHaveBeenCalled();
    expect(actions.fit).toHaveBeenCalledTimes(1);
    expect(store.getState().nodes).toHaveLength(2);
    expect(store.getState().edges).toHaveLength(1);
  });

  it('uses the newest actions without adding a second listener', () => {
    const { store } = twoNodes();
    const first = vi.fn();
    const second = vi.fn();
    const { rerender } = renderHook(({ save }) => useShortcuts({ canEdit: true, save, fit: vi.fn(), autoLayout: vi.fn(), connect: () => false }), {
      wrapper: withStore(store),
      initialProps: { save: first },
    });
    rerender({ save: second });
    press('s', { ctrlKey: true });
    expect(first).not.toHaveBeenCalled();
    expect(second).toHaveBeenCalledTimes(1);
  });
});

describe('useDesignNodes', () => {
  it('gives a new list for a change of the design, not for a drag or a live count', () => {
    const { store, a } = twoNodes();
    const seen: unknown[] = [];
    function Probe() {
      seen.push(useDesignNodes());
      return null;
    }
    render(<Probe />, { wrapper: withStore(store) });
    const first = seen[seen.length - 1];
    act(() => store.getState().onNodesChange([{ type: 'position', id: a, position: { x: 50, y: 60 }, dragging: true }]));
    act(() => store.getState().setCounts({ [a]: 3 }));
    expect(seen[seen.length - 1]).toBe(first);
    act(() => store.getState().setProperty(a, 'queueName', 'IN.Q'));
    const after = seen[seen.length - 1] as { id: string; data: { properties: Record<string, unknown> } }[];
    expect(after).not.toBe(first);
    expect(after[0].data.properties.queueName).toBe('IN.Q');
  });
});

describe('useReportedProblems', () => {
  it('drops the problems of a deleted node, keeps the flow-wide ones and the other nodes\'', () => {
    const { store, a, b } = twoNodes();
    const { result } = renderHook(() => useReportedProblems(), { wrapper: withStore(store) });
    act(() => {
      result.current.setServer([
        { node: a, property: 'queueName', message: 'queue refused' },
        { node: null, property: null, message: 'flow-wide' },
      ]);
      result.current.onEsqlDiagnostics(b, 'esql', [{ node: null, property: null, message: 'syntax error', line: 2, column: 3 }]);
    });
    expect(result.current.all.map((p) => [p.node, p.message])).toEqual([
      [b, 'syntax error'],
      [a, 'queue refused'],
      [null, 'flow-wide'],
    ]);
    act(() => store.getState().onNodesChange([{ type: 'remove', id: b }]));
    expect(result.current.all.map((p) => p.message)).toEqual(['queue refused', 'flow-wide']);
    act(() => result.current.report('select the node to connect from'));
    expect(result.current.server).toEqual([{ node: null, property: null, message: 'select the node to connect from' }]);
  });
});

describe('sumCounts', () => {
  const group = (flows: Record<string, Record<string, number>>) =>
    ({
      flows: Object.fromEntries(
        Object.entries(flows).map(([name, nodes]) => [name, { nodes: Object.fromEntries(Object.entries(nodes).map(([id, n]) => [id, { messages_in: n }])) }]),
      ),
    }) as unknown as GroupStatistics;

  it('adds up each node over the groups that run the flow, and says when none does', () => {
    const groups = [group({ Orders: { in1: 3, c1: 2 } }), group({ Orders: { in1: 4 }, Other: { in1: 100 } })];
    expect(sumCounts(groups, 'Orders')).toEqual({ in1: 7, c1: 2 });
    expect(sumCounts(groups, 'Missing')).toBeNull();
    expect(sumCounts(undefined, 'Orders')).toBeNull();
  });
});

describe('connectSource', () => {
  it('starts at the focused node, else the only selected one', () => {
    const node = (id: string, selected = false) => ({ id, selected, data: { type: 'Compute', name: id, properties: {} } });
    expect(connectSource('b', [node('a', true), node('b')])).toBe('b');
    expect(connectSource('gone', [node('a', true), node('b')])).toBe('a');
    expect(connectSource(null, [node('a', true), node('b', true)])).toBeNull();
    expect(connectSource(null, [node('a'), node('b')])).toBeNull();
  });
});
