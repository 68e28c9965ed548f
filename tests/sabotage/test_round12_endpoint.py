"""Sabotage, twelfth red-team pass (issue 22, items 3-7): a misbehaving model endpoint behind
the real gateway, on the chat, Responses and Messages paths (the Codex and Claude Code
adapters'), and a hostile operator's input to the CLI.

The endpoint lies on the wire (`tests/gateway/misbehaving_endpoint.py`): chunked encoding it
breaks, streams it ends or stalls, bytes that are not UTF-8 where a client decodes them, JSON
only Python's parser reads (`NaN`, a key twice, a byte order mark, UTF-16, surrogates encoded
as UTF-8), status codes every client retries. Each fault must be the infrastructure's, with its
cause in the run's accounts (`RunUsage.last_fault`: a run that did not succeed after it is an
infrastructure fault, rerun by the ladder and counted in the fixed denominator), and the
gateway keeps serving. The operator gives booleans at numbers' keys, request fields that are
not JSON, an empty home, paths for names, homes on /proc. The home's PostgreSQL fails over to
a node that only reads, or ends idle sessions; a driver is frozen (SIGSTOP) and resumed beside.

Each attack is one test. One that got through on main was written here first, failing, then
closed in the gateway (`gateway/answers.py`, `streams.py`, `proxy.py`), the config
(`config/models.py`, `config/overrides.py`) or the database connections
(`deployment/reconnect.py`); the others held on main and stay as tests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import time
from contextlib import closing

import dagster as dg
import httpx2
import openai
import pytest
import sqlalchemy as sa

from flashrsi_dagster.cli import main
from flashrsi_dagster.deployment import reconnect
from flashrsi_dagster.gateway import Gateway, Upstream
from tests.conftest import PATIENCE, VALID
from tests.dagster_instances import postgres_settings
from tests.deployment.test_kill_resume import FLASHRSI, _args, _wait_until_gone
from tests.deployment.test_storage import JOB
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import (
    MisbehavingEndpoint,
    answer,
    chat_reply,
    head,
    sse,
)
from tests.postgres import connect, fresh_database, needs_postgres, terminate

TIMEOUT = 2.0
"""The upstream's deadline (`llm.timeout`) for the attacks that stall."""
GOOD = json.dumps(chat_reply()).encode()


def _grant(gateway: Gateway, endpoint: MisbehavingEndpoint, api: str = "chat") -> str:
    upstream = Upstream(endpoint.url, api, None, timeout=TIMEOUT)  # type: ignore[arg-type]
    return gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)


def _still_serves(gateway: Gateway, endpoint: MisbehavingEndpoint) -> None:
    endpoint.behaviour = answer()
    token = _grant(gateway, endpoint)
    reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "spam"
    assert gateway.revoke(token).last_fault is None


def _charged_to_the_endpoint(
    gateway: Gateway, endpoint: MisbehavingEndpoint, behaviour, cause: str, stream: bool = False
) -> None:
    """A chat call (`stream`: streamed) meeting `behaviour` fails; the gateway records it as
    one fault of the endpoint naming `cause`, no answer, and serves the next call."""
    endpoint.behaviour = behaviour
    chat = openai_client(gateway, token := _grant(gateway, endpoint)).chat.completions

    with pytest.raises(openai.APIError if stream else openai.APIStatusError):
        if stream:
            list(chat.create(model="m", messages=USER, stream=True))
        else:
            chat.create(model="m", messages=USER)

    used = gateway.revoke(token)
    assert used.failed == 1 and cause in (used.last_fault or ""), used
    assert used.answered == 0
    _still_serves(gateway, endpoint)


def _raw(data: bytes, *, keep: bool = False):
    """Writes `data` as it is (a head and a body the test wrote byte by byte)."""

    def write(conn: socket.socket) -> bool:
        conn.sendall(data)
        return keep

    return write


def _then(data: bytes, ending: str):
    """Writes `data`, then resets the connection (`reset`) or stalls past the deadline."""

    def write(conn: socket.socket) -> bool:
        conn.sendall(data)
        if ending == "reset":
            time.sleep(0.2)  # the head read first: the reset lands mid-body
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            time.sleep(TIMEOUT * 3)
        return False

    return write


