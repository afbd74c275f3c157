"""`flowbroker worker --broker B --group G`: run one execution group as a Celery worker process."""

from __future__ import annotations

import argparse
import os
import re
import time

from flowbroker.commands import CommandError

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the `flowbroker` parser."""
    worker = sub.add_parser("worker", help="run one execution group (a Celery worker running deployed flows)")
    worker.add_argument("--broker", default="default", help="broker name (default: default)")
    worker.add_argument("--group", default="default", help="execution group name (default: default)")
    worker.add_argument("--data", default=None, help="data directory (default FLOWBROKER_DATA or ./var)")
    worker.add_argument(
        "--celery-broker",
        default=None,
        help="Celery broker URL for control tasks (default FLOWBROKER_CELERY_BROKER, else a file-backed spool in DATA)",
    )
    worker.add_argument("--loglevel", default="INFO")
    worker.add_argument(
        "--startup-timeout",
        type=float,
        default=30.0,
        help="seconds to wait for the config repository and the group's definition (default 30)",
    )
    worker.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    for label, value in (("--broker", args.broker), ("--group", args.group)):
        if not _NAME.match(value):
            raise CommandError(f"{label} {value!r}: use 1-64 letters, digits, . _ -")
    if args.data:
        os.environ["FLOWBROKER_DATA"] = args.data
    if args.celery_broker:
        os.environ["FLOWBROKER_CELERY_BROKER"] = args.celery_broker

    import logging

    from flowbroker.worker import bootsteps
    from flowbroker.worker import group as group_state
    from flowbroker.worker.app import broadcasts, celery_app, data_dir, declare_control_queue, replica_queue

    logging.basicConfig(level=args.loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data = data_dir()
    state = group_state.GroupState(args.broker, args.group, data)
    # started beside the configuration manager, the repository may still be migrating: wait a little
    deadline = time.monotonic() + args.startup_timeout
    while True:
        try:
            state.open()
            break
        except Exception as exc:
            if time.monotonic() >= deadline:
                reason = (str(exc).splitlines() or [""])[0]
                raise CommandError(
                    f"execution group {args.broker}/{args.group}: {type(exc).__name__}: {reason}"
                ) from None
            time.sleep(1.0)
    group_state.set_state(state)
    app = celery_app()
    app.steps["worker"].add(bootsteps.ResumeStep)
    app.steps["worker"].add(bootsteps.StatisticsStep)
    app.steps["worker"].add(bootsteps.LivenessStep)
    from flowbroker.services.deploy import control_queue

    queue = control_queue(args.broker, args.group)
    declare_control_queue(queue, data)
    queues = [queue]
    if broadcasts():
        # every replica gets every control task; one that was away re-reads its deployments
        # (ResyncStep) when it connects again
        own = replica_queue(queue, f"{os.uname().nodename}.{os.getpid()}")
        app.amqp.queues.add(own)
        queues.append(own.name)
        app.steps["consumer"].add(bootsteps.ResyncStep)
    worker = app.Worker(
        # one node name per process: replicas of a group on one host must not share a pidbox
        hostname=f"{args.broker}.{args.group}.{os.getpid()}@{os.uname().nodename}",
        queues=queues,
        pool="solo",
        concurrency=1,
        loglevel=args.loglevel.upper(),
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
    )
    worker.start()
    return int(worker.exitcode or 0)
