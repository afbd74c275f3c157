/** The step debugger's routes: a deployment's breakpoints, its paused threads, and the commands to them. */
import { api, unwrap, type Schemas } from '../api/client';
import type { FieldEdit } from '../exerciser/message-view';

export type Breakpoints = Schemas['BreakpointsOut'];
export type Pause = Schemas['PauseOut'];
export type DebugAction = 'resume' | 'step' | 'abort';

const deployment = (id: number) => ({ params: { path: { deployment_id: id } } });

/** How a breakpoint names a connection: `source.terminal->target.terminal` (as the runtime does). */
export function connectionId(source: string, terminal: string, target: string, targetTerminal: string): string {
  return `${source}.${terminal}->${target}.${targetTerminal}`;
}

export const debug = {
  breakpoints: (id: number) => unwrap(api.GET('/api/deployments/{deployment_id}/breakpoints', deployment(id))),
  setBreakpoints: (id: number, body: Schemas['BreakpointsIn']) =>
    unwrap(api.PUT('/api/deployments/{deployment_id}/breakpoints', { ...deployment(id), body })),
  pauses: (id: number) => unwrap(api.GET('/api/deployments/{deployment_id}/pauses', deployment(id))),
  command: (id: number, pauseId: string, action: DebugAction | '', edits: FieldEdit[] = []) =>
    unwrap(
      api.POST('/api/deployments/{deployment_id}/pauses/{pause_id}', {
        params: { path: { deployment_id: id, pause_id: pauseId } },
        body: {
          action,
          edits: edits.map((e) => ({
            tree: e.tree as Schemas['Edit']['tree'],
            ref: e.ref,
            value: e.value,
            type: e.valueType as Schemas['Edit']['type'],
          })),
        },
      }),
    ),
};
