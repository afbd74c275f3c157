"""`flowbroker bench profile`: every message goes through the real flow thread, and its CPU is split by stage."""

from __future__ import annotations

import json
import os

import pytest
from flowbroker.cli import main
from flowbroker_bench import profile


def test_library_time_goes_to_the_stages_of_its_callers() -> None:
    # pstats' shape: function -> (primitive calls, calls, self s, cumulative s, {caller: figures})
    fill = ("/x/flowbroker/formats/json.py", 133, "fill")
    data = ("/x/flowbroker/formats/json.py", 80, "_data")
    helper = ("/usr/lib/python3.11/copy.py", 1, "deepcopy")  # library code between the two
    loads = ("~", 0, "<orjson.loads>")
    lone = ("~", 0, "<built-in method posix.getpid>")  # nobody's: no callers recorded
    stats = {
        fill: (1, 1, 0.1, 0.4, {}),
        data: (1, 1, 0.2, 1.5, {}),
        helper: (2, 2, 0.4, 0.6, {data: (2, 2, 0.4, 0.6)}),
        loads: (4, 4, 1.2, 1.2, {fill: (1, 1, 0.3, 0.3), helper: (1, 1, 0.2, 0.2), data: (2, 2, 0.7, 0.7)}),
        lone: (1, 1, 0.05, 0.05, {}),
    }
    seconds = profile.breakdown(stats)
    assert seconds["parse"] == pytest.approx(0.1 + 0.3)
    assert seconds["serialize"] == pytest.approx(0.2 + 0.4 + 0.2 + 0.7)
    assert seconds["other"] == pytest.approx(0.05)
    assert sum(seconds.values()) == pytest.approx(1.95)
    assert set(seconds) == set(profile.STAGES)


def test_the_rabbitmq_transports_functions_have_their_stages() -> None:
    transport = "/s/backend/flowbroker/runtime/transports/amqp.py"
    assert profile.stage_of(transport, "get_many") == "receive"
    assert (
        profile.stage_of("/s/backend/flowbroker/runtime/transports/amqp_codec.py", "data_received")
        == "receive"
    )
    # the commit publishes the held puts: their marshalling is sending, the rest of it committing
    assert profile.stage_of(transport, "_publish_frames") == "send"
    assert profile.stage_of(transport, "_frames") == "send"
    assert profile.stage_of(transport, "publish_held") == "commit"
    assert profile.stage_of(transport, "commit_and_get") == "commit + next get"
    assert profile.stage_of(transport, "put") == "send"
    # an untouched message put again, its properties packed in one pass
    assert profile.stage_of(transport, "put_relayed") == "send"
    assert profile.stage_of(transport, "encode_properties") == "send"
    assert profile.stage_of(transport, "_field") == "send"


def test_stage_rules() -> None:
    assert profile.stage_of("~", "<built-in method time.thread_time_ns>") == "statistics"
    assert (
        profile.stage_of("/s/backend/flowbroker/runtime/engine.py", "commit_and_prefetch")
        == "commit + next get"
    )
    assert profile.stage_of("/s/esql-parser/esql/tree.py", "child") == "tree"
    assert profile.stage_of("<esql:compute.esql>", "f_SetStatus__Main") == "ESQL"
    assert profile.stage_of("/s/backend/flowbroker/formats/json.py", "fill") == "parse"
    # the XML writer is serialize, the XML reader parse
    assert profile.stage_of("/s/backend/flowbroker/formats/xmlcore.py", "_element") == "serialize"
    assert profile.stage_of("/s/backend/flowbroker/formats/xmlcore.py", "text_of") == "serialize"
    assert profile.stage_of("/s/backend/flowbroker/formats/xmlcore.py", "parse") == "parse"
    assert profile.stage_of("/s/backend/flowbroker/formats/xmlnsc.py", "_build") == "parse"
    assert profile.stage_of("/s/backend/flowbroker/formats/assembly.py", "to_body") == "serialize"
    assert profile.stage_of("/s/backend/flowbroker/runtime/engine.py", "message_body") == "send"
    assert profile.stage_of("/s/backend/flowbroker/qm/client.py", "_call") is None
    assert profile.stage_of("~", "<method 'recv_into' of '_socket.socket' objects>") is None


