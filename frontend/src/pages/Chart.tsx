/** A time-series chart (uPlot), loaded only with the monitoring page. */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  values: (number | null)[];
}

export default function Chart({
  title,
  times,
  series,
  width = 560,
  height = 180,
}: {
  title: string;
  times: number[];
  series: Series[];
  width?: number;
  height?: number;
}) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('|');
  useEffect(() => {
    if (!host.current) return;
    plot.current = new uPlot(
      {
        title,
        width,
        height,
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: `hsl(${(i * 67) % 360} 70% 40%)`, width: 1.5 }))],
        axes: [{}, { size: 60 }],
      },
      [times, ...series.map((s) => s.values)] as uPlot.AlignedData,
      host.current,
    );
    return () => plot.current?.destroy();
    // Rebuilt only when the set of series changes; new points go through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [title, width, height, shape]);
  useEffect(() => {
    plot.current?.setData([times, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [times, series]);
  return <div ref={host} role="img" aria-label={title} />;
}
