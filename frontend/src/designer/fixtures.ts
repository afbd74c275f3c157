/** Node specs in the wire shape of GET /api/node-types, for the unit tests. */
import { indexSpecs } from './spec';

export const SPECS = indexSpecs([
  {
    type: 'MQInput',
    label: 'MQInput',
    category: 'input',
    icon: 'queue-in',
    inputs: [],
    outputs: [
      { name: 'out', kind: 'out', label: 'Out' },
      { name: 'failure', kind: 'failure', label: 'Failure' },
      { name: 'catch', kind: 'catch', label: 'Catch' },
    ],
    properties: [
      { name: 'queueName', type: 'queue', label: 'Queue name', required: true, default: null, enum: [] },
      {
        name: 'transactionMode',
        type: 'enum',
        label: 'Transaction mode',
        default: 'yes',
        enum: ['yes', 'no', 'automatic'],
      },
      { name: 'waitInterval', type: 'integer', label: 'Wait interval', default: 1000, minimum: 0, maximum: null },
    ],
  },
  {
    type: 'Compute',
    label: 'Compute',
    category: 'transformation',
    icon: 'compute',
    inputs: [{ name: 'in', kind: 'in', label: 'In' }],
    outputs: [
      { name: 'out', kind: 'out', label: 'Out' },
      { name: 'failure', kind: 'failure', label: 'Failure' },
    ],
    properties: [{ name: 'esql', type: 'esql', label: 'ESQL', editor: 'esql', required: true, default: null }],
  },
  {
    type: 'MQOutput',
    label: 'MQOutput',
    category: 'output',
    icon: 'queue-out',
    inputs: [{ name: 'in', kind: 'in', label: 'In' }],
    outputs: [{ name: 'out', kind: 'out', label: 'Out' }],
    properties: [{ name: 'queueName', type: 'queue', label: 'Queue name', required: true, default: null }],
  },
]);
