import { describe, expect, it } from 'vitest';
import { parseRoute } from '../App';
import { bytes, chartData, flowHealth, uptime } from './Monitoring';
import { checkBody, EMPTY_RFH2, parseUsrFolder, rfh2Request } from './Queues';
import { flowState } from './Topology';

describe('monitoring figures', () => {
  it('turns the server history into one time axis with a series per flow', () => {
    const point = (t: number, rate: number, latency: number | null) => ({
      t,
      msgs_per_s: rate,
      latency_ms: latency,
      messages: 0,
      errors: 0,
      backouts: 0,
    });
    const data = chartData([
      { broker: 'b', group: 'g', flow: 'A', points: [point(10, 2, 5), point(20, 4, null)] },
      { broker: 'b', group: 'g', flow: 'B', points: [point(15, 1, 1.5)] },
    ]);
    expect(data.times).toEqual([10, 15, 20]);
    expect(data.rate).toEqual([
      { label: 'b/g/A', values: [2, null, 4] },
      { label: 'b/g/B', values: [null, 1, null] },
    ]);
    expect(data.latency[0].values).toEqual([5, null, null]);
    expect(chartData([]).times).toEqual([]);
  });

  it('shows a flow with backouts in amber and one that gave messages up in red', () => {
    expect(flowHealth({ backouts: 0, failures: 0 })).toBe('');
    expect(flowHealth({ backouts: 3 })).toBe('flow-backing-out');
    expect(flowHealth({ backouts: 3, failures: 1 })).toBe('flow-failing');
  });

  it('formats uptime and sizes', () => {
    expect(uptime(undefined)).toBe('—');
    expect(uptime(null)).toBe('—');
    expect(uptime(3725)).toBe('01:02:05');
    expect(uptime(90061)).toBe('1d 01:01:01');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(98_765_432)).toBe('94.2 MiB');
  });
});

describe('topology', () => {
  it('shows the flows of a stopped group as stopped with it', () => {
    expect(flowState({ status: 'running' }, { state: 'running' })).toBe('running');
    expect(flowState({ status: 'running' }, { state: 'stopped' })).toBe('stopped (group stopped)');
    expect(flowState({ status: 'failed' }, { state: 'stopped' })).toBe('failed');
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

  it('builds every MQRFH2 folder the form holds, and none without a domain', () => {
    expect(rfh2Request({ ...EMPTY_RFH2, usr: 'a=1' })).toBeNull();
    expect(
      rfh2Request({
        domain: 'MRM',
        set: ' Orders ',
        type: 'Order',
        format: 'CWF',
        usr: 'Region=EU',
        topics: 'orders/eu\n\n orders/all ',
        jms: { dst: 'queue:///Q', pri: '7', cid: '' },
      }),
    ).toEqual({
      domain: 'MRM',
      set: 'Orders',
      type: 'Order',
      format: 'CWF',
      usr: { Region: 'EU' },
      psc: { command: 'Publish', topics: ['orders/eu', 'orders/all'] },
      jms: { dst: 'queue:///Q', pri: '7' },
    });
    expect(rfh2Request({ ...EMPTY_RFH2, domain: 'XMLNSC' })).toEqual({
      domain: 'XMLNSC',
      set: '',
      type: '',
      format: '',
      usr: {},
      psc: null,
      jms: null,
    });
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
