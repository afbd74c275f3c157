"""Subcommands of the `flowbroker` command, one module per area; each exposes ``register``."""

from __future__ import annotations


class CommandError(Exception):
    """A user error: printed as one line ``flowbroker: error: …`` with exit status 1."""

    def __init__(self, message: str, status: int = 1, detail: object = None) -> None:
        super().__init__(message)
        self.status = status
        #: The error body's ``detail`` of a refused API request (e.g. a 422's problems).
        self.detail = detail