def _continues(conn: socket.socket) -> bool:
    """`100 Continue` after `100 Continue`, never an answer (until the peer goes away)."""
    deadline = time.monotonic() + TIMEOUT * 5
    try:
        while time.monotonic() < deadline:
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 100)
            time.sleep(0.01)
    except OSError:
        pass
    return False


JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
STREAM_HEAD = head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _with(old: bytes, new: bytes) -> bytes:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


# -- whole answers ----------------------------------------------------------------------------

FIXED_WHOLE = {
    # got through on main: relayed as answered, charged to the candidate
    "utf8-encoded-surrogate": (answer(200, _with(b"spam", b"sp\xed\xa0\x80am")), "not UTF-8"),
    "byte-order-mark": (answer(200, b"\xef\xbb\xbf" + GOOD), "byte order mark"),
    "utf-16": (answer(200, GOOD.decode().encode("utf-16")), "not UTF-8"),
    "nan": (answer(200, _with(b'"created": 0', b'"created": NaN')), "NaN, which is not JSON"),
    "infinity": (answer(200, _with(b'"created": 0', b'"x": -Infinity')), "-Infinity, which"),
    "a-key-twice-first-of-another-type": (
        answer(200, b'{"choices": 5, ' + GOOD[1:]),
        "the key 'choices' twice",
    ),
    "content-twice": (
        answer(200, _with(b'"content": "spam"', b'"content": 5, "content": "spam"')),
        "the key 'content' twice",
    ),
    "http-408": (answer(408, {"error": {"message": "request timeout"}}), "answered HTTP 408"),
    "http-409": (answer(409, {"error": {"message": "conflict"}}), "answered HTTP 409"),
}
HELD_WHOLE = {
    # tried, held on main
    "chunk-size-not-hex": (
        _raw(JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + GOOD + b"\r\n0\r\n\r\n"),
        "IncompleteRead",
    ),
    "chunk-longer-than-its-data": (
        _raw(JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\nfffff\r\n" + GOOD + b"\r\n"),
        "IncompleteRead",
    ),
    "chunked-without-its-last-chunk": (
        _raw(JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(GOOD)),
        "IncompleteRead",
    ),
    "reset-mid-body": (
        _then(JSON_HEAD + b"Content-Length: %d\r\n\r\n" % len(GOOD) + GOOD[:20], "reset"),
        "ConnectionResetError",
    ),
    "head-then-stall": (
        _then(JSON_HEAD + b"Content-Length: 100\r\n\r\n", "stall"),
        f"did not answer within {TIMEOUT:g} s",
    ),
    "http-1.0-body-cut": (
        _raw(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + GOOD[:30]),
        "not valid JSON",
    ),
    "an-error-object-in-a-200": (
        answer(200, {"error": {"message": "overloaded", "type": "server_error"}}),
        "an error object in a 2xx answer",
    ),
    "usage-a-float": (
        answer(200, chat_reply(usage={"prompt_tokens": 7.0, "completion_tokens": 2})),
        "prompt_tokens = 7.0, not a count",
    ),
    "usage-a-boolean": (
        answer(200, chat_reply(usage={"prompt_tokens": True, "completion_tokens": 2})),
        "prompt_tokens = True, not a count",
    ),
    "usage-a-list": (answer(200, chat_reply(usage=[1, 2])), "usage that is a JSON list"),
    "usage-of-40-digits": (
        answer(200, chat_reply(usage={"prompt_tokens": 10**40, "completion_tokens": 2})),
        "not a count of tokens",
    ),
    "redirect-to-itself": (
        answer(301, b"", Location="/v1/chat/completions"),
        "a redirect (HTTP 301)",
    ),
    "redirect-to-another-host": (
        answer(302, b"", Location="http://example.com/v1/chat/completions"),
        "a redirect (HTTP 302)",
    ),
    "deflate": (answer(200, GOOD, Content_Encoding="deflate"), "encoded as 'deflate'"),
    "transfer-encoding-gzip-chunked": (
        _raw(JSON_HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + _chunk(GOOD) + b"0\r\n\r\n"),
        "not valid JSON",
    ),
    "two-content-lengths": (
        _raw(JSON_HEAD + b"Content-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(GOOD) + GOOD),
        "not valid JSON",
    ),
    "negative-content-length-kept-open": (
        _raw(JSON_HEAD + b"Content-Length: -1\r\n\r\n" + GOOD, keep=True),
        f"did not answer within {TIMEOUT:g} s",
    ),
    "http-204": (answer(204, b""), "not valid JSON"),
    "status-600": (answer(600, {"error": {"message": "x"}}), "answered HTTP 600"),
    "endless-100-continue": (_continues, f"did not answer within {TIMEOUT:g} s"),
    "status-099": (_raw(b"HTTP/1.1 099 X\r\nContent-Length: 0\r\n\r\n"), "BadStatusLine"),
    "a-reason-phrase-of-70-kb": (
        _raw(b"HTTP/1.1 200 " + b"x" * 70_000 + b"\r\nContent-Length: 0\r\n\r\n"),
        "LineTooLong",
    ),
    "a-body-without-a-head": (_raw(GOOD), "BadStatusLine"),
    "429-retry-after-a-billion-seconds": (
        answer(429, {"error": {"message": "slow down"}}, Retry_After="999999999"),
        "answered HTTP 429",
    ),
}


@pytest.mark.parametrize("attack", [*FIXED_WHOLE, *HELD_WHOLE])
def test_a_whole_answer_the_endpoint_breaks_is_the_infrastructures_fault(attack, gateway, endpoint):
    """Attack: a chat answer broken on the wire, in its encoding or its JSON. Got through on
    main: JSON that only Python's parser reads (UTF-8 encoded surrogates, which the harness
    then cannot write out; a byte order mark or UTF-16, which Rust's serde and a UTF-8
    decoder refuse; `NaN`/`Infinity`, which JavaScript's and Rust's parsers refuse; a key
    twice, which serde refuses and a first-wins parser reads otherwise than the gateway
    checked) was relayed as an answer, and HTTP 408/409, which every client of the project
    retries as the endpoint's, was relayed as the agent's error. Stops it: `endpoint_json`
    reads an answer as strict UTF-8 without a BOM, with no constant and no key twice, and 408,
    409 join 429 and 5xx as faults."""
    behaviour, cause = {**FIXED_WHOLE, **HELD_WHOLE}[attack]
    _charged_to_the_endpoint(gateway, endpoint, behaviour, cause)


CALL = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}
RELAYED_WHOLE = {
    "tool-call-arguments-not-json": answer(
        200,
        chat_reply(None)
        | {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [CALL]}}]},
    ),
    "http-1.0-close-delimited": _raw(
        b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + GOOD
    ),
    "100-continue-first": _raw(
        b"HTTP/1.1 100 Continue\r\n\r\n"
        + JSON_HEAD
        + b"Content-Length: %d\r\n\r\n" % len(GOOD)
        + GOOD
    ),
    "a-header-of-latin-1-bytes": _raw(
        JSON_HEAD + b"X-A: \xff\xfe\r\nContent-Length: %d\r\n\r\n" % len(GOOD) + GOOD
    ),
}


