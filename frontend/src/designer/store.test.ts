import { describe, expect, it } from 'vitest';
import { SPECS } from './fixtures';
import { defaultProperties } from './spec';
import { createDesignerStore } from './store';

function threeNodes() {
  const store = createDesignerStore();
  const s = store.getState();
  const a = s.addNode(SPECS.MQInput, { x: 0, y: 0 });
  const b = store.getState().addNode(SPECS.Compute, { x: 200, y: 0 });
  const c = store.getState().addNode(SPECS.MQOutput, { x: 400, y: 0 });
  store.getState().connect({ source: a, sourceHandle: 'out', target: b, targetHandle: 'in' });
  store.getState().connect({ source: b, sourceHandle: 'out', target: c, targetHandle: 'in' });
  return { store, a, b, c };
}

describe('designer store', () => {
  it('adds nodes with unique ids, unique names and the spec defaults', () => {
    const store = createDesignerStore();
    const first = store.getState().addNode(SPECS.MQInput, { x: 0, y: 0 });
    const second = store.getState().addNode(SPECS.MQInput, { x: 10, y: 0 });
    expect([first, second]).toEqual(['mqinput1', 'mqinput2']);
    const nodes = store.getState().nodes;
    expect(nodes.map((n) => n.data.name)).toEqual(['MQInput', 'MQInput1']);
    expect(nodes[0].data.properties).toEqual(defaultProperties(SPECS.MQInput));
    expect(nodes[0].data.properties.transactionMode).toBe('yes');
    expect(store.getState().focused).toBe('mqinput2');
  });

  it('writes connections into the document with terminal names', () => {
    const { store } = threeNodes();
    expect(store.getState().document().connections).toEqual([
      { from: { node: 'mqinput1', terminal: 'out' }, to: { node: 'compute1', terminal: 'in' } },
      { from: { node: 'compute1', terminal: 'out' }, to: { node: 'mqoutput1', terminal: 'in' } },
    ]);
  });

  it('undoes and redoes each change in order', () => {
    const { store, a } = threeNodes();
    store.getState().setProperty(a, 'queueName', 'IN.Q');
    expect(store.getState().nodes[0].data.properties.queueName).toBe('IN.Q');
    store.getState().undo();
    expect(store.getState().nodes[0].data.properties.queueName).toBeUndefined();
    store.getState().undo();
    expect(store.getState().edges).toHaveLength(1);
    store.getState().redo();
    store.getState().redo();
    expect(store.getState().edges).toHaveLength(2);
    expect(store.getState().nodes[0].data.properties.queueName).toBe('IN.Q');
    store.getState().redo();
    expect(store.getState().edges).toHaveLength(2);
  });

  it('a new change after an undo drops the redo history', () => {
    const { store, a } = threeNodes();
    store.getState().undo();
    expect(store.getState().future).toHaveLength(1);
    store.getState().renameNode(a, 'Orders');
    expect(store.getState().future).toHaveLength(0);
  });

  it('deletes the selection with the connections touching it', () => {
    const { store, b } = threeNodes();
    store.setState({ nodes: store.getState().nodes.map((n) => ({ ...n, selected: n.id === b })) });
    store.getState().deleteSelected();
    expect(store.getState().nodes.map((n) => n.id)).toEqual(['mqinput1', 'mqoutput1']);
    expect(store.getState().edges).toHaveLength(0);
    store.getState().undo();
    expect(store.getState().nodes).toHaveLength(3);
    expect(store.getState().edges).toHaveLength(2);
  });

  it('pastes copies under new ids and names, keeping the connections inside the selection', () => {
    const { store } = threeNodes();
    store.getState().selectAll();
    store.getState().copySelection();
    store.getState().paste();
    const { nodes, edges } = store.getState();
    expect(nodes.map((n) => n.id)).toEqual(['mqinput1', 'compute1', 'mqoutput1', 'mqinput2', 'compute2', 'mqoutput2']);
    expect(new Set(nodes.map((n) => n.data.name)).size).toBe(6);
    expect(edges.map((e) => e.id)).toContain('mqinput2.out->compute2.in');
    expect(edges.map((e) => e.id)).toContain('compute2.out->mqoutput2.in');
    expect(nodes.filter((n) => n.selected).map((n) => n.id)).toEqual(['mqinput2', 'compute2', 'mqoutput2']);
    expect(nodes[3].position).toEqual({ x: 40, y: 40 });
  });

  it('puts the pasted copy in the property panel, not the node it was copied from', () => {
    const store = createDesignerStore();
    const a = store.getState().addNode(SPECS.MQInput, { x: 0, y: 0 });
    store.getState().copySelection();
    store.getState().paste();
    const { nodes, focused } = store.getState();
    expect(nodes.filter((n) => n.selected).map((n) => n.id)).toEqual(['mqinput2']);
    expect(focused).toBe('mqinput2');
    expect(focused).not.toBe(a);
  });

  it('loads a document and gives it back unchanged', () => {
    const doc = {
      name: 'Orders',
      version: 3,
      properties: { additionalInstances: 2 },
      nodes: [{ id: 'in1', type: 'MQInput', name: 'IN', properties: { queueName: 'A' }, position: { x: 1, y: 2 } }],
      connections: [],
    };
    const store = createDesignerStore();
    store.getState().load(doc, 7);
    expect(store.getState().meta).toMatchObject({ flowId: 7, name: 'Orders', version: 3 });
    expect(store.getState().document()).toEqual(doc);
    expect(store.getState().dirty).toBe(false);
  });

});

