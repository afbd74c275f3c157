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
  });

  it('shows the files that could not be read', () => {
    render(<AceImportDialog report={report} onClose={() => undefined} />);
    expect(screen.getByTestId('ace-import-errors').textContent).toContain('Billing/Bad.msgflow:10:19: malformed XML');
    expect(screen.getByTestId('ace-import-flows').textContent).toContain('orders.OrderRouter: created, 5/6 nodes');
  });
});
