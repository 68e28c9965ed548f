"""`OfflineModelServer`: the simulator on a real HTTP socket, one thread per connection.

HTTP/1.1 with keep-alive; streamed answers use chunked transfer encoding. Shutdown is prompt
even with requests hanging or sleeping: a stop event cuts their waits short and every open
connection is shut down under its handler.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from flashrsi_dagster.offline_model.config import ServerConfig
from flashrsi_dagster.offline_model.exchange import HttpRequest, HttpResponse
from flashrsi_dagster.offline_model.log import RequestLog, RequestRecord
from flashrsi_dagster.offline_model.policies import PolicyRegistry
from flashrsi_dagster.offline_model.simulator import Simulator

logger = logging.getLogger("flashrsi.offline_model")

# How often the accept loop checks for shutdown; bounds how long `close()` waits for it.
_POLL_SECONDS = 0.05
_JOIN_SECONDS = 2.0


class OfflineModelServer:
    """The offline model simulator: OpenAI Chat/Responses and Anthropic Messages on 127.0.0.1.

    Use as a context manager (or `start()` / `close()`); `url` is the OpenAI `base_url`,
    `root_url` the Anthropic base URL.
    """

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self._registry = PolicyRegistry()
        for name, source in self.config.scripts.items():
            self._registry.add_script(name, source)
        self._log = RequestLog()
        self._stopping = threading.Event()
        self._simulator = Simulator(self.config, self._registry, self._log, self._stopping)
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("the offline model simulator is already running")
        self._stopping.clear()
        self._httpd = _HttpServer((self.config.host, self.config.port), self._simulator)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": _POLL_SECONDS},
            name="offline-model-simulator",
            daemon=True,
        )
        self._thread.start()
        logger.info("offline model simulator listening on %s", self.url)
        return self

    def close(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        httpd.drop_connections(timeout=_JOIN_SECONDS)
        if self._thread is not None:
            self._thread.join(_JOIN_SECONDS)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the offline model simulator is not running")
        return self._httpd.server_address[1]

    @property
    def root_url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def models(self) -> list[str]:
        return self._registry.model_ids()

    def add_script(self, name: str, replies: Path | str | Sequence[Any]) -> str:
        """Register (or replace) model `simulator/script:<name>`; returns that model id."""
        return self._registry.add_script(name, replies)

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log, oldest first."""
        return self._log.snapshot()

    @property
    def in_flight(self) -> int:
        """How many requests the server is answering now (arrived, not yet answered)."""
        return self._simulator.in_flight

    def clear_requests(self) -> None:
        self._log.clear()


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # close() joins the handlers itself, with a deadline
    request_queue_size = 128  # the default 5 resets bursts of concurrent clients

    def __init__(self, address: tuple[str, int], simulator: Simulator) -> None:
        self.simulator = simulator
        self._open: dict[socket.socket, threading.Thread] = {}
        self._lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._open[request] = threading.current_thread()
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open.pop(request, None)

    def drop_connections(self, timeout: float) -> None:
        """Shut every open connection (idle keep-alive ones included) and join its handler."""
        with self._lock:
            open_now = dict(self._open)
        for connection in open_now:
            with contextlib.suppress(OSError):  # already closed by the peer
                connection.shutdown(socket.SHUT_RDWR)
        for thread in open_now.values():
            thread.join(timeout)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FlashRSIOfflineModelSimulator/1"
    # Headers and body leave in separate writes: with Nagle on, the client's delayed ACK
    # stalls every keep-alive response by ~40 ms.
    disable_nagle_algorithm = True
    server: _HttpServer

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _serve(self) -> None:
        try:
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = HttpRequest(self.command, self.path, headers, self._read_body())
            self._send(self.server.simulator.handle(request))
        except OSError:
            self.close_connection = True  # the client went away, or close() cut the socket
        except Exception:
            logger.exception("offline model simulator: failed to serve %s", self.path)
            self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        parts = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():
            pass  # trailer headers
        return b"".join(parts)

    def _send(self, response: HttpResponse) -> None:
        if response.status is None:
            self.close_connection = True
            return
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if response.chunks is None:
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in response.chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("offline model simulator: " + format, *args)
