import { describe, expect, it } from 'vitest';
import { problemsFromPointers, validateCanvas } from './document';
import { SPECS } from './fixtures';
import { listProblems } from './problems';
import { createDesignerStore } from './store';

/** MQInput → MQOutput with no queue names, as a user leaves it before filling the properties. */
function unnamedQueues() {
  const store = createDesignerStore();
  const a = store.getState().addNode(SPECS.MQInput, { x: 0, y: 0 });
  const b = store.getState().addNode(SPECS.MQOutput, { x: 200, y: 0 });
  store.getState().renameNode(a, 'Orders in');
  store.getState().connect({ source: a, sourceHandle: 'out', target: b, targetHandle: 'in' });
  return { store, a, b };
}

/** What the panel lists for the store's canvas, with `reported` from the server. */
function listed(store: ReturnType<typeof createDesignerStore>, reported: ReturnType<typeof problemsFromPointers>) {
  const { nodes, edges } = store.getState();
  return listProblems(SPECS, nodes, edges, validateCanvas(SPECS, nodes, edges), reported);
}

describe('the problems list', () => {
  it("lists a problem the designer and the server both report once, by the node's name and the property's label", () => {
    const { store } = unnamedQueues();
    const saved = problemsFromPointers(store.getState().document(), [
      { pointer: '/nodes/0/properties/queueName', message: 'required property of MQInput' },
    ]);
    const shown = listed(store, saved).filter((p) => p.node === 'mqinput1');
    expect(shown.map((p) => [p.nodeLabel, p.propertyLabel, p.message])).toEqual([
      ['Orders in', 'Queue name', 'Queue name is required'],
    ]);
    expect(shown.every((p) => !p.message.includes('/nodes/'))).toBe(true);
  });

  it('shows what only the server found without its JSON pointer, until the value changes', () => {
    const { store, b } = unnamedQueues();
    store.getState().setProperty(b, 'queueName', 'OUT.Q');
    const saved = problemsFromPointers(store.getState().document(), [
      { pointer: '/nodes/1/properties/queueName', message: 'no such queue' },
    ]);
    expect(listed(store, saved).filter((p) => p.node === b).map((p) => [p.nodeLabel, p.propertyLabel, p.message])).toEqual([
      ['MQOutput', 'Queue name', 'no such queue'],
    ]);
    store.getState().setProperty(b, 'queueName', 'OTHER.Q');
    expect(listed(store, saved).filter((p) => p.node === b)).toEqual([]);
  });

  it('drops the problems of a deleted node and of a deleted connection', () => {
    const { store, a, b } = unnamedQueues();
    const doc = store.getState().document();
    const saved = problemsFromPointers(doc, [
      { pointer: '/nodes/1/properties/queueName', message: 'required property of MQOutput' },
      { pointer: '/connections/0', message: 'not allowed here' },
    ]);
    const esql = [{ node: b, property: 'queueName', message: 'from the editor' }];
    expect(listed(store, [...saved, ...esql]).some((p) => p.message.startsWith('connection Orders in.out → MQOutput.in'))).toBe(true);
    store.setState({ edges: [] });
    expect(listed(store, saved).some((p) => p.message.startsWith('connection'))).toBe(false);
    store.setState({ nodes: store.getState().nodes.filter((n) => n.id !== b) });
    const left = listed(store, [...saved, ...esql]);
    expect(left.map((p) => p.node)).toEqual([a]);
  });
});
