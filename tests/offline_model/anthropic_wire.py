"""Talking Anthropic Messages over plain HTTP (no Anthropic SDK here), SSE parsing included."""

from __future__ import annotations

import json
from typing import Any

import httpx2

HEADERS = {"x-api-key": "not-a-real-key", "anthropic-version": "2023-06-01"}


def post_messages(root_url: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    return httpx2.post(
        f"{root_url}/v1/messages", json=body, headers={**HEADERS, **headers}, timeout=10
    )


def stream_messages(root_url: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs of a streamed Messages call, in order."""
    with httpx2.stream(
        "POST",
        f"{root_url}/v1/messages?beta=true",
        json={**body, "stream": True},
        headers=HEADERS,
        timeout=10,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return parse_sse(response.iter_lines())


def parse_sse(lines) -> list[tuple[str, dict[str, Any]]]:
    events, name, data = [], None, []
    for line in lines:
        if line.startswith("event:"):
            name = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").strip())
        elif not line and data:
            payload = json.loads("\n".join(data))
            assert payload["type"] == name, "the event name matches the data's type"
            events.append((name, payload))
            name, data = None, []
    return events


def reassemble(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Content blocks rebuilt from the deltas, the way a client does it."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"])
            partial[data["index"]] = ""
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                partial[data["index"]] += delta["partial_json"]
        elif name == "content_block_stop" and blocks[data["index"]]["type"] == "tool_use":
            blocks[data["index"]]["input"] = json.loads(partial[data["index"]] or "{}")
    return [blocks[i] for i in sorted(blocks)]
