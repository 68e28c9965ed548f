"""Sabotage, twenty-first red-team pass (issue 22): a misbehaving endpoint and a careless
operator, aimed at round 20's fixes (`test_round20_endpoint.py`): the mask in any case and
`KeyMask.quote` (a cut after the mask), the held-back tail of a stream, headers the gateway
drops or masks (a redirect's `Location`, `Set-Cookie`, a challenge, trailers), fields of an
event stream, and validate's reading of an endpoint URL's host.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 47 cases, 10 got
through on main (1 of them declared): 4 new holes. (1) A stream cut inside the key (its
deadline, a reset) relayed the tail the mask held back, the key less its last characters,
glued to the error event, which was then no event (3). (2) A stream closed short of its
Content-Length relayed that tail as its last bytes before its length was checked (1). (3)
A host holding `ß` or `ς` validated, and the gateway (IDNA 2003) sent the key to another
name than IDNA 2008 clients reach (2). (4) A key of a known form as the host, a label or an
IPv6 zone validated (3). Declared: the key cut across a tool call's argument deltas (1).
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import struct
import time
import urllib.parse

import httpx
import openai
import pytest

from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.masking import MAX_CAUSE, KeyMask
from flashrsi_dagster.records.redaction import REDACTED
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import answer, chat_reply, head, sse
from tests.sabotage import test_round19_endpoint as round19
from tests.sabotage.test_round12_endpoint import TIMEOUT, _raw
from tests.sabotage.test_round13_endpoint import DONE
from tests.sabotage.test_round17_endpoint import _validated_quietly
from tests.sabotage.test_round19_endpoint import _pinged

CANARY = "sk-r21-canary-" + "Wp4" * 12
"""A key no other test uses, looked for in every output."""
RUN = "wp4wp4"
"""A run of the key's characters no honest text here holds (compared in lower case)."""
SECRET = "r21Passw0rd" + "Zt6" * 4
"""A password or key an operator put in the endpoint URL."""
LONG = SECRET + SECRET
STREAM = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}


def _chunk(data: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), extension, data)


def _delta(content: str) -> bytes:
    return (
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}).encode()
    )


def _grant(gateway: Gateway, endpoint, key: str = CANARY) -> str:
    upstream = Upstream(endpoint.url, "chat", key, timeout=TIMEOUT)
    return gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)


def _raw_stream(gateway: Gateway, token: str) -> tuple[bytes, str | None]:
    """The bytes a client reads of a streamed chat call, and how the read ended."""
    body = {"model": "m", "messages": USER, "stream": True}
    auth = {"Authorization": f"Bearer {token}"}
    got, ended = b"", None
    with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", headers=auth, json=body,
                      timeout=60) as response:  # fmt: skip
        try:
            for data in response.iter_raw():
                got += data
        except httpx.HTTPError as exc:
            ended = type(exc).__name__
    return got, ended


def _relayed_whole(endpoint, behaviour) -> tuple[str, str]:
    """A whole chat call meeting `behaviour`: the head and body the client read (or what it
    was told), and the run's accounts."""
    endpoint.behaviour = behaviour
    with Gateway() as gateway:
        token = _grant(gateway, endpoint)
        chat = openai_client(gateway, token).chat.completions.with_raw_response
        try:
            raw = chat.create(model="m", messages=USER)
            seen = f"{raw.status_code} {raw.headers} {raw.http_response.read().decode()}"
        except openai.APIError as exc:
            seen = f"{exc} {exc.body}"
        return seen, repr(gateway.revoke(token))


def _failed_call(endpoint, behaviour, stream: bool = False, error=openai.APIError):
    """Round 19's failed call, with this round's key."""
    return round19._failed_call(endpoint, behaviour, stream, error, key=CANARY)


def _fault_of(endpoint, behaviour, stream: bool = False) -> tuple[str, str]:
    """Round 19's fault of a call, with this round's key."""
    return round19._fault_of(endpoint, behaviour, stream, key=CANARY)


# -- a stream cut while the key is being written ------------------------------------------------


