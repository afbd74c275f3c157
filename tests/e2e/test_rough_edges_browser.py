"""Rough edges of the designer's pages, in a real Chromium against a real `flowbroker up` (see rough-edges.e2e.mjs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from flowbroker.qm.client import Client, MessageDescriptor

from e2e.conftest import run_script

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

HELD = "RE.HELD"

#: What each step photographs; each must exist after a run.
SCREENSHOTS = (
    "rough-01-queues-1440",
    "rough-02-purged",
    "rough-03-no-trace",
    "rough-04-problems",
    "rough-05-pasted",
    "rough-06-reopened",
)


@pytest.mark.timeout(300)
def test_designer_rough_edges(broker: str, tmp_path: Path, admin_password: str) -> None:
    out = ROOT / "test-output" / "rough-edges"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": admin_password,
        "OUTPUT_DIR": str(out),
        "HELD_QUEUE": HELD,
    }
    # A consumer holds the first of two messages in an open unit of work while the page purges
    # the queue, as a flow retrying a message it keeps failing on holds it.
    with Client.connect(data_dir=str(tmp_path / "data")) as consumer:
        consumer.define_queue(HELD)
        consumer.put(HELD, b"held", MessageDescriptor(persistence=1))
        consumer.put(HELD, b"waiting")
        held = consumer.get(HELD, syncpoint=True)
        assert held is not None and held.body == b"held"
        try:
            run_script("rough-edges.e2e.mjs", env, timeout=270, steps=6)
        finally:
            consumer.backout()
        # the purged message does not come back with the backout
        assert consumer.inquire_queue(HELD)["current_depth"] == 0
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
