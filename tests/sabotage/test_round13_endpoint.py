"""Sabotage, thirteenth red-team pass (issue 22, items 3-7): a misbehaving model endpoint
behind the real gateway and a hostile operator's input, aimed at what round 12
(`test_round12_endpoint.py`) fixed and did not try.

Round 12 made the gateway read an endpoint's JSON strictly (`gateway/answers.py`,
`endpoint_json`): this round attacks that parser at its edges (numbers past a float's range,
integers of thousands of digits, escaped lone surrogates in keys and in reversed pairs, keys
spelled twice through an escape or at depth, nesting at and past the bound, control
characters, trailing data) and checks the other way round as hard: a correct answer the
stricter reading refuses would be a false fault, charged to the infrastructure and rerun for
nothing (a `\\u0000`, a long text, nesting within the bound, big but finite numbers, an
`"error": null`, stream events split at a multi-byte character or inside their blank line).
Statuses beside 408/409/429/5xx (529, Anthropic's overloaded; a 503 whose body reads as a
success), and the stream events that end a call (`response.incomplete`, a Messages `error`
event with `overloaded_error`, a Responses `error` event). The operator gives zero spend
caps, model ids with whitespace, endpoints without a host, `extra_body` text that is not
Unicode, strings where lists and mappings go, zero and negative counts and timeouts, very
large numbers, unknown keys nested deep, and paths where the other commands take a name or id.

Each attack is one test. One that got through on main was written here first, failing, then
closed in the gateway (`gateway/answers.py`, `streams.py`) or the config
(`config/models.py`); the others held on main and stay as tests.
"""

from __future__ import annotations

import json
import socket

import pytest

from flashrsi_dagster.cli import main
from flashrsi_dagster.gateway.streams import StreamMeter
from tests.conftest import VALID
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import (
    answer,
    head,
    sse,
)
from tests.sabotage.test_round12_endpoint import (
    GOOD,
    MESSAGE,
    OTHER_APIS,
    _charged_to_the_endpoint,
    _grant,
    _post,
)


def _with(old: bytes, new: bytes) -> bytes:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


def _extra(raw: bytes) -> bytes:
    """The good answer with one more top-level field, written as `raw` JSON."""
    return GOOD[:-1] + b', "x": ' + raw + b"}"


# -- whole answers ----------------------------------------------------------------------------

