"""A misbehaving endpoint behind the real gateway: every fault of the endpoint (or of the
gateway itself) is the infrastructure's, recorded with its cause in the run's usage
(`RunUsage.faults`, `last_fault`) and the call log (`fault`), and the gateway keeps serving.

The real OpenAI SDK is the client; the endpoint is a raw socket server on loopback
(`misbehaving_endpoint.py`), so it can lie as an endpoint would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx2
import openai
import pytest

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.gateway import Gateway, Upstream
from tests.gateway.conftest import USER, log_lines, openai_client
from tests.gateway.misbehaving_endpoint import (
    MisbehavingEndpoint,
    answer,
    chat_reply,
    chunked_endless,
    endless,
    gzip_bomb,
    reset,
    sse,
    trickle,
)

TIMEOUT = 1.0
"""The upstream's deadline (`llm.timeout`) in these tests."""
DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture(scope="module")
def endpoint() -> Iterator[MisbehavingEndpoint]:
    with MisbehavingEndpoint() as running:
        yield running


@pytest.fixture(autouse=True)
def behaves_again(endpoint: MisbehavingEndpoint) -> Iterator[None]:
    yield
    endpoint.behaviour = answer()


def _grant(
    gateway: Gateway, endpoint: MisbehavingEndpoint, run_id: str = "r", timeout: float = TIMEOUT
) -> str:
    upstream = Upstream(endpoint.url, "chat", None, timeout=timeout)
    return gateway.grant(experiment="x", role="target", run_id=run_id, upstream=upstream)


def _call(gateway: Gateway, token: str):
    return openai_client(gateway, token).chat.completions.create(model="m", messages=USER)


def _still_serves(gateway: Gateway, endpoint: MisbehavingEndpoint) -> None:
    """After the fault, the same gateway answers the next call of a well-behaved endpoint."""
    endpoint.behaviour = answer()
    token = _grant(gateway, endpoint, "after")
    assert _call(gateway, token).choices[0].message.content == "spam"
    assert gateway.revoke(token).last_fault is None


def _calling(function: dict | None) -> dict:
    """A chat answer whose one tool call holds `function` (None: has none)."""
    call = {"id": "c1", "type": "function"} | ({"function": function} if function else {})
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return chat_reply(None) | {"choices": [{"index": 0, "message": message}]}


