"""Anthropic Messages over HTTP: blocks, tool use, the exact SSE sequence, count_tokens."""

from __future__ import annotations

import httpx2

from tests.offline_model.anthropic_wire import (
    HEADERS,
    post_messages,
    reassemble,
    stream_messages,
)

TOOLS = [{"name": "shell", "description": "Run", "input_schema": {"type": "object"}}]
LS = {"name": "shell", "arguments": {"command": "ls"}}


def test_a_reply_is_a_message_with_text_blocks_and_usage(server):
    response = post_messages(
        server.root_url,
        {
            "model": "simulator/echo",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "x"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi there"}]}],
        },
    )

    body = response.json()
    assert response.status_code == 200
    assert body["type"] == "message"
    assert body["role"] == "assistant"
    assert body["content"] == [{"type": "text", "text": "hi there"}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"]["input_tokens"] == 5  # "Be brief." + "hi there": 17 chars
    assert body["usage"]["output_tokens"] == 2


def test_tool_use_then_tool_result_continues_the_script(server):
    server.add_script("anthropic", [{"text": "Let me look.", "tool_calls": [LS]}, "Two files."])
    request = {"model": "simulator/script:anthropic", "max_tokens": 100, "tools": TOOLS}

    first = post_messages(
        server.root_url, {**request, "messages": [{"role": "user", "content": "what is here?"}]}
    ).json()
    tool_use = first["content"][1]
    second = post_messages(
        server.root_url,
        {
            **request,
            "messages": [
                {"role": "user", "content": "what is here?"},
                {"role": "assistant", "content": first["content"]},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool_use["id"],
                            "content": [{"type": "text", "text": "a b"}],
                        }
                    ],
                },
            ],
        },
    ).json()

    assert first["stop_reason"] == "tool_use"
    assert first["content"][0] == {"type": "text", "text": "Let me look."}
    assert tool_use == {
        "type": "tool_use",
        "id": "call_1",
        "name": "shell",
        "input": {"command": "ls"},
    }
    assert second["content"] == [{"type": "text", "text": "Two files."}]


def test_streaming_follows_the_anthropic_event_sequence(server):
    server.add_script("stream", [{"text": "Looking at the folder first.", "tool_calls": [LS]}])

    events = stream_messages(
        server.root_url,
        {
            "model": "simulator/script:stream",
            "max_tokens": 100,
            "tools": TOOLS,
            "messages": [{"role": "user", "content": "go"}],
        },
    )

    names = [name for name, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    body = names[1:-2]
    assert body[0] == "content_block_start" and body[-1] == "content_block_stop"
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    deltas = {data["delta"]["type"] for name, data in events if name == "content_block_delta"}
    assert deltas == {"text_delta", "input_json_delta"}
    assert reassemble(events) == [
        {"type": "text", "text": "Looking at the folder first."},
        {"type": "tool_use", "id": "call_1", "name": "shell", "input": {"command": "ls"}},
    ]
    start, delta = events[0][1], events[-2][1]
    assert start["message"]["content"] == [] and start["message"]["usage"]["input_tokens"] > 0
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] == server.requests[-1].output_tokens


def test_count_tokens_uses_the_same_estimate_as_usage(server):
    request = {
        "model": "simulator/echo",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "hi there"}],
    }

    counted = httpx2.post(
        f"{server.root_url}/v1/messages/count_tokens", json=request, headers=HEADERS
    ).json()
    answered = post_messages(server.root_url, {**request, "max_tokens": 10}).json()

    assert counted == {"input_tokens": answered["usage"]["input_tokens"]} == {"input_tokens": 5}


def test_errors_come_in_the_anthropic_shape(server):
    malformed = httpx2.post(f"{server.root_url}/v1/messages", content=b"{not json", headers=HEADERS)
    unknown = post_messages(
        server.root_url,
        {"model": "claude-x", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
    )

    assert malformed.status_code == 400
    assert malformed.json()["type"] == "error"
    assert malformed.json()["error"]["type"] == "invalid_request_error"
    assert unknown.status_code == 404
    assert unknown.json()["error"]["type"] == "not_found_error"
    assert "simulator/target" in unknown.json()["error"]["message"]
