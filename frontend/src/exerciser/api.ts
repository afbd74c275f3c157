/** The flow exerciser's calls: deployments of a flow, recordings and what crossed, test messages. */
import { api, unwrap, type Schemas } from '../api/client';

export type Recording = Schemas['RecordingOut'];
export type RecordingDetail = Schemas['RecordingDetailOut'];
export type CrossingSummary = Schemas['CrossingSummaryOut'];
export type Crossing = Schemas['CrossingOut'];
export type TestMessageRequest = Schemas['TestMessageIn'];
export type TestMessageSent = Schemas['TestMessageOut'];
export type RecordedCase = Schemas['RecordedCaseOut'];

const recordingPath = (deployment: number, recording: string) => ({
  params: { path: { deployment_id: deployment, recording_id: recording } },
});

export const exerciser = {
  deployments: (flowId: number) => unwrap(api.GET('/api/flows/{flow_id}/deployments', { params: { path: { flow_id: flowId } } })),
  recordings: (deployment: number) =>
    unwrap(api.GET('/api/deployments/{deployment_id}/recordings', { params: { path: { deployment_id: deployment } } })),
  record: (deployment: number, maxMessages: number, seconds: number) =>
    unwrap(
      api.POST('/api/deployments/{deployment_id}/recordings', {
        params: { path: { deployment_id: deployment } },
        body: { maxMessages, seconds },
      }),
    ),
  recording: (deployment: number, recording: string) =>
    unwrap(api.GET('/api/deployments/{deployment_id}/recordings/{recording_id}', recordingPath(deployment, recording))),
  stop: (deployment: number, recording: string) =>
    unwrap(api.POST('/api/deployments/{deployment_id}/recordings/{recording_id}/stop', recordingPath(deployment, recording))),
  remove: (deployment: number, recording: string) =>
    unwrap(api.DELETE('/api/deployments/{deployment_id}/recordings/{recording_id}', recordingPath(deployment, recording))),
  crossing: (deployment: number, recording: string, seq: number) =>
    unwrap(
      api.GET('/api/deployments/{deployment_id}/recordings/{recording_id}/crossings/{seq}', {
        params: { path: { deployment_id: deployment, recording_id: recording, seq } },
      }),
    ),
  /** Make a test case of recorded message `message`, saved with the flow as its next version. */
  testCase: (deployment: number, recording: string, body: Schemas['RecordedCaseIn']) =>
    unwrap(api.POST('/api/deployments/{deployment_id}/recordings/{recording_id}/test-cases', { ...recordingPath(deployment, recording), body })),
  send: (deployment: number, body: TestMessageRequest) =>
    unwrap(api.POST('/api/deployments/{deployment_id}/test-messages', { params: { path: { deployment_id: deployment } }, body })),
};

/** Whether a recording may still grow (the panel keeps asking for it while so). */
export function isLive(recording: Pick<Recording, 'status'> | undefined): boolean {
  return recording?.status === 'requested' || recording?.status === 'recording';
}

/** How many crossings each connection (designer edge id) had in a recording. */
export function crossingCounts(crossings: readonly CrossingSummary[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const c of crossings) counts.set(c.connection, (counts.get(c.connection) ?? 0) + 1);
  return counts;
}