def _cut_inside_the_key(ending: str):
    """An event, then a second one quoting the key, cut two characters before the key's end:
    then a stall past the deadline, or a reset."""
    first = _delta("ok") + b"\n\n"
    event = _delta("your key: " + CANARY)
    part = event[: event.index(CANARY.encode()) + len(CANARY) - 2]

    def write(conn) -> bool:
        conn.sendall(head(200, STREAM) + _chunk(first + part))
        if ending == "reset":
            time.sleep(0.3)  # the head and the bytes read first
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            time.sleep(TIMEOUT * 3)
        return False

    return write


@pytest.mark.parametrize("ending", ["stall", "reset"])
def test_a_stream_cut_inside_the_key_relays_no_part_of_it(ending, endpoint):
    """Attack: a stream quoting the key (a proxy reflecting the request's headers into the
    model's answer) is cut two characters before the key's end: the endpoint stalls past
    the deadline, or resets. Got through on main: the mask holds back a tail that may be a
    key's start until the next read says, and on the cut the gateway wrote that tail to the
    client before its error event: the key less its last two characters reached the agent
    (a cut is no key to the mask, but one the gateway's deadline made is no choice of the
    endpoint's), and glued to the tail the error event was no event (the SDK said
    "Connection error.", not the cause). Stops it: on a cut the held tail, part of an event
    never relayed, is dropped with the rest of that event."""
    endpoint.behaviour = _cut_inside_the_key(ending)
    with Gateway() as gateway:
        token = _grant(gateway, endpoint)
        got, ended = _raw_stream(gateway, token)
        chunks = openai_client(gateway, token).chat.completions.create(
            model="m", messages=USER, stream=True
        )
        with pytest.raises(openai.APIError) as told:
            list(chunks)
        used = gateway.revoke(token)
    assert RUN not in got.decode().lower() and ended is not None, got
    assert "stream was cut" in str(told.value), told.value
    assert used.failed == 2 and RUN not in str(used).lower(), used


def _closed_inside_the_key(conn) -> bool:
    """An event stream with a Content-Length, closed two characters before the key's end."""
    event = _delta("your key: " + CANARY)
    part = event[: event.index(CANARY.encode()) + len(CANARY) - 2]
    fields = {"Content-Type": "text/event-stream", "Content-Length": str(len(event) + 2)}
    conn.sendall(head(200, fields) + part)
    return False


def _listed(endpoint, behaviour, key: str = CANARY):
    """What a client reads of `GET /v1/models` (a route relayed unmetered) meeting
    `behaviour`, how the read ended, and the run's accounts."""
    endpoint.behaviour = behaviour
    with Gateway() as gateway:
        token = _grant(gateway, endpoint, key)
        auth = {"Authorization": f"Bearer {token}"}
        got, ended = b"", None
        with httpx.stream("GET", f"{gateway.url}/v1/models", headers=auth, timeout=60) as answer_:
            try:
                for data in answer_.iter_raw():
                    got += data
            except httpx.HTTPError as exc:
                ended = type(exc).__name__
        return got, ended, gateway.revoke(token)


@pytest.mark.parametrize("ending", ["reset", "closed-short-of-its-length"])
def test_a_model_list_streamed_and_cut_inside_the_key_relays_no_part_of_it(ending, endpoint):
    """Attack: the same on a route the gateway relays unmetered (`GET /v1/models` answered
    as an event stream), cut inside the key by a reset, or by a close short of its
    Content-Length (which `http.client` reads as a quiet end). Got through on main: the
    held tail went out before the error event; on the quiet end, as the stream's last
    bytes, before the gateway checked the length. Stops it: the fix above, and the stream's
    end is checked (its deadline, its length) before the held tail is relayed."""
    behaviour = _cut_inside_the_key("reset") if ending == "reset" else _closed_inside_the_key
    got, ended, used = _listed(endpoint, behaviour)
    assert RUN not in got.decode().lower() and b"stream was cut" in got, got
    assert ended is not None and used.failed == 1, used


# -- the key split by the transfer coding, or in its trailers ------------------------------------


