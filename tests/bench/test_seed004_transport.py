"""`bench seed004 --transport`: the Appendix B cases through RabbitMQ (127.0.0.1:5672) as well as the queue manager.

On an amqp row the requesters put and get only on RabbitMQ, so a measured row shows the
execution group moved the messages there. The run's queues and exchange carry a stamp of their
own; the windows are fractions of a second: the rows' shape is checked, never their figures.
"""

from __future__ import annotations

import json

import pika
import pytest
from flowbroker.cli import main
from flowbroker_bench import seed004_amqp

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"
SHORT = ["--sizes", "first", "--persistence", "np", "--seconds", "0.3", "--warmup", "0.2", "--clients", "3"]


def _rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, object]]:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.timeout(300)
def test_a_case_runs_on_the_queue_manager_then_on_rabbitmq(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(
        capsys,
        [
            "bench",
            "seed004",
            "--case",
            "passthrough",
            "--case",
            "subscribers-10",
            "--case",
            "routing-content",
            *SHORT,
            "--no-fsync",
            "--transport",
            "qm",
            "--transport",
            "amqp-quorum",
            "--amqp-url",
            AMQP_URL,
            "--format",
            "json",
        ],
    )
    cells = [(r["case"], r["transport"]) for r in rows if r.get("table")]
    qm, rabbit = "embedded queue manager", "RabbitMQ quorum queues"
    assert cells == [
        ("passthrough", qm),
        ("subscribers-10", qm),
        ("routing-content", qm),
        ("passthrough", rabbit),
        ("subscribers-10", rabbit),
        ("routing-content", rabbit),
    ]
    by = {(r["case"], r["transport"]): r for r in rows if r.get("table")}
    for transport in (qm, rabbit):
        assert by[("passthrough", transport)]["Msgs/Sec"] > 0  # type: ignore[operator]
        assert str(by[("subscribers-10", transport)]["fan-out"]).startswith("ok:")
    # the queue manager's CPU is counted; on RabbitMQ the local beam.smp's (none when it runs elsewhere)
    from flowbroker_bench.qm_vs_rabbitmq import rabbit_pid

    assert isinstance(by[("passthrough", qm)]["QM CPU-ms/msg"], float)
    beam = by[("passthrough", rabbit)]["QM CPU-ms/msg"]
    assert isinstance(beam, float) if rabbit_pid() is not None else beam is None
    assert isinstance(by[("passthrough", rabbit)]["EG CPU-ms/msg"], float)
    # content filters are the queue manager's: on RabbitMQ the row says so instead of a figure
    assert by[("routing-content", qm)]["Msgs/Sec"]
    content = by[("routing-content", rabbit)]
    assert content["Msgs/Sec"] is None and "content-filtered" in str(content["note"])
    assert [r["transport"] for r in rows if r["case"] == "idle group RSS"] == [qm, rabbit]


@pytest.mark.timeout(120)
def test_the_run_leaves_nothing_behind_on_rabbitmq(capsys: pytest.CaptureFixture[str]) -> None:
    side = seed004_amqp.RabbitSide(AMQP_URL, "classic")
    queue = side.define("PASSTHROUGH.IN")
    assert queue.startswith("PASSTHROUGH.IN.classic.") and side.exchange.startswith("flowbroker.bench.")
    side.subscribe("seed004/prices", "PUBLISH.SUB")
    side.close()
    conn = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        for declare in (
            lambda ch: ch.queue_declare(queue, passive=True),
            lambda ch: ch.queue_declare(side.queue("PUBLISH.SUB"), passive=True),
            lambda ch: ch.exchange_declare(side.exchange, passive=True),
        ):
            channel = conn.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                declare(channel)
            assert refused.value.reply_code == 404
    finally:
        conn.close()


def test_an_unreachable_rabbitmq_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "seed004", "--case", "passthrough", *SHORT, "--transport", "amqp-classic"]
    assert main([*argv, "--amqp-url", "amqp://guest:guest@127.0.0.1:1/"]) == 1
    err = capsys.readouterr().err
    assert "--amqp-url: RabbitMQ at amqp://guest:***@127.0.0.1:1/ is not reachable" in err, err
    assert "Traceback" not in err
