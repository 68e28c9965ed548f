"""Sabotage, twenty-third red-team pass (issue 22): a misbehaving endpoint and a careless
operator, aimed at round 22's fixes (`test_round22_endpoint.py`): the last event given its
blank line, and the hosts validate refuses; then the fields of an event stream as each SDK
reads them (`event:`, `id:`, `retry:`, a bare `data`, `[DONE]`), the usage the meter reads,
an answer's head, the Anthropic and Responses streams, and endpoint hosts.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 45 cases, 26 got
through on main: 7 new holes. (1) An event the OpenAI SDK dispatches with no data (an
`event:`, `retry:` or kept `id:` alone, a bare `data` line, an empty line after an `id:`),
or one named `thread.*`, or `data:  [DONE]`, was relayed as the model's: the SDK raised
`JSONDecodeError` in the harness (or wrapped the chunk into another object), the call
counted answered (8). (2) A usage key written escaped (`"\\u0075sage"`) was not metered,
and the usage chunk the gateway asked for reached a client that had not (1). (3) A
Messages event whose `event:` name is not its data's type (none, `ping`), or a routed name
with no data (`message_stop`, `error`), was read by its data, while the Anthropic SDKs
route by the name: an answer the SDK skipped (or failed on) counted whole (4). (4) `[DONE]`
closed a Responses or Messages stream, whose SDKs need their closing event, and a
Responses close after `[DONE]` counted, though the SDK stops reading there (3). (5) A host
no resolver looks up (`api.openai,com`, `%61`, `!`, `10.0.256.1`) validated, and every
call failed (5).
(6) A stream started by a byte order mark lost its first event to the SDKs (2). (7) Round
22's IDNA check missed 247 characters that draw nothing (a Hangul filler), which IDNA 2008
drops and IDNA 2003 keeps (3). No limit declared.
"""

from __future__ import annotations

import gzip
import json

import httpx2
import openai
import pytest

from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.records.redaction import REDACTED
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import _drip, answer, chat_reply, head, sse
from tests.sabotage import test_round21_endpoint as round21
from tests.sabotage.test_round12_endpoint import TIMEOUT, _raw
from tests.sabotage.test_round13_endpoint import DONE, _event
from tests.sabotage.test_round17_endpoint import _validated_quietly

CANARY = "sk-r23-canary-" + "Jx5" * 12
"""A key no other test uses, looked for in every output."""
RUN = "jx5jx5"
"""A run of the key's characters no honest text here holds (compared in lower case)."""


