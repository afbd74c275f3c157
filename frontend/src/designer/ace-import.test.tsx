import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { AceImportDialog, aceReportView } from './AceImportDialog';

afterEach(cleanup);

const report = {
  summary: {
    flows: 2,
    nodes: 9,
    nodesMapped: 8,
    nodesMappedPercent: 88.9,
    esqlModulesResolved: 2,
    esqlModulesMissing: 1,
    unsupportedNodeTypes: { WSRequest: 1 },
  },
  projects: ['OrderApp'],
  flows: [
    {
      name: 'orders.OrderRouter',
      kind: 'flow',
      outcome: 'created',
      nodesMapped: 5,
      nodesTotal: 6,
      unsupportedNodes: [{ node: 'Check stock', type: 'WSRequest', reason: 'no flowbroker node type yet' }],
      esqlMissing: [],
      problems: [],
    },
    {
      name: 'billing.Invoices',
      kind: 'flow',
      outcome: 'refused',
      nodesMapped: 3,
      nodesTotal: 3,
      unsupportedNodes: [],
      esqlMissing: [{ reason: "module IsLarge not found in broker schema 'billing'" }],
      problems: [{ message: 'required property of Filter' }],
    },
  ],
  queues: [{ name: 'ORDERS.IN', outcome: 'defined', problem: '' }],
  topics: [],
  subscriptions: [
    { name: 'ORDERS.AUDIT', topic: 'orders/#', queue: 'ORDERS.LOG', outcome: 'defined', problem: '' },
    { name: 'ORDERS.BIG', topic: 'orders/new', queue: 'ORDERS.LOG', problem: 'SELECTOR(Qty > 10): not supported' },
  ],
  models: [
    {
      file: 'Payments/payset/messageSet.mset',
      kind: 'MRM message set',
      outcome: 'not imported',
      reason: 'the TDS (tagged/delimited) physical format is not supported',
    },
  ],
  unsupportedCommands: [],
  errors: [{ message: 'Billing/Bad.msgflow:10:19: malformed XML' }],
  notes: [],
};

describe('the ACE import report', () => {
  it('says per flow what is to replace, missing or refused', () => {
    const view = aceReportView(report);
    expect(view.headline).toBe(
      '2 flows, 8/9 nodes mapped (88.9%), 2 ESQL modules resolved, 1 missing; not supported: WSRequest ×1',
    );
    expect(view.flows.map((f) => [f.name, f.outcome, f.notes])).toEqual([
      ['orders.OrderRouter', 'created', ['to replace Check stock (WSRequest): no flowbroker node type yet']],
      [
        'billing.Invoices',
        'refused',
        ["ESQL: module IsLarge not found in broker schema 'billing'", 'problem: required property of Filter'],
      ],
    ]);
    expect(view.queues).toEqual(['ORDERS.IN: defined']);
    expect(view.subscriptions).toEqual([
      'ORDERS.AUDIT (orders/# → ORDERS.LOG): defined',
      'ORDERS.BIG (orders/new → ORDERS.LOG): SELECTOR(Qty > 10): not supported',
    ]);
  });

  it('lists the message models and why they were not imported', () => {
    render(<AceImportDialog report={report} onClose={() => undefined} />);
    expect(screen.getByTestId('ace-import-models').textContent).toBe(
      'MRM message set Payments/payset/messageSet.mset: not imported: the TDS (tagged/delimited) physical format is not supported',
    );
    expect(screen.getByTestId('ace-import-subscriptions').textContent).toContain('ORDERS.AUDIT (orders/# → ORDERS.LOG): defined');
  });

  it('shows the files that could not be read', () => {
    render(<AceImportDialog report={report} onClose={() => undefined} />);
    expect(screen.getByTestId('ace-import-errors').textContent).toContain('Billing/Bad.msgflow:10:19: malformed XML');
    expect(screen.getByTestId('ace-import-flows').textContent).toContain('orders.OrderRouter: created, 5/6 nodes');
  });
});
