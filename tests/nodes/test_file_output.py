"""FileOutput: whole files and appended records finished by Finish File, confined to the file roots."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from esql.tree import Element
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import Unwinding

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    allowed = tmp_path / "root"
    (allowed / "out").mkdir(parents=True)
    monkeypatch.setenv("FLOWBROKER_FILE_ROOTS", str(allowed))
    return allowed


def writer(**props: object) -> FlowHarness:
    return FlowHarness(
        flow(
            {"in": ("MQInput", {"queueName": "UNUSED"}), "w": ("FileOutput", {"fileName": "a.txt", **props})},
            ["in.out -> w"],
        )
    )


def destination(**fields: str) -> Element:
    env = Element("LocalEnvironment")
    file = env.add("Destination").add("File")
    for key, value in fields.items():
        file.add(key, value)
    return env


def test_whole_file_is_written_then_replaced(root: Path) -> None:
    h = writer(directory="out")
    h.inject("w", b"first")
    h.inject("w", b"second")
    assert (root / "out" / "a.txt").read_bytes() == b"second"
    actions = [
        a.local_environment.child("WrittenDestination").child("File").child("Action").value
        for a in h.seen("w", "out")
    ]
    assert actions == ["Create", "Replace"]
    assert list((root / "out" / "mqsitransit").iterdir()) == []


def test_archive_moves_the_existing_file_away(root: Path) -> None:
    h = writer(directory=str(root / "out"), outputFileAction="archive")
    h.inject("w", b"old")
    h.inject("w", b"new")
    assert (root / "out" / "a.txt").read_bytes() == b"new"
    (archived,) = (root / "out" / "mqsiarchive").iterdir()
    assert archived.name.endswith("_a.txt") and archived.read_bytes() == b"old"


def test_fail_action_refuses_an_existing_file(root: Path) -> None:
    (root / "out" / "a.txt").write_bytes(b"keep")
    h = writer(directory="out", outputFileAction="fail")
    with pytest.raises(Unwinding) as info:
        h.inject("w", b"new")
    assert "already exists" in str(info.value)
    assert (root / "out" / "a.txt").read_bytes() == b"keep"
    assert list((root / "out" / "mqsitransit").iterdir()) == []


def test_records_are_appended_in_transit_until_finish_file(root: Path) -> None:
    h = writer(directory="out", recordDefinition="unmodifiedData")
    h.inject("w", b"one\n")
    h.inject("w", b"two\n")
    assert not (root / "out" / "a.txt").exists()
    assert (root / "out" / "mqsitransit" / "a.txt").read_bytes() == b"one\ntwo\n"
    h.inject("w", b"", terminal="finish")
    assert (root / "out" / "a.txt").read_bytes() == b"one\ntwo\n"
    assert not (root / "out" / "mqsitransit" / "a.txt").exists()
    (end,) = h.seen("w", "endOfData")
    assert end.local_environment.child("WrittenDestination").child("File").child("Action").value == "Create"
    assert len(h.seen("w", "out")) == 2


def test_wildcard_takes_the_input_files_match(root: Path) -> None:
    h = writer(directory="out", fileName="copy_*.txt")
    env = Element("LocalEnvironment")
    env.add("Wildcard").add("WildcardMatch", "0042")
    h.inject("w", b"x", local_environment=env)
    assert (root / "out" / "copy_0042.txt").read_bytes() == b"x"


@pytest.mark.parametrize("name", ["../a.txt", "x/../../a.txt", "/etc/a.txt", "..", "mqsitransit"])
def test_unsafe_file_names_are_refused_at_deploy(root: Path, name: str) -> None:
    with pytest.raises(FlowCompileError) as info:
        writer(directory="out", fileName=name)
    assert info.value.problems[0].property == "fileName"


@pytest.mark.parametrize("name", ["../../escaped.txt", "../escaped.txt", "a/b.txt", "*"])
def test_unsafe_names_from_the_local_environment_go_to_failure(root: Path, name: str) -> None:
    h = writer(directory="out")
    failures = h.tap("w", "failure")
    h.inject("w", b"hostile", local_environment=destination(Name=name))
    (failed,) = failures.seen
    assert "unsafe file name" in failed.exception_list.first_child.child("Text").value
    assert not (root / "escaped.txt").exists() and not (root.parent / "escaped.txt").exists()


@pytest.mark.parametrize("directory", ["../outside", "/tmp", "out/../../outside", "linked"])
def test_directories_outside_the_roots_are_refused(root: Path, directory: str) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (root / "linked").symlink_to(outside)
    h = writer(directory="out")
    failures = h.tap("w", "failure")
    h.inject("w", b"hostile", local_environment=destination(Directory=directory))
    (failed,) = failures.seen
    assert "outside the file roots" in failed.exception_list.first_child.child("Text").value
    assert list(outside.iterdir()) == []


def test_missing_directory_is_a_failure(root: Path) -> None:
    h = writer(directory="nowhere")
    failures = h.tap("w", "failure")
    h.inject("w", b"x")
    (failed,) = failures.seen
    assert "does not exist" in failed.exception_list.first_child.child("Text").value
    assert not (root / "nowhere").exists()


def test_a_link_planted_in_transit_is_not_followed(root: Path) -> None:
    victim = root.parent / "victim.txt"
    victim.write_bytes(b"untouched")
    transit = root / "out" / "mqsitransit"
    transit.mkdir()
    (transit / "a.txt").symlink_to(victim)
    h = writer(directory="out", recordDefinition="unmodifiedData")
    failures = h.tap("w", "failure")
    h.inject("w", b"appended")
    assert len(failures.seen) == 1
    assert victim.read_bytes() == b"untouched"


def test_a_deployed_flow_writes_each_message(root: Path, qm, queues, group) -> None:
    src = queues("IN")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "w": (
                "FileOutput",
                {"directory": "out", "fileName": "log.txt", "recordDefinition": "unmodifiedData"},
            ),
        },
        ["in.out -> w"],
        name="FileWriter",
    )
    group.deploy(doc)
    for text in (b"a;", b"b;"):
        qm.put(src, text)
    staged = root / "out" / "mqsitransit" / "log.txt"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (staged.exists() and os.path.getsize(staged) == 4):
        time.sleep(0.05)
    assert staged.read_bytes() == b"a;b;"


def test_a_directory_in_the_way_is_a_failure_that_leaves_nothing_in_transit(root: Path) -> None:
    (root / "out" / "a.txt").mkdir()
    h = writer(directory="out")
    failures = h.tap("w", "failure")
    h.inject("w", b"x")
    (failed,) = failures.seen
    assert "cannot move the file into place" in failed.exception_list.first_child.child("Text").value
    assert list((root / "out" / "mqsitransit").iterdir()) == []


def test_an_empty_file_name_takes_the_local_environments_or_goes_to_failure(root: Path) -> None:
    # ACE flows leave the name empty and set LocalEnvironment.Destination.File.Name in ESQL
    h = writer(directory="out", fileName="")
    h.inject("w", b"named", local_environment=destination(Name="given.txt"))
    assert (root / "out" / "given.txt").read_bytes() == b"named"
    failures = h.tap("w", "failure")
    h.inject("w", b"nameless")
    (failed,) = failures.seen
    assert (
        "no file name: the node's fileName is empty" in failed.exception_list.first_child.child("Text").value
    )
    assert sorted(p.name for p in (root / "out").iterdir()) == ["given.txt", "mqsitransit"]
