"""`Gateway`: the one way out of a jail to a model. It holds the real keys and hands each run a
token worth nothing elsewhere; it forwards OpenAI Chat / Responses and Anthropic Messages
(streaming too), meters tokens and cost per run and role, and enforces caps.

Threads: one accept thread watches every listener (the gateway's own on host loopback, and
each one handed over by `serve`); every accepted connection is served by a thread of its own
(HTTP/1.1 keep-alive), which makes its upstream call with a pooled `http.client` connection.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from flashrsi_dagster.gateway.accounts import Accounts
from flashrsi_dagster.gateway.errors import GatewayError, error_body
from flashrsi_dagster.gateway.grants import (
    Caps,
    Grant,
    Upstream,
    WebAccess,
    digest,
    new_token,
    token_id,
)
from flashrsi_dagster.gateway.handler import Context, Handler
from flashrsi_dagster.gateway.listeners import Acceptor, Connection, Listener
from flashrsi_dagster.gateway.log import CallLog
from flashrsi_dagster.gateway.metering import RunUsage, Usage
from flashrsi_dagster.gateway.proxy import Proxy
from flashrsi_dagster.gateway.upstream import Pool
from flashrsi_dagster.records.redaction import Redactor

logger = logging.getLogger("flashrsi.gateway")

MAX_BODY_BYTES = 32 << 20
"""Bytes of a request from an agent (a larger one is refused, 413)."""
MAX_ANSWER_BYTES = 8 << 20
"""Bytes of a whole answer from an endpoint: a model's longest output is well under 1 MiB."""
MAX_STREAM_BYTES = 64 << 20
"""Bytes of a streamed answer, all events together (SSE repeats its envelope per token)."""
_BUSY_BODY = error_body("openai", "overloaded_error", "gateway: too many connections here")
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)
_JOIN_SECONDS = 2.0