@pytest.mark.parametrize("answer_", RELAYED_WHOLE)
def test_an_odd_but_readable_answer_is_relayed_as_the_models(answer_, gateway, endpoint):
    """Held on main, and by design: a tool call whose `arguments` string is not JSON is what
    the model wrote (models do; a harness answers it with an error, as the Codex core does),
    not the endpoint's fault; a body ended by closing the connection, a `100 Continue`
    before the answer, a header of Latin-1 bytes are HTTP a client reads."""
    endpoint.behaviour = RELAYED_WHOLE[answer_]
    token = _grant(gateway, endpoint)

    reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

    message = reply.choices[0].message
    assert message.content == "spam" or message.tool_calls[0].function.arguments == "{not json"
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


# -- streams ----------------------------------------------------------------------------------


def _event(data: dict | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


DELTA = _event({"choices": [{"index": 0, "delta": {"content": "sp"}}]})
DONE = _event("[DONE]")


def _delta(raw: bytes) -> bytes:
    return b'data: {"choices": [{"index": 0, "delta": {"content": "' + raw + b'"}}]}\n\n'


FIXED_STREAMS = {
    # got through on main: the OpenAI SDK decodes every line as strict UTF-8 and raised
    # UnicodeDecodeError in the harness; or JSON only Python reads
    "a-comment-not-utf-8": (sse([DELTA, b": \xff\xfe\n\n", DONE]), "not UTF-8 text"),
    "an-event-name-not-utf-8": (sse([b"event: \xff\n" + DELTA, DONE]), "not UTF-8 text"),
    "utf8-encoded-surrogate": (sse([DELTA, _delta(b"\xed\xa0\x80"), DONE]), "not UTF-8"),
    "nan-in-an-event": (
        sse([DELTA, b'data: {"choices": [], "x": NaN}\n\n', DONE]),
        "NaN, which is not JSON",
    ),
    "a-key-twice-in-an-event": (
        sse([b'data: {"choices": 5, ' + DELTA[7:], DONE]),
        "the key 'choices' twice",
    ),
}
HELD_STREAMS = {
    "data-not-utf-8": (sse([DELTA, _delta(b"\xff"), DONE]), "not UTF-8 text"),
    "ended-cleanly-without-done": (sse([DELTA]), "without [DONE] or a finish_reason"),
    "head-then-stall": (_then(STREAM_HEAD, "stall"), f"did not answer within {TIMEOUT:g} s"),
    "a-chunk-size-not-hex": (_raw(STREAM_HEAD + _chunk(DELTA) + b"zz\r\n"), "IncompleteRead"),
    "reset-mid-stream": (_then(STREAM_HEAD + _chunk(DELTA), "reset"), "ConnectionResetError"),
    "garbage-after-done": (sse([DELTA, DONE, b"data: {garbage\n\n"]), "not valid JSON"),
    "only-an-error-event": (sse([_event({"error": {"message": "x"}})]), "reported an error"),
}


@pytest.mark.parametrize("attack", [*FIXED_STREAMS, *HELD_STREAMS])
def test_a_stream_the_endpoint_breaks_is_the_infrastructures_fault(attack, gateway, endpoint):
    """Attack: a chat stream broken on the wire. Got through on main: a line that is not
    UTF-8 outside an event's data (a comment, an event name) was relayed, and the OpenAI SDK
    raised `UnicodeDecodeError` in the harness (the call counted answered); an event's JSON
    that only Python reads (as for whole answers) was relayed. Stops it: `StreamMeter` checks
    each whole event is UTF-8 text, and reads its data with `endpoint_json`."""
    behaviour, cause = {**FIXED_STREAMS, **HELD_STREAMS}[attack]
    _charged_to_the_endpoint(gateway, endpoint, behaviour, cause, stream=True)


def test_a_tool_call_streamed_with_arguments_not_json_is_relayed(gateway, endpoint):
    call = {"index": 0, "id": "c", "type": "function", "function": CALL["function"]}
    finished = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    endpoint.behaviour = sse(
        [
            _event({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
            _event(finished),
            DONE,
        ]
    )
    token = _grant(gateway, endpoint)

    chunks = list(
        openai_client(gateway, token).chat.completions.create(model="m", messages=USER, stream=True)
    )

    assert chunks[0].choices[0].delta.tool_calls[0].function.arguments == "{not json"
    assert gateway.revoke(token).last_fault is None


# -- the Responses and Messages paths (the Codex and Claude Code adapters) ---------------------

RESPONSE = {
    "id": "r",
    "object": "response",
    "output": [{"type": "message", "content": [{"type": "output_text", "text": "spam"}]}],
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
MESSAGE = {
    "id": "m",
    "type": "message",
    "content": [{"type": "text", "text": "spam"}],
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
OTHER_APIS = {
    "responses": ("/v1/responses", "input", RESPONSE),
    "anthropic": ("/v1/messages", "messages", MESSAGE),
}


def _post(gateway: Gateway, token: str, api: str, stream: bool = False):
    path, field, _ = OTHER_APIS[api]
    body = {"model": "m", "max_tokens": 9, field: USER} | ({"stream": True} if stream else {})
    headers = {"Authorization": f"Bearer {token}", "x-api-key": token}
    if not stream:
        return httpx2.post(f"{gateway.url}{path}", json=body, headers=headers, timeout=60)
    with httpx2.stream(
        "POST", f"{gateway.url}{path}", json=body, headers=headers, timeout=60
    ) as response:
        try:
            return b"".join(response.iter_raw())
        except httpx2.RemoteProtocolError:  # the error event, then the cut
            return None


def _broken(reply: dict, how: str) -> bytes:
    text = json.dumps(reply).encode()
    return {
        "nan": text[:-1] + b', "temperature": NaN}',
        "a-key-twice": b'{"id": 5, ' + text[1:],
        "byte-order-mark": b"\xef\xbb\xbf" + text,
    }[how]


@pytest.mark.parametrize("how", ["nan", "a-key-twice", "byte-order-mark"])
@pytest.mark.parametrize("api", OTHER_APIS)
def test_json_only_python_reads_is_a_fault_on_the_other_paths(api, how, gateway, endpoint):
    """Attack: the same JSON on the paths Claude Code (Node's `JSON.parse`) and Codex (Rust's
    serde) read, where it fails the whole call in the harness. Got through on main."""
    endpoint.behaviour = answer(200, _broken(OTHER_APIS[api][2], how))
    token = _grant(gateway, endpoint, api)

    response = _post(gateway, token, api)

    used = gateway.revoke(token)
    assert response.status_code == 502 and used.failed == 1, used
    assert "not valid JSON" in (used.last_fault or "")


@pytest.mark.parametrize("api", OTHER_APIS)
def test_a_stream_line_not_utf_8_is_a_fault_on_the_other_paths(api, gateway, endpoint):
    """Attack: a comment of bytes that are not UTF-8 inside a Responses or Messages stream
    (their SDKs decode every line). Got through on main."""
    started = {
        "responses": {"type": "response.created", "response": {"id": "r", "output": []}},
        "anthropic": {"type": "message_start", "message": {"id": "m", "content": []}},
    }[api]
    first = _event(started, started["type"])
    endpoint.behaviour = sse([first, b": \xc3\x28\n\n"])
    token = _grant(gateway, endpoint, api)

    _post(gateway, token, api, stream=True)

    used = gateway.revoke(token)
    assert "a stream event that is not UTF-8 text" in (used.last_fault or ""), used
    assert used.failed == 1 and used.answered == 0


def test_a_responses_stream_that_ends_failed_is_the_endpoints_fault(gateway, endpoint):
    """Attack: a Responses stream that ends with `response.failed` and a `server_error` (the
    whole answer's counterpart, a 200 holding an error object, was already a fault). Got
    through on main: the closing event ended the stream cleanly, the call counted answered,
    and Codex's failed call was the candidate's. Stops it: `StreamMeter` reports a
    `response.failed` event with its response's error."""
    created = {"type": "response.created", "response": {"id": "r", "output": []}}
    error = {"code": "server_error", "message": "boom"}
    response = {"id": "r", "status": "failed", "output": [], "error": error}
    failed = {"type": "response.failed", "response": response}
    endpoint.behaviour = sse([_event(created, created["type"]), _event(failed, failed["type"])])
    token = _grant(gateway, endpoint, "responses")

    _post(gateway, token, "responses", stream=True)

    used = gateway.revoke(token)
    assert used.last_fault == (
        "the upstream reported a failed response in its stream: server_error: boom"
    ), used
    assert used.failed == 1 and used.answered == 0


@pytest.mark.parametrize("api", OTHER_APIS)
def test_a_clean_answer_still_passes_on_the_other_paths(api, gateway, endpoint):
    """The other way round: the stricter reading refuses nothing a real endpoint sends (a
    Unicode text, escaped or not, and nested objects)."""
    reply = json.loads(json.dumps(OTHER_APIS[api][2]).replace("spam", "sp\\u00e9am \u2603"))
    endpoint.behaviour = answer(200, json.dumps(reply, ensure_ascii=False).encode())
    token = _grant(gateway, endpoint, api)

    response = _post(gateway, token, api)

    assert response.status_code == 200, response.text
    assert "\u2603" in response.text
    assert gateway.revoke(token).answered == 1


# -- the operator's input ---------------------------------------------------------------------

FIXED_INPUT = {
    # got through on main: validated, then ran with what the user did not mean
    "a-boolean-count": (["--algorithm.max_steps", "yes"], "algorithm.max_steps", "valid integer"),
    "a-boolean-seed": (["--experiment.seed", "true"], "experiment.seed", "valid integer"),
    "a-boolean-timeout": (["--agent.timeout", "on"], "agent.timeout", "valid number"),
    "a-boolean-temperature": (
        ["--agent.llm.temperature", "false"],
        "agent.llm.temperature",
        "valid number",
    ),
    "extra-body-a-date": (
        ["--agent.llm.extra_body", "{since: 2024-01-01}"],
        "agent.llm.extra_body",
        "not JSON: Object of type date",
    ),
    "extra-body-a-set": (
        ["--agent.llm.extra_body", "{stop: !!set {a}}"],
        "agent.llm.extra_body",
        "not JSON: Object of type set",
    ),
    "extra-body-nan": (
        ["--agent.llm.extra_body", "{top_k: .nan}"],
        "agent.llm.extra_body",
        "not JSON: Out of range float values",
    ),
    "an-empty-home": (["--experiment.home", ""], "experiment.home", "an empty path"),
}
HELD_INPUT = {
    "a-home-linked-to-proc": (["--experiment.home", "@proc-link@/x"], "experiment.home", "proc"),
    "a-home-under-dev-null": (["--experiment.home", "/dev/null/x"], "experiment.home", "devtmpfs"),
    "a-home-that-is-a-file": (["--experiment.home", "@file@"], "experiment.home", "not a folder"),
    "a-float-count": (["--algorithm.max_steps", "4.5"], "algorithm.max_steps", "fractional"),
}


@pytest.mark.parametrize("attack", [*FIXED_INPUT, *HELD_INPUT])
def test_bad_input_is_one_line_naming_the_key(attack, tmp_path, monkeypatch, capsys):
    """Attack: a value YAML reads as another type than the key's (`yes`, `on`, `true` are
    booleans, which pydantic took for 1 at a number's key: `max_steps: yes` ran one step),
    an `extra_body` that is not JSON (a date, a set, `.nan`: every model call then failed, each
    task the agent's error), an empty home (which became the config's folder). Got through
    on main. Stops it: `Section` gives a boolean at a number's key to the field as its word,
    `extra_body` must dump as strict JSON, and an empty path is refused. A home linked to
    /proc, under /dev/null, or a file, and a fractional count, held."""
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    (tmp_path / "proc-link").symlink_to("/proc")
    (tmp_path / "file").write_text("")
    monkeypatch.chdir(tmp_path)
    args, key, fragment = {**FIXED_INPUT, **HELD_INPUT}[attack]
    args = [a.replace("@proc-link@", str(tmp_path / "proc-link")) for a in args]
    args = [a.replace("@file@", str(tmp_path / "file")) for a in args]
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
        ["fork", "--from", "../h/exp-1", "--config", "@config@"],
        ["compare", "--experiment", "../h/exp-1", "--home", "h"],
        ["compare", "--experiment", "/abs/exp-1", "--home", "h"],
    ],
    ids=["fork-from-a-path", "compare-a-path", "compare-an-absolute-path"],
)
def test_a_path_for_a_name_is_refused_by_fork_and_compare(command, tmp_path, monkeypatch, capsys):
    """Held on main: the two commands that take a name beside those `tests/test_cli.py`
    covers (run, resume, finalize, rollback, archive-node, eval)."""
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    (tmp_path / "configs" / "harness").mkdir(parents=True)
    (tmp_path / "configs" / "exp.yaml").write_text(VALID)
    (tmp_path / "h").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))

    code = main([a.replace("@config@", str(tmp_path / "configs" / "exp.yaml")) for a in command])

    [line] = capsys.readouterr().err.splitlines()
    assert code == 2 and "expected an experiment name" in line
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("home", ["/proc/self", "/sys"])
def test_resume_on_a_kernel_filesystem_home_is_one_line(home, capsys):
    """Held on main: a `--home` on /proc or /sys reads no experiment there and writes none."""
    code = main(["resume", "--experiment", "x", "--home", home])

    [line] = capsys.readouterr().err.splitlines()
    assert code == 2 and "no experiment 'x' under" in line


def test_a_bom_free_utf_8_answer_with_every_escape_still_passes(gateway, endpoint):
    """The other way round for chat: escaped surrogate pairs (an emoji), a key repeated in
    two different objects, and numbers of every JSON form are one answer."""
    reply = chat_reply("\U0001f600 caf\u00e9") | {"a": {"k": 1}, "b": {"k": -1.5e-3}}
    endpoint.behaviour = answer(200, json.dumps(reply).encode())
    token = _grant(gateway, endpoint)

    got = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

    assert got.choices[0].message.content == "\U0001f600 caf\u00e9"
    assert gateway.revoke(token).answered == 1


# -- PostgreSQL: a failover to a node that only reads ------------------------------------------


def _read_only(url: str, on: bool) -> None:
    """The database takes writes, or not (as a standby, or a primary demoted in a failover,
    answers an old connection's or a stale address's writes)."""
    setting = (
        "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
    )
    with closing(connect(url)) as admin, admin.cursor() as cursor:
        admin.autocommit = True
        cursor.execute("SET default_transaction_read_only = off")  # this session writes
        cursor.execute(f'ALTER DATABASE "{sa.engine.make_url(url).database}" {setting}')
    terminate(url)  # a setting of the database reaches new sessions only


@needs_postgres
def test_a_failover_that_leaves_a_read_only_node_is_ridden_out(monkeypatch):
    """Attack: the instance's sessions ended and the database answering every write with
    `cannot execute INSERT in a read-only transaction` for a while (a failover's standby or
    demoted primary). Got through on main: the run's first write raised SQLAlchemy's
    `InternalError`, tens of lines, at once; neither retried nor one line. Stops it:
    `reconnect` counts a read-only answer as a connection to replace (a new one may reach the
    new primary), with the same waits."""
    tries: list[int] = []
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url)) as instance,
    ):

        def wait(retry: int) -> float:  # the failover is over at the second retry
            tries.append(retry)
            if retry == 2:
                _read_only(url, False)
            return 0.01

        monkeypatch.setattr(reconnect, "wait", wait)
        _read_only(url, True)

        result = JOB.execute_in_process(instance=instance)

        assert result.success and tries[:2] == [1, 2]
        assert [r.run_id for r in instance.get_runs()] == [result.run_id]


