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


def test_groups_of_their_own_share_the_input_queue_on_rabbitmq(rabbitmq_url: str) -> None:
    scenario = scenarios()["transport"]
    parser = argparse.ArgumentParser()
    assert scenario.add_arguments is not None
    scenario.add_arguments(parser)
    options = ["--messages", "60", "--size", "512", "--amqp-url", rabbitmq_url, "--transport", "quorum"]
    rows = scenario.run(parser.parse_args([*options, "--case", "simple", "--groups", "2"]))
    assert [(row["flow"], row["groups"], row["messages"]) for row in rows] == [("simple", 2, 60)]
    assert rows[0]["Msgs/Sec"] > 0 and rows[0]["CPU-ms/msg"] > 0
