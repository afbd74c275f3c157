"""Peers side by side: the MQTT transport alone, Node-RED 4 and our flows on scenarios A and B.

Each engine runs pinned to one core (``--engine-core``, default 1) while the load generator and a
private Mosquitto share the other (``--load-core``, default 0); rates are sustainable rates found
by an open-loop ramp (:mod:`flowbroker_bench.mst`) unless ``--closed-loop N`` asks for N in flight.
RabbitMQ's transport rows are the queue manager's ``qm-vs-rabbitmq`` scenario, measured there
with the same pinning so the two sit in one table.
"""

from __future__ import annotations

import argparse

from flowbroker_bench.core import Row, Scenario


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds discarded before each window")
    parser.add_argument("--window", type=float, default=20.0, help="measured seconds per step")
    parser.add_argument("--start-rate", type=float, default=2000.0, help="first paced rate (msgs/s)")
    parser.add_argument("--factor", type=float, default=1.5, help="ratio between ramp steps")
    parser.add_argument("--max-rate", type=float, default=200_000.0, help="highest rate tried")
    parser.add_argument("--refine", type=int, default=2, help="bisection steps after the first failure")
    parser.add_argument(
        "--closed-loop",
        type=int,
        default=0,
        metavar="N",
        help="instead of the ramp, keep N messages in flight (closed loop, labelled so)",
    )
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)
    parser.add_argument("--steps", action="store_true", help="print every ramp step, not just the result")


def _add_nodered(parser: argparse.ArgumentParser) -> None:
    _add_common(parser)
    parser.add_argument("--scenario", dest="workload", choices=("A", "B", "both"), default="both")
    parser.add_argument(
        "--scratch",
        default="/tmp/flowbroker-peers",
        help="where node-red@4 is installed with npm (outside the repository)",
    )


def run_transport(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench.peers.runner import transport_rows

    return transport_rows(args)


def run_nodered(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench.peers.runner import nodered_rows

    return nodered_rows(args)


def _add_ours(parser: argparse.ArgumentParser) -> None:
    _add_common(parser)
    parser.add_argument("--scenario", dest="workload", choices=("A", "B", "both"), default="both")
    parser.add_argument("--instances", type=int, default=1, help="flow threads (1 + additionalInstances)")


def run_ours(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench.peers.runner import flowbroker_rows

    return flowbroker_rows(args)


SCENARIOS = {
    "peers-mqtt-transport": Scenario(
        "peers-mqtt-transport",
        "Mosquitto alone, publish -> subscribe with the lean MQTT driver (checks the driver is not the bottleneck)",
        run_transport,
        _add_common,
        tags=("peers", "mqtt"),
    ),
    "peers-nodered": Scenario(
        "peers-nodered",
        "Node-RED 4 on scenario A (1 KB JSON set a field) and B (2 KB XML order -> invoice) through MQTT",
        run_nodered,
        _add_nodered,
        tags=("peers", "mqtt"),
    ),
    "peers-flowbroker": Scenario(
        "peers-flowbroker",
        "our side of scenarios A and B: MQTTSubscribe -> Compute (ESQL) -> MQTTPublish through the same Mosquitto",
        run_ours,
        _add_ours,
        tags=("peers", "mqtt"),
    ),
}
