"""Each package does its own part: the worker reads and changes repository rows only through
``services`` (it imports no model), and the queue manager's publish path lives in ``pubsub``,
where a reader looks for it."""

from __future__ import annotations

import ast
from pathlib import Path

from flowbroker.pubsub import publishing
from flowbroker.qm.server import QueueManager

WORKER = Path(__file__).resolve().parents[1] / "backend" / "flowbroker" / "worker"


def _model_imports_and_status_writes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "flowbroker.repository.models":
            found += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names]
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in ("status", "diagnostics"):
                    found.append(f"{path.name}:{node.lineno} sets .{target.attr}")
    return found


def test_the_worker_reaches_repository_rows_only_through_services() -> None:
    found = [line for path in sorted(WORKER.rglob("*.py")) for line in _model_imports_and_status_writes(path)]
    assert found == [], "call flowbroker.services.deploy instead:\n" + "\n".join(found)


def test_the_scan_sees_a_direct_write(tmp_path: Path) -> None:
    module = tmp_path / "w.py"
    module.write_text("from flowbroker.repository.models import Deployment\nrow.status = 'compiling'\n")
    assert _model_imports_and_status_writes(module) == ["w.py:1 imports Deployment", "w.py:2 sets .status"]


def test_the_publish_path_is_the_pubsub_package_s() -> None:
    for verb in ("publish", "subscribe", "unsubscribe"):
        assert getattr(QueueManager, verb).__module__ == publishing.__name__
