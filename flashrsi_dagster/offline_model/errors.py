"""The one error a simulated request can end with: an HTTP status and a message."""

from __future__ import annotations


class SimulatorError(Exception):
    """A request the offline model simulator answers with an HTTP error instead of a reply.

    Raised by request parsing (400), model lookup (404), scripts (exhausted: 400; scripted
    `error:`) and fault injection (429, 500); each dialect renders it in its own error format.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