WHOLE_FAULTS = {
    "http-503": (answer(503, {"error": {"message": "down"}}), 503, "answered HTTP 503"),
    "http-429": (answer(429, {"error": {"message": "slow down"}}), 429, "answered HTTP 429"),
    "connection-reset": (reset, 502, "failed: "),
    "trickle-past-the-timeout": (trickle(0.3), 504, f"did not answer within {TIMEOUT:g} s"),
    "malformed-json": (answer(200, b'{"choices": [{"mess'), 502, "not valid JSON"),
    "no-choices": (
        answer(200, {"id": "x", "usage": {}}),
        502,
        "wrong shape for its API (no choices)",
    ),
    "no-content": (answer(200, chat_reply(None)), 502, "no content and no tool calls"),
    "negative-usage": (
        answer(200, chat_reply(usage={"prompt_tokens": -5, "completion_tokens": 2})),
        502,
        "usage prompt_tokens = -5, not a count of tokens",
    ),
    "absurd-usage": (
        answer(200, chat_reply(usage={"prompt_tokens": 1, "completion_tokens": 10**12})),
        502,
        f"usage completion_tokens = {10**12}",
    ),
    "string-usage": (
        answer(200, chat_reply(usage={"prompt_tokens": "7", "completion_tokens": 2})),
        502,
        "usage prompt_tokens = 7, not a count",
    ),
    "60-MB-answer": (endless(60 << 20), 502, "an answer of 62914560 bytes, over the bound"),
    "endless-chunked-answer": (chunked_endless(b"x" * 65536), 502, "over the bound of 8388608"),
    "deeply-nested-json": (
        answer(200, b'{"choices": [{"message": {"content": "spam"}}], "x": ' + DEEP + b"}"),
        502,
        "JSON nested deeper than 128 levels",
    ),
    "deeply-nested-error": (answer(400, DEEP), 502, "a body of JSON nested deeper"),
    "huge-header": (answer(200, X_Big="a" * 100_000), 502, "LineTooLong"),
    "a-thousand-headers": (
        answer(200, **{f"X_H{i}": "v" for i in range(1000)}),
        502,
        "got more than 100 headers",
    ),
    "gzip-bomb": (gzip_bomb(), 502, "a body encoded as 'gzip', though the gateway asked for none"),
    "redirect": (
        answer(307, b"", Location="http://127.0.0.1:9/v1/chat/completions"),
        502,
        "a redirect (HTTP 307)",
    ),
    "informational-status": (answer(103, b""), 502, "an informational status (HTTP 103)"),
    "tool-calls-not-a-list": (
        answer(200, chat_reply(None) | {"choices": [{"message": {"tool_calls": "zzz"}}]}),
        502,
        "tool_calls that are not a list of objects",
    ),
    "garbage-status-line": (lambda conn: conn.sendall(b"HELLO\r\n\r\n") and False, 502, "failed"),
    "tool-call-arguments-not-a-string": (
        answer(200, _calling({"name": "bash", "arguments": {"command": "ls"}})),
        502,
        "a tool call without a function whose name and arguments are strings",
    ),
    "tool-call-without-a-function": (
        answer(200, _calling(None)),
        502,
        "a tool call without a function",
    ),
    "a-lone-surrogate-in-the-content": (
        answer(200, json.dumps(chat_reply("sp\ud800am")).encode()),
        502,
        "a string with a lone surrogate, not Unicode text",
    ),
    "a-second-choice-without-a-message": (
        answer(200, chat_reply() | {"choices": [chat_reply()["choices"][0], 5]}),
        502,
        "a choice without a message",
    ),
}


@pytest.mark.parametrize("fault", WHOLE_FAULTS, ids=list(WHOLE_FAULTS))
def test_an_endpoint_fault_is_recorded_with_its_cause_and_the_gateway_keeps_serving(
    fault, gateway, endpoint, log_path
):
    behaviour, status, cause = WHOLE_FAULTS[fault]
    endpoint.behaviour = behaviour
    token = _grant(gateway, endpoint)

    with pytest.raises(openai.APIStatusError) as failed:
        _call(gateway, token)

    used = gateway.revoke(token)
    assert failed.value.status_code == status
    assert used.failed == 1 and used.last_fault is not None, used
    assert cause in used.last_fault and used.faults == [used.last_fault]
    assert used.answered == 0  # no answer: the run's max_calls is not spent on it
    line = log_lines(log_path)[-1]
    assert line["fault"] == "endpoint" and cause in line["error"], line
    _still_serves(gateway, endpoint)


def test_a_content_length_shorter_than_the_body_does_not_poison_the_next_call(gateway, endpoint):
    """The answer is whole at its Content-Length, then 100 kB more follow on the keep-alive
    connection: reused, it would hand the next call garbage for a status line."""
    body = json.dumps(chat_reply()).encode()
    endpoint.behaviour = answer(200, body + b"x" * 100_000, Content_Length=str(len(body)))
    token = _grant(gateway, endpoint)

    assert _call(gateway, token).choices[0].message.content == "spam"
    endpoint.behaviour = answer()
    assert _call(gateway, token).choices[0].message.content == "spam"
    assert gateway.revoke(token).failed == 0


def test_a_content_length_longer_than_the_body_is_a_fault(gateway, endpoint):
    def short(conn) -> bool:
        answer(200, Content_Length="5000")(conn)
        return False  # then the endpoint hangs up

    endpoint.behaviour = short
    token = _grant(gateway, endpoint)

    with pytest.raises(openai.APIStatusError) as failed:
        _call(gateway, token)

    assert failed.value.status_code == 502
    assert "short of its Content-Length" in gateway.revoke(token).last_fault
    _still_serves(gateway, endpoint)


