"""Worker bootsteps: the execution group's runtime, its statistics publisher, and a liveness file."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from celery import bootsteps

from flowbroker.pubsub import rules
from flowbroker.worker import group as group_state
from flowbroker.worker import heap

log = logging.getLogger("flowbroker.worker")


class ResumeStep(bootsteps.StartStopStep):
    """Resumes the group's deployed flows (control tasks wait until it has); stops them on shutdown."""

    requires = ("celery.worker.components:Pool",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)

    def start(self, worker: Any) -> None:
        state = group_state.state()

        def resume() -> None:
            state.resume()
            log.info(
                "execution group %s/%s resumed %d flow(s)",
                state.broker,
                state.group,
                len(state.by_deployment),
            )

        threading.Thread(target=resume, name="resume", daemon=True).start()

    def stop(self, worker: Any) -> None:
        group_state.state().close()


class ResyncStep(bootsteps.StartStopStep):
    """Each time the consumer (re)connects to the Celery broker, re-read the group's deployments.

    Control tasks are broadcast to the replicas connected when they are sent; a replica that
    was disconnected (or was binding its queue while the resume read the repository) catches up
    from the repository here, after the resume on start has finished.
    """

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)

    def start(self, parent: Any) -> None:
        state = group_state.state()

        def resync() -> None:
            state.ready.wait()
            try:
                done = state.resync()
            except Exception as exc:  # the next reconnect tries again; the group keeps running
                log.warning(
                    "execution group %s/%s: cannot re-read its deployments: %s",
                    state.broker,
                    state.group,
                    exc,
                )
                return
            if done:
                log.info("execution group %s/%s caught up: %s", state.broker, state.group, ", ".join(done))

        threading.Thread(target=resync, name="resync", daemon=True).start()


class StatisticsStep(bootsteps.StartStopStep):
    """Publishes the group's statistics every ``FLOWBROKER_STATS_INTERVAL`` seconds (default 5), with
    which flows wait for an input queue that does not exist (:meth:`GroupState.report_waiting`), and
    settles the heap every ``FLOWBROKER_HEAP_SETTLE_INTERVAL`` (:mod:`flowbroker.worker.heap`)."""

    requires = ("flowbroker.worker.bootsteps:ResumeStep",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.interval = float(os.environ.get("FLOWBROKER_STATS_INTERVAL", "5"))
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, worker: Any) -> None:
        def loop() -> None:
            state = group_state.state()
            every = heap.interval()
            settled = time.monotonic()
            while True:
                try:
                    state.publish_statistics()
                except Exception as exc:  # statistics must never take the group down
                    log.warning("cannot publish statistics: %s", exc)
                try:
                    state.report_waiting()
                except Exception as exc:  # nor must a status report that could not be written
                    log.warning("cannot report waiting flows: %s", exc)
                if every and time.monotonic() - settled >= every:
                    heap.settle()
                    settled = time.monotonic()
                if self.done.wait(self.interval):
                    return

        self.thread = threading.Thread(target=loop, name="statistics", daemon=True)
        self.thread.start()

    def stop(self, worker: Any) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join(5)
        try:
            group_state.state().publish_statistics()
        except Exception:
            pass


class LivenessStep(bootsteps.StartStopStep):
    """Touches ``<data>/run/<broker>.<group>.alive`` every few seconds for health checks, and the
    group's report in the repository for a configuration manager on another host."""

    requires = ("flowbroker.worker.bootsteps:ResumeStep",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.done = threading.Event()

    def start(self, worker: Any) -> None:
        state = group_state.state()
        path = liveness_path(state.data, state.broker, state.group)
        path.parent.mkdir(parents=True, exist_ok=True)

        def loop() -> None:
            while not self.done.is_set():
                path.write_text(str(os.getpid()))
                try:
                    state.report_alive()
                except Exception as exc:  # an unreachable repository must not take the group down
                    log.warning("cannot report the group alive: %s", exc)
                if time.monotonic() - state.pubsub_read >= rules.refresh_interval():
                    try:
                        state.refresh_pubsub()
                    except Exception as exc:  # the rules read last stay in force meanwhile
                        log.warning("cannot read the topic ACLs: %s", exc)
                self.done.wait(min(2.0, rules.refresh_interval()))

        threading.Thread(target=loop, name="liveness", daemon=True).start()

    def stop(self, worker: Any) -> None:
        self.done.set()


def liveness_path(data: Path, broker: str, group: str) -> Path:
    return data / "run" / f"{broker}.{group}.alive"