def _delta(content: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode()


ANSWER = [_delta("ok") + b"\n\n", _delta("", finish="stop") + b"\n\n", DONE]
"""A whole chat stream: a word, the `finish_reason`, `[DONE]`."""


def _upstream(endpoint, api: str = "chat") -> Upstream:
    return Upstream(endpoint.url, api, CANARY, timeout=TIMEOUT)  # type: ignore[arg-type]


def _chunks_seen(endpoint, behaviour) -> tuple[list, str]:
    """What an SDK client reads of a streamed chat call (each chunk's content, or the error
    it raised), and the run's accounts."""
    endpoint.behaviour = behaviour
    with Gateway() as gateway:
        token = gateway.grant(experiment="x", role="t", run_id="r", upstream=_upstream(endpoint))
        chat = openai_client(gateway, token).chat.completions
        seen: list = []
        try:
            for chunk in chat.create(model="m", messages=USER, stream=True):
                seen.append(chunk.choices[0].delta.content if chunk.choices else chunk.usage)
        except Exception as exc:  # what the harness would meet, whatever it is
            seen.append(exc)
        return seen, repr(gateway.revoke(token))


def _endpoints_fault(seen: list, used: str) -> bool:
    """The call failed as the endpoint's fault, and the client was told so (an APIError)."""
    return isinstance(seen[-1], openai.APIError) and "failed=1" in used and "answered=0" in used


def _streamed(endpoint, api: str, events: list[bytes]) -> tuple[bytes, str]:
    """The bytes a client reads of a Responses or Messages stream, and the run's accounts."""
    endpoint.behaviour = sse(events)
    path, field = {"responses": ("responses", "input"), "anthropic": ("messages", "messages")}[api]
    with Gateway() as gateway:
        upstream = _upstream(endpoint, api)
        token = gateway.grant(experiment="x", role="t", run_id="r", upstream=upstream)
        body = {"model": "m", "max_tokens": 9, field: USER, "stream": True}
        headers = {"Authorization": f"Bearer {token}", "x-api-key": token}
        got = b""
        with httpx2.stream("POST", f"{gateway.url}/v1/{path}", json=body, headers=headers,
                           timeout=60) as response:  # fmt: skip
            try:
                for data in response.iter_raw():
                    got += data
            except httpx2.RemoteProtocolError:  # the error event, then the cut
                pass
        return got, repr(gateway.revoke(token))


# -- round 22's fix: the last event given its blank line -----------------------------------------


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n\r"])
def test_a_last_event_ended_by_a_lone_line_end_of_any_kind_reaches_the_client(ending, endpoint):
    """Held: the `finish_reason` chunk as the stream's last bytes, ended by one line end of
    any kind (CR, CRLF, LF then CR: the meter waits for a CR's LF that never comes): the
    client reads it (the gateway gives it its blank line), the call an answer."""
    last = _delta("!", finish="stop") + ending.encode()
    seen, used = _chunks_seen(endpoint, sse([ANSWER[0], last]))
    assert seen[-1] == "!" and "failed=0" in used, (seen, used)


# -- fields of an event stream as the OpenAI SDK reads them -------------------------------------

WITHOUT_DATA = {
    "an-event-name-alone": b"event: ping\n\n",
    "an-id-alone": b"id: 7\n\n",
    "a-retry-alone": b"retry: 1000\n\n",
    "a-retry-in-arabic-indic-digits": "retry: \u0661\u0662\n\n".encode(),
    "a-bare-data-line": b"data\n\n",
}


@pytest.mark.parametrize("attack", WITHOUT_DATA)
def test_an_event_the_sdk_dispatches_without_data_is_the_endpoints_fault(attack, endpoint):
    """Attack: a chat stream whose first event holds an `event:` name, an `id:`, a
    `retry:` alone (in ASCII or Arabic-Indic digits, which Python's `int` reads too), or a
    bare `data` line (no colon: a data line of nothing). Got through
    on main: the gateway read an event without a `data:` line as a comment and relayed it;
    the OpenAI SDK dispatches any event with one of those fields and parses its data ("")
    as JSON: `JSONDecodeError` in the harness, the call counted answered, the candidate
    charged. Stops it: the meter reads an event's fields as the SDK does; one it would
    dispatch without data is the endpoint's fault."""
    seen, used = _chunks_seen(endpoint, sse([WITHOUT_DATA[attack], *ANSWER]))
    assert _endpoints_fault(seen, used), (seen, used)


def test_an_empty_line_after_an_id_is_the_endpoints_fault(endpoint):
    """Attack: a chat stream whose first event carries an `id:`, then one empty line too
    many (`\\n\\n\\n`). Got through on main: the gateway read the extra line as part of the
    next event; the OpenAI SDK keeps the last id (as the SSE spec says) and then dispatches
    every empty line as an event, of no data: `JSONDecodeError`. Stops it: an empty line the
    SDK would dispatch after an id is the endpoint's fault."""
    first = b"id: 1\n" + _delta("ok") + b"\n\n\n"
    seen, used = _chunks_seen(endpoint, sse([first, *ANSWER[1:]]))
    assert _endpoints_fault(seen, used), (seen, used)


def test_fields_without_data_after_done_are_relayed(endpoint):
    """Held: after `[DONE]`, an `event:` alone, an `id:`, then an empty line too many: the
    OpenAI SDK reads nothing past `[DONE]`, so they are no fault (the check above reads a
    stream only as far as the SDK does)."""
    seen, used = _chunks_seen(endpoint, sse([*ANSWER, b"event: ping\n\nid: 1\n\n\n"]))
    assert seen == ["ok", ""] and "failed=0" in used, (seen, used)


def test_ids_on_every_event_without_an_extra_line_are_relayed(endpoint):
    """Held: `id:` and `retry:` on every event, CR line ends, comments, each event split at
    every byte (one chunk a byte): relayed, every word read, an answer."""
    events = [b": hi\r" + b"id: %d\rretry: 9\r" % n + e.rstrip(b"\n") + b"\r\r" for n, e in
              enumerate(ANSWER)]  # fmt: skip
    data = b"".join(events)
    seen, used = _chunks_seen(endpoint, sse([data[i : i + 1] for i in range(len(data))]))
    assert seen == ["ok", ""] and "failed=0" in used, (seen, used)


@pytest.mark.parametrize("step", [1, 64])
def test_a_stream_started_by_a_byte_order_mark_is_read_whole(step, endpoint):
    """Attack: a chat stream whose first bytes are a UTF-8 byte order mark (the SSE spec
    drops one there), read a byte at a time or whole. Got through on main: the gateway
    relayed it as it came; the OpenAI SDK reads `\\ufeffdata` as an unknown field, the
    first event (the answer's first words) lost, the call counted whole. Stops it: the
    meter drops the mark, as the spec does, and the client reads every event."""
    data = b"\xef\xbb\xbf" + b"".join(ANSWER)
    seen, used = _chunks_seen(
        endpoint, sse([data[i : i + step] for i in range(0, len(data), step)])
    )
    assert seen == ["ok", ""] and "failed=0" in used, (seen, used)


def test_a_chat_event_named_thread_is_the_endpoints_fault(endpoint):
    """Attack: a chat chunk named `event: thread.message`. Got through on main: the gateway
    read its data; the OpenAI SDK reads an event named `thread.*` as its Assistants API's,
    wrapping the data into `{"data": ..., "event": ...}`: the harness's chunk had no
    content (`ok` lost), the call counted whole. Stops it: a chat or Responses event named
    `thread.*` is the endpoint's fault."""
    seen, used = _chunks_seen(endpoint, sse([b"event: thread.message\n" + ANSWER[0], *ANSWER[1:]]))
    assert _endpoints_fault(seen, used), (seen, used)


def test_done_after_two_spaces_is_the_endpoints_fault(endpoint):
    """Attack: the stream's end written `data:  [DONE]` (two spaces). Got through on main:
    the gateway stripped the data and read `[DONE]`, the end; the SDK drops one space only,
    and " [DONE]" is no `[DONE]` to it: it parsed it as JSON, `JSONDecodeError` after a whole
    answer. Stops it: `[DONE]` is read as the SDK reads it (a prefix of the data less one
    space); anything else is JSON or a fault."""
    seen, used = _chunks_seen(endpoint, sse([*ANSWER[:2], b"data:  [DONE]\n\n"]))
    assert _endpoints_fault(seen, used), (seen, used)


def test_a_key_in_an_events_id_and_name_is_masked(endpoint):
    """Held: the key as an event's `id:` (the SDK keeps it, and hands it to the harness
    with the event) and inside an unknown field: masked, the answer read whole."""
    first = f"id: {CANARY}\nx-{CANARY}: 1\n".encode() + ANSWER[0]
    endpoint.behaviour = sse([first, *ANSWER[1:]])
    with Gateway() as gateway:
        token = gateway.grant(experiment="x", role="t", run_id="r", upstream=_upstream(endpoint))
        got, ended = round21._raw_stream(gateway, token)
        used = repr(gateway.revoke(token))
    assert ended is None and "failed=0" in used, (got, used)
    assert got.count(REDACTED.encode()) == 2 and RUN not in got.decode().lower(), got


# -- the usage the meter reads -------------------------------------------------------------------


def test_a_usage_key_written_escaped_is_metered_and_its_chunk_dropped(endpoint):
    """Attack: the usage chunk the gateway asked for (`stream_options.include_usage`),
    its key written `"\\u0075sage"` (valid JSON: `usage`). Got through on main: the meter
    looked for the bytes `"usage"` before reading an event's usage: the call's 7 + 3 tokens
    went unmetered (unknown usage, past the role's cap), and the chunk it should have taken
    out again reached a client that never asked for it. Stops it: the usage is read from
    the parsed event."""
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    chunk = b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n"
    escaped = chunk.replace(b'"usage"', b'"\\u0075sage"')
    seen, used = _chunks_seen(endpoint, sse([*ANSWER[:2], escaped, DONE]))
    assert seen == ["ok", ""], seen
    assert "input_tokens=7" in used and "output_tokens=3" in used, used


# -- the Anthropic and Responses streams ---------------------------------------------------------

START = {"type": "message_start", "message": {"id": "m", "content": [], "usage": {
    "input_tokens": 5, "output_tokens": 1}}}  # fmt: skip
TEXT = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}
STOP = {"type": "message_stop"}


