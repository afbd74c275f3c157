import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { deploymentProblems } from './DeployDialog';
import { ProblemsPanel } from './ProblemsPanel';

afterEach(cleanup);

describe('deployment diagnostics', () => {
  it('land on their node, property and ESQL line', () => {
    const problems = deploymentProblems({
      id: 8,
      flow: 'F',
      flowId: 9,
      version: 1,
      broker: 'default',
      group: 'default',
      groupId: 1,
      additionalInstances: 0,
      overrides: {},
      createdAt: '2026-01-01T00:00:00Z',
      updatedAt: '2026-01-01T00:00:00Z',
      status: 'failed',
      detail: '',
      diagnostics: [
        { node: 'c1', property: 'esql', line: 2, column: 27, pointer: '', message: "routine 'X' is not defined" },
        { node: '', property: '', line: 0, column: 0, pointer: '/name', message: 'bad name' },
      ],
    });
    expect(problems).toEqual([
      { node: 'c1', property: 'esql', line: 2, column: 27, message: "routine 'X' is not defined" },
      { node: null, property: null, line: undefined, column: undefined, message: 'bad name' },
    ]);
  });

  it('are listed in the problems panel, and a click focuses the node', () => {
    const focused: string[] = [];
    render(
      <ProblemsPanel
        problems={[
          {
            node: 'c1',
            property: 'esql',
            nodeLabel: 'Transform',
            propertyLabel: 'ESQL',
            line: 2,
            column: 27,
            message: "routine 'X' is not defined",
          },
        ]}
        onFocus={(id) => focused.push(id)}
      />,
    );
    const entry = screen.getByRole('button', { name: /Transform · ESQL · line 2, column 27/ });
    fireEvent.click(entry);
    expect(focused).toEqual(['c1']);
  });
});