@needs_postgres
def test_a_database_left_read_only_is_named_in_one_line(monkeypatch):
    """The other way round: a node that stays read-only ends the retries with one line."""
    monkeypatch.setattr(reconnect, "wait", lambda retry: 0.01)
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url)) as instance,
    ):
        _read_only(url, True)

        with pytest.raises(Exception) as caught:
            JOB.execute_in_process(instance=instance)

    line = reconnect.database_fault(caught.value)
    assert line is not None and "read-only transaction" in line and "retried 5 times" in line
    assert "\n" not in line


@needs_postgres
def test_sessions_the_server_ends_while_idle_do_not_fail_the_next_statement():
    """Held on main: `idle_session_timeout` (PostgreSQL 14+) ends the instance's idle pooled
    sessions between two runs; the next run takes new ones (pre-ping)."""
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url)) as instance,
    ):
        first = JOB.execute_in_process(instance=instance).run_id
        with closing(connect(url)) as admin, admin.cursor() as cursor:
            admin.autocommit = True
            name = sa.engine.make_url(url).database
            cursor.execute(f'ALTER DATABASE "{name}" SET idle_session_timeout = 200')
        terminate(url)  # the sessions left are new ones, which the timeout ends when idle
        instance.get_runs()
        time.sleep(1.0)  # idle past the timeout: the server has ended them

        second = JOB.execute_in_process(instance=instance)

        assert second.success
        assert {r.run_id for r in instance.get_runs()} == {first, second.run_id}


