/** Fitting the canvas's viewport to the flow, shared by the toolbar, the shortcuts and loading. */
import { useReactFlow } from '@xyflow/react';
import { useMemo } from 'react';

// Module scope: a new object each render would make React Flow refit.
export const fitViewOptions = { maxZoom: 1, padding: 0.2 };

export function useFitView() {
  const { fitView } = useReactFlow();
  return useMemo(
    () => ({
      /** Zoom to show the whole flow (the Fit button, F). */
      fit: () => void fitView({ ...fitViewOptions, duration: 200 }),
      /** Fit a graph just loaded, once React Flow has measured its nodes. */
      fitSoon: (animate = true) => {
        setTimeout(() => void fitView(animate ? { ...fitViewOptions, duration: 200 } : fitViewOptions), 50);
      },
    }),
    [fitView],
  );
}
