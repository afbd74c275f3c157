"""The file batch example (examples/flows/file_order_batch.json): CWF records in, one XML message each out."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from flowbroker.formats.importing import merge
from flowbroker.runtime.harness import get_all

pytestmark = pytest.mark.timeout(60)
FLOWS = Path(__file__).resolve().parents[2] / "examples" / "flows"
EXAMPLE = FLOWS / "file_order_batch.json"
COPYBOOK = FLOWS / "msgsets" / "ORDERLINE.cpy"
QUEUE = "ORDERS.LINES"


def _line(order: str, customer: int, item: str, quantity: str, cents: int) -> bytes:
    return f"{order:<8}{customer:06d}{item:<10}{quantity}{cents:07d}".encode()


def _xml(
    order: str, customer: int, item: str, quantity: int, price: str, total: str, file: str, n: int
) -> bytes:
    return (
        f"<orderLine><orderId>{order}</orderId><customerId>{customer}</customerId><item>{item}</item>"
        f"<quantity>{quantity}</quantity><unitPrice>{price}</unitPrice><lineTotal>{total}</lineTotal>"
        f"<source><file>{file}</file><record>{n}</record></source></orderLine>"
    ).encode()


def _wait_for(path: Path, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not path.exists():
        time.sleep(0.05)
    return path.exists()


@pytest.fixture(scope="module")
def order_set() -> dict:
    """Message set ORDERS as `flowbroker msgset import` makes it from the committed copybook."""
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "msgset",
            "import",
            str(COPYBOOK),
            "--copybook",
            "--set",
            "ORDERS",
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    return merge(None, json.loads(made.stdout))


def test_each_record_of_a_batch_file_becomes_an_xml_message_and_a_bad_record_backs_the_file_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qm, group, order_set: dict
) -> None:
    root = tmp_path / "files"
    inbox = root / "orders" / "in"
    inbox.mkdir(parents=True)
    monkeypatch.setenv("FLOWBROKER_FILE_ROOTS", str(root))
    qm.define_queue(QUEUE, replace=True)
    qm.purge(QUEUE)
    good = (
        _line("A0000001", 42, "WIDGET", "0003", 1250)
        + b"\n"
        + _line("A0000002", 7, "GADGET", "0010", 399)
        + b"\n"
    )
    (inbox / "monday.dat").write_bytes(good)
    (inbox / "notes.txt").write_bytes(b"not a batch file")
    dependencies = {"messageSets": [{"name": "ORDERS", "version": 1, "document": order_set}]}
    group.deploy(json.loads(EXAMPLE.read_text()), dependencies=dependencies)

    assert [m.body for m in get_all(qm, QUEUE, 2, wait=20)] == [
        _xml("A0000001", 42, "WIDGET", 3, "12.50", "37.50", "monday.dat", 1),
        _xml("A0000002", 7, "GADGET", 10, "3.99", "39.90", "monday.dat", 2),
    ]
    assert _wait_for(inbox / "mqsiarchive" / "monday.dat")
    assert (inbox / "mqsiarchive" / "monday.dat").read_bytes() == good
    assert (inbox / "notes.txt").exists()

    # the second record's quantity is not a number: the first goes out, the file is kept whole in backout
    bad = _line("B0000001", 5, "BOLT", "0100", 5) + b"\n" + _line("B0000002", 5, "NUT", "01X0", 4) + b"\n"
    bad += _line("B0000003", 5, "WASHER", "0200", 2) + b"\n"
    (inbox / "tuesday.dat").write_bytes(bad)
    assert [m.body for m in get_all(qm, QUEUE, 1, wait=20)] == [
        _xml("B0000001", 5, "BOLT", 100, "0.05", "5.00", "tuesday.dat", 1)
    ]
    assert _wait_for(inbox / "mqsibackout" / "tuesday.dat")
    assert (inbox / "mqsibackout" / "tuesday.dat").read_bytes() == bad
    assert not (inbox / "tuesday.dat").exists() and not (inbox / "mqsiarchive" / "tuesday.dat").exists()
    assert qm.get(QUEUE, wait=0.5) is None  # nothing after the bad record, and no third message
    assert group.statistics()["OrderBatch"]["errors"] >= 1
