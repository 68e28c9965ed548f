"""The Responses API through the real OpenAI SDK: input forms, function calls, streaming."""

from __future__ import annotations

import json

SHELL = {"type": "function", "name": "shell", "parameters": {"type": "object"}}


def test_string_input_gets_a_message_with_output_text(client):
    response = client.responses.create(
        model="simulator/echo", instructions="Be brief.", input="hello responses"
    )

    assert response.output_text == "hello responses"
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["message"]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (6, 4)


def test_function_calls_and_their_outputs_round_trip(server, client):
    server.add_script(
        "fn", [{"tool_calls": [{"name": "shell", "arguments": {"command": "pwd"}}]}, "/work"]
    )

    first = client.responses.create(
        model="simulator/script:fn", input=[{"role": "user", "content": "where?"}], tools=[SHELL]
    )
    call = first.output[0]
    second = client.responses.create(
        model="simulator/script:fn",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": "where?"}]},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "/work"},
        ],
        tools=[SHELL],
    )

    assert call.type == "function_call"
    assert (call.call_id, call.name) == ("call_1", "shell")
    assert json.loads(call.arguments) == {"command": "pwd"}
    assert second.output_text == "/work"


def test_streaming_emits_the_response_event_sequence(server, client):
    server.add_script(
        "both",
        [
            {
                "text": "Checking the folder now.",
                "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}],
            }
        ],
    )

    events = list(
        client.responses.create(
            model="simulator/script:both", input="go", tools=[SHELL], stream=True
        )
    )

    kinds = [e.type for e in events]
    assert kinds[:3] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    assert kinds[-1] == "response.completed"
    assert "response.function_call_arguments.done" in kinds
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Checking the folder now."
    assert [e.sequence_number for e in events] == list(range(len(events)))
    completed = events[-1].response
    assert [item.type for item in completed.output] == ["message", "function_call"]
    assert completed.usage.output_tokens > 0


PATCH_TOOL = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
}
NAMESPACE = {
    "type": "namespace",
    "name": "agents",
    "description": "Sub-agents.",
    "tools": [{"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}],
}


def test_a_custom_tool_is_called_with_free_text_and_its_output_is_read_back(server, client):
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    server.add_script(
        "custom",
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]}, "applied"],
    )

    events = list(
        client.responses.create(
            model="simulator/script:custom", input="patch it", tools=[PATCH_TOOL], stream=True
        )
    )
    call = events[-1].response.output[0]
    streamed = "".join(e.delta for e in events if e.type == "response.custom_tool_call_input.delta")
    second = client.responses.create(
        model="simulator/script:custom",
        input=[
            {"role": "user", "content": "patch it"},
            {
                "type": "custom_tool_call",
                "call_id": call.call_id,
                "name": call.name,
                "input": patch,
            },
            {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success."},
        ],
        tools=[PATCH_TOOL],
    )

    assert (call.type, call.name, call.input) == ("custom_tool_call", "apply_patch", patch)
    assert streamed == patch
    assert "response.custom_tool_call_input.done" in [e.type for e in events]
    assert second.output_text == "applied"


def test_tools_inside_a_namespace_are_offered_by_name():
    from flashrsi_dagster.offline_model.dialects import openai_responses

    conversation = openai_responses.parse(
        {"model": "m", "input": "hi", "tools": [NAMESPACE, PATCH_TOOL, {"type": "web_search"}]}
    )

    assert [(t.name, t.freeform) for t in conversation.tools] == [
        ("spawn_agent", False),
        ("apply_patch", True),
    ]