def test_a_key_in_other_letters_cut_across_chunks_with_extensions_is_masked(endpoint):
    """Held: the key, its letters' case swapped, in a chunked stream cut into 3-byte chunks,
    each with a chunk extension (`;x=…`, which `http.client` drops): the transfer coding
    is undone before the mask reads, and the key is masked."""
    body = _delta("k: " + CANARY.swapcase()) + b"\n\n" + DONE
    chunks = b"".join(_chunk(body[i : i + 3], b";x=1") for i in range(0, len(body), 3))
    endpoint.behaviour = _raw(head(200, STREAM) + chunks + b"0\r\n\r\n", keep=True)
    with Gateway() as gateway:
        got, _ = _raw_stream(gateway, _grant(gateway, endpoint))
    assert RUN not in got.decode().lower() and REDACTED in got.decode(), got


def test_a_key_in_a_chunked_answers_trailer_is_never_relayed(endpoint):
    """Held: a chunked 200 whose trailer section carries a header quoting the key (a proxy
    reflecting the request's headers after the body): `http.client` reads the trailers and
    drops them; the gateway writes its own end of the stream."""
    trailer = f"X-Echo: Bearer {CANARY}\r\n".encode()
    body = _delta("hi") + b"\n\n" + DONE
    endpoint.behaviour = _raw(head(200, STREAM) + _chunk(body) + b"0\r\n" + trailer + b"\r\n")
    with Gateway() as gateway:
        got, ended = _raw_stream(gateway, _grant(gateway, endpoint))
    assert RUN not in got.decode().lower() and ended is None, got


# -- headers: a redirect's Location, cookies, a challenge, a reason phrase ------------------------


def test_a_redirect_to_a_location_holding_the_key_is_a_fault_never_quoting_it(endpoint):
    """Held: a `307` to a `Location` whose query holds the key (a proxy sending the client
    to log in with it): the gateway follows no redirect and relays none to a model call
    (a client following it would leave its jail's only way out): the endpoint's fault, with
    its cause, the location quoted nowhere."""
    location = f"https://login.example/?next=/v1&key={urllib.parse.quote(CANARY)}"
    cause, told = _fault_of(endpoint, answer(307, b"", Location=location))
    assert "redirect" in cause and RUN not in (cause + told).lower(), (cause, told)


@pytest.mark.parametrize("name", ["Set-Cookie", "Set-Cookie2", "WWW-Authenticate", "Link"])
def test_a_cookie_or_challenge_quoting_the_key_never_reaches_the_client(name, endpoint):
    """Held: a 200 carrying the key in a `Set-Cookie` (dropped: a cookie is the endpoint's
    session, not the run's), an obsolete `Set-Cookie2`, a `WWW-Authenticate` challenge
    quoting it, or a `Link` (masked, in any case)."""
    value = f'session={CANARY.upper()}; Path=/; realm="{CANARY}"'
    seen, used = _relayed_whole(endpoint, answer(200, chat_reply("hi"), **{name: value}))
    assert RUN not in (seen + used).lower() and "hi" in seen, seen


def test_a_challenge_with_a_refusal_quoting_the_key_is_the_keys_refusal(endpoint):
    """Held: a 401 whose `WWW-Authenticate` and body both quote the key: read whole, the
    key's refusal (`key_refused`), answered in the gateway's words and headers only."""
    challenge = f'Bearer realm="api", error="invalid_token", token="{CANARY}"'
    body = {"error": {"message": f"Incorrect API key provided: {CANARY}"}}
    used, refused = _failed_call(
        endpoint, answer(401, body, WWW_Authenticate=challenge), error=openai.AuthenticationError
    )
    told = f"{refused} {refused.body} {refused.response.headers} {used}"
    assert used.key_refused == 1 and RUN not in told.lower(), told


@pytest.mark.parametrize("status", [200, 500])
def test_a_reason_phrase_quoting_the_key_is_never_relayed(status, endpoint):
    """Held: a status line whose reason phrase is the key (`HTTP/1.1 200 sk-…`): the gateway
    writes its own reason phrase, and a 500's cause names the status only."""
    body = json.dumps(chat_reply("hi")).encode()
    line = f"HTTP/1.1 {status} Bearer {CANARY}\r\n".encode()
    fields = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    seen, used = _relayed_whole(endpoint, _raw(line + fields.encode() + body, keep=True))
    assert RUN not in (seen + used).lower(), (seen, used)


