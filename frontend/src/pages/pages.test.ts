import { describe, expect, it } from 'vitest';
import { parseRoute } from '../App';
import { bytes, rates, uptime } from './Monitoring';
import { checkBody, parseUsrFolder } from './Queues';

describe('monitoring figures', () => {
  it('derives rates and mean latency from cumulative counters', () => {
    const points = [
      { t: 100, messages: 10, elapsedUs: 1000 },
      { t: 102, messages: 30, elapsedUs: 41000 },
      { t: 104, messages: 30, elapsedUs: 41000 },
      { t: 106, messages: 5, elapsedUs: 100 }, // the group restarted: counters reset
    ];
    expect(rates(points)).toEqual([
      { t: 102, rate: 10, latencyMs: 2 },
      { t: 104, rate: 0, latencyMs: null },
    ]);
  });

  it('formats uptime and sizes', () => {
    expect(uptime(undefined)).toBe('—');
    expect(uptime(3725)).toBe('01:02:05');
    expect(uptime(90061)).toBe('1d 01:01:01');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(98_765_432)).toBe('94.2 MiB');
  });
});

describe('queues page', () => {
  it('names what is wrong with a JSON or XML body before it is sent', () => {
    expect(checkBody('json', '{"a": 1}')).toBeNull();
    expect(checkBody('json', '{"a": }')).toMatch(/^JSON body: /);
    expect(checkBody('xml', '<a><b/></a>')).toBeNull();
    expect(checkBody('xml', '<a><b></a>')).toMatch(/^XML body: /);
    expect(checkBody('text', '<not xml')).toBeNull();
  });

  it('reads the usr folder lines and names a bad one', () => {
    expect(parseUsrFolder('Region = EU\n\nPriority=high\n')).toEqual({ Region: 'EU', Priority: 'high' });
    expect(() => parseUsrFolder('Region=EU\nno equals')).toThrow('usr folder, line 2');
    expect(() => parseUsrFolder('1x=2')).toThrow('usr folder, line 1');
  });
});

describe('routes', () => {
  it('reads the page and the flow to open from the address', () => {
    expect(parseRoute('')).toEqual({ page: 'designer', flowId: null });
    expect(parseRoute('#/designer/12')).toEqual({ page: 'designer', flowId: 12 });
    expect(parseRoute('#/designer/x')).toEqual({ page: 'designer', flowId: null });
    expect(parseRoute('#/queues')).toEqual({ page: 'queues' });
    expect(parseRoute('#/nowhere')).toEqual({ page: 'designer', flowId: null });
  });
});
