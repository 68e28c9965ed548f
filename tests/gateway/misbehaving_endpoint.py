"""A misbehaving model endpoint on loopback, for the gateway to stand in front of.

A raw socket server on 127.0.0.1 (no HTTP library between the test and the wire, so it can lie
as an endpoint would: about its length, its encoding, its JSON). `behaviour` writes each
answer; every connection is kept alive unless the behaviour says otherwise. Bounded: each
behaviour stops writing when its peer goes away or after `MAX_WRITE_SECONDS`, and the server
stops by itself after `lifetime` seconds if the test never closes it.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

Behaviour = Callable[[socket.socket], bool]
"""Writes one answer on the connection; returns whether the connection stays open."""
MAX_WRITE_SECONDS = 60.0


def chat_reply(content: str | None = "spam", usage: Any = None, **fields: Any) -> dict:
    message = {"role": "assistant", "content": content}
    return {
        "id": "chatcmpl-misbehaving",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        **fields,
    }


def head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer(status: int = 200, body: bytes | dict | None = None, **headers: str) -> Behaviour:
    """A whole answer with a true Content-Length (unless `headers` says otherwise)."""
    data = json.dumps(chat_reply() if body is None else body).encode() if not isinstance(
        body, bytes
    ) else body  # fmt: skip
    fields = {"Content-Type": "application/json", "Content-Length": str(len(data))}
    fields.update({k.replace("_", "-"): v for k, v in headers.items()})

    def write(conn: socket.socket) -> bool:
        conn.sendall(head(status, fields) + data)
        return True

    return write


def reset(conn: socket.socket) -> bool:
    """The connection reset (RST) with no answer."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False


def trickle(every: float = 0.3) -> Behaviour:
    """A good answer, one byte every `every` seconds: each read gets a byte in time."""
    data = json.dumps(chat_reply()).encode()

    def write(conn: socket.socket) -> bool:
        conn.sendall(
            head(200, {"Content-Type": "application/json", "Content-Length": str(len(data))})
        )
        _drip(conn, [data[i : i + 1] for i in range(len(data))], every)
        return False

    return write


def endless(size: int, **headers: str) -> Behaviour:
    """A 200 whose body is `size` bytes of a JSON string, sent as fast as it is read."""

    def write(conn: socket.socket) -> bool:
        fields = {"Content-Type": "application/json", "Content-Length": str(size), **headers}
        conn.sendall(head(200, fields) + b'{"choices": "')
        _drip(conn, _repeat(b"x" * 65536, size // 65536), 0)
        return False

    return write


def chunked_endless(chunk: bytes, every: float = 0.0, content_type: str = "application/json"):
    """A chunked 200 that never ends: `chunk` again and again (SSE events, or bytes)."""

    def write(conn: socket.socket) -> bool:
        fields = {"Content-Type": content_type, "Transfer-Encoding": "chunked"}
        conn.sendall(head(200, fields))
        piece = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        _drip(conn, _repeat(piece, None), every)
        return False

    return write


def sse(
    events: list[bytes], *, end: bool = True, content_type: str = "text/event-stream"
) -> Behaviour:
    """A chunked SSE stream of `events`, ended cleanly when `end`."""

    def write(conn: socket.socket) -> bool:
        fields = {"Content-Type": content_type, "Transfer-Encoding": "chunked"}
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
        conn.sendall(head(200, fields) + body + (b"0\r\n\r\n" if end else b""))
        return end

    return write


def gzip_bomb(megabytes: int = 200) -> Behaviour:
    """200 bytes of gzip that inflate to `megabytes` MB: sent although `identity` was asked."""
    bomb = gzip.compress(b"\0" * (megabytes << 20), compresslevel=9)
    return answer(200, bomb, Content_Encoding="gzip")


def _repeat(item: bytes, times: int | None) -> Iterator[bytes]:
    count = 0
    while times is None or count < times:
        count += 1
        yield item


def _drip(conn: socket.socket, pieces: Any, every: float) -> None:
    """Send pieces until the peer goes away or MAX_WRITE_SECONDS pass."""
    stop = time.monotonic() + MAX_WRITE_SECONDS
    for piece in pieces:
        if time.monotonic() > stop:
            return
        try:
            conn.sendall(piece)
        except OSError:
            return
        if every:
            time.sleep(every)


class MisbehavingEndpoint:
    def __init__(self, lifetime: float = 600.0) -> None:
        self.behaviour: Behaviour = answer()
        self.requests = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self._stop = threading.Event()
        self._until = time.monotonic() + lifetime
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def __enter__(self) -> MisbehavingEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set() and time.monotonic() < self._until:
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(MAX_WRITE_SECONDS)
        with contextlib.closing(conn):
            while not self._stop.is_set() and _read_request(conn):
                self.requests += 1
                if not self.behaviour(conn):
                    return


def _read_request(conn: socket.socket) -> bool:
    """One request read whole (head, then its Content-Length); False once the peer is gone."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return False
            data += more
        head_, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head_.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            more = conn.recv(65536)
            if not more:
                return False
            body += more
    except OSError:
        return False
    return True
