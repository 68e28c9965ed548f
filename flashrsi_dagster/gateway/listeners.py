"""Listening sockets, the gateway's own and those handed to it (one per jail), all watched by
one accept thread; each accepted connection then gets a thread of its own."""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger("flashrsi.gateway")

# Accepted in one go per listener before the others get a turn.
_ACCEPT_BURST = 32
# Out of file descriptors, a listener stays readable: pause instead of spinning.
_EMFILE_PAUSE = 0.05


@dataclass(eq=False)
class Connection:
    """One client connection: busy while a request is being served; draining once its
    listener is unserved (the request in progress finishes, no further one is read)."""

    sock: socket.socket
    thread: threading.Thread | None = None
    busy: bool = False
    draining: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def begin(self) -> bool:
        with self._lock:
            self.busy = not self.draining
            return self.busy

    def end(self) -> bool:
        """The request is done; True when the connection may read another one."""
        with self._lock:
            self.busy = False
            return not self.draining

    def drain(self) -> None:
        with self._lock:
            self.draining = True
            idle = not self.busy
        if idle:  # blocked reading the next request: wake it with an end of stream
            self.cut()

    def cut(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


@dataclass(eq=False)
class Listener:
    """A listening socket and the connections accepted on it."""

    sock: socket.socket
    binding: str | None
    """The digest of the only token this listener accepts (one jail, one run), or None."""
    limit: int
    """Connections served at once; more are answered 503 so one jail cannot starve another."""
    connections: set[Connection] = field(default_factory=set)
    closed: bool = False


class Acceptor:
    """The accept thread. Listeners are added and removed through a queue it reads after a
    wake-up byte, so the selector is only ever touched by its own thread."""

    def __init__(self, on_accept: Callable[[Listener, socket.socket, object], None]) -> None:
        self._on_accept = on_accept
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._commands: list[tuple[str, Listener | None, threading.Event]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="gateway-accept", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, listener: Listener) -> None:
        listener.sock.setblocking(False)
        self._command("add", listener)

    def remove(self, listener: Listener) -> None:
        """Returns once the accept thread no longer watches the listener."""
        self._command("remove", listener)

    def close(self) -> None:
        if self._thread.is_alive():
            self._command("stop", None)
            self._thread.join(2.0)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _command(self, op: str, listener: Listener | None) -> None:
        done = threading.Event()
        with self._lock:
            self._commands.append((op, listener, done))
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            done.wait(2.0)

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select():
                if key.data is not None:
                    self._accept(key.data)
                elif self._apply():
                    return

    def _apply(self) -> bool:
        """Run the queued commands; True on stop."""
        with contextlib.suppress(OSError):
            self._wake_r.recv(4096)
        with self._lock:
            commands, self._commands = self._commands, []
        stop = False
        for op, listener, done in commands:
            if op == "add" and listener is not None:
                self._register(listener)
            elif op == "remove" and listener is not None:
                self._unregister(listener)
            stop = stop or op == "stop"
            done.set()
        return stop

    def _register(self, listener: Listener) -> None:
        try:
            fd = listener.sock.fileno()
            with contextlib.suppress(KeyError):  # a listener closed unserved left its fd here
                self._selector.unregister(fd)
            self._selector.register(fd, selectors.EVENT_READ, listener)
        except (OSError, ValueError) as exc:
            logger.warning("gateway: cannot watch listener %r: %s", listener.sock, exc)

    def _unregister(self, listener: Listener) -> None:
        # By the key's own fd: the socket may be closed already (fileno() -1).
        for key in list(self._selector.get_map().values()):
            if key.data is listener:
                self._selector.unregister(key.fd)

    def _accept(self, listener: Listener) -> None:
        for _ in range(_ACCEPT_BURST):
            try:
                sock, address = listener.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                logger.warning("gateway: accept failed: %s", exc)
                time.sleep(_EMFILE_PAUSE)
                return
            try:
                self._on_accept(listener, sock, address)
            except Exception:  # the accept thread must outlive any one connection
                logger.exception("gateway: could not start serving a connection")
                sock.close()
