/**
 * The designer page: palette, canvas, property panel, problems, and the toolbar. The page lays
 * them out and holds which dialog is open; the hooks it calls do the work (useFlowDocument: open,
 * save, deploy; useCanvasCommands; useShortcuts; useLiveCounts; useReportedProblems), and every
 * part subscribes to the part of the store it draws.
 */
import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { useCallback, useState } from 'react';
import { useCan } from '../auth';
import { DebugPanel } from '../debugger/DebugPanel';
import { ExerciserPanel } from '../exerciser/ExerciserPanel';
import { Canvas } from './Canvas';
import { CanvasProblems } from './CanvasProblems';
import { useFitView } from './canvas-view';
import { ConnectDialog } from './ConnectDialog';
import { DeployDialog } from './DeployDialog';
import { Palette } from './Palette';
import { PropertyPanel } from './PropertyPanel';
import { useSpecs } from './specs-context';
import { createDesignerStore, DesignerContext, useDesigner } from './store';
import { Toolbar } from './Toolbar';
import { useCanvasCommands } from './use-canvas-commands';
import { useFlowDocument } from './use-flow-document';
import { useLiveCounts } from './use-live-counts';
import { useReportedProblems } from './use-problems';
import { useShortcuts } from './use-shortcuts';
import { VersionsDialog } from './VersionsDialog';

/** Choose how to connect a terminal of `sourceId` (the keyboard path to a connection). */
function ConnectFromDialog({ sourceId, onClose }: { sourceId: string; onClose: () => void }) {
  const specs = useSpecs();
  const nodes = useDesigner((s) => s.nodes);
  const edges = useDesigner((s) => s.edges);
  const connect = useDesigner((s) => s.connect);
  return <ConnectDialog specs={specs} nodes={nodes} edges={edges} sourceId={sourceId} onConnect={connect} onClose={onClose} />;
}

function DesignerBody({ flowId }: { flowId: number | null }) {
  const canEdit = useCan('flows.edit');
  const canDeploy = useCan('deploy');
  const focus = useDesigner((s) => s.focus);
  const openFlowId = useDesigner((s) => s.meta.flowId);
  const version = useDesigner((s) => s.meta.version);
  const flowName = useDesigner((s) => s.meta.name);
  const { setCenter, getNode } = useReactFlow();
  const { fit } = useFitView();
  const problems = useReportedProblems();
  const [notice, setNotice] = useState<string | null>(null);
  const [showVersions, setShowVersions] = useState(false);
  const [showDeploy, setShowDeploy] = useState(false);
  const [connectFrom, setConnectFrom] = useState<string | null>(null);

  const flow = useFlowDocument({ flowId, onProblems: problems.setServer, onNotice: setNotice });
  const commands = useCanvasCommands({ report: problems.report, onProblems: problems.setServer });
  useLiveCounts(flow.liveFlow);

  /** Start a keyboard connection from the chosen node; false when none is chosen. */
  const startConnect = useCallback(() => {
    const from = commands.connectFromSelection();
    if (from) setConnectFrom(from);
    return from !== null;
  }, [commands]);

  useShortcuts({
    canEdit,
    save: flow.save,
    fit,
    autoLayout: () => void commands.autoLayout({ fit: false }),
    connect: startConnect,
  });

  const focusNode = useCallback(
    (id: string) => {
      const node = getNode(id);
      focus(id);
      if (node) setCenter(node.position.x + 80, node.position.y + 30, { zoom: 1.2, duration: 300 });
    },
    [focus, getNode, setCenter],
  );

  return (
    <div className="designer">
      <Toolbar
        canEdit={canEdit}
        canDeploy={canDeploy}
        flow={flow}
        onAutoLayout={() => void commands.autoLayout({ fit: true })}
        onMakeSubflow={() => void commands.makeSubflow()}
        onConnect={() => {
          if (!startConnect()) problems.report('select the node to connect from');
        }}
        onOpenVersions={() => setShowVersions(true)}
        onDeploy={() => setShowDeploy(true)}
        report={problems.report}
        onProblems={problems.setServer}
        onNotice={setNotice}
      />
      {notice && (
        <div className="notice" role="status" data-testid="notice">
          {notice}
        </div>
      )}
      <div className="designer-main">
        <Palette onAdd={commands.addAtCentre} disabled={!canEdit} />
        <Canvas readOnly={!canEdit} onOpenSubflow={(node) => void flow.openSubflow(node)} />
        <PropertyPanel readOnly={!canEdit} serverProblems={problems.server} onEsqlDiagnostics={problems.onEsqlDiagnostics} />
      </div>
      <CanvasProblems reported={problems.all} onFocus={focusNode} />
      {flow.liveFlow !== null && <DebugPanel flowName={flowName} />}
      <ExerciserPanel />
      {showVersions && openFlowId !== null && (
        <VersionsDialog
          flowId={openFlowId}
          onClose={() => setShowVersions(false)}
          onOpen={async (number) => {
            if (await flow.openVersion(number)) setShowVersions(false);
          }}
        />
      )}
      {connectFrom !== null && <ConnectFromDialog sourceId={connectFrom} onClose={() => setConnectFrom(null)} />}
      {showDeploy && openFlowId !== null && (
        <DeployDialog
          flowId={openFlowId}
          version={version}
          onProblems={problems.setServer}
          onDeployed={flow.onDeployed}
          onClose={() => setShowDeploy(false)}
        />
      )}
    </div>
  );
}

export default function Designer({ flowId = null }: { flowId?: number | null }) {
  const [store] = useState(() => createDesignerStore());
  return (
    <DesignerContext.Provider value={store}>
      <ReactFlowProvider>
        <DesignerBody flowId={flowId} />
      </ReactFlowProvider>
    </DesignerContext.Provider>
  );
}