def _messages(*events: dict, names: list[str | None] | None = None) -> list[bytes]:
    names = names or [e["type"] for e in events]
    return [_event(e, n) for e, n in zip(events, names, strict=True)]


MISNAMED = {
    "no-event-names": _messages(START, TEXT, STOP, names=[None, None, None]),
    "a-delta-named-ping": _messages(
        START, TEXT, STOP, names=["message_start", "ping", "message_stop"]
    ),
    "message-stop-without-data": [*_messages(START, TEXT), b"event: message_stop\n\n"],
    "an-error-without-data": [*_messages(START, TEXT), b"event: error\n\n", *_messages(STOP)],
}


@pytest.mark.parametrize("attack", MISNAMED)
def test_a_messages_event_its_sdk_routes_otherwise_is_the_endpoints_fault(attack, endpoint):
    """Attack: a Messages stream whose events carry no `event:` name, or a delta named
    `ping`, or `message_stop` or `error` named without data. Got through on main: the
    gateway read each event by its data's `type` (an answer, closed); the Anthropic SDKs
    (Python's, Claude Code's TypeScript one) route an event by its name only: they skip an
    unnamed or `ping` event (the answer never reached the harness), parse a routed one's
    data ("": a crash) and raise on `error`, while the call counted whole. Stops it: a
    Messages event whose name is not its data's type, or a routed name without data, is the
    endpoint's fault."""
    _, used = _streamed(endpoint, "anthropic", MISNAMED[attack])
    assert "failed=1" in used and "answered=0" in used, used