def test_an_answer_without_usage_counts_as_unknown_usage(gateway, endpoint, log_path):
    reply = {k: v for k, v in chat_reply().items() if k != "usage"}
    endpoint.behaviour = answer(200, reply)
    token = _grant(gateway, endpoint)

    assert _call(gateway, token).choices[0].message.content == "spam"
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.input_tokens, used.cost_usd) == (1, 0, 0, None)
    assert log_lines(log_path)[-1]["usage_unknown"] is True


def test_a_gateway_bug_is_the_infrastructures_fault(gateway, endpoint, log_path, monkeypatch):
    """Stands in for any bug of the gateway: its checking of an answer raises."""

    def broken(*args):
        raise KeyError("a bug")

    monkeypatch.setattr("flashrsi_dagster.gateway.proxy.answer_tokens", broken)
    token = _grant(gateway, endpoint)

    with pytest.raises(openai.InternalServerError):
        _call(gateway, token)

    used = gateway.revoke(token)
    assert used.last_fault == "the gateway's own error (KeyError)"
    assert log_lines(log_path)[-1]["fault"] == "gateway"
    monkeypatch.undo()
    _still_serves(gateway, endpoint)


def test_a_request_nested_too_deep_is_the_agents_error(gateway, endpoint):
    token = _grant(gateway, endpoint)

    with pytest.raises(openai.BadRequestError, match="nested deeper than 128"):
        openai_client(gateway, token).post(
            "/chat/completions", body={"model": "m", "x": json.loads(b"[" * 500 + b"]" * 500)},
            cast_to=object,
        )  # fmt: skip

    used = gateway.revoke(token)
    assert (used.failed, used.last_fault, len(used.refused)) == (0, None, 1)


# -- streams ---------------------------------------------------------------------------------


