/** Put each node's message count on the canvas while the open flow runs in an execution group. */
import { useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { stats, type GroupStatistics } from '../api/runtime';
import { useDesignerStore } from './store';

/** Each node's messages in, summed over the execution groups that run `flow`; null when none does. */
export function sumCounts(groups: readonly GroupStatistics[] | undefined, flow: string): Record<string, number> | null {
  const counts: Record<string, number> = {};
  let found = false;
  for (const g of groups ?? []) {
    const f = g.flows?.[flow];
    if (!f?.nodes) continue;
    found = true;
    for (const [id, n] of Object.entries(f.nodes)) counts[id] = (counts[id] ?? 0) + (n.messages_in ?? 0);
  }
  return found ? counts : null;
}

/** Poll monitoring while `flow` is the saved flow on the canvas (null: a new or imported flow, whose
 * nodes are nobody's); the counts go to the store beside the graph, out of the undo history. */
export function useLiveCounts(flow: string | null) {
  const store = useDesignerStore();
  const groups = useQuery({
    queryKey: ['stats', 'groups'],
    queryFn: stats.groups,
    refetchInterval: 3000,
    retry: false,
    enabled: flow !== null,
  });
  useEffect(() => {
    if (flow === null) return;
    const counts = sumCounts(groups.data, flow);
    if (counts) store.getState().setCounts(counts);
  }, [groups.data, flow, store]);
}
