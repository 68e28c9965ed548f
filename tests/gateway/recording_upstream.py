"""A tiny upstream for what the simulator cannot show: the headers it received, a call held
open on demand, a canned answer (an upstream 401 that quotes the key, say)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD_SECONDS = 120  # a test releases a held call; this bound only ends a forgotten one

CHAT_REPLY = {
    "id": "chatcmpl-recorded",
    "object": "chat.completion",
    "created": 0,
    "model": "recorded",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}


class RecordingUpstream:
    """`requests` holds (method, path, headers) of each call, `peers` the client port it came
    from; `hold()` keeps calls waiting
    (`arrived` is set when one does) until `release()`; `answer` sets (status, JSON body), or
    `stream` SSE events sent before the hold (and the rest of the stream after it)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.peers: list[int] = []
        self.answer: tuple[int, dict[str, Any]] = (200, CHAT_REPLY)
        self.stream: list[bytes] | None = None
        self.arrived = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def hold(self) -> None:
        self._go.clear()

    def release(self) -> None:
        self._go.set()


def _handler(upstream: RecordingUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            upstream.requests.append((self.command, self.path, dict(self.headers.items())))
            upstream.peers.append(self.client_address[1])
            upstream.arrived.set()
            if upstream.stream is not None:
                self._stream(upstream.stream)
                return
            upstream._go.wait(HOLD_SECONDS)
            status, body = upstream.answer
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST

        def _stream(self, events: list[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            upstream._go.wait(HOLD_SECONDS)
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def recording_upstream() -> Iterator[RecordingUpstream]:
    upstream = RecordingUpstream()
    thread = threading.Thread(
        target=upstream.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield upstream
    finally:
        upstream.release()
        upstream.server.shutdown()
        upstream.server.server_close()