def test_early_hints_quoting_the_key_are_a_fault_never_quoting_it(endpoint):
    """Held: a `103 Early Hints` whose `Link` quotes the key, then the answer: `http.client`
    returns the 103 as the answer (it skips only 100s), an informational status the
    gateway refuses, the hints quoted nowhere."""
    hints = f"HTTP/1.1 103 Early Hints\r\nLink: </s?k={CANARY}>; rel=preload\r\n\r\n".encode()
    body = json.dumps(chat_reply("hi")).encode()
    whole = head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})
    cause, told = _fault_of(endpoint, _raw(hints + whole + body))
    assert "informational" in cause and RUN not in (cause + told).lower(), (cause, told)


def test_a_content_encoding_given_twice_the_key_in_the_second_is_masked(endpoint):
    """Held: `Content-Encoding: br` then `Content-Encoding: <key>` (two header lines, which
    `http.client` joins with a comma before the gateway quotes the value): masked first."""
    body = json.dumps(chat_reply("hi")).encode()
    fields = f"Content-Encoding: br\r\nContent-Encoding: {CANARY.lower()}\r\n"
    line = head(200, {"Content-Length": str(len(body))})[:-2] + fields.encode() + b"\r\n"
    cause, told = _fault_of(endpoint, _raw(line + body, keep=True))
    assert "encoded" in cause and RUN not in (cause + told).lower(), (cause, told)


# -- fields of an event stream -------------------------------------------------------------------


@pytest.mark.parametrize("field", ["id", "event", "retry", ": a comment"])
def test_an_event_field_holding_the_key_is_masked(field, endpoint):
    """Held: the key in an event's `id` (which a client sends back as `Last-Event-ID`), its
    `event` name, a `retry` field, or a comment line: the mask reads the stream's bytes,
    whatever field they are in."""
    line = f"{field}: {CANARY}\n" if not field.startswith(":") else f": {CANARY}\n"
    event = line.encode() + _delta("hi") + b"\n\n"
    endpoint.behaviour = sse([event, DONE])
    with Gateway() as gateway:
        got, _ = _raw_stream(gateway, _grant(gateway, endpoint))
    assert RUN not in got.decode().lower() and b"hi" in got, got


def _argument_events(key: str) -> list[bytes]:
    """A streamed tool call whose arguments quote `key`, cut across three events."""
    arguments = json.dumps({"command": f"curl -H 'Authorization: Bearer {key}'"})
    cuts = [0, arguments.index(key) + 5, arguments.index(key) + 20, len(arguments)]
    events = []
    for start, end in itertools.pairwise(cuts):
        call = {"index": 0, "id": "c1", "function": {"name": "bash", "arguments": ""}}
        call["function"]["arguments"] = arguments[start:end]
        delta = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
        events.append(b"data: " + json.dumps(delta).encode() + b"\n\n")
    return [*events, DONE]


@pytest.mark.xfail(
    strict=True,
    reason="declared: docs/confinement.md 'What leaves an agent is redacted' (a key cut "
    "across deltas, a tool call's arguments included, is joined by the client)",
)
def test_a_key_cut_across_tool_call_argument_deltas_is_not_masked(endpoint):
    """Attack: the key in a streamed tool call's arguments, cut across three events (as a
    model asked to write a `curl` with the key would stream it). Got through on main, and
    stays through: no event holds the key, the client joins the arguments (round 11
    declared the same of content deltas). The records' redactor masks known keys in what
    the run leaves; the harness can join the pieces."""
    endpoint.behaviour = sse(_argument_events(CANARY))
    with Gateway() as gateway:
        token = _grant(gateway, endpoint)
        chunks = openai_client(gateway, token).chat.completions.create(
            model="m", messages=USER, stream=True
        )
        got = "".join(
            call.function.arguments or ""
            for chunk in chunks
            if chunk.choices
            for call in chunk.choices[0].delta.tool_calls or []
        )
    assert RUN not in got.lower(), got


def test_an_error_event_quoting_the_key_past_its_cut_is_masked(endpoint):
    """Held: an error event whose message holds the key across the 200th character (where
    the cause built from it is cut): the stream is masked before it is read, so the cut
    meets `[REDACTED]`."""
    message = "x" * 190 + " " + CANARY
    event = b"data: " + json.dumps({"error": {"type": "e", "message": message}}).encode()
    cause, told = _fault_of(endpoint, sse([_delta("a") + b"\n\n", event + b"\n\n"]), True)
    assert RUN not in (cause + told).lower() and "sk-r21" not in cause + told, (cause, told)


