"""The example flows added for seed 004 Appendix B §7.6, §7.7 and §7.13 produce what their rows rely on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import Message
from flowbroker.runtime.harness import FlowHarness, get_all
from flowbroker.services.deploy import apply_overrides
from flowbroker_bench import appendix_b, bodies, convert
from flowbroker_bench.flow import EXAMPLES

pytestmark = pytest.mark.timeout(120)

NEW_CASES = ["neon-formatter-equivalent", "neon-rules-equivalent", "convert-xml-xml", "fields-50"]


@pytest.fixture(scope="module")
def qm_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(tmp_path_factory.mktemp("qm"), fsync=False) as qm:
        with qm.client() as client:
            for case in appendix_b.select(NEW_CASES):
                client.define_queue(case.in_queue, replace=True)
                client.define_queue(case.out_queue, replace=True)
        yield qm


def _run(
    qm_process: QueueManagerProcess, key: str, size: int, overrides: dict[str, str] | None = None
) -> Message:
    (case,) = appendix_b.select([key])
    document = json.loads((EXAMPLES / case.flow_file).read_text())
    document, _ = apply_overrides(document, overrides or {})
    harness = FlowHarness(document, connect=qm_process.client)
    body, md_fields = case.body(size, 42)
    domain = document["nodes"][0]["properties"].get("messageDomain", "BLOB")
    harness.inject("in", harness.root_for(body, domain, md_fields), transactional=True)
    harness.close()
    with qm_process.client() as client:
        (out,) = get_all(client, case.out_queue, 1, wait=5)
    return out  # type: ignore[no-any-return]


@pytest.mark.parametrize("size", [1024, 65536])
def test_fifty_field_message_has_fifty_fields_at_its_size(size: int) -> None:
    body, _ = bodies.fifty_fields(size, 42)
    assert len(body) == size
    assert re.findall(rb"<(F\d\d)>", body) == [f"F{i:02d}".encode() for i in range(1, 51)]
    assert f"<F{bodies.RULE_FIELD}>{bodies.RULE_VALUE}</F".encode() in body


def test_formatter_equivalent_writes_every_field_in_its_new_format(qm_process: QueueManagerProcess) -> None:
    out = _run(qm_process, "neon-formatter-equivalent", 1024).body.decode()
    assert len(re.findall(r"<Field\d\d>", out)) == 50
    assert "<Field01>T01" in out and "<Field37>[V037]</Field37>" in out
    assert re.search(r"<Field05>\d+</Field05>", out)


def test_rules_equivalent_fires_exactly_one_of_its_hundred_rules(qm_process: QueueManagerProcess) -> None:
    out = _run(qm_process, "neon-rules-equivalent", 4096).body
    assert b"<Rule>rule 37</Rule><RulesFired>1</RulesFired>" in out


def test_simple_compute_reads_the_fifty_field_message(qm_process: QueueManagerProcess) -> None:
    out = _run(qm_process, "fields-50", 1024).body
    assert out.count(b"<F") == 50 and b"<Processed>yes</Processed>" in out


@pytest.mark.parametrize("source", convert.FORMATS)
@pytest.mark.parametrize("target", convert.FORMATS)
def test_conversion_flow_converts_with_each_rows_esql(
    qm_process: QueueManagerProcess, source: str, target: str
) -> None:
    """In-process, with the set installed here: what a group given the message set answers."""
    from flowbroker.formats import load_all
    from flowbroker.formats.mrm import CATALOG

    load_all()
    CATALOG.install(convert.SET_NAME, convert.message_set())
    key = f"convert-{convert.TABLE_NAMES[source]}-{convert.TABLE_NAMES[target]}"
    (case,) = appendix_b.select([key])
    for size in (4096, 65536):
        assert case.overrides is not None
        out = _run(qm_process, key, size, case.overrides(size))
        assert case.check is not None
        case.check(b"", out.body, size)
