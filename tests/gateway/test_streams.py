"""`StreamMeter`: events relayed whole however the bytes arrive, usage read from each API's
events, the usage chunk the gateway asked for dropped again."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.gateway.answers import EndpointFault
from flashrsi_dagster.gateway.metering import Tokens
from flashrsi_dagster.gateway.streams import MAX_EVENT, StreamMeter


def _sse(data: dict | str, event: str | None = None, end: str = "\n") -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}{end}" if event else ""
    return f"{head}data: {payload}{end}{end}".encode()


CHAT = [
    _sse({"choices": [{"delta": {"content": "hi"}}], "usage": None}),
    _sse({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}}),
    _sse("[DONE]"),
]


def _relay(meter: StreamMeter, stream: bytes, step: int) -> bytes:
    out = b"".join(meter.feed(stream[i : i + step]) for i in range(0, len(stream), step))
    return out + meter.end()


@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_chat_usage_however_the_bytes_are_cut(step):
    meter = StreamMeter("chat")

    assert _relay(meter, b"".join(CHAT), step) == b"".join(CHAT)
    assert meter.tokens == Tokens(4, 2)


def test_the_usage_chunk_the_gateway_asked_for_is_dropped():
    meter = StreamMeter("chat", drop_usage_chunk=True)

    assert _relay(meter, b"".join(CHAT), 5) == CHAT[0] + CHAT[2]
    assert meter.tokens == Tokens(4, 2)


def test_the_closing_event_waits_for_the_end_of_the_stream():
    meter = StreamMeter("messages")
    stop = _sse({"type": "message_stop"}, "message_stop")
    delta = _sse({"type": "content_block_delta"}, "content_block_delta")

    assert meter.feed(delta + stop + b": trailing comment\n\n") == delta
    assert meter.end() == stop + b": trailing comment\n\n"


def test_a_partial_event_is_held_until_its_end():
    meter = StreamMeter("chat")

    assert meter.feed(CHAT[0][:-1]) == b""
    assert meter.feed(CHAT[0][-1:]) == CHAT[0]


def test_anthropic_usage_merges_message_start_and_message_delta_with_crlf():
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 9, "output_tokens": 1}}}
    delta = {"type": "message_delta", "usage": {"output_tokens": 30}}
    stream = _sse(start, "message_start", "\r\n") + _sse(delta, "message_delta", "\r\n")
    meter = StreamMeter("messages")

    assert _relay(meter, stream, 11) == stream
    assert meter.tokens == Tokens(9, 30)


def test_responses_usage_comes_with_the_completed_response():
    done = {
        "type": "response.completed",
        "response": {"usage": {"input_tokens": 5, "output_tokens": 6}},
    }
    meter = StreamMeter("responses")

    meter.feed(_sse({"type": "response.created", "response": {"usage": None}}) + _sse(done))

    assert meter.tokens == Tokens(5, 6)


def test_a_last_event_without_its_blank_line_is_relayed_at_the_end():
    meter = StreamMeter("chat")

    assert meter.feed(b'data: {"last": 1}') == b""
    assert meter.end() == b'data: {"last": 1}\n\n'  # its blank line given (round 22)


def test_a_stream_that_ends_inside_an_event_is_the_endpoints_fault():
    meter = StreamMeter("chat")

    assert meter.feed(b'data: {"partial') == b""
    with pytest.raises(EndpointFault, match="not valid JSON"):
        meter.check_end()


@pytest.mark.parametrize(
    "event",
    [
        _sse("not json at all"),
        _sse("[1, 2]"),
        _sse("[" * 100_000 + "]" * 100_000),
        _sse({"choices": [], "usage": {"prompt_tokens": -3, "completion_tokens": 1}}),
    ],
    ids=["garbage", "not-an-object", "deeply-nested", "negative-usage"],
)
def test_an_event_the_client_could_not_trust_is_the_endpoints_fault_and_not_relayed(event):
    meter = StreamMeter("chat")

    assert meter.feed(CHAT[0]) == CHAT[0]
    with pytest.raises(EndpointFault):
        meter.feed(event)


def test_an_event_that_never_ends_is_the_endpoints_fault():
    meter = StreamMeter("chat")

    with pytest.raises(EndpointFault, match="event over"):
        meter.feed(b"data: " + b"x" * (MAX_EVENT + 1))


def test_an_error_the_endpoint_reports_in_its_stream_is_relayed_and_kept():
    meter = StreamMeter("messages")
    error = _sse(
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, "error"
    )

    assert meter.feed(error) == error
    assert meter.reported == "reported an error in its stream: overloaded_error: busy"
