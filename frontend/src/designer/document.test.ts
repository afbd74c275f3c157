import { describe, expect, it } from 'vitest';
import { connectionProblem, parseDocument, problemsFromPointers, terminalsOf, toCanvas, validateCanvas } from './document';
import { SPECS } from './fixtures';

const doc = parseDocument({
  name: 'F',
  nodes: [
    { id: 'in1', type: 'MQInput', name: 'IN', properties: { queueName: 'A' } },
    { id: 'c1', type: 'Compute', name: 'C', properties: {} },
    { id: 'out1', type: 'MQOutput', name: 'OUT', properties: { queueName: 'bad name!' } },
  ],
  connections: [{ from: { node: 'in1', terminal: 'out' }, to: { node: 'c1', terminal: 'in' } }],
});

describe('flow documents', () => {
  it('refuses connections the specs do not allow', () => {
    const { nodes, edges } = toCanvas(doc);
    const check = (source: string, sourceHandle: string, target: string, targetHandle: string) =>
      connectionProblem(SPECS, nodes, edges, { source, sourceHandle, target, targetHandle });
    expect(check('c1', 'out', 'out1', 'in')).toBeNull();
    expect(check('c1', 'failure', 'out1', 'in')).toBeNull();
    expect(check('out1', 'out', 'in1', 'out')).toBe('MQInput has no input terminal out');
    expect(check('c1', 'nope', 'out1', 'in')).toBe('Compute has no output terminal nope');
    expect(check('c1', 'out', 'c1', 'in')).toBe('a node cannot be wired to itself');
    expect(check('in1', 'out', 'c1', 'in')).toBe('these terminals are already connected');
  });

  it('gives a Route node the output terminals its filter table names', () => {
    const routed = parseDocument({
      name: 'R',
      nodes: [
        {
          id: 'r1',
          type: 'Route',
          name: 'R',
          properties: {
            filterTable: [
              { filterPattern: "Root.XMLNSC.a = 'x'", routingOutputTerminal: 'big' },
              { filterPattern: 'TRUE', routingOutputTerminal: 'match' },
            ],
          },
        },
        { id: 't1', type: 'Trace', name: 'T', properties: {} },
      ],
      connections: [],
    });
    const { nodes, edges } = toCanvas(routed);
    const outputs = terminalsOf(SPECS, nodes[0].data).outputs.map((t) => t.name);
    expect(outputs).toEqual(['match', 'default', 'big', 'failure']);
    const check = (sourceHandle: string) =>
      connectionProblem(SPECS, nodes, edges, { source: 'r1', sourceHandle, target: 't1', targetHandle: 'in' });
    expect(check('big')).toBeNull();
    expect(check('small')).toBe('Route has no output terminal small');
  });

  it('draws an Unsupported node with the terminals of the imported node it stands for', () => {
    const imported = parseDocument({
      name: 'U',
      nodes: [
        {
          id: 'j1',
          type: 'Unsupported',
          name: 'Enrich',
          properties: {
            originalType: 'ComIbmJavaCompute',
            originalAttributes: { javaClass: 'com.example.Enrich' },
            inputTerminals: [{ name: 'in' }],
            outputTerminals: [{ name: 'out' }, { name: 'alternate' }],
          },
        },
        { id: 't1', type: 'Trace', name: 'T', properties: {} },
      ],
      connections: [{ from: { node: 'j1', terminal: 'alternate' }, to: { node: 't1', terminal: 'in' } }],
    });
    const { nodes, edges } = toCanvas(imported);
    const terminals = terminalsOf(SPECS, nodes[0].data);
    expect(terminals.inputs.map((t) => [t.name, t.kind])).toEqual([['in', 'in']]);
    expect(terminals.outputs.map((t) => [t.name, t.kind])).toEqual([
      ['out', 'out'],
      ['alternate', 'out'],
    ]);
    expect(validateCanvas(SPECS, nodes, edges)).toEqual([
      {
        node: 'j1',
        property: null,
        message: "node 'Enrich' is an unsupported ACE node (ComIbmJavaCompute): replace it before deploying",
      },
    ]);
    const check = (sourceHandle: string, targetHandle: string) =>
      connectionProblem(SPECS, nodes, [], { source: 't1', sourceHandle, target: 'j1', targetHandle });
    expect(check('out', 'in')).toBeNull();
    expect(check('out', 'other')).toBe('Unsupported has no input terminal other');
  });

  it('lists missing required properties and malformed values per node', () => {
    const { nodes, edges } = toCanvas(doc);
    const found = validateCanvas(SPECS, nodes, edges);
    expect(found).toContainEqual({ node: 'c1', property: 'esql', message: 'ESQL is required' });
    expect(found.find((p) => p.node === 'out1')?.message).toMatch(/at most 48 characters/);
    expect(found).toHaveLength(2);
  });

  it('names the field of a malformed import', () => {
    expect(() => parseDocument([])).toThrow('a flow document must be a JSON object');
    expect(() => parseDocument({ nodes: [] })).toThrow('/name: required');
    expect(() => parseDocument({ name: 'x', nodes: [{ id: 'a' }] })).toThrow('/nodes/0/type: required');
    expect(() => parseDocument({ name: 'x', connections: [{ from: {} }] })).toThrow('/connections/0');
  });

  it('maps server JSON pointers to nodes and properties', () => {
    const found = problemsFromPointers(doc, [
      { pointer: '/nodes/2/properties/queueName', message: 'bad queue' },
      { pointer: '/connections/0/to', message: 'no such node' },
      { pointer: '/name', message: 'bad name' },
    ]);
    expect(found.map((p) => [p.node, p.property])).toEqual([
      ['out1', 'queueName'],
      ['in1', null],
      [null, null],
    ]);
  });
});