@pytest.mark.parametrize("api", ["responses", "anthropic"])
def test_done_in_place_of_the_closing_event_is_the_endpoints_fault(api, endpoint):
    """Attack: a Responses or Messages stream ending `data: [DONE]` instead of its closing
    event (`response.completed`, `message_stop`). Got through on main: the gateway took
    `[DONE]` for a close whatever the API; the OpenAI SDK stops reading there (no
    `response.completed`: its stream helper raises), the Anthropic SDKs skip it (no
    `message_stop`). Stops it: `[DONE]` closes a chat stream only."""
    created = {"type": "response.created", "response": {"id": "r", "output": []}}
    delta = {"type": "response.output_text.delta", "delta": "ok"}
    events = _messages(created, delta) if api == "responses" else _messages(START, TEXT)
    _, used = _streamed(endpoint, api, [*events, DONE])
    assert "failed=1" in used and "closing event" in used, used


def test_a_responses_close_after_done_is_the_endpoints_fault(endpoint):
    """Attack: a Responses stream sending `data: [DONE]` before its `response.completed`.
    Got through on main: the gateway read the close after it; the OpenAI SDK stops reading
    at `[DONE]` and never sees it (its stream helper raises on that). Stops it: nothing
    after a `[DONE]` closes a stream the OpenAI SDK reads."""
    created = {"type": "response.created", "response": {"id": "r", "output": []}}
    delta = {"type": "response.output_text.delta", "delta": "ok"}
    done = {"type": "response.completed", "response": {"id": "r", "output": []}}
    _, used = _streamed(endpoint, "responses", [*_messages(created, delta), DONE, *_messages(done)])
    assert "failed=1" in used and "closing event" in used, used