describe('live counts', () => {
  it('are kept beside the graph: the nodes, the history and the saved state do not change', () => {
    const { store } = threeNodes();
    store.getState().markSaved(1, 1);
    const { nodes, edges, past, future } = store.getState();
    store.getState().setCounts({ compute1: 5 });
    const s = store.getState();
    expect(s.counts).toEqual({ compute1: 5 });
    expect(s.nodes).toBe(nodes);
    expect(s.edges).toBe(edges);
    expect(s.past).toBe(past);
    expect(s.future).toBe(future);
    expect(s.dirty).toBe(false);
    expect(JSON.stringify(s.document())).not.toContain('count');
  });

  it('survive undo and redo, and an undo does not bring back an older count', () => {
    const { store, a } = threeNodes();
    store.getState().setCounts({ mqinput1: 1, compute1: 1 });
    store.getState().renameNode(a, 'Orders');
    store.getState().setCounts({ mqinput1: 7, compute1: 6 });
    store.getState().undo();
    expect(store.getState().nodes[0].data.name).toBe('MQInput');
    expect(store.getState().counts).toEqual({ mqinput1: 7, compute1: 6 });
    store.getState().redo();
    expect(store.getState().nodes[0].data.name).toBe('Orders');
    expect(store.getState().counts).toEqual({ mqinput1: 7, compute1: 6 });
    for (const snapshot of [...store.getState().past, ...store.getState().future])
      expect(Object.keys(snapshot).sort()).toEqual(['edges', 'nodes']);
  });

  it('keep their object while monitoring reports the same figures, and go when another flow opens', () => {
    const { store } = threeNodes();
    store.getState().setCounts({ compute1: 5 });
    const shown = store.getState().counts;
    store.getState().setCounts({ compute1: 5 });
    expect(store.getState().counts).toBe(shown);
    store.getState().setCounts({ compute1: 5, mqinput1: 2 });
    expect(store.getState().counts).toEqual({ compute1: 5, mqinput1: 2 });
    store.getState().load({ name: 'Other', nodes: [], connections: [] }, 2, 1);
    expect(store.getState().counts).toEqual({});
  });
});

describe('deleting through React Flow', () => {
  it('undoes an edge removal and the node removal of one Delete in one step', async () => {
    const { store, b } = threeNodes();
    const before = store.getState().past.length;
    store.getState().onEdgesChange([
      { type: 'remove', id: 'mqinput1.out->compute1.in' },
      { type: 'remove', id: 'compute1.out->mqoutput1.in' },
    ]);
    store.getState().onNodesChange([{ type: 'remove', id: b }]);
    expect(store.getState().nodes).toHaveLength(2);
    expect(store.getState().past.length).toBe(before + 1);
    store.getState().undo();
    expect(store.getState().nodes).toHaveLength(3);
    expect(store.getState().edges).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 1));
    store.getState().onNodesChange([{ type: 'remove', id: b }]);
    expect(store.getState().past.length).toBe(before + 1);
  });
});
