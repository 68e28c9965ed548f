"""A run's output limit held by the gateway: whatever a harness sends, the model reads at most
the limit (plus the framing) of each tool result, in every API's shape."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from flashrsi_dagster.gateway import Gateway, GatewayError, Upstream
from flashrsi_dagster.gateway.clipping import FRAMING
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from tests.gateway.conftest import CANARY_KEY

LIMIT = 100
HUGE = "z" * 100_000
MODEL = "simulator/echo"
SMALL_PART = {"type": "text", "text": "w" * 80}


@pytest.fixture(scope="module")
def recording() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


REQUESTS = {
    "chat": (
        "/v1/chat/completions",
        {
            "messages": [
                {"role": "user", "content": HUGE},  # not a tool result: not cut
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "shell", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": HUGE},
                # many small parts: their sum is what is cut, not each
                {"role": "tool", "tool_call_id": "c2", "content": [SMALL_PART] * 2000},
            ]
        },
    ),
    "responses": (
        "/v1/responses",
        {
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": HUGE},
                {"type": "function_call_output", "call_id": "c2", "output": "short"},
            ]
        },
    ),
    "anthropic": (
        "/v1/messages",
        {
            "max_tokens": 50,
            "messages": [
                {"role": "user", "content": "run it"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": HUGE},
                    {"type": "tool_result", "tool_use_id": "t2",
                     "content": [{"type": "text", "text": HUGE}, {"type": "text", "text": "end"}]},
                ]},
            ],
        },
    ),
}  # fmt: skip


def _tool_texts(api: str, body: dict) -> list[str]:
    if api == "chat":
        tools = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        return [c if isinstance(c, str) else "".join(p["text"] for p in c) for c in tools]
    if api == "responses":
        return [i["output"] for i in body["input"] if i["type"] == "function_call_output"]
    blocks = [b for m in body["messages"][1:] for b in m["content"] if b["type"] == "tool_result"]
    return [
        b["content"] if isinstance(b["content"], str) else "".join(p["text"] for p in b["content"])
        for b in blocks
    ]


@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_every_tool_result_reaches_the_model_cut_to_the_limit(api: str, recording):
    path, body = REQUESTS[api]
    with Gateway() as gateway:
        upstream = Upstream(recording.url, api, CANARY_KEY)  # type: ignore[arg-type]
        token = gateway.grant(
            experiment="x", role="r", run_id="r1", upstream=upstream, output_limit=LIMIT
        )
        headers = {"Authorization": f"Bearer {token}", "x-api-key": token}
        answer = httpx2.post(
            f"{gateway.url}{path}", json={"model": MODEL, **body}, headers=headers, timeout=30
        )
        usage = gateway.revoke(token)

    assert answer.status_code == 200, answer.text
    received = recording.requests[-1].body
    texts = _tool_texts(api, received)
    assert all(len(text) <= LIMIT + FRAMING for text in texts), [len(t) for t in texts]
    assert "cut by the gateway" in texts[0] and texts[0].startswith("z" * 10)
    assert usage.clipped == 2 if api != "responses" else usage.clipped == 1
    if api == "responses":
        assert texts[1] == "short"  # within the limit: untouched
    if api == "chat":
        assert received["messages"][0]["content"] == HUGE


def test_without_a_limit_nothing_is_cut_and_a_bad_limit_is_refused(recording):
    path, body = REQUESTS["chat"]
    with Gateway() as gateway:
        upstream = Upstream(recording.url, "chat", CANARY_KEY)
        token = gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream)
        httpx2.post(
            f"{gateway.url}{path}",
            json={"model": MODEL, **body},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        with pytest.raises(GatewayError, match="output_limit must be positive"):
            gateway.grant(experiment="x", role="r", run_id="r2", upstream=upstream, output_limit=0)

    assert _tool_texts("chat", recording.requests[-1].body)[0] == HUGE


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": HUGE}}
NESTED = {
    "anthropic": ("/v1/messages", "anthropic", lambda body: body["messages"][1]["content"][0]["content"], {  # noqa: E501
        "max_tokens": 50,
        "messages": [
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "document",
                 "source": {"type": "text", "media_type": "text/plain", "data": HUGE}},
                {"type": "search_result", "source": "s", "title": "t",
                 "content": [{"type": "text", "text": HUGE}]},
                IMAGE,
            ]}]},
        ],
    }),
    "responses": ("/v1/responses", "responses", lambda body: body["input"][1]["output"], {
        "input": [
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_file", "filename": "out.txt", "file_data": HUGE},
                {"type": "input_text", "text": HUGE},
            ]},
        ],
    }),
}  # fmt: skip


def _texts(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    if isinstance(value, dict) and value.get("type") != "image":
        return [
            text for k, v in value.items() if k not in ("type", "media_type") for text in _texts(v)
        ]
    return []


@pytest.mark.parametrize("api", sorted(NESTED))
def test_output_nested_anywhere_in_a_tool_result_is_cut_but_an_image_is_left_whole(
    api: str, recording
):
    """A document's text, a search result's content, a file's data: all the tool's output."""
    path, kind, result_of, body = NESTED[api]
    with Gateway() as gateway:
        upstream = Upstream(recording.url, kind, CANARY_KEY)  # type: ignore[arg-type]
        token = gateway.grant(
            experiment="x", role="r", run_id="r1", upstream=upstream, output_limit=LIMIT
        )
        headers = {"Authorization": f"Bearer {token}", "x-api-key": token}
        httpx2.post(
            f"{gateway.url}{path}", json={"model": MODEL, **body}, headers=headers, timeout=30
        )
        usage = gateway.revoke(token)

    result = result_of(recording.requests[-1].body)
    assert sum(len(text) for text in _texts(result)) <= LIMIT + FRAMING
    assert usage.clipped == 1
    if api == "anthropic":
        assert result[2] == IMAGE
