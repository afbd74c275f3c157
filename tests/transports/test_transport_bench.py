"""`flowbroker bench transport` moves every message through the passthrough flow on each transport (no timing asserted)."""

from __future__ import annotations

import argparse

import pytest
from flowbroker_bench.core import scenarios

pytestmark = [pytest.mark.timeout(180)]


def test_the_transport_scenario_drains_every_message_on_each_transport(rabbitmq_url: str) -> None:
    scenario = scenarios()["transport"]
    parser = argparse.ArgumentParser()
    assert scenario.add_arguments is not None
    scenario.add_arguments(parser)
    rows = scenario.run(parser.parse_args(["--messages", "120", "--size", "256", "--amqp-url", rabbitmq_url]))
    assert [row["transport"] for row in rows] == [
        "embedded queue manager",
        "RabbitMQ quorum queues",
        "RabbitMQ classic queues",
    ]
    for row in rows:
        assert row["messages"] == 120 and row["Msgs/Sec"] > 0, row
