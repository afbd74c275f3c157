import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { FieldEdit, MessageView } from './message-view';
import { MessageTreeView } from './MessageTreeView';

afterEach(cleanup);

const field = (name: string, path: string, ref: number[], value: string | null, children = [] as MessageView['trees']) => ({
  name,
  namespace: '',
  fieldType: value === null ? 'XMLNSC.Folder' : 'XMLNSC.Field',
  valueType: value === null ? 'NULL' : 'CHARACTER',
  value,
  path,
  ref,
  children,
  valueCut: false,
  unparsed: null,
});

const view: MessageView = {
  trees: [
    field('Root', 'Root', [], null, [
      field('XMLNSC', 'Root.XMLNSC', [0], null, [field('Qty', 'Root.XMLNSC.Qty', [0, 0], '3')]),
    ]),
    field('Environment', 'Environment', [], null),
  ],
  body: { domain: 'XMLNSC', format: 'xml', text: '<Qty>3</Qty>', bytes: 12 },
  truncated: true,
  notices: ['the body is 10,485,760 bytes: only the first 262,144 are shown'],
  properties: {},
};

describe('MessageTreeView', () => {
  it('shows fields with their types and values, folds folders, and shows the body and notices', () => {
    render(<MessageTreeView view={view} />);
    expect(screen.getByText('3')).toBeTruthy();
    expect(screen.getAllByText('XMLNSC.Field')).toHaveLength(1);
    expect(screen.getByTestId('message-body').textContent).toBe('<Qty>3</Qty>');
    expect(screen.getByRole('status').textContent).toContain('only the first 262,144 are shown');
    fireEvent.click(screen.getByLabelText('Collapse XMLNSC'));
    expect(screen.queryByText('3')).toBeNull();
    expect(screen.queryByLabelText('Edit Root.XMLNSC.Qty')).toBeNull();
  });

  it('edits a value through onEdit with the tree, ref and type, and shows a refusal', async () => {
    const edits: FieldEdit[] = [];
    let refuse = true;
    render(
      <MessageTreeView
        view={view}
        onEdit={(edit) => {
          edits.push(edit);
          if (refuse) return Promise.reject(new Error("'x' is not a valid INTEGER"));
          return Promise.resolve();
        }}
      />,
    );
    fireEvent.click(screen.getByLabelText('Edit Root.XMLNSC.Qty'));
    fireEvent.change(screen.getByLabelText('Type of Root.XMLNSC.Qty'), { target: { value: 'INTEGER' } });
    fireEvent.change(screen.getByLabelText('Value of Root.XMLNSC.Qty'), { target: { value: 'x' } });
    fireEvent.click(screen.getByText('Set'));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('not a valid INTEGER'));
    refuse = false;
    fireEvent.change(screen.getByLabelText('Value of Root.XMLNSC.Qty'), { target: { value: '42' } });
    fireEvent.click(screen.getByText('Set'));
    await waitFor(() => expect(screen.queryByLabelText('Value of Root.XMLNSC.Qty')).toBeNull());
    expect(edits[1]).toEqual({ tree: 'Root', ref: [0, 0], value: '42', valueType: 'INTEGER' });
  });

  it('shows the queue message properties apart from the trees, markable as (properties).NAME, never editable', () => {
    const marks: [string, boolean][] = [];
    render(
      <MessageTreeView
        view={{ ...view, properties: { channel: 'web', retries: 2 } }}
        onEdit={() => Promise.resolve()}
        onMark={(f, on) => marks.push([f.path, on])}
      />,
    );
    expect(screen.getByText('Message properties')).toBeTruthy();
    expect(screen.getByText('web')).toBeTruthy();
    expect(screen.getByText('INTEGER')).toBeTruthy();
    fireEvent.click(screen.getByLabelText('Mark (properties).channel'));
    expect(marks).toEqual([['(properties).channel', true]]);
    expect(screen.queryByLabelText('Edit (properties).channel')).toBeNull();
    cleanup();
    // a view without properties (a paused message's) shows no such folder
    render(<MessageTreeView view={{ ...view, properties: {} }} />);
    expect(screen.queryByText('Message properties')).toBeNull();
  });
});
