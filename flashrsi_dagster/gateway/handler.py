"""`Handler`: HTTP/1.1 on one client connection (keep-alive), with the few ways the proxy
answers: a whole body, or a stream relayed in chunks as it arrives."""

from __future__ import annotations

import logging
import re
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from flashrsi_dagster.gateway.errors import bad_request, error_body, too_large
from flashrsi_dagster.gateway.listeners import Connection, Listener

logger = logging.getLogger("flashrsi.gateway")

Headers = list[tuple[str, str]]

_HEX = re.compile(rb"[0-9a-fA-F]{1,16}")


class Serves(Protocol):
    def handle(self, request: Handler, listener: Listener) -> None: ...


class Context:
    """What a connection's handler needs: who serves requests, where it was accepted."""

    def __init__(
        self, proxy: Serves, listener: Listener, connection: Connection, idle_timeout: float
    ) -> None:
        self.proxy = proxy
        self.listener = listener
        self.connection = connection
        self.idle_timeout = idle_timeout


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes: with Nagle on, the client's delayed ACK
    # would stall every keep-alive response by ~40 ms.
    disable_nagle_algorithm = True
    server: Context  # type: ignore[assignment]
    response_started = False

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout  # an idle keep-alive connection is let go
        self.disable_nagle_algorithm = self.request.family in (socket.AF_INET, socket.AF_INET6)
        super().setup()

    def handle_one_request(self) -> None:
        self.response_started = False
        super().handle_one_request()
        if self.server.connection.draining:
            self.close_connection = True

    def do_GET(self) -> None:
        if not self.server.connection.begin():  # its listener was unserved meanwhile
            self.close_connection = True
            body = error_body("openai", "overloaded_error", "gateway: this listener is closed")
            self.send_whole(503, [("Content-Type", "application/json")], body)
            return
        try:
            self.server.proxy.handle(self, self.server.listener)
        finally:
            if not self.server.connection.end():
                self.close_connection = True

    do_POST = do_GET

    # -- reading ---------------------------------------------------------------------------

    def read_body(self, limit: int) -> bytes:
        """The request body, whole; a body over `limit` bytes is refused (413) and, being left
        unread, ends the connection."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked(limit)
        raw = (self.headers.get("Content-Length") or "0").strip()
        if not raw.isdigit():
            self.close_connection = True
            raise bad_request(f"gateway: bad Content-Length {raw[:40]!r}")
        if int(raw) > limit:
            self.close_connection = True
            raise too_large(f"gateway: request body over {limit} bytes")
        return self.rfile.read(int(raw)) if int(raw) else b""

    def _read_chunked(self, limit: int) -> bytes:
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1024).split(b";")[0].strip()
            # Hex digits only: int() would also take "-1" (read to the end, past the limit),
            # "0x10" and "1_0".
            if not _HEX.fullmatch(line):
                self.close_connection = True
                raise bad_request("gateway: malformed chunked request body")
            size = int(line, 16)
            if size == 0:
                break
            total += size
            if total > limit:
                self.close_connection = True
                raise too_large(f"gateway: request body over {limit} bytes")
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)
        while self.rfile.readline(65536).strip():
            pass  # trailer headers
        return b"".join(parts)

    # -- writing ---------------------------------------------------------------------------

    def send_whole(self, status: int, headers: Headers, body: bytes) -> None:
        self.response_started = True
        head = self._head(status, [*headers, ("Content-Length", str(len(body)))])
        self.wfile.write(head + body)  # one write: one segment for small answers

    def start_stream(self, status: int, headers: Headers) -> None:
        self.response_started = True
        if self.request_version == "HTTP/1.1":
            self._chunked = True
            self.wfile.write(self._head(status, [*headers, ("Transfer-Encoding", "chunked")]))
        else:  # HTTP/1.0 has no chunks: the end of the body is the end of the connection
            self._chunked = False
            self.close_connection = True
            self.wfile.write(self._head(status, headers))

    def write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if self._chunked else data)

    def end_stream(self) -> None:
        if self._chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _head(self, status: int, headers: Headers) -> bytes:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        lines = [f"HTTP/1.1 {status} {reason}", *(f"{n}: {v}" for n, v in headers)]
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("gateway: " + format, *args)
