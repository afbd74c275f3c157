import { describe, expect, it } from 'vitest';
import { ApiProblem } from '../api/client';
import { offsetAt } from './BodyEditor';
import { crossingCounts, isLive } from './api';
import { bodyError, namedTestMessages, parseHeaders } from './TestMessageDialog';
import type { FlowCanvasNode } from '../designer/document';

describe('test messages', () => {
  it('read the parser position of a refused body, and nothing else', () => {
    const refused = new ApiProblem(422, 'invalid', 'the body does not parse', [
      { pointer: '/message/body', line: 2, column: 15, message: 'XMLNSC: malformed XML' },
    ]);
    expect(bodyError(refused)).toEqual({ line: 2, column: 15, message: 'XMLNSC: malformed XML' });
    expect(bodyError(new ApiProblem(422, 'invalid', 'x', [{ pointer: '/node', message: 'no node' }]))).toBeNull();
    expect(bodyError(new Error('offline'))).toBeNull();
  });

  it('turn header lines into a map and name a wrong line', () => {
    expect(parseHeaders('X-Trace: 1\n\nAccept: text/xml')).toEqual({ 'X-Trace': '1', Accept: 'text/xml' });
    expect(() => parseHeaders('X-Trace 1')).toThrow('headers, line 1: write Name: value');
  });

  it('keep only well-formed named messages of a node', () => {
    const node = {
      id: 'in',
      data: { type: 'MQInput', name: 'in', properties: {}, ui: { testMessages: [{ name: 'a', message: { body: '<a/>' } }, { name: 3 }, null] } },
    } as unknown as FlowCanvasNode;
    expect(namedTestMessages(node).map((m) => m.name)).toEqual(['a']);
  });

  it('place a line and column in the text', () => {
    expect(offsetAt('ab\ncdef\ng', 2, 3)).toBe(5);
    expect(offsetAt('ab\ncd', 2, 99)).toBe(5);
    expect(offsetAt('ab', 7, 1)).toBe(2);
  });

  it('count crossings per connection and know a live recording', () => {
    const at = (connection: string, seq: number) => ({
      seq,
      message: 1,
      connection,
      from: { node: 'a', terminal: 'out' },
      to: { node: 'b', terminal: 'in' },
      time: 0,
      truncated: false,
    });
    expect([...crossingCounts([at('a.out->b.in', 1), at('b.out->c.in', 2), at('a.out->b.in', 3)])]).toEqual([
      ['a.out->b.in', 2],
      ['b.out->c.in', 1],
    ]);
    expect(isLive({ status: 'recording' })).toBe(true);
    expect(isLive({ status: 'complete' })).toBe(false);
  });
});
