import { describe, expect, it } from 'vitest';
import { offsetOf } from './esql-language';
import { SPECS } from './fixtures';
import { indexSpecs, propertyProblem } from './spec';

describe('node specs', () => {
  it('drops entries without a type and fills the gaps of the rest', () => {
    const index = indexSpecs([null, { label: 'x' }, { type: 'T', properties: [{ name: 'p' }, 'junk'] }]);
    expect(Object.keys(index)).toEqual(['T']);
    expect(index.T.properties).toEqual([
      expect.objectContaining({ name: 'p', type: 'string', label: 'p', required: false, enum: [] }),
    ]);
    expect(index.T.inputs).toEqual([]);
  });

  it('checks property values against their spec', () => {
    const [queue, mode, wait] = SPECS.MQInput.properties;
    expect(propertyProblem(queue, '')).toBe('Queue name is required');
    expect(propertyProblem(queue, 'ORDERS.IN')).toBeNull();
    expect(propertyProblem(mode, 'sometimes')).toBe('Transaction mode must be one of yes, no, automatic');
    expect(propertyProblem(wait, -1)).toBe('Wait interval must be at least 0');
    expect(propertyProblem(wait, 1.5)).toBe('Wait interval must be a whole number');
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
      functions: [{ name: 'SUBSTRING', signature: 'SUBSTRING(s FROM n FOR m)', doc: 'part of a string' }],
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
