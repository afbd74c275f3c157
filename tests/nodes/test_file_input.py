"""FileInput: polling a confined directory, whole files and records, archive / delete / backout, hostile files."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from flowbroker.formats.copybook import source_text
from flowbroker.formats.importing import import_layout, merge
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow, get_all
from flowbroker.services import validation

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    allowed = tmp_path / "root"
    (allowed / "in").mkdir(parents=True)
    (allowed / "out").mkdir()
    monkeypatch.setenv("FLOWBROKER_FILE_ROOTS", str(allowed))
    return allowed


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def reader_flow(dst: str, name: str, **props: object) -> dict:
    return flow(
        {
            "f": ("FileInput", {"directory": "in", "filePattern": "*.txt", "pollingInterval": 50, **props}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["f.out -> o"],
        name=name,
    )


def test_each_whole_file_becomes_a_message_and_is_archived(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    (root / "in" / "a.txt").write_bytes(b"first file")
    (root / "in" / "skip.dat").write_bytes(b"not matched")
    group.deploy(reader_flow(dst, "FileWhole"))
    assert [m.body for m in get_all(qm, dst, 1)] == [b"first file"]
    (root / "in" / "b.txt").write_bytes(b"second file")
    assert [m.body for m in get_all(qm, dst, 1)] == [b"second file"]
    assert wait_for(lambda: (root / "in" / "mqsiarchive" / "b.txt").exists())
    assert (root / "in" / "mqsiarchive" / "a.txt").read_bytes() == b"first file"
    assert (root / "in" / "skip.dat").exists()
    assert not (root / "in" / "a.txt").exists()


def test_records_by_line_and_delete_on_success(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    (root / "in" / "lines.txt").write_bytes(b"one\r\ntwo\nthree")
    group.deploy(reader_flow(dst, "FileLines", recordDetection="delimited", actionOnSuccess="delete"))
    assert [m.body for m in get_all(qm, dst, 3)] == [b"one", b"two", b"three"]
    assert wait_for(lambda: not any((root / "in" / "mqsitransit").iterdir()))
    assert not (root / "in" / "mqsiarchive").exists() or not any((root / "in" / "mqsiarchive").iterdir())


def test_a_failing_record_backs_out_the_file_after_committing_the_ones_before(
    root: Path, qm, queues, group
) -> None:
    dst = queues("OUT")
    (root / "in" / "mixed.txt").write_bytes(b"ok1\nbad\nok3\n")
    doc = flow(
        {
            "f": ("FileInput", {"directory": "in", "pollingInterval": 50, "recordDetection": "delimited"}),
            "r": (
                "Route",
                {
                    "filterTable": [
                        {"filterPattern": "Root.BLOB.BLOB = X'626164'", "routingOutputTerminal": "bad"}
                    ]
                },
            ),
            "t": ("Throw", {"messageText": "a bad record"}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["f.out -> r", "r.bad -> t", "r.default -> o"],
        name="FileMixed",
    )
    group.deploy(doc)
    assert wait_for(lambda: (root / "in" / "mqsibackout" / "mixed.txt").exists())
    assert [m.body for m in get_all(qm, dst, 2, wait=1.0)] == [b"ok1"]
    assert (root / "in" / "mqsibackout" / "mixed.txt").read_bytes() == b"ok1\nbad\nok3\n"


def test_the_failure_terminal_gets_the_failed_record_with_its_file_and_the_file_goes_on(
    root: Path, qm, queues, group
) -> None:
    good, failed = queues("OUT"), queues("FAILED")
    (root / "in" / "mixed.txt").write_bytes(b"ok1\nbad\nok3\n")
    tag = """SET OutputRoot = InputRoot;
    SET OutputRoot.MQRFH2.usr.File = InputLocalEnvironment.File.Name;
    SET OutputRoot.MQRFH2.usr.Record = InputLocalEnvironment.File.Record;
    SET OutputRoot.MQRFH2.usr.Error = InputExceptionList.*[1].*[<].Text;
    """
    doc = flow(
        {
            "f": ("FileInput", {"directory": "in", "pollingInterval": 50, "recordDetection": "delimited"}),
            "r": (
                "Route",
                {
                    "filterTable": [
                        {"filterPattern": "Root.BLOB.BLOB = X'626164'", "routingOutputTerminal": "bad"}
                    ]
                },
            ),
            "t": ("Throw", {"messageText": "a bad record"}),
            "o": ("MQOutput", {"queueName": good}),
            "tag": ("Compute", {"esql": tag, "computeMode": "All"}),
            "keep": ("MQOutput", {"queueName": failed}),
        },
        ["f.out -> r", "r.bad -> t", "r.default -> o", "f.failure -> tag", "tag.out -> keep"],
        name="FileFailurePath",
    )
    group.deploy(doc)
    assert wait_for(lambda: (root / "in" / "mqsiarchive" / "mixed.txt").exists())
    assert [m.body for m in get_all(qm, good, 2)] == [b"ok1", b"ok3"]
    (kept,) = get_all(qm, failed, 1)
    assert kept.body.endswith(b"bad")
    assert b"<usr><File>mixed.txt</File><Record>2</Record><Error>a bad record</Error></usr>" in kept.body
    assert not (root / "in" / "mqsibackout").exists() or not any((root / "in" / "mqsibackout").iterdir())


def test_wildcard_match_names_the_file_written_back(root: Path, group) -> None:
    (root / "in" / "order_17.txt").write_bytes(b"<order/>")
    doc = flow(
        {
            "f": ("FileInput", {"directory": "in", "filePattern": "order_*.txt", "pollingInterval": 50}),
            "w": ("FileOutput", {"directory": "out", "fileName": "done_*.txt"}),
        },
        ["f.out -> w"],
        name="FileCopy",
    )
    group.deploy(doc)
    assert wait_for(lambda: (root / "out" / "done_17.txt").exists())
    assert (root / "out" / "done_17.txt").read_bytes() == b"<order/>"


def test_links_fifos_and_oversized_files_are_never_read(
    root: Path, qm, queues, group, tmp_path: Path
) -> None:
    dst = queues("OUT")
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    (root / "in" / "link.txt").symlink_to(secret)
    os.mkfifo(root / "in" / "pipe.txt")
    (root / "in" / "big.txt").write_bytes(b"x" * 100)
    (root / "in" / "small.txt").write_bytes(b"fine")
    group.deploy(reader_flow(dst, "FileHostile", maxFileSize=50))
    assert [m.body for m in get_all(qm, dst, 1)] == [b"fine"]
    assert wait_for(lambda: (root / "in" / "mqsibackout" / "big.txt").exists())
    assert get_all(qm, dst, 1, wait=0.5) == []
    assert (root / "in" / "link.txt").is_symlink() and (root / "in" / "pipe.txt").exists()
    assert secret.read_bytes() == b"secret"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_goes_to_backout(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    locked = root / "in" / "locked.txt"
    locked.write_bytes(b"no")
    locked.chmod(0)
    group.deploy(reader_flow(dst, "FileLocked"))
    assert wait_for(lambda: (root / "in" / "mqsibackout" / "locked.txt").exists())
    assert get_all(qm, dst, 1, wait=0.5) == []


def test_a_missing_directory_is_reported_then_polled_once_it_exists(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    doc = reader_flow(dst, "FileLater", directory="later")
    deployed = group.deploy(doc)
    assert wait_for(lambda: any("does not exist" in e for e in deployed.errors))
    (root / "later").mkdir()
    (root / "later" / "x.txt").write_bytes(b"arrived")
    assert [m.body for m in get_all(qm, dst, 1, wait=15)] == [b"arrived"]


@pytest.mark.parametrize("directory", ["../outside", "/etc"])
def test_a_directory_outside_the_roots_is_never_polled(root: Path, qm, queues, group, directory: str) -> None:
    outside = root.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "x.txt").write_bytes(b"outside")
    dst = queues("OUT")
    deployed = group.deploy(reader_flow(dst, "FileOutside", directory=directory))
    assert wait_for(lambda: any("outside the file roots" in e for e in deployed.errors))
    assert get_all(qm, dst, 1, wait=0.3) == []
    assert (outside / "x.txt").exists() and not (outside / "mqsitransit").exists()


def test_files_left_in_transit_are_processed_again(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    (root / "in" / "mqsitransit").mkdir()
    (root / "in" / "mqsitransit" / "interrupted.txt").write_bytes(b"claimed before a crash")
    group.deploy(reader_flow(dst, "FileRecover"))
    assert [m.body for m in get_all(qm, dst, 1)] == [b"claimed before a crash"]
    assert wait_for(lambda: (root / "in" / "mqsiarchive" / "interrupted.txt").exists())


def test_additional_instances_process_each_file_once(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    names = [f"f{i:02}.txt" for i in range(12)]
    for name in names:
        (root / "in" / name).write_bytes(name.encode())
    doc = reader_flow(dst, "FileShared")
    doc["properties"]["additionalInstances"] = 3
    group.deploy(doc)
    got = sorted(m.body for m in get_all(qm, dst, len(names)))
    assert got == sorted(name.encode() for name in names)
    assert get_all(qm, dst, 1, wait=0.5) == []


def test_fixed_length_records_split_by_length_with_the_short_rest_last(root: Path, qm, queues, group) -> None:
    dst = queues("OUT")
    # 3 whole 4-byte records and a 2-byte rest; the line end is data like any other byte
    (root / "in" / "fixed.txt").write_bytes(b"AAAABBBB\nCCCDD")
    tag = """SET OutputRoot = InputRoot;
    SET OutputRoot.MQRFH2.usr.Record = InputLocalEnvironment.File.Record;
    SET OutputRoot.MQRFH2.usr.Offset = InputLocalEnvironment.File.Offset;
    """
    doc = flow(
        {
            "f": (
                "FileInput",
                {
                    "directory": "in",
                    "pollingInterval": 50,
                    "recordDetection": "fixedLength",
                    "recordLength": 4,
                },
            ),
            "tag": ("Compute", {"esql": tag, "computeMode": "All"}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["f.out -> tag", "tag.out -> o"],
        name="FileFixed",
    )
    group.deploy(doc)
    got = get_all(qm, dst, 4)
    records = [b"AAAA", b"BBBB", b"\nCCC", b"DD"]
    assert len(got) == 4 and all(m.body.endswith(r) for m, r in zip(got, records, strict=True))
    assert not got[3].body.endswith(b"CDD")
    places = [m.body.split(b"<usr>")[1].split(b"</usr>")[0] for m in got]
    assert places == [f"<Record>{n + 1}</Record><Offset>{4 * n}</Offset>".encode() for n in range(4)]
    assert wait_for(lambda: (root / "in" / "mqsiarchive" / "fixed.txt").exists())
    assert get_all(qm, dst, 1, wait=0.3) == []


@pytest.mark.parametrize("length", [0, -5, 100 * 1024 * 1024 + 1])
def test_a_record_length_outside_one_byte_to_100_mb_is_refused_naming_it(length: int) -> None:
    doc = reader_flow("FIXED.NEVER", "FileBadLength", recordDetection="fixedLength", recordLength=length)
    with pytest.raises(FlowCompileError) as raised:
        FlowHarness(doc)
    (problem,) = raised.value.problems
    assert (problem.node, problem.property) == ("f", "recordLength")
    expected = "must be at least 1" if length < 1 else "must be at most 104857600"
    assert expected in problem.message
    (found,) = validation.problems(doc)
    assert (found["pointer"], found["message"]) == ("/nodes/0/properties/recordLength", expected)


def test_a_file_still_being_written_is_taken_whole_once_it_settles(
    root: Path, qm, queues, group, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBROKER_FILE_SETTLE_MS", "400")
    dst = queues("OUT")
    group.deploy(reader_flow(dst, "FileSettle"))
    with (root / "in" / "slow.txt").open("wb") as writer:
        writer.write(b"first half, ")
        writer.flush()
        # polled every 50 ms: the half-written file is left alone while it keeps changing
        assert get_all(qm, dst, 1, wait=0.2) == []
        writer.write(b"second half")
    assert [m.body for m in get_all(qm, dst, 1)] == [b"first half, second half"]


@pytest.mark.parametrize("setting", ["-1", "soon", "3600001"])
def test_a_settle_time_that_is_no_whole_millisecond_count_is_refused_on_deploy(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBROKER_FILE_SETTLE_MS", setting)
    with pytest.raises(FlowCompileError) as raised:
        FlowHarness(reader_flow("SETTLE.NEVER", "FileBadSettle"))
    (problem,) = raised.value.problems
    assert problem.node == "f" and "FLOWBROKER_FILE_SETTLE_MS" in problem.message


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flows"


def _order_line(order: str, customer: int, item: str, quantity: int, cents: int) -> bytes:
    """One 35-byte ORDER-LINE record (examples/flows/msgsets/ORDERLINE.cpy)."""
    return f"{order:<8}{customer:06d}{item:<10}{quantity:04d}{cents:07d}".encode()


def test_cwf_records_by_fixed_length_through_a_message_set_and_a_short_last_one_backs_out(
    root: Path, qm, queues, group
) -> None:
    dst = queues("OUT")
    copybook = EXAMPLES / "msgsets" / "ORDERLINE.cpy"
    fragment = import_layout(
        source_text(copybook.read_bytes()), "copybook", "FIXEDORDERS", None, str(copybook)
    )
    dependencies = {"messageSets": [{"name": "FIXEDORDERS", "version": 1, "document": merge(None, fragment)}]}
    example = json.loads((EXAMPLES / "file_order_batch.json").read_text())
    to_xml = next(n for n in example["nodes"] if n["type"] == "Compute")["properties"]["esql"]
    doc = flow(
        {
            "f": (
                "FileInput",
                {
                    "directory": "in",
                    "filePattern": "*.dat",
                    "pollingInterval": 50,
                    "recordDetection": "fixedLength",
                    "recordLength": 35,
                    "messageDomain": "MRM",
                    "messageSet": "FIXEDORDERS",
                    "messageType": "ORDER-LINE",
                    "messageFormat": "CWF",
                },
            ),
            "x": ("Compute", {"esql": to_xml}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["f.out -> x", "x.out -> o"],
        name="FileFixedCwf",
    )
    # no line ends: one record follows the other
    whole = _order_line("A0000001", 42, "WIDGET", 3, 1250) + _order_line("A0000002", 7, "GADGET", 10, 399)
    (root / "in" / "monday.dat").write_bytes(whole)
    group.deploy(doc, dependencies=dependencies)
    got = [m.body for m in get_all(qm, dst, 2)]
    assert b"<orderId>A0000001</orderId>" in got[0] and b"<orderId>A0000002</orderId>" in got[1]
    assert b"<lineTotal>37.50</lineTotal>" in got[0] and b"<record>2</record>" in got[1]
    assert wait_for(lambda: (root / "in" / "mqsiarchive" / "monday.dat").exists())

    # 35 + 35 + 20 bytes: the rest is propagated as a third, short record that the CWF parser refuses
    short = _order_line("B0000001", 5, "BOLT", 100, 5) + _order_line("B0000002", 5, "NUT", 200, 4)
    short += _order_line("B0000003", 5, "WASHER", 300, 2)[:20]
    (root / "in" / "tuesday.dat").write_bytes(short)
    (first, second) = [m.body for m in get_all(qm, dst, 2)]
    assert b"<orderId>B0000001</orderId>" in first and b"<orderId>B0000002</orderId>" in second
    assert wait_for(lambda: (root / "in" / "mqsibackout" / "tuesday.dat").exists())
    assert (root / "in" / "mqsibackout" / "tuesday.dat").read_bytes() == short
    assert get_all(qm, dst, 1, wait=0.5) == []
    assert group.statistics()["FileFixedCwf"]["errors"] >= 1
