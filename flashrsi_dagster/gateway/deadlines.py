"""`Deadlines`: one thread that ends upstream exchanges past their total deadline.

A socket timeout bounds each read, and an endpoint that trickles a byte now and then defeats
it; shutting the socket down at the deadline ends the exchange wherever it blocks
(connecting, sending, reading the head or the body), and its reader sees `expired`.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable


class Watch:
    """One exchange's deadline; `expired` once it has passed with the exchange still on."""

    def __init__(self, deadline: float, on_expiry: Callable[[Watch], None]) -> None:
        self.deadline = deadline
        self.expired = False
        self.cancelled = False
        self._on_expiry = on_expiry

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class Deadlines:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, seconds: float, on_expiry: Callable[[Watch], None]) -> Watch:
        """Call `on_expiry(watch)` in `seconds` unless the watch is `cancel`led first."""
        watch = Watch(time.monotonic() + seconds, on_expiry)
        with self._wake:
            heapq.heappush(self._heap, (watch.deadline, next(self._order), watch))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gateway-deadlines", daemon=True
                )
                self._thread.start()
            self._wake.notify()
        return watch

    def cancel(self, watch: Watch) -> bool:
        """Whether the deadline had passed (from now on, `on_expiry` is never called)."""
        with self._wake:
            watch.cancelled = True
            return watch.expired

    def close(self) -> None:
        """Stop the thread (the pool's connections are being closed anyway)."""
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                if self._closed:
                    return
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                wait = self._heap[0][0] - time.monotonic() if self._heap else None
                if wait is None or wait > 0:
                    self._wake.wait(wait)
                    continue
                watch = heapq.heappop(self._heap)[2]
                watch.expired = True
            with contextlib.suppress(Exception):  # the connection may be closing meanwhile
                watch._on_expiry(watch)


def shut(sock: socket.socket | None) -> None:
    """End every read and write blocked on `sock` (its owner closes it)."""
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
