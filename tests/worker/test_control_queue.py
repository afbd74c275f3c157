"""Control queues on the embedded filesystem transport: their exchange tables are written whole
before kombu needs them, so a sender never reads one empty while a group starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flowbroker.worker import app as worker_app


@pytest.fixture(autouse=True)
def _filesystem_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOWBROKER_CELERY_BROKER", raising=False)


def test_the_declared_table_binds_the_queue_and_a_task_reaches_it(tmp_path: Path) -> None:
    worker_app.declare_control_queue("eg.default.g1", tmp_path)
    table = tmp_path / "celery" / "control" / "eg.default.g1.exchange"
    assert json.loads(table.read_text()) == [["eg.default.g1", "", "eg.default.g1"]]
    worker_app.send_control_task("flowbroker.eg.deploy", "eg.default.g1", [7], tmp_path)
    sent = list((tmp_path / "celery" / "queue").glob("*.eg.default.g1.msg"))
    assert len(sent) == 1
    assert json.loads(table.read_text()) == [["eg.default.g1", "", "eg.default.g1"]]  # kombu agreed


def test_an_existing_table_is_left_as_it_is(tmp_path: Path) -> None:
    control = tmp_path / "celery" / "control"
    control.mkdir(parents=True)
    table = control / "eg.default.g2.exchange"
    table.write_text('[["eg.default.g2", "", "eg.default.g2"], ["other", "", "other"]]')
    worker_app.declare_control_queue("eg.default.g2", tmp_path)
    assert json.loads(table.read_text())[1] == ["other", "", "other"]
    assert not [p for p in control.iterdir() if p.name.endswith(".tmp")]


def test_a_table_another_process_links_first_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the other process wins between our existence check and our link: its table stays
    control = tmp_path / "celery" / "control"
    control.mkdir(parents=True)
    table = control / "eg.default.g3.exchange"
    theirs = '[["eg.default.g3", "", "eg.default.g3"], ["other", "", "other"]]'
    real_link = worker_app.os.link

    def link_after_them(src: str, dst: str) -> None:
        Path(dst).write_text(theirs)
        real_link(src, dst)

    monkeypatch.setattr(worker_app.os, "link", link_after_them)
    worker_app.declare_control_queue("eg.default.g3", tmp_path)
    assert table.read_text() == theirs
    assert not [p for p in control.iterdir() if p.name.endswith(".tmp")]


def test_kombu_never_creates_a_table_by_truncating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kombu creates a missing table with open("wb") and locks it afterwards: in that window a
    # reader in another process finds it empty. Declared first, the table is only ever opened
    # for reading or for an update in place, under kombu's lock.
    modes: list[tuple[str, str]] = []
    real_open = Path.open

    def recording_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if self.name.endswith(".exchange"):
            modes.append((self.name, mode))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", recording_open)
    for i in range(3):
        worker_app.send_control_task("flowbroker.eg.deploy", f"eg.default.n{i}", [1], tmp_path)
    assert modes, "kombu read no exchange table: the test no longer watches the right calls"
    assert not [m for m in modes if "w" in m[1] and "+" not in m[1]], modes
