"""Where a role's requests go: its `base_url`, or the offline model simulator for `offline`."""

from __future__ import annotations

import atexit
import contextlib
import http.client
import socket
import threading
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

from flashrsi_dagster.config.models import LLMConfig

OFFLINE = "offline"
PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"})
"""The environment's proxy settings (any case), which no call of the framework follows: the
gateway connects to each role's `base_url` itself (`http.client`, no proxy), and an agent's
calls go to the gateway on loopback, where a proxy would only take them away (with the run's
token) and fail them. An endpoint reached through a proxy is one whose URL is the proxy's."""


def is_proxy_variable(name: str) -> bool:
    return name.lower() in PROXY_VARIABLES


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx


def direct_opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """urllib as the gateway connects: no proxy from the environment, no redirect followed
    (urllib's own handler sends every header, the key too, to wherever a 3xx points)."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect(), *handlers)


class _Shutter:
    """The sockets an opener's connections open, shut down at once when `expire` is called
    (and any connected after). The socket, not the connection: urllib drops the
    connection's hold on it once the answer's head is read, the body read through it still."""

    def __init__(self) -> None:
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()

    def making(self, cls: type[http.client.HTTPConnection]):
        def make(*args, **kwargs) -> http.client.HTTPConnection:
            conn = cls(*args, **kwargs)
            connect = conn.connect

            def connect_then_check() -> None:
                connect()
                with self._lock:
                    self._socks.append(conn.sock)
                    if self.expired:
                        _shut(conn.sock)

            conn.connect = connect_then_check  # type: ignore[method-assign]
            return conn

        return make

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, shutter: _Shutter) -> None:
        super().__init__()
        self._shutter = shutter

    def http_open(self, req):
        return self.do_open(self._shutter.making(http.client.HTTPConnection), req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, shutter: _Shutter) -> None:
        super().__init__()
        self._shutter = shutter

    def https_open(self, req):
        conn = self._shutter.making(http.client.HTTPSConnection)
        return self.do_open(conn, req, context=self._context)


@contextlib.contextmanager
def opener_within(seconds: float) -> Iterator[tuple[urllib.request.OpenerDirector, _Shutter]]:
    """A `direct_opener` whose exchanges end `seconds` from now, wherever they block: a
    socket timeout bounds each read only, and an endpoint that trickles a byte now and then
    holds a reader for hours. `shutter.expired` tells a cut from the endpoint's own close."""
    shutter = _Shutter()
    timer = threading.Timer(seconds, shutter.expire)
    timer.daemon = True
    timer.start()
    try:
        yield direct_opener(_HTTP(shutter), _HTTPS(shutter)), shutter
    finally:
        timer.cancel()


_lock = threading.Lock()
_server = None


def offline_server(settings=None):
    """The process's shared offline model simulator, started on first use (with `settings`,
    a `ServerConfig`, when given; a running server is shared as it is)."""
    global _server
    with _lock:
        if _server is None:
            from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

            _server = OfflineModelServer(settings or ServerConfig()).__enter__()
        return _server


atexit.register(lambda: stop_offline_server())


def offline_server_running() -> bool:
    return _server is not None


def stop_offline_server() -> None:
    global _server
    with _lock:
        if _server is not None:
            _server.__exit__(None, None, None)
            _server = None


def uses_offline(*roles: LLMConfig) -> bool:
    return any(llm.base_url == OFFLINE for llm in roles)


def openai_base_url(llm: LLMConfig) -> str | None:
    """The OpenAI-style base URL (ending in /v1) for the role, None for the SDK default."""
    return offline_server().url if llm.base_url == OFFLINE else llm.base_url


def anthropic_base_url(llm: LLMConfig) -> str:
    """The Anthropic-style root URL (without /v1, nor the URL's query: `with_path` puts it
    back after a path) for the role."""
    if llm.base_url == OFFLINE:
        return offline_server().root_url
    url = urlsplit(llm.base_url or "https://api.anthropic.com")
    return urlunsplit((url.scheme, url.netloc, url.path.rstrip("/").removesuffix("/v1"), "", ""))


def with_path(base: str, path: str, query_of: str | None = None) -> str:
    """`base` with `path` appended to its path, keeping the query of `query_of` (default:
    `base`'s own): `https://h/v1?api-version=1` + `/models` is `https://h/v1/models?api-version=1`."""
    url, query = urlsplit(base), urlsplit(query_of or base).query
    return urlunsplit((url.scheme, url.netloc, url.path.rstrip("/") + path, query, ""))
