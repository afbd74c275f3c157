"""A deployed flow whose Compute node runs away: the message takes the failure path, the next one flows."""

from __future__ import annotations

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.compiler import compile_flow
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(120)

RUNAWAY = """CREATE COMPUTE MODULE Runaway
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE s CHARACTER 'ab';
    IF InputRoot.XMLNSC.m = 'spin' THEN
      WHILE TRUE DO END WHILE;
    END IF;
    IF InputRoot.XMLNSC.m = 'grow' THEN
      WHILE TRUE DO SET s = s || s; END WHILE;
    END IF;
    SET OutputRoot = InputRoot;
    RETURN TRUE;
  END;
END MODULE;
"""


def _doc(src: str, dst: str, failed: str, name: str, **input_props: object) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", **input_props}),
            "loop": ("Compute", {"esql": RUNAWAY}),
            "out": ("MQOutput", {"queueName": dst}),
            "f": ("MQOutput", {"queueName": failed}),
        },
        ["in.out -> loop", "loop.out -> out", "in.failure -> f"],
        name=name,
        esqlCpuLimitMs=300,
        esqlMemoryLimitBytes=1 << 20,
    )


def test_runaway_compute_routes_to_failure_and_the_flow_keeps_processing(qm, queues, group) -> None:
    src, dst, failed = queues("IN"), queues("OUT"), queues("FAILED")
    group.deploy(_doc(src, dst, failed, "RunawayFlow", backoutThreshold=2, readAhead=1))
    persistent = MessageDescriptor(persistence=1)
    for body in (b"<m>spin</m>", b"<m>ok1</m>", b"<m>grow</m>", b"<m>ok2</m>"):
        qm.put(src, body, persistent)
    got = get_all(qm, dst, 2)
    assert sorted(m.body for m in got) == [b"<m>ok1</m>", b"<m>ok2</m>"]
    failures = get_all(qm, failed, 2)
    assert sorted(m.body for m in failures) == [b"<m>grow</m>", b"<m>spin</m>"]
    assert qm.get(src) is None


def test_non_transactional_runaway_is_dead_lettered_with_the_budget_in_its_reason(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    qm.purge("SYSTEM.DEAD.LETTER.QUEUE")
    doc = _doc(src, dst, queues("FAILED"), "RunawayDlq", transactionMode="no")
    doc["connections"] = [c for c in doc["connections"] if c["from"]["terminal"] != "failure"]
    group.deploy(doc)
    qm.put(src, b"<m>spin</m>")
    qm.put(src, b"<m>grow</m>")
    qm.put(src, b"<m>ok</m>")
    assert [m.body for m in get_all(qm, dst, 1)] == [b"<m>ok</m>"]
    dead = get_all(qm, "SYSTEM.DEAD.LETTER.QUEUE", 2)
    reasons = {m.body: m.properties["flowbroker.reason"] for m in dead}
    assert reasons[b"<m>spin</m>"].endswith(
        "line 6, column 7: ESQL in node 'loop' exceeded its CPU budget of 300 ms"
    ), reasons
    assert (
        "line 9, column 21: ESQL in node 'loop' exceeded its memory budget of 1048576 bytes: "
        in (reasons[b"<m>grow</m>"])
    ), reasons


def test_flow_limits_default_to_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = flow({"in": ("MQInput", {"queueName": "Q"})}, [])
    compiled = compile_flow(doc)
    assert (compiled.esql_cpu_limit_ms, compiled.esql_memory_limit_bytes) == (5000, 64 * 1024 * 1024)
    monkeypatch.setenv("FLOWBROKER_ESQL_CPU_LIMIT_MS", "250")
    monkeypatch.setenv("FLOWBROKER_ESQL_MEMORY_LIMIT_BYTES", "0")
    compiled = compile_flow(doc)
    assert (compiled.esql_cpu_limit_ms, compiled.esql_memory_limit_bytes) == (250, 0)
    doc["properties"] = {"esqlCpuLimitMs": 0, "esqlMemoryLimitBytes": 1 << 20}
    compiled = compile_flow(doc)
    assert (compiled.esql_cpu_limit_ms, compiled.esql_memory_limit_bytes) == (0, 1 << 20)