# -- resume after a kill: a driver frozen, not dead --------------------------------------------


@pytest.mark.slow
def test_resume_beside_a_frozen_driver_refuses_in_one_line_and_nothing_outlives_it(tmp_path):
    """Attack: `flashrsi run` stopped with SIGSTOP once its first step began (a process frozen
    by a debugger, a suspended container, a host swapping: its pid is alive, it holds its
    locks, it does nothing), then `flashrsi resume` of the same experiment. Held on main:
    resume refuses at once in one line (the driver lock is held) instead of driving beside
    it, and once the frozen run is killed nothing of its session or its home's code server is
    left."""
    home = tmp_path / "home"
    command = subprocess.Popen(
        [FLASHRSI, "run", *_args("meta_harness", home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert command.stdout is not None
    while (line := command.stdout.readline()) and not line.startswith("== "):
        pass
    os.kill(command.pid, signal.SIGSTOP)
    try:
        (name,) = [p.name for p in home.iterdir() if not p.name.startswith(".")]
        resumed = subprocess.run(
            [FLASHRSI, "resume", "--experiment", name, "--home", str(home)],
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
    finally:
        os.kill(command.pid, signal.SIGKILL)
        command.wait()
        command.stdout.close()

    assert resumed.returncode != 0
    [error] = resumed.stderr.strip().splitlines()
    assert error.endswith(
        "driver.lock is held: another process drives this experiment"
        f" (process {command.pid}: flashrsi run)"
    )
    assert _wait_until_gone(command.pid, home) == []