def _event(data: dict | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


DELTA = _event({"choices": [{"index": 0, "delta": {"content": "sp"}}]})


def _stream(gateway: Gateway, token: str) -> list:
    chunks = openai_client(gateway, token).chat.completions.create(
        model="m", messages=USER, stream=True
    )
    return list(chunks)


_CALL_DELTA = {"index": 0, "id": "c", "function": {"name": "bash", "arguments": {"a": 1}}}
STREAM_FAULTS = {
    "never-ends": (
        chunked_endless(DELTA, 0.05, "text/event-stream"),
        f"did not answer within {TIMEOUT:g} s",
    ),
    "garbage-event": (sse([DELTA, b"data: {garbage\n\n", _event("[DONE]")]), "not valid JSON"),
    "deeply-nested-event": (sse([DELTA, b"data: " + DEEP + b"\n\n"]), "nested deeper"),
    "event-that-never-ends": (
        chunked_endless(b"x" * 65536, 0, "text/event-stream"),
        "a stream event over 4194304 bytes",
    ),
    "negative-usage": (
        sse([_event({"choices": [], "usage": {"prompt_tokens": -9, "completion_tokens": 1}})]),
        "usage prompt_tokens = -9",
    ),
    "error-event": (
        sse(
            [DELTA, _event({"error": {"type": "overloaded", "message": "busy"}}), _event("[DONE]")]
        ),
        "reported an error in its stream: overloaded: busy",
    ),
    "cut-mid-stream": (sse([DELTA], end=False), "failed: IncompleteRead"),
    "no-data-event": (
        sse([b": ping\n\n", b"hello world\n\n", b"foo: bar\n\n"]),
        "a stream without one event of its API",
    ),
    "no-event-of-its-api": (
        sse([_event({"foo": 1}), _event({"object": "x"}), _event("[DONE]")]),
        "a stream without one event of its API",
    ),
    "lone-surrogate-in-a-delta": (
        sse([DELTA, _event('{"choices": [{"index": 0, "delta": {"content": "\\udfff"}}]}')]),
        "a string with a lone surrogate, not Unicode text",
    ),
    "delta-content-not-a-string": (
        sse([DELTA, _event({"choices": [{"index": 0, "delta": {"content": 5}}]})]),
        "a delta whose content is not a string",
    ),
    "tool-call-delta-arguments-an-object": (
        sse([_event({"choices": [{"index": 0, "delta": {"tool_calls": [_CALL_DELTA]}}]})]),
        "a tool call delta without a function of strings",
    ),
}


@pytest.mark.parametrize("fault", STREAM_FAULTS, ids=list(STREAM_FAULTS))
def test_a_stream_fault_ends_the_stream_with_its_cause_and_the_gateway_keeps_serving(
    fault, gateway, endpoint, log_path
):
    behaviour, cause = STREAM_FAULTS[fault]
    endpoint.behaviour = behaviour
    token = _grant(gateway, endpoint, timeout=TIMEOUT if fault == "never-ends" else 60)

    with pytest.raises(openai.APIError):
        _stream(gateway, token)

    used = gateway.revoke(token)
    assert used.failed == 1 and used.last_fault is not None and cause in used.last_fault, used
    assert used.answered == 0
    assert _logged_fault(log_path) == "endpoint"
    _still_serves(gateway, endpoint)


def _logged_fault(log_path) -> str | None:
    """The last call's `fault` in the log: the run's ledger has it before the client sees the
    error event; the line may follow a moment later (the stream is read to its end)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = log_lines(log_path) if log_path.exists() else []
        if lines and lines[-1]["fault"] is not None:
            return lines[-1]["fault"]
        time.sleep(0.05)
    return None


def test_an_answer_of_the_other_kind_than_asked_is_a_fault(gateway, endpoint):
    """A stream for a whole answer, or the reverse: the client's parser would break on it."""
    endpoint.behaviour = sse([DELTA, _event("[DONE]")])
    token = _grant(gateway, endpoint)
    with pytest.raises(openai.InternalServerError, match="a stream to a request for a whole"):
        _call(gateway, token)

    endpoint.behaviour = answer()
    with pytest.raises(openai.InternalServerError, match="a whole answer to a request for a"):
        _stream(gateway, token)

    assert gateway.revoke(token).failed == 2
    _still_serves(gateway, endpoint)


def test_a_stream_over_its_bound_is_cut(endpoint, log_path):
    with Gateway(log_path=log_path, max_stream_bytes=1 << 20) as gateway:
        endpoint.behaviour = chunked_endless(DELTA, 0, "text/event-stream")
        token = _grant(gateway, endpoint, timeout=60)

        with pytest.raises(openai.APIError, match="stream was cut"):
            _stream(gateway, token)

        assert "a stream over the bound of 1048576 bytes" in gateway.revoke(token).last_fault
        _still_serves(gateway, endpoint)


def test_the_bounds_hold_for_a_clean_call_just_under_them(endpoint):
    with Gateway(max_answer_bytes=1 << 20) as gateway:
        endpoint.behaviour = answer(200, chat_reply("s" * ((1 << 20) - 400)))
        token = _grant(gateway, endpoint)

        assert len(_call(gateway, token).choices[0].message.content) == (1 << 20) - 400
        assert gateway.revoke(token).failed == 0


def test_a_stream_cut_before_its_usage_leaves_the_roles_cost_known(gateway, endpoint):
    """A failed call used nothing the gateway could see: zero, not unknown (an unknown cost
    would make a USD cap refuse every later call of the role)."""
    endpoint.behaviour = sse([DELTA], end=False)
    price = PriceConfig(input_per_mtok=1.0, output_per_mtok=2.0)
    upstream = Upstream(endpoint.url, "chat", None, price=price, timeout=60)
    token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)

    with pytest.raises(openai.APIError):
        _stream(gateway, token)

    assert gateway.revoke(token).cost_usd == 0.0


