"""Import of IBM ACE / IIB Toolkit workspaces: message flows, subflows, ESQL and MQSC scripts."""

from flowbroker.importers.ace.workspace import Workspace, WorkspaceError, import_workspace

__all__ = ["Workspace", "WorkspaceError", "import_workspace"]
