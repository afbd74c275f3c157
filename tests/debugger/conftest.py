"""Debugger-test fixtures: a real queue manager process and an execution group runtime in this process."""

from group_fixtures import group, qm, qm_process, queues

__all__ = ["group", "qm", "qm_process", "queues"]