@pytest.mark.parametrize(
    "headers",
    [{"X_Null": "a\0b"}, {"X_Big": "a" * 20_000}, {f"X_H{i}": "a" * 3000 for i in range(8)}],
    ids=["a-nul-in-a-value", "a-20-KB-header", "24-KB-of-headers"],
)
def test_headers_a_client_would_refuse_are_not_relayed(headers, gateway, endpoint):
    """A NUL in a header makes the OpenAI SDK drop the connection, a head over 16 KB makes
    Node's (Claude Code's) refuse the answer: relayed, the gateway would count the call answered
    while the agent got an error. They are dropped; the answer itself goes through."""
    endpoint.behaviour = answer(200, None, **headers)
    token = _grant(gateway, endpoint)
    response = httpx2.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "m", "messages": USER},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )

    assert response.json()["choices"][0]["message"]["content"] == "spam"
    assert response.headers["content-type"] == "application/json"
    head = sum(len(n) + len(v) + 4 for n, v in response.headers.raw)
    assert head < 16 << 10 and "x-null" not in response.headers, response.headers
    assert _call(gateway, token).choices[0].message.content == "spam"
    assert gateway.revoke(token).answered == 2


def test_a_checked_answer_is_relayed_as_json_whatever_its_content_type_said(gateway, endpoint):
    """Media types are case-insensitive, and a client may trust the header over the body: an
    answer the gateway checked is JSON to the client, and a stream is a stream in any case."""
    endpoint.behaviour = answer(200, None, Content_Type="text/html")
    token = _grant(gateway, endpoint)
    response = httpx2.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "m", "messages": USER},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert response.headers.get_list("content-type") == ["application/json"]

    endpoint.behaviour = sse([DELTA, _event("[DONE]")], content_type="Text/Event-Stream")
    assert [c.choices[0].delta.content for c in _stream(gateway, token)] == ["sp"]
    assert gateway.revoke(token).answered == 2


@pytest.mark.parametrize(
    ("api", "events"),
    [
        ("responses", [{"type": "response.created", "response": {"id": "r", "output": []}}]),
        ("anthropic", [{"type": "message_start", "message": {"id": "m", "content": []}}]),
    ],
)
def test_a_stream_ended_without_its_closing_event_is_a_fault(gateway, endpoint, api, events):
    """Their SDKs fail a Responses stream without `response.completed`, a Messages stream
    without `message_stop`: ended cleanly all the same, it is the endpoint's fault."""
    endpoint.behaviour = sse([_event(e, e["type"]) for e in events])
    upstream = Upstream(endpoint.url, api, None, timeout=TIMEOUT)  # type: ignore[arg-type]
    token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
    path = "/v1/responses" if api == "responses" else "/v1/messages"
    body = {
        "model": "m",
        "stream": True,
        "max_tokens": 9,
        "input" if api == "responses" else "messages": USER,
    }
    with (
        httpx2.stream(
            "POST", f"{gateway.url}{path}", json=body, timeout=60,
            headers={"Authorization": f"Bearer {token}", "x-api-key": token},
        ) as response,
        pytest.raises(httpx2.RemoteProtocolError),  # the error event, then the cut
    ):  # fmt: skip
        b"".join(response.iter_raw())

    used = gateway.revoke(token)
    assert "ended without its closing event" in (used.last_fault or ""), used
    assert used.failed == 1 and used.answered == 0


def _closing_the_connection(events: list[bytes]):
    """An HTTP/1.0 stream: no length, no chunks, its end is the connection's close."""

    def write(conn) -> bool:
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        conn.sendall(b"".join(events))
        return False

    return write


def test_a_chat_stream_cut_between_two_events_is_a_fault(gateway, endpoint):
    """Without a length or chunks, a connection lost between two events looks like the end
    of the body: a chat stream with neither `[DONE]` nor a `finish_reason` was cut, and the
    SDK would give the harness half an answer as a whole one."""
    endpoint.behaviour = _closing_the_connection([DELTA])
    token = _grant(gateway, endpoint, timeout=60)

    with pytest.raises(openai.APIError, match="stream was cut"):
        _stream(gateway, token)

    used = gateway.revoke(token)
    assert "a chat stream that ended without [DONE] or a finish_reason" in (used.last_fault or "")
    assert used.failed == 1 and used.answered == 0
    finished = _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    for ending in ([DELTA, _event("[DONE]")], [DELTA, finished]):
        endpoint.behaviour = _closing_the_connection(ending)
        token = _grant(gateway, endpoint, timeout=60)
        assert next(c.choices[0].delta.content for c in _stream(gateway, token)) == "sp"
        assert gateway.revoke(token).answered == 1


