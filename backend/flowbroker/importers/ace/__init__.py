"""Import of IBM ACE / IIB Toolkit workspaces: message flows, subflows, ESQL and MQSC scripts."""

from flowbroker.importers.ace.workspace import ImportError_, Workspace, import_workspace

__all__ = ["ImportError_", "Workspace", "import_workspace"]