@pytest.mark.parametrize("count", [-5, 7.0, "7"])
def test_a_messages_delta_with_a_lying_count_is_the_endpoints_fault(count, endpoint):
    """Held: a Messages stream's `message_delta` whose `output_tokens` is negative (a
    refund of the role's cap), a float, a string: the endpoint's fault, never metered."""
    delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"output_tokens": count}}  # fmt: skip
    _, used = _streamed(endpoint, "anthropic", _messages(START, TEXT, delta, STOP))
    assert "failed=1" in used and "not a count of tokens" in used, used


# -- an answer's head ----------------------------------------------------------------------------


def _whole(endpoint, behaviour) -> tuple[str, str]:
    """What the client is told of a whole chat call, and the run's accounts."""
    endpoint.behaviour = behaviour
    with Gateway() as gateway:
        token = gateway.grant(experiment="x", role="t", run_id="r", upstream=_upstream(endpoint))
        try:
            chat = openai_client(gateway, token).chat.completions
            told = str(chat.create(model="m", messages=USER))
        except openai.APIError as exc:
            told = f"{exc} {exc.body}"
        return told, repr(gateway.revoke(token))


def test_early_hints_quoting_the_key_before_the_answer_is_the_endpoints_fault(endpoint):
    """Held: `103 Early Hints` with a `Link` header quoting the key, then a whole answer:
    http.client reads the 103 as the answer (it skips only `100 Continue`), which is the
    endpoint's fault (an informational status), the key in neither the client's words nor
    the accounts; the connection, holding the real answer unread, is dropped."""
    hints = f"HTTP/1.1 103 Early Hints\r\nLink: </k?{CANARY}>; rel=preload\r\n\r\n".encode()
    body = json.dumps(chat_reply()).encode()
    whole = head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})
    told, used = _whole(endpoint, _raw(hints + whole + body))
    assert "failed=1" in used and "informational" in used, used
    assert RUN not in (told + used).lower()


def test_a_body_chunked_under_another_coding_is_the_endpoints_fault(endpoint):
    """Held: `Transfer-Encoding: gzip, chunked` (http.client decodes only a bare `chunked`,
    so it reads the body to the close, chunk sizes and all): not JSON, the endpoint's
    fault, never relayed as the model's."""
    body = json.dumps(chat_reply()).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    data = head(200, {"Content-Type": "application/json", "Transfer-Encoding": "gzip, chunked"})
    told, used = _whole(endpoint, _raw(data + chunked))
    assert "failed=1" in used and "spam" not in told, (told, used)


def test_a_gzip_body_labelled_identity_is_the_endpoints_fault(endpoint):
    """Held: a gzip'd answer whose `Content-Encoding` says `identity` (a lying label): the
    gateway never inflates it, the bytes are no JSON, the endpoint's fault."""
    told, used = _whole(endpoint, answer(200, gzip.compress(json.dumps(chat_reply()).encode()),
                                         Content_Encoding="identity"))  # fmt: skip
    assert "failed=1" in used and "not valid JSON" in used and "spam" not in told, used


def test_a_head_sent_a_byte_at_a_time_is_cut_at_the_deadline(endpoint):
    """Held: a slowloris endpoint writing its head a byte every 0.3 s, each read in time
    (no read's timeout passes): the call's one deadline (`llm.timeout`) cuts it, the
    endpoint's fault."""
    body = json.dumps(chat_reply()).encode()
    data = head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})

    def write(conn) -> bool:
        _drip(conn, [data[i : i + 1] for i in range(len(data))] + [body], 0.3)
        return False

    told, used = _whole(endpoint, write)
    assert "timed_out=1" in used and "failed=1" in used and "spam" not in told, used