USAGE = {"input_tokens": 1, "output_tokens": 1}


@pytest.mark.parametrize(
    ("api", "reply", "cause"),
    [
        ("responses", {"output": [1]}, "an item of output that is not an object with a type"),
        ("responses", {"output": [{"id": "o"}]}, "not an object with a type"),
        (
            "responses",
            {"output": [{"type": "function_call", "call_id": "c", "name": "bash"}]},
            "a 'function_call' item of output without its strings",
        ),
        (
            "responses",
            {"output": [{"type": "message", "content": [{"type": "output_text", "text": 7}]}]},
            "a 'output_text' item of a message without its strings",
        ),
        ("anthropic", {"content": ["spam"]}, "an item of content that is not an object"),
        ("anthropic", {"content": [{"type": "text"}]}, "a 'text' item of content without"),
    ],
    ids=[
        "responses-output-of-ints",
        "responses-item-without-a-type",
        "responses-call-without-arguments",
        "responses-text-not-a-string",
        "messages-content-of-strings",
        "messages-text-block-without-text",
    ],
)
def test_an_answer_whose_items_an_sdk_cannot_read_is_a_fault(gateway, endpoint, api, reply, cause):
    """The SDKs read each item's `type` and strings without checking them (`output_text`,
    `block.text`): an answer holding anything else would fail the harness, not the model."""
    endpoint.behaviour = answer(200, {"id": "x", "usage": USAGE} | reply)
    upstream = Upstream(endpoint.url, api, None, timeout=TIMEOUT)  # type: ignore[arg-type]
    token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
    path = "/v1/responses" if api == "responses" else "/v1/messages"
    body = {"model": "m", "max_tokens": 9, "input" if api == "responses" else "messages": USER}
    response = httpx2.post(
        f"{gateway.url}{path}", json=body, timeout=60,
        headers={"Authorization": f"Bearer {token}", "x-api-key": token},
    )  # fmt: skip

    used = gateway.revoke(token)
    assert response.status_code == 502
    assert cause in (used.last_fault or ""), used
    assert used.failed == 1 and used.answered == 0


CREATED = {"type": "response.created", "response": {"id": "r", "output": []}}
STARTED = {"type": "message_start", "message": {"id": "m", "content": []}}


@pytest.mark.parametrize(
    ("api", "events", "cause"),
    [
        (
            "responses",
            [CREATED, {"type": "response.output_text.delta", "delta": 5}],
            "a 'response.output_text.delta' event whose delta is not a string",
        ),
        (
            "responses",
            [CREATED, {"type": "response.output_item.added", "item": 5}],
            "an item of a stream event that is not an object with a type",
        ),
        (
            "anthropic",
            [
                STARTED,
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            ],
            "a 'text' item of a stream event without its strings",
        ),
        (
            "anthropic",
            [STARTED, {"type": "content_block_delta", "delta": {"type": "text_delta", "text": 5}}],
            "a 'text_delta' without its text",
        ),
    ],
    ids=["responses-delta", "responses-item", "messages-block", "messages-delta"],
)
def test_a_stream_event_an_sdk_cannot_read_is_a_fault(gateway, endpoint, api, events, cause):
    endpoint.behaviour = sse([_event(e, e["type"]) for e in events])
    upstream = Upstream(endpoint.url, api, None, timeout=TIMEOUT)  # type: ignore[arg-type]
    token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
    path = "/v1/responses" if api == "responses" else "/v1/messages"
    body = {"model": "m", "stream": True, "max_tokens": 9}
    body["input" if api == "responses" else "messages"] = USER
    with (
        httpx2.stream(
            "POST", f"{gateway.url}{path}", json=body, timeout=60,
            headers={"Authorization": f"Bearer {token}", "x-api-key": token},
        ) as response,
        pytest.raises(httpx2.RemoteProtocolError),  # the error event, then the cut
    ):  # fmt: skip
        b"".join(response.iter_raw())

    used = gateway.revoke(token)
    assert cause in (used.last_fault or ""), used
    assert used.failed == 1 and used.answered == 0
