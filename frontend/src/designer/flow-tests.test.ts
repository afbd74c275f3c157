import { describe, expect, it } from 'vitest';
import { caseRows, diffRows, type TestRun } from './flow-tests';
import { createDesignerStore } from './store';

const run: TestRun = {
  flow: 'Orders',
  version: 3,
  passed: false,
  seconds: 1.5,
  results: [
    { flow: 'Orders', case: 'doubles', passed: true, seconds: 0.4, error: '', problems: [], messages: [] },
    {
      flow: 'Orders',
      case: 'wrong',
      passed: false,
      seconds: 0.5,
      error: '',
      problems: ['ORDERS.OUT: 1 more message(s) than the 1 expected'],
      messages: [
        {
          queue: 'ORDERS.OUT',
          node: '',
          file: '',
          index: 0,
          passed: false,
          problem: '',
          actual: null,
          differences: [
            { path: 'XMLNSC.Order.Total', kind: 'changed', expected: '9', actual: '6' },
            { path: 'XMLNSC.Order.Note', kind: 'unexpected', expected: null, actual: null },
          ],
        },
        {
          queue: 'ORDERS.OUT',
          node: 'audit',
          file: '',
          index: 0,
          passed: false,
          problem: '',
          actual: null,
          differences: [{ path: '(properties).channel', kind: 'missing', expected: 'web', actual: null }],
        },
        {
          queue: '',
          node: 'sub/fo',
          file: 'order-9.xml',
          index: 0,
          passed: false,
          problem: '',
          actual: null,
          differences: [{ path: 'XMLNSC.order.seen', kind: 'changed', expected: 'yes', actual: 'no' }],
        },
      ],
    },
  ],
};

describe('flow tests panel', () => {
  it('lists every stored case with its result, those not run as such', () => {
    const tests = [
      { name: 'doubles', input: { node: 'in' }, expect: [{ queue: 'ORDERS.OUT' }] },
      { name: 'wrong', expect: [{ node: 'out' }] },
      { name: 'new one', expect: [] },
      { name: 'answers', input: { node: 'request' }, reply: { status: 200 } },
    ];
    expect(caseRows(tests, run).map((r) => [r.name, r.summary, r.status])).toEqual([
      ['doubles', 'in → ORDERS.OUT', 'passed'],
      ['wrong', 'input → out', 'failed'],
      ['new one', 'input → ', 'not run'],
      ['answers', 'request → HTTP reply', 'not run'],
    ]);
    expect(caseRows(undefined, null)).toEqual([]);
  });

  it('shows each difference by tree path, and problems without one', () => {
    expect(diffRows(run.results[1])).toEqual([
      { where: '', path: '', kind: 'problem', expected: '', actual: 'ORDERS.OUT: 1 more message(s) than the 1 expected' },
      { where: 'ORDERS.OUT #1', path: 'XMLNSC.Order.Total', kind: 'changed', expected: '9', actual: '6' },
      { where: 'ORDERS.OUT #1', path: 'XMLNSC.Order.Note', kind: 'unexpected', expected: '', actual: 'NULL' },
      { where: 'audit (ORDERS.OUT) #1', path: '(properties).channel', kind: 'missing', expected: 'web', actual: '' },
      { where: 'sub/fo file order-9.xml', path: 'XMLNSC.order.seen', kind: 'changed', expected: 'yes', actual: 'no' },
    ]);
  });

  it('keeps the test cases of a loaded flow in the document it saves', () => {
    const store = createDesignerStore();
    const tests = [{ name: 'doubles', input: {}, expect: [{ queue: 'Q', messages: [] }] }];
    store.getState().load({ name: 'Orders', nodes: [], connections: [], tests }, 7, 2);
    expect(store.getState().document().tests).toEqual(tests);
    store.getState().load({ name: 'Other', nodes: [], connections: [] }, 8, 1);
    expect(store.getState().document().tests).toBeUndefined();
  });
});
