import { describe, expect, it } from 'vitest';
import { offsetOf } from './esql-language';
import { SPECS } from './fixtures';
import { defaultProperties, esqlProperty, indexSpecs, propertyProblem, subflowTypes, takesTestMessages, testInput } from './spec';

const prop = (type: string, name: string) => {
  const found = SPECS[type].properties.find((p) => p.name === name);
  if (!found) throw new Error(`${type} has no property ${name}`);
  return found;
};

describe('node specs', () => {
  it('finds the subflow node and its input and output types by the roles the specs declare', () => {
    const roles = subflowTypes(SPECS);
    expect(roles?.node.dynamicTerminals).toBe(true);
    expect(roles?.input.outputs.map((t) => t.name)).toEqual(['out']);
    expect(roles?.input.inputs).toEqual([]);
    expect(roles?.output.inputs.map((t) => t.name)).toEqual(['in']);
    expect(roles?.input.properties.map((p) => p.name)).toContain(roles?.input.terminalProperty);
    const withoutSubflows = indexSpecs(Object.values(SPECS).filter((s) => !s.subflowRole));
    expect(subflowTypes(withoutSubflows)).toBeNull();
  });

  it('finds the inputs tests start and the nodes that run ESQL by the facts the specs declare', () => {
    const types = Object.keys(SPECS);
    expect(types.filter((t) => testInput(SPECS[t]) === 'file')).toEqual(['FileInput']);
    expect(types.filter((t) => takesTestMessages(SPECS[t]))).toEqual(['MQInput', 'HTTPInput']);
    expect(testInput(SPECS.HTTPInput)).toBe('http');
    expect(types.filter((t) => esqlProperty(SPECS[t]) !== '')).toEqual(['Compute', 'Filter', 'Database']);
    expect(esqlProperty(SPECS.Compute)).toBe('esql');
    expect(testInput(undefined)).toBe('');
  });

  it('gives a new node the defaults of its spec', () => {
    const defaults = defaultProperties(SPECS.MQInput);
    expect(defaults.transactionMode).toBe(prop('MQInput', 'transactionMode').default);
    expect('queueName' in defaults).toBe(false);
  });

  it('checks property values against their spec', () => {
    const queue = prop('MQInput', 'queueName');
    const mode = prop('MQInput', 'transactionMode');
    const wait = prop('MQInput', 'waitInterval');
    expect(propertyProblem(queue, '')).toBe('Queue name is required');
    expect(propertyProblem(queue, 'ORDERS.IN')).toBeNull();
    expect(propertyProblem(mode, 'sometimes')).toBe('Transaction mode must be one of yes, no, automatic');
    expect(propertyProblem(wait, 0)).toBe(`${wait.label} must be at least ${wait.minimum}`);
    expect(propertyProblem(wait, 1.5)).toBe(`${wait.label} must be a whole number`);
    expect(propertyProblem(wait, undefined)).toBeNull();
  });

  it('turns a diagnostic line and column into an editor offset', () => {
    const text = 'SET a = 1;\nSET b = ;\n';
    expect(offsetOf(text, 1, 1)).toBe(0);
    expect(offsetOf(text, 2, 9)).toBe(19);
    expect(text[offsetOf(text, 2, 9)]).toBe(';');
    expect(offsetOf(text, 2, 99)).toBe(20);
    expect(offsetOf(text, 9, 1)).toBe(text.length);
  });
});

describe('ESQL completion', () => {
  it('offers correlation names, built-ins with their signature, and keywords', async () => {
    const { esqlCompletion } = await import('./esql-language');
    const complete = esqlCompletion({
      keywords: ['SET', 'DECLARE'],
      functions: ['SUBSTRING'],
      functionDetails: [
        { name: 'SUBSTRING', category: 'string', signature: 'SUBSTRING(s FROM n FOR m)', doc: 'part of a string' },
      ],
      correlationNames: ['InputRoot'],
    });
    const context = {
      matchBefore: () => ({ from: 4, to: 6, text: 'In' }),
      explicit: false,
    } as unknown as Parameters<typeof complete>[0];
    const result = complete(context);
    expect(result?.from).toBe(4);
    expect(result?.options.map((o) => [o.label, o.type, o.detail])).toEqual([
      ['InputRoot', 'variable', 'correlation name'],
      ['SUBSTRING', 'function', 'SUBSTRING(s FROM n FOR m)'],
      ['SET', 'keyword', undefined],
      ['DECLARE', 'keyword', undefined],
    ]);
  });
});