FIXED_WHOLE = {
    # got through on main: Python reads them as floats (inf); serde (Codex) refuses the
    # whole answer ("number out of range"), and a harness writing it back out writes
    # `Infinity`, which is not JSON
    "a-float-past-its-range": (answer(200, _with(b'"created": 0', b'"created": 1e999')), "range"),
    "a-negative-float-past-its-range": (answer(200, _extra(b"-1.5E+400")), "range"),
    "an-exponent-of-30-digits": (answer(200, _extra(b"1e999999999999999999999999999")), "range"),
    "an-integer-past-a-floats-range": (answer(200, _extra(b"9" * 400)), "range"),
}
HELD_WHOLE = {
    "an-integer-of-5000-digits": (answer(200, _extra(b"9" * 5000)), "not valid JSON"),
    "an-escaped-lone-surrogate": (answer(200, _with(b"spam", b"sp\\ud800am")), "lone surrogate"),
    "an-escaped-lone-low-surrogate-in-a-key": (
        answer(200, _extra(b'{"\\udfff": 1}')),
        "lone surrogate",
    ),
    "a-surrogate-pair-reversed": (
        answer(200, _with(b"spam", b"\\ude00\\ud83d")),
        "lone surrogate",
    ),
    "a-key-twice-spelled-with-an-escape": (
        answer(200, _with(b'"content": "spam"', b'"content": "spam", "\\u0063ontent": 5')),
        "the key 'content' twice",
    ),
    "a-key-twice-inside-usage": (
        answer(200, _with(b'"prompt_tokens": 10', b'"prompt_tokens": 10, "prompt_tokens": 1')),
        "the key 'prompt_tokens' twice",
    ),
    "a-key-twice-129-levels-down": (
        answer(200, _extra(b"[" * 127 + b'{"k": 1, "k": 2}' + b"]" * 127)),
        "twice",
    ),
    "nesting-one-past-the-bound": (answer(200, _extra(b"[" * 128 + b"]" * 128)), "deeper"),
    "nesting-200000-deep": (answer(200, _extra(b"[" * 200_000 + b"]" * 200_000)), "deeper"),
    "an-unclosed-200000-deep": (answer(200, _extra(b'{"a":' * 200_000)), "not valid JSON"),
    "a-raw-control-character": (answer(200, _with(b"spam", b"sp\x01am")), "not valid JSON"),
    "a-raw-nul": (answer(200, _with(b"spam", b"sp\x00am")), "not valid JSON"),
    "trailing-data": (answer(200, GOOD + b" {}"), "not valid JSON"),
    "two-answers-in-one-body": (answer(200, GOOD + GOOD), "not valid JSON"),
    "an-overlong-utf-8-slash": (answer(200, _with(b"spam", b"sp\xc0\xafam")), "not UTF-8"),
    "utf-8-of-a-code-point-past-unicode": (
        answer(200, _with(b"spam", b"\xf4\x90\x80\x80")),
        "not UTF-8",
    ),
    "http-529-overloaded": (
        answer(529, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
        "answered HTTP 529",
    ),
    "a-503-whose-body-reads-as-a-success": (answer(503, GOOD), "answered HTTP 503"),
    "a-500-with-no-body": (answer(500, b""), "answered HTTP 500"),
    "a-502-of-html": (answer(502, b"<html>bad gateway</html>"), "answered HTTP 502"),
    "an-overloaded-error-object-in-a-200": (
        answer(200, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
        "an error object in a 2xx answer",
    ),
}


@pytest.mark.parametrize("attack", [*FIXED_WHOLE, *HELD_WHOLE])
def test_a_whole_answer_at_the_parsers_edges_is_the_infrastructures_fault(
    attack, gateway, endpoint
):
    """Attack: a chat answer at the edges of the strict parser, and statuses beside round
    12's. Got through on main: a number past a float's range (`1e999`, a 400-digit
    integer), which Python reads as `inf` (or a float of it) and relayed, though Rust's serde
    refuses the whole answer (Codex's call failed: the candidate's) and a harness dumping it
    again writes `Infinity`. Stops it: `endpoint_json` refuses a number no float holds, as
    it refuses `Infinity` written out. Held: integers Python refuses to read, escaped lone
    surrogates (in a key, a reversed pair), a key twice through an escape or deep down,
    nesting past the bound, control characters, trailing data, overlong UTF-8, 529, a 5xx
    whatever its body, and an error object in a 200."""
    behaviour, cause = {**FIXED_WHOLE, **HELD_WHOLE}[attack]
    _charged_to_the_endpoint(gateway, endpoint, behaviour, cause)


CORRECT_WHOLE = {
    "an-escaped-nul": _with(b"spam", b"sp\\u0000am"),
    "a-text-of-a-million-characters": _with(b"spam", b"ab" * 500_000),
    "nesting-at-the-bound": _extra(b"[" * 126 + b"]" * 126),
    "an-integer-of-300-digits": _extra(b"9" * 300),
    "the-largest-float": _extra(b"1.7976931348623157e308"),
    "a-float-that-underflows-to-zero": _extra(b"1e-999"),
    "minus-zero": _extra(b"-0.0"),
    "an-error-that-is-null": _extra(b"null").replace(b'"x": null', b'"error": null'),
    "line-separators-and-noncharacters": _with(b"spam", "\u2028\ufdd0\uffff".encode()),
    "an-escaped-surrogate-pair-in-a-key": _extra(b'{"\\ud83d\\ude00": "\\ud83d\\ude00"}'),
    "the-same-key-in-sibling-objects": _extra(b'[{"k": 1}, {"k": 2}, {"k": {"k": 3}}]'),
    "leading-and-trailing-whitespace": b" \r\n\t" + GOOD + b"\n\n",
}


@pytest.mark.parametrize("body", CORRECT_WHOLE)
def test_a_correct_answer_at_the_parsers_edges_is_relayed(body, gateway, endpoint):
    """The other way round: what the stricter reading must not refuse (a false fault would
    rerun a good call and charge the infrastructure). Held on main, `"error": null` too (in
    a stream it was not: see below)."""
    endpoint.behaviour = answer(200, CORRECT_WHOLE[body])
    token = _grant(gateway, endpoint)

    reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

    assert reply.choices[0].message.content
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


# -- streams ----------------------------------------------------------------------------------


def _event(data: dict | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


TEXT = "caf\u00e9 \u2603 \U0001f600"
DELTA = _event({"choices": [{"index": 0, "delta": {"content": TEXT}}]})
FINISH = _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
DONE = _event("[DONE]")


def _raw_delta(raw: bytes) -> bytes:
    return b'data: {"choices": [{"index": 0, "delta": {"content": "' + raw + b'"}}]}\n\n'


FIXED_STREAMS = {
    "a-float-past-its-range-in-an-event": (
        sse([DELTA, b'data: {"choices": [], "x": 1e999}\n\n', DONE]),
        "range",
    ),
}
HELD_STREAMS = {
    "an-escaped-lone-surrogate-in-an-event": (
        sse([DELTA, _raw_delta(b"\\udbff"), DONE]),
        "lone surrogate",
    ),
    "a-key-twice-deep-in-an-event": (
        sse([b'data: {"choices": [{"index": 0, "index": 1, "delta": {}}]}\n\n', DONE]),
        "the key 'index' twice",
    ),
    "nesting-past-the-bound-in-an-event": (
        sse([DELTA, b'data: {"x": ' + b"[" * 200 + b"]" * 200 + b"}\n\n", DONE]),
        "deeper",
    ),
    "an-error-string-in-a-chunk": (sse([DELTA, _event({"error": "overloaded"})]), "overloaded"),
    "a-raw-control-character-in-an-event": (
        sse([DELTA, _raw_delta(b"a\x07b"), DONE]),
        "not valid JSON",
    ),
}


@pytest.mark.parametrize("attack", [*FIXED_STREAMS, *HELD_STREAMS])
def test_a_stream_at_the_parsers_edges_is_the_infrastructures_fault(attack, gateway, endpoint):
    """Attack: the whole answers' edges inside a chat stream's events. Got through on main:
    a number past a float's range (as for whole answers). Held: the rest."""
    behaviour, cause = {**FIXED_STREAMS, **HELD_STREAMS}[attack]
    _charged_to_the_endpoint(gateway, endpoint, behaviour, cause, stream=True)


def _pieces(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


ANSWER = DELTA + FINISH + DONE
CORRECT_STREAMS = {
    # every chunk cuts somewhere else: inside a character of 2, 3, 4 bytes, a blank line
    "split-every-byte": _pieces(ANSWER, 1),
    "split-every-3-bytes": _pieces(ANSWER, 3),
    "split-every-5-bytes-crlf": _pieces(ANSWER.replace(b"\n", b"\r\n"), 5),
    "split-every-7-bytes-cr": _pieces(ANSWER.replace(b"\n", b"\r"), 7),
    # SSE's other spellings: data over several lines (joined by a newline), no space after
    # the colon, an id and a retry field, a comment
    "data-over-three-lines": [
        DELTA.replace(b', "delta": ', b',\ndata: "delta":\ndata: ', 1),
        FINISH,
        DONE,
    ],
    "data-without-a-space-ids-and-a-comment": [
        b": keep-alive\n\nid: 1\nretry: 10\n" + DELTA.replace(b"data: ", b"data:"),
        FINISH,
        DONE,
    ],
    "an-error-that-is-null": [
        _event({"choices": [{"index": 0, "delta": {"content": TEXT}}], "error": None}),
        FINISH,
        DONE,
    ],
}


@pytest.mark.parametrize("stream", CORRECT_STREAMS)
def test_a_correct_stream_split_anywhere_is_relayed(stream, gateway, endpoint):
    """The other way round for streams: an answer whose chunks cut a multi-byte character
    or an event's blank line in two (an endpoint's chunks are not events) is one answer.
    Held on main. Got through on main: a chunk holding `"error": null` (no error, as the
    whole answers read it) was taken for an error the endpoint reported, the good call
    charged as a fault. Stops it: `StreamMeter` reports only an error that is not null."""
    endpoint.behaviour = sse(CORRECT_STREAMS[stream])
    token = _grant(gateway, endpoint)

    chunks = list(
        openai_client(gateway, token).chat.completions.create(model="m", messages=USER, stream=True)
    )

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_the_meter_fed_any_cut_of_a_correct_stream_relays_it_whole(api, size):
    """The same at the meter itself, whatever the network coalesces: fed a stream cut
    every `size` bytes, it relays every byte, once, in order, and sees it closed."""
    events = {
        "chat": ANSWER,
        "messages": b"".join(
            _event(e, e["type"])
            for e in [
                {"type": "message_start", "message": {"id": "m", "content": []}},
                {"type": "ping"},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": TEXT},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_stop"},
            ]
        ),
        "responses": b"".join(
            _event(e, e["type"])
            for e in [
                {"type": "response.created", "response": {"id": "r", "output": [], "error": None}},
                {"type": "response.output_text.delta", "delta": TEXT},
                {
                    "type": "response.completed",
                    "response": {"id": "r", "output": [], "error": None},
                },
            ]
        ),
    }[api]
    meter = StreamMeter(api)  # type: ignore[arg-type]

    out = b"".join(meter.feed(piece) for piece in _pieces(events, size)) + meter.end()

    assert out == events
    assert meter.incomplete() is None and meter.reported is None


def _messages_stream(last: dict) -> bytes:
    start = {"type": "message_start", "message": {"id": "m", "content": []}}
    return _event(start, start["type"]) + _event(last, last["type"])


def _responses_stream(last: dict) -> bytes:
    created = {"type": "response.created", "response": {"id": "r", "output": []}}
    return _event(created, created["type"]) + _event(last, last["type"])


ENDING_FAULTS = {
    "messages-overloaded-error": (
        "anthropic",
        _messages_stream({"type": "error", "error": {"type": "overloaded_error", "message": "o"}}),
        "reported an error in its stream: overloaded_error: o",
    ),
    "messages-api-error": (
        "anthropic",
        _messages_stream({"type": "error", "error": {"type": "api_error", "message": "e"}}),
        "reported an error in its stream: api_error: e",
    ),
    "responses-error-event": (
        "responses",
        _responses_stream({"type": "error", "code": "server_error", "message": "s", "error": None}),
        "reported an error in its stream",
    ),
    "responses-failed-without-an-error": (
        "responses",
        _responses_stream({"type": "response.failed", "response": {"id": "r", "status": "failed"}}),
        "reported a failed response in its stream",
    ),
}


@pytest.mark.parametrize("attack", ENDING_FAULTS)
def test_a_stream_ended_by_the_endpoints_error_is_its_fault(attack, gateway, endpoint):
    """Attack: a Messages stream ended by an `error` event (`overloaded_error`, what
    Anthropic sends mid-stream when overloaded; `api_error`), a Responses stream by an
    `error` event or a `response.failed` with no error object. Held on main (a Responses
    `error` event with `"error": null` beside its code only by luck of the event's type:
    kept so by the fix below)."""
    api, stream, cause = ENDING_FAULTS[attack]
    endpoint.behaviour = sse([stream])
    token = _grant(gateway, endpoint, api)

    _post(gateway, token, api, stream=True)

    used = gateway.revoke(token)
    assert cause in (used.last_fault or ""), used
    assert used.failed == 1 and used.answered == 0


def test_a_responses_stream_ended_incomplete_is_the_models_answer(gateway, endpoint):
    """The other way round: `response.incomplete` (the model reached `max_output_tokens`, or
    a content filter) ends an answer the model gave: relayed, answered, no fault. Held."""
    details = {"reason": "max_output_tokens"}
    last = {
        "type": "response.incomplete",
        "response": {"id": "r", "status": "incomplete", "incomplete_details": details,
                     "error": None, "output": [], "usage": {"input_tokens": 3, "output_tokens": 9}},
    }  # fmt: skip
    endpoint.behaviour = sse([_responses_stream(last)])
    token = _grant(gateway, endpoint, "responses")

    body = _post(gateway, token, "responses", stream=True)

    assert body is not None and b"response.incomplete" in body
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


@pytest.mark.parametrize("api", OTHER_APIS)
def test_a_number_past_a_floats_range_is_a_fault_on_the_other_paths(api, gateway, endpoint):
    """Attack: `1e999` in a Responses or Messages answer, the paths Codex (serde: "number
    out of range") reads. Got through on main, as on the chat path."""
    reply = json.dumps(OTHER_APIS[api][2]).encode()
    endpoint.behaviour = answer(200, reply[:-1] + b', "x": 1e999}')
    token = _grant(gateway, endpoint, api)

    response = _post(gateway, token, api)

    used = gateway.revoke(token)
    assert response.status_code == 502 and used.failed == 1, used
    assert "range" in (used.last_fault or "")


def test_a_whole_anthropic_answer_split_in_tiny_writes_is_relayed(gateway, endpoint):
    """A whole answer written a few bytes at a time, cutting its UTF-8: one answer. Held."""
    body = json.dumps(MESSAGE | {"content": [{"type": "text", "text": TEXT}]}, ensure_ascii=False)
    data = body.encode()

    def write(conn: socket.socket) -> bool:
        fields = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        conn.sendall(head(200, fields))
        for piece in _pieces(data, 3):
            conn.sendall(piece)
        return True

    endpoint.behaviour = write
    token = _grant(gateway, endpoint, "anthropic")

    response = _post(gateway, token, "anthropic")

    assert response.status_code == 200 and TEXT in response.text
    assert gateway.revoke(token).answered == 1


# -- the operator's input ---------------------------------------------------------------------

FIXED_INPUT = {
    # got through on main: validated, then every model call of the role was refused
    "a-worker-token-cap-of-0": (
        ["--algorithm.worker.spend_cap.tokens", "0"],
        "algorithm.worker.spend_cap.tokens",
        "greater than 0",
    ),
    "a-worker-usd-cap-of-0": (
        ["--algorithm.worker.spend_cap.usd", "0"],
        "algorithm.worker.spend_cap.usd",
        "greater than 0",
    ),
    "a-target-token-cap-of-0": (
        ["--agent.spend_cap.tokens", "0"],
        "agent.spend_cap.tokens",
        "greater than 0",
    ),
    "a-model-id-of-a-space": (["--agent.llm.model", " "], "agent.llm.model", "whitespace"),
    "a-model-id-ending-in-a-space": (["--agent.llm.model", "gpt-4 "], "agent.llm.model", "space"),
    "a-model-id-with-a-tab": (["--agent.llm.model", "gpt\t4"], "agent.llm.model", "whitespace"),
    "a-model-id-with-a-newline": (
        ["--algorithm.worker.llm.model", "a\nb"],
        "algorithm.worker.llm.model",
        "whitespace",
    ),
    "an-endpoint-without-a-host": (
        ["--agent.llm.base_url", "http://"],
        "agent.llm.base_url",
        "no host",
    ),
    "an-endpoint-with-an-empty-host": (
        ["--agent.llm.base_url", "https:///v1"],
        "agent.llm.base_url",
        "no host",
    ),
    "an-endpoint-with-a-port-not-a-number": (
        ["--agent.llm.base_url", "http://host:port/v1"],
        "agent.llm.base_url",
        "port",
    ),
    "extra-body-a-lone-surrogate": (
        ["--agent.llm.extra_body", '{stop: "\\ud800"}'],
        "agent.llm.extra_body",
        "surrogate",
    ),
    "extra-body-a-lone-surrogate-key": (
        ["--agent.llm.extra_body", '{"\\udc00": 1}'],
        "agent.llm.extra_body",
        "surrogate",
    ),
}
HELD_INPUT = {
    "a-list-given-a-string": (
        ["--agent.permissions.deny_tools", "bash"],
        "agent.permissions.deny_tools",
        "valid list",
    ),
    "a-list-given-a-mapping": (
        ["--agent.permissions.deny_tools", "{a: 1}"],
        "agent.permissions.deny_tools",
        "valid list",
    ),
    "extra-body-given-a-list": (
        ["--agent.llm.extra_body", "[1, 2]"],
        "agent.llm.extra_body",
        "mapping",
    ),
    "split-counts-given-a-string": (
        ["--benchmark.split_counts", "x"],
        "benchmark.split_counts",
        "mapping",
    ),
    "a-section-given-a-string": (["--agent.web", "x"], "agent.web", "mapping"),
    "a-whole-section-given-a-list": (["--benchmark", "[]"], "benchmark", "mapping"),
    "an-unknown-key-three-levels-down": (
        ["--algorithm.worker.unknown.deep.key", "1"],
        "algorithm.worker.unknown",
        "unknown key",
    ),
    "an-unknown-key-in-split-counts": (
        ["--benchmark.split_counts", "{train: 10, dev: 5, test: 20, x: {y: 1}}"],
        "benchmark.split_counts.x",
        "unknown key",
    ),
    "an-unknown-key-in-price": (["--agent.llm.price.x", "1"], "agent.llm.price.x", "unknown"),
    "a-timeout-of-0": (["--agent.timeout", "0"], "agent.timeout", "greater than 0"),
    "a-negative-llm-timeout": (["--agent.llm.timeout", "-1"], "agent.llm.timeout", "greater"),
    "a-web-timeout-of-0": (["--agent.web.timeout", "0"], "agent.web.timeout", "greater"),
    "a-worker-timeout-of-0": (
        ["--algorithm.worker.timeout", "0"],
        "algorithm.worker.timeout",
        "greater",
    ),
    "a-timeout-of-1e999": (["--agent.timeout", "1e999"], "agent.timeout", "finite"),
    "negative-turns": (["--agent.max_turns", "-1"], "agent.max_turns", "greater"),
    "negative-tool-calls": (["--agent.max_tool_calls", "-1"], "agent.max_tool_calls", "greater"),
    "negative-retries": (["--agent.llm.max_retries", "-1"], "agent.llm.max_retries", "greater"),
    "a-billion-retries": (["--agent.llm.max_retries", "1e9"], "agent.llm.max_retries", "integer"),
    "max-tokens-0": (["--agent.llm.max_tokens", "0"], "agent.llm.max_tokens", "greater"),
    "max-tokens-of-23-digits": (
        ["--agent.llm.max_tokens", "9" * 23],
        "agent.llm.max_tokens",
        "less than",
    ),
    "max-steps-of-20-digits": (
        ["--algorithm.max_steps", "9" * 20],
        "algorithm.max_steps",
        "less than",
    ),
    "zero-steps": (["--algorithm.max_steps", "0"], "algorithm.max_steps", "greater"),
    "concurrency-0": (["--benchmark.concurrency", "0"], "benchmark.concurrency", "greater"),
    "attempts-0": (["--benchmark.attempts", "0"], "benchmark.attempts", "greater"),
    "negative-reruns": (
        ["--benchmark.max_infra_reruns", "-1"],
        "benchmark.max_infra_reruns",
        "greater",
    ),
    "a-limit-of-0": (["--benchmark.limit", "0"], "benchmark.limit", "greater"),
    "a-million-train-tasks": (
        ["--benchmark.split_counts", "{train: 1000000, dev: 5, test: 20}"],
        "benchmark.split_counts.train",
        "less than",
    ),
    "a-usd-cap-of-inf": (["--agent.spend_cap.usd", ".inf"], "agent.spend_cap.usd", "finite"),
    "a-negative-usd-cap": (["--agent.spend_cap.usd", "-1"], "agent.spend_cap.usd", "greater"),
    "a-price-of-nan": (
        ["--agent.llm.price", "{input_per_mtok: .nan, output_per_mtok: 1}"],
        "agent.llm.price.input_per_mtok",
        "finite",
    ),
    "a-temperature-of-nan": (
        ["--agent.llm.temperature", ".nan"],
        "agent.llm.temperature",
        "finite",
    ),
    "extra-body-owning-model-for-the-worker": (
        ["--algorithm.worker.llm.extra_body", "{model: x}"],
        "algorithm.worker.llm.extra_body",
        "may not be set",
    ),
    "an-endpoint-of-file-scheme": (
        ["--agent.llm.base_url", "file:///etc/passwd"],
        "agent.llm.base_url",
        "http(s)://",
    ),
    "a-control-that-is-a-path": (["--experiment.control", "../x"], "experiment.control", "name"),
    "a-name-that-is-dot-dot": (["--experiment.name", ".."], "experiment.name", "name"),
}


@pytest.mark.parametrize("attack", [*FIXED_INPUT, *HELD_INPUT])
def test_bad_input_is_one_line_naming_the_key(attack, tmp_path, monkeypatch, capsys):
    """Attack: values a user would not mean, at every kind of key. Got through on main: a
    spend cap of 0 (the gateway refuses the role's first call: an editing role can make no
    edit, a target answer nothing, the whole experiment spent for nothing), a model id with
    whitespace around it or a control character in it (no endpoint has one: every call a
    404, each task the agent's error), an
    endpoint URL without a host or with a port that is not a number (every call a
    connection error), `extra_body` holding a lone surrogate (JSON Python writes, as
    `\\ud800`, and endpoints refuse: every call a 400). Stops it: `SpendCap` takes caps
    above 0 (none: no cap), `LLMConfig` refuses such a model id (a space inside is kept: a
    local server may name a model so), an endpoint without a host or port, and `extra_body`
    that is not Unicode text. The rest held."""
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    monkeypatch.chdir(tmp_path)
    args, key, fragment = {**FIXED_INPUT, **HELD_INPUT}[attack]
    before = sorted(tmp_path.rglob("*"))

    code = main(["validate", "--config", str(folder / "exp.yaml"), *args])

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if key in line]
    assert code == 2 and len(lines) == 1, err
    assert fragment in lines[0], err
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    "command",
    [
        ["rollback", "--experiment", "x", "--to", "../../../etc"],
        ["archive-node", "--experiment", "x", "--node", "../x", "--reason", "r"],
        ["compare", "--experiment", "x", "--control", "../x"],
        ["compare", "--experiment", "x", "--control", "/abs/x"],
        ["finalize", "--experiment", "./x"],
    ],
    ids=["rollback-to-a-path", "archive-a-path", "compare-a-relative", "compare-absolute", "dot"],
)
def test_a_path_where_a_name_or_id_goes_is_refused_and_writes_nothing(command, tmp_path, capsys):
    """Held on main: the remaining commands that take a name or an id (`--to`, `--node`,
    `--control`), each given a path, end in one line and write nothing; run, resume, eval,
    fork and compare's `--experiment` are `tests/test_cli.py`'s and round 12's."""
    home = tmp_path / "h"
    home.mkdir()

    code = main([*command, "--home", str(home)])

    [line] = capsys.readouterr().err.splitlines()
    assert code == 2 and line.startswith("error:")
    assert list(tmp_path.rglob("*")) == [home]