# -- KeyMask.quote: the cut after the mask --------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [CANARY, CANARY.upper(), CANARY.replace("-", "%2d"), urllib.parse.quote(CANARY.lower())],
    ids=["plain", "upper", "lower-hex-escapes", "lower-case-quoted"],
)
def test_a_cut_anywhere_around_the_key_never_shows_a_part_of_it(spelling):
    """Held: a cause holding the key (in other letters, its escapes in lower hex) at every
    offset from 80 characters before `MAX_CAUSE` to past it: masked first, the cut lands
    in `[REDACTED]` or beside it, never in the key."""
    mask = KeyMask(CANARY)
    for offset in range(MAX_CAUSE - 80, MAX_CAUSE + 2):
        quoted = mask.quote("y" * offset + spelling + "z" * 30)
        assert RUN not in quoted.lower() and "r21-can" not in quoted.lower(), offset
        assert len(quoted) <= MAX_CAUSE + 3


# -- Gate0: a redirect or a challenge quoting the key ---------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        f"HTTP/1.1 307 Temporary Redirect\r\nLocation: https://x.example/?k={CANARY}\r\n",
        f'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer token="{CANARY}"\r\n',
    ],
    ids=["a-redirect", "a-challenge"],
)
def test_gate0_never_quotes_a_location_or_a_challenge(line, endpoint, monkeypatch):
    """Held: the ping answered by a redirect whose `Location` holds the key, or a 401 whose
    challenge quotes it: Gate0 names the status only."""
    endpoint.behaviour = _raw(line.encode() + b"Content-Length: 0\r\n\r\n")
    problem, died = _pinged(endpoint.url, CANARY, monkeypatch)
    assert not died and problem and RUN not in problem.lower(), problem


# -- the endpoint URL's host ----------------------------------------------------------------------

DEVIATING_HOSTS = {
    "a-sharp-s": "https://stra\u00dfe.example/v1",
    "a-final-sigma": "https://\u03c0\u03bf\u03bb\u03c5\u03c2.example/v1",
}


