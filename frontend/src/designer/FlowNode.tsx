/** One node on the canvas: its name and type, and a handle per terminal named as in the spec. */
import { Handle, Position, type NodeProps } from '@xyflow/react';
import { memo } from 'react';
import { terminalsOf, type FlowCanvasNode } from './document';
import { ICON_GLYPHS, useSpecs } from './specs-context';
import { useDesigner } from './store';

const ROW = 18;

function FlowNodeView({ id, data, selected }: NodeProps<FlowCanvasNode>) {
  const specs = useSpecs();
  const spec = specs[data.type];
  const { inputs, outputs } = terminalsOf(specs, data);
  const rows = Math.max(inputs.length, outputs.length, 1);
  // Only this node re-renders when its own count changes.
  const count = useDesigner((s) => s.counts[id]);
  return (
    <div
      className={`fb-node cat-${spec?.category ?? 'unknown'}${selected ? ' selected' : ''}${data.problem ? ' has-problem' : ''}`}
      style={{ minHeight: 34 + rows * ROW }}
      data-node-id={id}
      data-testid={`node-${id}`}
      title={data.problem ?? spec?.description ?? data.type}
    >
      <div className="fb-node-head">
        <span className="fb-node-icon" aria-hidden>
          {ICON_GLYPHS[spec?.icon ?? ''] ?? '□'}
        </span>
        <span className="fb-node-name">{data.name}</span>
        {count !== undefined && (
          <span className="fb-node-count" data-testid={`count-${id}`} title="messages processed">
            {count}
          </span>
        )}
      </div>
      <div className="fb-node-type">
        {spec?.label ?? `${data.type} (unknown type)`}
        {spec?.extra?.placeholder === true && typeof data.properties.originalType === 'string'
          ? `: ${data.properties.originalType}`
          : ''}
      </div>
      {inputs.map((t, i) => (
        <Handle
          key={`in-${t.name}`}
          id={t.name}
          type="target"
          position={Position.Left}
          className={`term term-${t.kind}`}
          style={{ top: 34 + i * ROW + ROW / 2 }}
          title={`${t.label} (input)`}
          data-terminal={t.name}
        />
      ))}
      {outputs.map((t, i) => (
        <div key={`out-${t.name}`} className={`fb-out-label term-${t.kind}`} style={{ top: 34 + i * ROW }}>
          {t.name}
          <Handle
            id={t.name}
            type="source"
            position={Position.Right}
            className={`term term-${t.kind}`}
            style={{ top: ROW / 2 }}
            title={`${t.label} (${t.kind})`}
            data-terminal={t.name}
          />
        </div>
      ))}
    </div>
  );
}

export const FlowNode = memo(FlowNodeView);
FlowNode.displayName = 'FlowNode';