@pytest.mark.timeout(180)
def test_profile_runs_the_flow_and_prints_every_stage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "profile", "--messages", "200", "--node-by-node", "--format", "json"]) == 0
    assert "FLOWBROKER_STRAIGHT_RUNS" not in os.environ  # set for the measurement only
    rows = {row["stage"]: row for row in json.loads(capsys.readouterr().out)}
    assert "errors" not in rows
    for stage in ("receive", "parse", "tree", "ESQL", "serialize", "send", "statistics"):
        assert rows[stage]["CPU-us/msg"] > 0, stage
    shares = [row["share (%)"] for row in rows.values() if row["stage"] in profile.STAGES]
    assert sum(shares) == pytest.approx(100, abs=1)
    # the server's CPU is read from /proc in clock ticks: a 200-message pass may take less than one
    assert rows["queue manager process"]["CPU-us/msg"] >= 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("argv", "stages", "absent"),
    [
        # the flow runs straight: the body is parsed, edited and written, with no message tree
        ([], ("receive", "parse", "ESQL", "serialize", "send", "statistics"), ("tree",)),
        # nothing reads the message: no body parse, no ESQL, no serialising beyond the relay check
        (["--flow", "passthrough"], ("receive", "send"), ("ESQL",)),
        (["--flow", "scenario-b", "--messages", "100"], ("parse", "ESQL", "serialize", "send"), ()),
        (["--case", "filter"], ("parse", "ESQL", "send"), ()),
    ],
)
def test_profile_of_other_flows(
    capsys: pytest.CaptureFixture[str], argv: list[str], stages: tuple[str, ...], absent: tuple[str, ...]
) -> None:
    assert main(["bench", "profile", "--messages", "200", *argv, "--format", "json"]) == 0
    rows = {row["stage"]: row for row in json.loads(capsys.readouterr().out)}
    assert "errors" not in rows
    for stage in stages:
        assert rows[stage]["CPU-us/msg"] > 0, stage
    for stage in absent:
        assert stage not in rows, stage


def test_profile_refuses_a_case_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "profile", "--case", "no-such-case"]) != 0
    assert "--case no-such-case: no such Appendix B case" in capsys.readouterr().err
    assert main(["bench", "profile", "--case", "publication"]) != 0
    assert "only a one-group point-to-point case" in capsys.readouterr().err


def test_stage_rules_of_the_relay() -> None:
    assert profile.stage_of("/s/backend/flowbroker/runtime/engine.py", "_relay_put") == "send"
    assert profile.stage_of("/s/backend/flowbroker/runtime/engine.py", "_relay_fields") == "send"
    assert profile.stage_of("/s/backend/flowbroker/qm/protocol.py", "relay_encoding") == "send"
    assert profile.stage_of("/s/backend/flowbroker/formats/assembly.py", "relay_of") == "serialize"


@pytest.mark.mqtt
@pytest.mark.timeout(180)
def test_profile_of_scenario_a_through_mqtt(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "bench",
        "profile",
        "--transport",
        "mqtt",
        "--seconds",
        "1",
        "--in-flight",
        "20",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    rows = {row["stage"]: row for row in json.loads(capsys.readouterr().out)}
    assert "errors" not in rows
    for stage in ("receive", "parse", "ESQL", "serialize", "send"):
        assert rows[stage]["CPU-us/msg"] > 0, stage
    assert rows["msgs/s (flow thread, plain run)"]["CPU-us/msg"] > 0
    assert rows["Mosquitto (private)"]["CPU-us/msg"] >= 0


@pytest.mark.mqtt
@pytest.mark.timeout(180)
def test_profile_of_scenario_b_through_mqtt(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "profile", "--transport", "mqtt", "--scenario", "B", "--seconds", "1"]
    assert main([*argv, "--in-flight", "20", "--format", "json"]) == 0
    rows = {row["stage"]: row for row in json.loads(capsys.readouterr().out)}
    # the end of a pass may interrupt the invoice's WHILE loop: that one message counts as an
    # error of the Compute node and of the input node
    assert rows.get("errors", {"CPU-us/msg": 0})["CPU-us/msg"] <= 2
    for stage in ("receive", "parse", "tree", "ESQL", "serialize", "send"):
        assert rows[stage]["CPU-us/msg"] > 0, stage
    # an invoice of 20 lines costs more than scenario A's one field, in ESQL and in serialize
    assert rows["ESQL"]["CPU-us/msg"] > rows["send"]["CPU-us/msg"]
    assert rows["msgs/s (flow thread, plain run)"]["CPU-us/msg"] > 0