class Gateway:
    """Use as a context manager, or `start()` / `close()`. See the module docstring."""

    def __init__(
        self,
        *,
        log_path: Path | None = None,
        redactor: Redactor | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_connections: int = 64,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        max_stream_bytes: int = MAX_STREAM_BYTES,
        idle_timeout: float = 60.0,
    ) -> None:
        """`max_connections`: served at once per listener; `idle_timeout`: seconds a client
        connection may sit idle (or trickle a request) before it is closed; the byte bounds:
        see `MAX_BODY_BYTES`, `MAX_ANSWER_BYTES`, `MAX_STREAM_BYTES` (an answer over its
        bound is the endpoint's fault)."""
        self._address = (host, port)
        self._max_connections = max_connections
        self._idle_timeout = idle_timeout
        # An experiment's log: its roles' spending so far, and that of every gateway writing
        # it meanwhile, counts against their caps.
        self._log = CallLog(log_path, redactor)
        self._accounts = Accounts(self._log)
        self._pool = Pool()
        self._proxy = Proxy(
            self._accounts, self._pool, self._log, max_body_bytes, max_answer_bytes,
            max_stream_bytes,
        )  # fmt: skip
        self._acceptor = Acceptor(self._on_accept)
        self._listeners: dict[socket.socket, Listener] = {}
        self._url: str | None = None
        self._lock = threading.Lock()
        self._state = "new"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        if self._state != "new":
            raise GatewayError(f"the gateway cannot start: it is {self._state}")
        own = socket.create_server(self._address, backlog=128)
        host, port = own.getsockname()[:2]
        self._url = f"http://{host}:{port}"
        self._watch(own, binding=None)
        self._acceptor.start()
        self._state = "running"
        logger.info("gateway listening on %s", self.url)
        return self

    def close(self) -> None:
        """Close every listener (own and served) and every connection; cut calls in flight."""
        with self._lock:
            if self._state == "closed":
                return
            self._state = "closed"
            listeners = list(self._listeners.values())
            self._listeners.clear()
        self._acceptor.close()
        connections = []
        for listener in listeners:
            listener.closed = True
            listener.sock.close()
            connections += list(listener.connections)
        for connection in connections:
            connection.cut()
        self._pool.close()
        deadline = time.monotonic() + _JOIN_SECONDS
        for connection in connections:
            if connection.thread is not None:
                connection.thread.join(max(0.0, deadline - time.monotonic()))
        self._log.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`: the root of the host-loopback listener (OpenAI clients
        append `/v1`)."""
        if self._url is None:
            raise GatewayError("the gateway is not started")
        return self._url

    # -- runs ------------------------------------------------------------------------------

    def set_caps(self, experiment: str, role: str, caps: Caps) -> None:
        self._accounts.set_caps(experiment, role, caps)

    def grant(
        self, *, experiment: str, role: str, run_id: str, upstream: Upstream,
        max_calls: int | None = None, web: WebAccess | None = None,
        deny_tools: frozenset[str] = frozenset(), output_limit: int | None = None,
        candidate: str | None = None,
    ) -> str:  # fmt: skip
        """A fresh token for one run; its calls go to `upstream` with the real key. At most
        `max_calls` model calls are answered (None: no count limit); with `web`, the run may
        fetch pages through `/v1/web/fetch`; a model call offering a tool of `deny_tools` is
        refused; tool results past `output_limit` characters are cut (`clipping.py`); every
        call-log line of the run names `candidate`, the host's name for what it works on."""
        if max_calls is not None and max_calls < 0:
            raise GatewayError(f"grant: max_calls must not be negative, got {max_calls}")
        if output_limit is not None and output_limit <= 0:
            raise GatewayError(f"grant: output_limit must be positive, got {output_limit}")
        token = new_token()
        token_digest = digest(token)
        grant = Grant(
            experiment, role, run_id, upstream, token_id(token_digest), max_calls, web,
            frozenset(deny_tools), output_limit, candidate,
        )  # fmt: skip
        self._accounts.add(token_digest, grant)
        self._log.add_key(upstream.key)
        return token

    def revoke(self, token: str) -> RunUsage:
        """The token is refused from now on; returns what its run used. Calls in flight are
        let finish (and still counted in `usage`); revoking twice returns the usage again."""
        return self._accounts.revoke(digest(token))

    def settle(self, token: str, within: float) -> RunUsage:
        """What a revoked token's run used once its calls in flight have ended, waiting at
        most `within` seconds (each call ends by its upstream's deadline): whether such a call
        was the endpoint's fault (it timed out, or failed) or abandoned by its run (answered
        after the run ended) is known only then."""
        return self._accounts.settle(digest(token), within)

    def usage(
        self, *, experiment: str | None = None, role: str | None = None, run_id: str | None = None
    ) -> Usage:
        """Totals over the runs matching every filter given (all runs without one)."""
        return self._accounts.totals(experiment, role, run_id)

    # -- listeners -------------------------------------------------------------------------

    def serve(self, listener: socket.socket, *, token: str | None = None) -> None:
        """Serve an already-listening stream socket (TCP, e.g. one made in a jail's network
        namespace, or Unix); returns at once. The gateway owns it from now on. With `token`,
        it accepts that token only: a token carried from one jail to another is refused there."""
        if self._state != "running":
            raise GatewayError(f"serve: the gateway is {self._state}, not running")
        if listener.type != socket.SOCK_STREAM or not listener.getsockopt(
            socket.SOL_SOCKET, socket.SO_ACCEPTCONN
        ):
            raise GatewayError("serve: the socket is not a listening stream socket")
        with self._lock:
            if listener in self._listeners:
                raise GatewayError("serve: this socket is already served")
        self._watch(listener, binding=None if token is None else digest(token))

    def unserve(self, listener: socket.socket) -> None:
        """Stop accepting on `listener` and close it. Requests in progress on its connections
        finish; idle connections are closed, busy ones after their request. A socket not
        served (or no longer) is just closed."""
        with self._lock:
            served = self._listeners.pop(listener, None)
        if served is None:
            listener.close()
            return
        self._acceptor.remove(served)
        with self._lock:
            served.closed = True
            connections = list(served.connections)
        served.sock.close()
        for connection in connections:
            connection.drain()

    # -- connections -----------------------------------------------------------------------

    def _watch(self, sock: socket.socket, binding: str | None) -> Listener:
        listener = Listener(sock, binding, self._max_connections)
        with self._lock:
            self._listeners[sock] = listener
        self._acceptor.add(listener)
        return listener

    def _on_accept(self, listener: Listener, sock: socket.socket, address: object) -> None:
        """On the accept thread: refuse or start the connection's thread, never block."""
        connection = Connection(sock)
        with self._lock:
            admitted = not listener.closed and len(listener.connections) < listener.limit
            if admitted:
                listener.connections.add(connection)
        if not admitted:
            with contextlib.suppress(OSError):
                sock.setblocking(False)
                sock.send(_BUSY)
            sock.close()
            return
        connection.thread = threading.Thread(
            target=self._serve_connection,
            args=(listener, connection, address),
            name="gateway-connection",
            daemon=True,
        )
        connection.thread.start()

    def _serve_connection(self, listener: Listener, connection: Connection, address) -> None:
        context = Context(self._proxy, listener, connection, self._idle_timeout)
        try:
            Handler(connection.sock, address, context)
        except Exception as exc:  # one connection's failure never reaches another
            logger.debug("gateway: connection ended: %s: %s", type(exc).__name__, exc)
        finally:
            with contextlib.suppress(OSError):
                connection.sock.close()
            with self._lock:
                listener.connections.discard(connection)
