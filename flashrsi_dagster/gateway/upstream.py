"""Calls to the real endpoints: the client's credentials out, the real key in, and a small
keep-alive pool of `http.client` connections per origin (https for real endpoints)."""

from __future__ import annotations

import contextlib
import http.client
import re
import select
import socket
import ssl
import threading
from collections.abc import Iterable
from email.message import Message

from flashrsi_dagster.gateway.deadlines import Deadlines, Watch, shut
from flashrsi_dagster.gateway.grants import Upstream

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# The client's credentials, and headers that would let a run choose whose bill it lands on.
CREDENTIALS = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "openai-organization", "openai-project"}
)
# Set by http.client or by the gateway itself (bodies go upstream uncompressed, to be metered).
REWRITTEN = frozenset({"host", "content-length", "accept-encoding", "expect"})
ANTHROPIC_VERSION = "2023-06-01"
OAUTH_BETA = "oauth-2025-04-20"
"""The beta Anthropic's API asks of a request authenticated by a Claude login's token."""

MAX_HEADER = 4096
"""Bytes of one relayed answer header (name and value); a longer one is dropped."""
MAX_HEADERS = 8192
"""Bytes of all relayed answer headers; past them the rest are dropped. Node's HTTP client
(Claude Code's) refuses a whole head over 16 KB, and an endpoint's oversized header would
otherwise fail the agent's call after the gateway counted it answered."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_FOLD = re.compile(r"\r?\n[ \t]+")

# Broken on first use, a reused keep-alive connection had been closed by the upstream while
# idle: the request never reached it, so it is sent once more on a fresh connection.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)

Origin = tuple[str, str, int]


def request_headers(incoming: Message, upstream: Upstream) -> list[tuple[str, str]]:
    dropped = HOP_BY_HOP | CREDENTIALS | REWRITTEN | _connection_tokens(incoming)
    headers = [(name, value) for name, value in incoming.items() if name.lower() not in dropped]
    if upstream.key is not None and upstream.oauth:
        headers.append(("Authorization", f"Bearer {upstream.key}"))
        betas = [v.strip() for v in incoming.get("anthropic-beta", "").split(",") if v.strip()]
        headers = [(n, v) for n, v in headers if n.lower() != "anthropic-beta"]
        headers.append(("anthropic-beta", ",".join(dict.fromkeys([*betas, OAUTH_BETA]))))
    elif upstream.key is not None:
        if upstream.api == "anthropic":
            headers.append(("x-api-key", upstream.key))
        else:
            headers.append(("Authorization", f"Bearer {upstream.key}"))
    if upstream.api == "anthropic" and incoming.get("anthropic-version") is None:
        headers.append(("anthropic-version", ANTHROPIC_VERSION))
    return headers


def response_headers(response: http.client.HTTPResponse) -> list[tuple[str, str]]:
    """The answer's headers a client may see: end-to-end ones, well formed (a header name
    that is a token, a value without control characters: a NUL makes a client drop the
    connection), within `MAX_HEADER` each and `MAX_HEADERS` together, Content-Type first."""
    dropped = HOP_BY_HOP | {"content-length", "set-cookie"} | _connection_tokens(response.msg)
    headers = sorted(response.getheaders(), key=lambda h: h[0].lower() != "content-type")
    kept, size = [], 0
    for name, value in headers:
        value = _FOLD.sub(" ", value).strip()
        if name.lower() in dropped or not _TOKEN.fullmatch(name) or _CONTROL.search(value):
            continue
        length = len(name) + len(value) + 4
        if length <= MAX_HEADER and size + length <= MAX_HEADERS:
            kept.append((name, value))
            size += length
    return kept


def _connection_tokens(headers: Message) -> frozenset[str]:
    """Headers named in `Connection:` are hop-by-hop too (RFC 9110, 7.6.1)."""
    values: Iterable[str] = headers.get_all("connection") or ()
    return frozenset(t.strip().lower() for v in values for t in v.split(",") if t.strip())


class Pool:
    """Idle keep-alive connections per origin, and the busy ones (so `close` can cut them,
    and so can their exchange's deadline)."""

    def __init__(self, per_origin: int = 8) -> None:
        self._per_origin = per_origin
        self._idle: dict[Origin, list[http.client.HTTPConnection]] = {}
        self._busy: dict[http.client.HTTPConnection, Origin] = {}
        self._watches: dict[http.client.HTTPConnection, Watch] = {}
        self._deadlines = Deadlines()
        self._lock = threading.Lock()
        self._closed = False
        self._tls = ssl.create_default_context()

    def send(
        self, upstream: Upstream, method: str, target: str, headers: list[tuple[str, str]],
        body: bytes,
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:  # fmt: skip
        """Send one request; the caller reads the response, then `release`s the connection.
        The whole exchange, to the answer's last byte, has `upstream.timeout` seconds: past
        them its socket is shut and `expired(conn)` is true (raised here as TimeoutError)."""
        watch = self._deadlines.watch(upstream.timeout, self._expire)
        while True:
            conn, reused = self._acquire(upstream, watch)
            try:
                conn.putrequest(method, target)  # adds Host and Accept-Encoding: identity
                for name, value in headers:
                    conn.putheader(name, value)
                if body or method not in ("GET", "HEAD"):
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body or None)
                return conn, conn.getresponse()
            except BaseException as exc:
                self._discard(conn)
                retry = reused and isinstance(exc, _STALE) and not watch.expired
                if retry:
                    continue
                expired = self._deadlines.cancel(watch)
                if expired and isinstance(exc, OSError | http.client.HTTPException):
                    raise TimeoutError("the exchange's deadline passed") from exc
                raise

    def expired(self, conn: http.client.HTTPConnection) -> bool:
        """Whether the exchange on `conn` ran past its deadline (and was cut)."""
        with self._lock:
            watch = self._watches.get(conn)
        return watch is not None and watch.expired

    def release(self, conn: http.client.HTTPConnection, *, reusable: bool) -> None:
        with self._lock:
            watch = self._watches.pop(conn, None)
        late = watch is not None and self._deadlines.cancel(watch)
        # Bytes waiting on an idle connection are no answer to anything: an endpoint that sent
        # more than its Content-Length, or closed it. The next call must not read them.
        reusable = reusable and not late and _quiet(conn)
        with self._lock:
            origin = self._busy.pop(conn, None)
            idle = self._idle.setdefault(origin, []) if origin else []
            if reusable and origin and not self._closed and len(idle) < self._per_origin:
                idle.append(conn)
                return
        conn.close()

    def _discard(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._watches.pop(conn, None)
            self._busy.pop(conn, None)
        conn.close()

    def _expire(self, watch: Watch) -> None:
        with self._lock:
            conns = [c for c, w in self._watches.items() if w is watch]
        for conn in conns:
            shut(conn.sock)

    def close(self) -> None:
        """Close idle connections; shut busy ones, so that calls blocked on them end now."""
        with self._lock:
            self._closed = True
            idle = [c for conns in self._idle.values() for c in conns]
            busy = list(self._busy)
            self._idle.clear()
        self._deadlines.close()
        for conn in idle:
            conn.close()
        for conn in busy:
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)

    def _acquire(self, upstream: Upstream, watch: Watch) -> tuple[http.client.HTTPConnection, bool]:
        scheme, host, port = upstream.origin
        timeout = max(watch.remaining(), 0.001)  # a connect or a plain hang ends by itself
        with self._lock:
            if self._closed:
                raise ConnectionAbortedError("the gateway is closing")
            idle = self._idle.get(upstream.origin)
            conn = idle.pop() if idle else None
            if conn is None:
                if scheme == "https":
                    conn = http.client.HTTPSConnection(
                        host, port, timeout=timeout, context=self._tls
                    )
                else:
                    conn = http.client.HTTPConnection(host, port, timeout=timeout)
            self._busy[conn] = upstream.origin
            self._watches[conn] = watch
        reused = conn.sock is not None
        conn.timeout = timeout
        if reused:
            conn.sock.settimeout(timeout)
        return conn, reused


def _quiet(conn: http.client.HTTPConnection) -> bool:
    """Nothing to read on the connection (no stray bytes, no close)."""
    sock = conn.sock
    if sock is None:
        return False
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return False
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)