@pytest.mark.parametrize("attack", DEVIATING_HOSTS)
def test_an_endpoint_host_clients_encode_differently_is_refused(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a host holding `ß` or a final `ς` (a German or Greek name, written as
    registered). Got through on main: it validated, encodable by IDNA; but Python's codec
    (IDNA 2003, the gateway's and Gate0's) maps `ß` to `ss` and `ς` to a medial sigma,
    while IDNA 2008 (UTS 46, as browsers, curl and the `idna` package encode it) keeps
    them: the gateway sent every call, the key with it, to `strasse.example`, another name,
    which anyone may own (TLS checks that name's certificate, not the one meant). Stops it:
    such a host is refused in one line, asking for its `xn--` form, which every client
    sends as it is."""
    code, err = _validated_quietly(DEVIATING_HOSTS[attack], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and "xn--" in lines[0], err


KEYS_IN_HOSTS = {
    "a-groq-key-as-a-subdomain": f"https://gsk_{LONG}.example.com/v1",
    "a-hugging-face-key-as-the-host": f"http://hf_{LONG}:8000/v1",
    "an-nvidia-key-as-a-label": f"https://nvapi-{LONG}.api.example.com/v1",
    "a-groq-key-as-an-ipv6-zone": f"http://[fe80::1%25gsk_{LONG}]:8000/v1",
}


@pytest.mark.parametrize("attack", KEYS_IN_HOSTS)
def test_an_endpoint_host_of_a_known_key_form_is_refused_quietly(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a key of a known form pasted as the host or one of its labels (into a
    template's `https://{host}/v1`). Got through on main: the path, the query and the
    parameters were read for key forms, the host was not: it validated and was written
    with the config (every call then failed on the resolver, the key sent to it). Stops it:
    the host is read for a key's form as a path segment is."""
    code, err = _validated_quietly(KEYS_IN_HOSTS[attack], tmp_path, monkeypatch, capsys, SECRET)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and ("key" in lines[0] or "secret" in lines[0]), err


REFUSED_ELSEWHERE = {
    "a-google-key-as-the-user": f"https://AIza{LONG}@llm.example.com/v1",
    "a-groq-key-in-the-fragment": f"https://llm.example.com/v1#gsk_{LONG}",
    "a-key-after-a-comma-in-a-path-parameter": f"https://llm.example.com/v1;x=1,hf_{LONG}",
    "a-key-after-a-plus-in-a-query-value": f"https://llm.example.com/v1?q=a+AIza{LONG}",
    "a-key-after-an-encoded-slash": f"https://llm.example.com/v1/x%2Fgsk_{LONG}",
}


@pytest.mark.parametrize("attack", REFUSED_ELSEWHERE)
def test_a_known_key_anywhere_else_in_the_url_is_refused_quietly(
    attack, tmp_path, monkeypatch, capsys
):
    """Held: a key of a known form as the URL's user, in its fragment, after a comma in a
    path parameter, after a `+` (a space) in a query value, after an encoded `/`: refused in
    one line that does not quote it."""
    code, err = _validated_quietly(REFUSED_ELSEWHERE[attack], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1, err


HONEST_HOSTS = {
    "the-xn-form-of-a-sharp-s": "https://xn--strae-oqa.example/v1",
    "an-umlaut": "https://b\u00fccher.example/v1",
    "a-compose-service-with-underscores": "http://llm_server_gsk:8000/v1",
    "a-hugging-face-endpoint": "https://abc123xyz.us-east-1.aws.endpoints.huggingface.cloud/v1",
    "a-route-of-the-hugging-face-router": "https://router.huggingface.co/hf-inference/v1",
    "an-ipv6-address": "http://[2001:db8::1]:8000/v1",
    "a-providers-prefix-as-a-label": "https://nvapi-gateway.example.com/v1",
}


@pytest.mark.parametrize("url", HONEST_HOSTS.values(), ids=HONEST_HOSTS)
def test_an_honest_endpoint_host_is_accepted(url, tmp_path, monkeypatch, capsys):
    """Held: a host in its `xn--` form, an umlaut (encoded alike by every client), a compose
    service's name holding a key form's prefix, Hugging Face's endpoints and router, an
    IPv6 address validate."""
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys)
    assert "agent.llm.base_url" not in err, err


# -- a canary key, looked for in every output ----------------------------------------------------


def _echoes(key: str) -> dict:
    """Endpoint behaviours, each writing `key` back a way this round tried."""
    body = json.dumps(chat_reply("hi")).encode()
    fields = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    event = f"id: {key}\n".encode() + _delta("hi") + b"\n\n"
    return {
        "a-cookie": answer(200, chat_reply("hi"), Set_Cookie=f"s={key}"),
        "a-challenge": answer(200, chat_reply("hi"), WWW_Authenticate=f'Bearer t="{key}"'),
        "a-reason-phrase": _raw(f"HTTP/1.1 500 {key}\r\n{fields}".encode() + body, keep=True),
        "a-redirect": answer(307, b"", Location=f"https://x.example/?k={key}"),
        "an-event-id-stream": sse([event, DONE]),
    }


def test_a_canary_key_echoed_every_way_is_in_no_output(endpoint, tmp_path, caplog, capfd):
    """Held: the endpoint writes a canary key back in the headers and fields this round
    tried, each call through the real openai SDK; nothing the client reads, the run's
    accounts, the call log, the gateway's log or the process's output holds a run of the
    key in any case."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with Gateway(log_path=tmp_path / "gateway.jsonl") as gateway:
        for name, behaviour in _echoes(CANARY).items():
            endpoint.behaviour = behaviour
            token = _grant(gateway, endpoint)
            chat = openai_client(gateway, token).chat.completions.with_raw_response
            stream = name.endswith("stream")
            try:
                raw = chat.create(model="m", messages=USER, stream=stream)
                seen += [str(raw.headers), raw.http_response.read().decode()]
            except Exception as exc:  # the SDK's error, or the cut stream's own
                seen.append(f"{exc} {getattr(exc, 'body', '')}")
            seen.append(repr(gateway.revoke(token)))
    out = capfd.readouterr()
    written = [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    everything = "\n".join([*seen, *written, caplog.text, out.out, out.err]).lower()
    assert RUN not in everything and "r21-canary" not in everything, everything
