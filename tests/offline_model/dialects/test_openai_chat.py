"""Chat Completions through the real OpenAI SDK: text, tool calls, streaming, usage."""

from __future__ import annotations

import json

import openai

SHELL = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
LS = {"name": "shell", "arguments": {"command": "ls -la"}}


def test_a_reply_carries_text_and_usage(server, client):
    completion = client.chat.completions.create(
        model="simulator/echo",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "ping ping"},
        ],
    )

    assert completion.choices[0].message.content == "ping ping"
    assert completion.choices[0].finish_reason == "stop"
    # ceil(chars / 4): "Be brief." + "ping ping" = 18 chars -> 5; "ping ping" -> 3.
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (5, 3)
    assert completion.usage.total_tokens == 8


def test_tool_calls_round_trip_with_generated_ids(server, client):
    server.add_script("tools", [{"tool_calls": [LS, LS]}, {"text": "done"}])

    first = client.chat.completions.create(
        model="simulator/script:tools",
        messages=[{"role": "user", "content": "look around"}],
        tools=[SHELL],
    )
    calls = first.choices[0].message.tool_calls
    history = [
        {"role": "user", "content": "look around"},
        first.choices[0].message.model_dump(exclude_none=True),
        *({"role": "tool", "tool_call_id": c.id, "content": "a.txt"} for c in calls),
    ]
    second = client.chat.completions.create(
        model="simulator/script:tools", messages=history, tools=[SHELL]
    )

    assert first.choices[0].finish_reason == "tool_calls"
    assert first.choices[0].message.content is None
    assert [c.id for c in calls] == ["call_1", "call_2"]
    assert [json.loads(c.function.arguments) for c in calls] == [{"command": "ls -la"}] * 2
    assert second.choices[0].message.content == "done"


def test_streaming_text_arrives_in_pieces_then_usage(server, client):
    server.add_script("long", [{"text": "a fairly long answer that cannot fit in one piece"}])

    chunks = list(
        client.chat.completions.create(
            model="simulator/script:long",
            messages=[{"role": "user", "content": "talk"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    texts = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(t or "" for t in texts) == "a fairly long answer that cannot fit in one piece"
    assert len([t for t in texts if t]) > 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == 13
    assert all(c.usage is None for c in chunks[:-1])


def test_streamed_tool_call_deltas_accumulate_in_the_sdk_helper(server, client):
    server.add_script("stream-tools", [{"text": "Listing.", "tool_calls": [LS]}])

    with client.chat.completions.stream(
        model="simulator/script:stream-tools",
        messages=[{"role": "user", "content": "list"}],
        tools=[SHELL],
    ) as stream:
        final = stream.get_final_completion()

    message = final.choices[0].message
    assert message.content == "Listing."
    assert message.tool_calls[0].function.name == "shell"
    assert json.loads(message.tool_calls[0].function.arguments) == {"command": "ls -la"}
    assert final.choices[0].finish_reason == "tool_calls"


def test_without_include_usage_no_usage_chunk_is_sent(server, client):
    chunks = list(
        client.chat.completions.create(
            model="simulator/echo", messages=[{"role": "user", "content": "x"}], stream=True
        )
    )

    assert all(c.choices for c in chunks)


def test_a_malformed_request_is_a_400_in_openai_shape(client):
    try:
        client.chat.completions.create(model="simulator/echo", messages="not a list")
    except openai.BadRequestError as error:
        assert error.status_code == 400
        assert error.body["type"] == "invalid_request_error"
        assert "`messages`" in error.body["message"]
    else:
        raise AssertionError("expected a 400")
