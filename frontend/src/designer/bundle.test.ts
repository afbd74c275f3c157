import { describe, expect, it } from 'vitest';
import { BUNDLE_FORMAT, collectBundle, readBundle, rewriteRefs, sameDocument, subflowRefs } from './bundle';
import type { FlowDocument } from './document';
import { applyImport, findConflicts, type ImportApi } from './import-flow';

const SUBFLOW = 'Subflow';
const subflowNode = (id: string, flow: Record<string, unknown>) => ({ id, type: SUBFLOW, name: id, properties: { flow } });
const doc = (name: string, nodes: FlowDocument['nodes'] = []): FlowDocument => ({ name, nodes, connections: [] });

/** A repository of flows by name, each with its versions, as the REST API keeps them. */
function repository(initial: Record<string, FlowDocument[]> = {}) {
  const flows = new Map(Object.entries(initial).map(([name, versions], i) => [name, { id: i + 1, versions: [...versions] }]));
  let next = flows.size + 1;
  const byId = (id: number) => [...flows.entries()].find(([, f]) => f.id === id) as [string, { id: number; versions: FlowDocument[] }];
  const free = (name: string) => {
    let n = 2;
    while (flows.has(`${name}_${n}`)) n += 1;
    return flows.has(name) ? `${name}_${n}` : name;
  };
  const api: ImportApi = {
    nameStatus: async (name) => {
      const f = flows.get(name);
      return { taken: !!f, flowId: f?.id ?? null, currentVersion: f?.versions.length ?? null, free: free(name) };
    },
    current: async (id) => byId(id)[1].versions.at(-1) as FlowDocument,
    create: async (d) => {
      if (flows.has(d.name)) throw new Error(`a flow named ${d.name} already exists`);
      flows.set(d.name, { id: next++, versions: [d] });
      return { name: d.name, currentVersion: 1 };
    },
    save: async (id, version, d) => {
      const [name, f] = byId(id);
      if (f.versions.length !== version) throw new Error('version conflict');
      f.versions.push(d);
      return { name, currentVersion: f.versions.length };
    },
  };
  return { flows, api };
}

const leaf = doc('Leaf', [{ id: 'o', type: 'MQOutput', name: 'o', properties: { queueName: 'LEAF.OUT' } }]);
const middle = doc('Middle', [subflowNode('l', { name: 'Leaf', version: 2 })]);
const top = doc('Top', [subflowNode('m', { name: 'Middle' }), subflowNode('inline', { ...doc('Inline', [subflowNode('l2', { name: 'Leaf', version: 2 })]) })]);

describe('export bundle', () => {
  it('names each saved subflow once, embedded ones searched too', () => {
    expect(subflowRefs(top, SUBFLOW)).toEqual([{ name: 'Leaf', version: 2 }, { name: 'Middle' }]);
  });

  it('carries every subflow the flow uses, recursively', async () => {
    const asked: string[] = [];
    const bundle = await collectBundle(top, async (ref) => {
      asked.push(`${ref.name}@${ref.version ?? ''}`);
      return ref.name === 'Leaf' ? { version: 2, document: leaf } : { version: 5, document: middle };
    }, SUBFLOW);
    expect(bundle.format).toBe(BUNDLE_FORMAT);
    expect(bundle.flow).toBe(top);
    expect(bundle.subflows.map((s) => `${s.name}@${s.version}`).sort()).toEqual(['Leaf@2', 'Middle@5']);
    expect(asked.filter((a) => a === 'Leaf@2')).toHaveLength(1);
  });

  it('refuses to export when a subflow cannot be read', async () => {
    await expect(collectBundle(top, async () => Promise.reject(new Error('no saved flow')), SUBFLOW)).rejects.toThrow(/subflow (Leaf|Middle)/);
  });

  it('reads a bundle or a plain document, naming the field that is wrong', () => {
    expect(readBundle(top)).toEqual({ flow: top, subflows: [] });
    expect(() => readBundle({ format: BUNDLE_FORMAT, flow: top, subflows: [{ name: 'X', document: { nodes: [] } }] })).toThrow(
      '/subflows/0/document/name: required: a string',
    );
  });

  it('rewrites references and compares documents whatever their version', () => {
    const moved = rewriteRefs(top, (ref) => (ref.name === 'Leaf' ? { name: 'Leaf_2', version: 1 } : undefined), SUBFLOW);
    expect(subflowRefs(moved, SUBFLOW)).toEqual([{ name: 'Leaf_2', version: 1 }, { name: 'Middle' }]);
    expect(sameDocument({ ...leaf, version: 3 }, { ...leaf, properties: {} })).toBe(true);
    expect(sameDocument(leaf, middle)).toBe(false);
  });
});

describe('import', () => {
  const bundle = [
    { name: 'Middle', version: 5, document: middle },
    { name: 'Leaf', version: 2, document: leaf },
  ];

  it('brings back missing subflows, the flow references the versions they got', async () => {
    const { flows, api } = repository();
    expect(await findConflicts(top, bundle, api)).toEqual([]);
    const got = await applyImport(top, bundle, 'rename', api, { subflowType: SUBFLOW });
    expect([...flows.keys()].sort()).toEqual(['Leaf', 'Middle']);
    expect(subflowRefs(flows.get('Middle')!.versions[0], SUBFLOW)).toEqual([{ name: 'Leaf', version: 1 }]);
    expect(got.flowId).toBeNull();
    expect(subflowRefs(got.flow, SUBFLOW)).toEqual([{ name: 'Leaf', version: 1 }, { name: 'Middle' }]);
  });

  it('reuses a subflow that is already there with the same document', async () => {
    const { flows, api } = repository({ Leaf: [leaf], Middle: [middle] });
    await applyImport(top, bundle, 'overwrite', api, { subflowType: SUBFLOW });
    expect(flows.get('Leaf')!.versions).toHaveLength(1);
    // Middle's reference now names Leaf version 1: a new version of Middle, the same leaf
    expect(flows.get('Middle')!.versions).toHaveLength(2);
  });

  it('offers a free name for a taken flow name, and renames or overwrites', async () => {
    const other = doc('Top', [{ id: 'x', type: 'MQInput', name: 'x', properties: { queueName: 'OTHER' } }]);
    const { api } = repository({ Top: [other], Leaf: [doc('Leaf')] });
    const conflicts = await findConflicts(top, bundle, api);
    expect(conflicts.map((c) => [c.name, c.free, c.subflow])).toEqual([
      ['Top', 'Top_2', false],
      ['Leaf', 'Leaf_2', true],
    ]);
    const renamed = await applyImport(top, bundle, 'rename', api, { subflowType: SUBFLOW });
    expect(renamed.flow.name).toBe('Top_2');
    expect(renamed.flowId).toBeNull();
    expect(subflowRefs(renamed.flow, SUBFLOW)[0]).toEqual({ name: 'Leaf_2', version: 1 });

    const second = repository({ Top: [other], Leaf: [doc('Leaf')] });
    const over = await applyImport(top, bundle, 'overwrite', second.api, { subflowType: SUBFLOW });
    expect(over.flowId).toBe(1);
    expect(over.version).toBe(1);
    expect(over.flow.name).toBe('Top');
    expect(second.flows.get('Leaf')!.versions).toHaveLength(2);
  });
});
