import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectionId } from './debug-api';
import { debugTarget, esqlBreakpoints, followBreakpoints, linesOf, markedLines, toggleLine } from './esql-breakpoints';

afterEach(() => debugTarget.setState({ target: null }));

const target = (esql: { node: string; line: number }[]) => {
  const save = vi.fn(async () => undefined);
  debugTarget.setState({
    target: { deploymentId: 7, breakpoints: { connections: ['a.out->b.in'], esql, development: true, armed: true }, save },
  });
  return save;
};

describe('ESQL breakpoints of the Compute editor', () => {
  it('names connections as the runtime does', () => {
    expect(connectionId('in1', 'out', 'calc', 'in')).toBe('in1.out->calc.in');
  });

  it('does nothing while no deployment is followed', async () => {
    expect(linesOf('calc')).toEqual([]);
    await toggleLine('calc', 3); // no target: nothing to save, nothing thrown
    expect(debugTarget.getState().target).toBeNull();
  });

  it('sets a line, and clears a line that has one, keeping the other breakpoints', async () => {
    const save = target([{ node: 'calc', line: 4 }, { node: 'other', line: 2 }]);
    expect(linesOf('calc')).toEqual([4]);
    await toggleLine('calc', 6);
    expect(save).toHaveBeenLastCalledWith({
      connections: ['a.out->b.in'],
      esql: [{ node: 'calc', line: 4 }, { node: 'other', line: 2 }, { node: 'calc', line: 6 }],
    });
    await toggleLine('calc', 4);
    expect(save).toHaveBeenLastCalledWith({ connections: ['a.out->b.in'], esql: [{ node: 'other', line: 2 }] });
  });

  it('marks the lines of its node in the gutter and follows changes', () => {
    const parent = document.createElement('div');
    const view = new EditorView({ parent, state: EditorState.create({ doc: 'a\nb\nc\nd', extensions: [esqlBreakpoints('calc')] }) });
    const unfollow = followBreakpoints(view, 'calc');
    expect(markedLines(view.state)).toEqual([]);
    // line 9 is past the text: not drawn; another node's line is not this editor's
    target([{ node: 'calc', line: 2 }, { node: 'calc', line: 9 }, { node: 'other', line: 1 }]);
    expect(markedLines(view.state)).toEqual([2]);
    debugTarget.setState({ target: null });
    expect(markedLines(view.state)).toEqual([]);
    unfollow();
    target([{ node: 'calc', line: 3 }]);
    expect(markedLines(view.state)).toEqual([]);
    view.destroy();
  });
});
