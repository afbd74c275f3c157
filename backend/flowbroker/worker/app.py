"""The Celery application shared by the configuration manager (sender) and the execution groups (workers).

Embedded default: kombu's filesystem transport under ``<data>/celery`` — no server to run. Scale
out: set ``FLOWBROKER_CELERY_BROKER`` to an AMQP URL (RabbitMQ). Control tasks go to the queue
``eg.<broker>.<group>`` of the group they address; on a network broker, to the fanout exchange
``eg.<broker>.<group>.all`` instead, so every replica of a scaled-out group gets each of them.
"""

from __future__ import annotations

import json
import os
import time
from functools import cache
from pathlib import Path
from typing import Any

from celery import Celery


def data_dir() -> Path:
    return Path(os.environ.get("FLOWBROKER_DATA") or "./var").resolve()


def broker_url() -> str:
    return os.environ.get("FLOWBROKER_CELERY_BROKER", "") or "filesystem://"


def transport_options(url: str, data: Path) -> dict[str, Any]:
    if not url.startswith("filesystem"):
        return {}
    folder = data / "celery" / "queue"
    processed = data / "celery" / "processed"
    control = data / "celery" / "control"
    for path in (folder, processed, control):
        path.mkdir(parents=True, exist_ok=True)
    # one folder for in and out: senders and workers share the same spool of task files; the
    # exchange tables (broadcast control) stay in the data directory, not the working directory
    return {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(processed),
        "control_folder": str(control),
        "store_processed": False,
    }


def celery_app(data: Path | None = None) -> Celery:
    """The Celery app for the data directory ``data`` (default: FLOWBROKER_DATA) and the configured broker."""
    return _app(broker_url(), str((data or data_dir()).resolve()))


@cache
def _app(url: str, data: str) -> Celery:
    app = Celery("flowbroker", broker=url, include=["flowbroker.worker.tasks"])
    app.conf.update(
        broker_transport_options=transport_options(url, Path(data)),
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=5,
        task_ignore_result=True,
        task_acks_late=False,
        task_serializer="json",
        accept_content=["json"],
        worker_hijack_root_logger=False,
        worker_prefetch_multiplier=1,
        worker_send_task_events=False,
        task_default_queue="flowbroker.default",
        broker_heartbeat=0,
    )
    return app


def declare_control_queue(queue: str, data: Path | None = None) -> None:
    """Write the filesystem transport's exchange table of ``queue`` before kombu first needs it.

    kombu creates a missing table by opening it for writing, which truncates, and only then
    locks it, so a sender or worker in another process can read it empty and fail with a JSON
    error, or truncate what the other just wrote. Written here whole under a temporary name and
    linked into place (never over an existing table), the table is never seen empty, and kombu
    only ever updates it under its lock. Every process calls this before it sends to or
    consumes from the queue.
    """
    if not broker_url().startswith("filesystem"):
        return
    control = (data or data_dir()).resolve() / "celery" / "control"
    table = control / f"{queue}.exchange"
    if table.exists():
        return
    control.mkdir(parents=True, exist_ok=True)
    tmp = control / f".{queue}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    tmp.write_text(json.dumps([[queue, "", queue]]))
    try:
        os.link(tmp, table)
    except FileExistsError:
        pass  # another process wrote it first: theirs holds the same binding
    finally:
        tmp.unlink(missing_ok=True)


#: Celery brokers whose transport has fanout exchanges reaching every replica over the network.
_BROADCAST_SCHEMES = ("amqp", "amqps", "pyamqp", "redis", "rediss")


def broadcasts(url: str | None = None) -> bool:
    """Whether control tasks are broadcast to every replica of a group (a network Celery broker).

    The filesystem spool serves one machine, where a group runs as one process: its control
    tasks stay on the group's queue.
    """
    scheme = (url if url is not None else broker_url()).split("://", 1)[0].split("+", 1)[0].lower()
    return scheme in _BROADCAST_SCHEMES


def broadcast_exchange(queue: str) -> Any:
    """The fanout exchange every replica of the group behind ``queue`` binds a queue of its own to."""
    from kombu import Exchange

    return Exchange(f"{queue}.all", type="fanout", durable=True)


def replica_queue(queue: str, replica: str) -> Any:
    """The replica's own queue on the group's fanout exchange: deleted with its connection, so a
    replica that was away finds nothing stale (it re-reads its deployments instead)."""
    from kombu.common import Broadcast

    exchange = broadcast_exchange(queue)
    return Broadcast(
        exchange.name,
        queue=f"{exchange.name}.{replica}",
        exchange=exchange,
        durable=False,
        exclusive=True,
        auto_delete=True,
    )


def send_control_task(name: str, queue: str, args: list[Any] | None = None, data: Path | None = None) -> None:
    """Send a control task to a group (no result is awaited): to every replica through the group's
    fanout exchange on a network Celery broker, else to the group's queue."""
    app = celery_app(data)
    if broadcasts():
        exchange = broadcast_exchange(queue)
        # a fanout exchange ignores the routing key; Celery needs one to leave the exchange alone
        app.send_task(
            name,
            args=args or [],
            exchange=exchange.name,
            exchange_type="fanout",
            routing_key="all",
            declare=[exchange],
        )
        return
    declare_control_queue(queue, data)
    app.send_task(name, args=args or [], queue=queue)
