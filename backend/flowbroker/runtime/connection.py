"""The queue manager's flow-thread connection, now one transport of :mod:`flowbroker.runtime.transports`."""

from flowbroker.runtime.transports.qm import QueueConnection

__all__ = ["QueueConnection"]
