"""A sample of the public ACE corpus (tests/importers/ace-manifest.tsv) imported, deployed and run end to end.

The corpus is other people's code and is not committed: rebuild it under corpus/ace with
tests/importers/ace_corpus.py; without it this test is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flowbroker.importers.ace import Workspace, import_workspace
from flowbroker.runtime.harness import get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(300)
CORPUS = Path(__file__).parents[2] / "corpus" / "ace"

#: (workspace, flow, input queue, message, output queue, what the output must hold, in order)
SAMPLE = [
    ("asharkhan11__IIB_Backup", "MF_V_MQ", "Q1", b"as it came", "Q2", [b"as it came"]),
    (
        "anilnayak0110__IIB_Practice",
        "coma.nilnayak.esb.rcdflow",
        "ESB.IN",
        b"<a>1</a>",
        "ESB.OUTPUT",
        [b"<a>1</a>"],
    ),
    (
        "anilnayak0110__IIB_Practice",
        "com.anilnayak.esb.InputBody",
        "ESB.INPUT",
        b"<employees><employee><name>Ann</name></employee></employees>",
        "ESB.OUTPUT",
        [b"<Employees>", b"<Data>333</Data>", b"<name>Ann</name>"],
    ),
    (
        "code2blog__tool-iib",
        "code2blog.helloworld_v1_app.SortArray_MF",
        "SORT.IN",
        b"<electronics><product><brand>Zeta</brand><type>tv</type><cost>20</cost></product>"
        b"<product><brand>Alpha</brand><type>tv</type><cost>10</cost></product></electronics>",
        "SORT.OUT",
        [b"<brand>Alpha</brand>", b"<brand>Zeta</brand>"],
    ),
]


def _documents() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for workspace in sorted({row[0] for row in SAMPLE}):
        converted = import_workspace(Workspace.from_dirs([CORPUS / workspace]))
        reports = {f.name: f for f in converted.report.flows}
        for document in converted.documents:
            if any(row[0] == workspace and row[1] == document["name"] for row in SAMPLE):
                assert reports[document["name"]].problems == [], reports[document["name"]].problems
                found[document["name"]] = document
    return found


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the ACE corpus is not fetched (corpus/ace)")
def test_a_sample_of_public_flows_deploys_and_moves_messages(platform) -> None:
    documents = _documents()
    assert sorted(documents) == sorted(row[1] for row in SAMPLE)
    with platform.qm.client() as qm:
        for queue in sorted({q for row in SAMPLE for q in (row[2], row[4])}):
            qm.define_queue(queue)
    with WorkerProcess(platform.data):
        for document in documents.values():
            created = platform.request(
                "POST", "/api/deployments", json={"document": document, "group": "default"}
            )
            assert created.status_code == 202, created.text
            deployed = platform.wait_status(created.json()["id"], {"running", "failed"})
            assert deployed["status"] == "running", deployed
        for _, flow, queue_in, message, queue_out, wanted in SAMPLE:
            with platform.qm.client() as qm:
                qm.put(queue_in, message)
                (out,) = get_all(qm, queue_out, 1, wait=30)
            body = bytes(out.body)
            at = [body.find(piece) for piece in wanted]
            assert -1 not in at and at == sorted(at), (flow, body)