def test_the_key_as_an_answers_json_key_is_masked(endpoint):
    """Held: a whole answer holding the key as an object's key (a proxy echoing the request's
    headers as a map): masked, the answer still JSON the client reads, the key nowhere."""
    told, used = _whole(endpoint, answer(200, chat_reply(echo={CANARY: "Authorization"})))
    assert "spam" in told and "failed=0" in used and RUN not in (told + used).lower(), told


def test_an_identity_encoding_in_any_case_is_relayed(endpoint):
    """Held: `Content-Encoding: IDENTITY` (codings are case-insensitive): no encoding, the
    answer relayed."""
    told, used = _whole(endpoint, answer(Content_Encoding="IDENTITY"))
    assert "spam" in told and "failed=0" in used, (told, used)


# -- the endpoint URL's host ---------------------------------------------------------------------

UNRESOLVABLE = {
    "a-comma-for-a-dot": "https://api.openai,com/v1",
    "a-percent-encoded-letter": "https://api.open%61i.com/v1",
    "an-exclamation-mark": "https://llm!.example.com/v1",
    "an-ipv4-address-past-255": "http://10.0.256.1:8000/v1",
    "an-ipv4-address-of-five-numbers": "http://10.0.0.1.5:8000/v1",
}


@pytest.mark.parametrize("attack", UNRESOLVABLE)
def test_an_endpoint_host_no_resolver_looks_up_is_refused(attack, tmp_path, monkeypatch, capsys):
    """Attack: a host holding a character no host name holds: a comma typed for a dot, a
    percent-encoded letter (a browser decodes it, Python's resolver does not), a `!`; or an
    IPv4 address with a typo (a part past 255, five parts: no top-level domain is a number,
    so it names no host). Got
    through on main: urllib reads such a host, validate accepted it, and every call of the
    role failed to resolve it, each an infrastructure fault the ladder reran. Stops it: a
    host that is neither an IP address nor (IDNA-encoded) a name of letters, digits, `-`,
    `_` and dots, not ending in a number unless libc reads it as an IPv4 address, is
    refused in one line."""
    code, err = _validated_quietly(UNRESOLVABLE[attack], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and "resolver" in lines[0], err


DRAWING_NOTHING = {
    "a-hangul-filler": "https://a\u3164b.example.com/v1",
    "a-variation-selector-past-the-16th": "https://api\U000e0100.example.com/v1",
    "a-mongolian-variation-selector": "https://a\u180fb.example/v1",
}


@pytest.mark.parametrize("attack", DRAWING_NOTHING)
def test_an_endpoint_host_holding_a_character_that_draws_nothing_is_refused(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: round 22's fix swept over every character: a host holding one that draws
    nothing (a Hangul filler, U+3164; a variation selector past the 16th; Mongolian's
    fourth): 247 such characters. Got through on main: UTS 46 drops it (`api.example.com`
    to browsers, curl, `idna`), nameprep keeps it (`xn--api-…` to Python, the gateway),
    and the case-fold and NFKC comparison does not see it (the two agree on the character,
    not on dropping it). Stops it: a host holding a default-ignorable code point (Unicode's
    stable list) is refused, asking for its `xn--` form."""
    code, err = _validated_quietly(DRAWING_NOTHING[attack], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and "xn--" in lines[0], err


@pytest.mark.parametrize(
    "url",
    [
        "http://127.1:8000/v1",
        "http://llm_server:8000/v1",
        "http://[fe80::1%25eth0]:8000/v1",
        "http://[::1]:8/v1",
    ],
)
def test_an_endpoint_host_of_an_underscore_or_an_ip_literal_is_accepted(url):
    """Held: `127.1` (libc reads it as 127.0.0.1), a Docker service's name with `_`, an IPv6
    literal with a zone, the IPv6 loopback: hosts a resolver reads, accepted."""
    assert LLMConfig(model="m", base_url=url).base_url == url
