"""Sabotage, nineteenth red-team pass (issue 22): a misbehaving endpoint and a careless
operator, aimed at rounds 17-18's fixes (`test_round18_endpoint.py`): `masking` (the key's
spellings), the credential words and `KEY_IN_PATH`, Gate0's ping in its own thread; then
the faults' causes (their size, the key in them), a refused key, and endpoint URLs no
client can send.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 62 cases, 50 got
through on main: 13 new holes. (1) The key with only some characters percent-encoded (Go's
`PathEscape`, PHP's `json_encode` of an encoded URL: `\\/` beside `%2B`, a letter encoded)
reached the agent, whole, fed a byte per read, streamed (9). (2) Gate0's problem quoted a
status line reflecting the key (3). (3) Gate0's ping thread died on what it did not catch
(a `Location: http://[::1`; a key with a line break, printed whole on stderr), and Gate0
said "did not answer within 15 s" (2). (4) A fault's words, cut short before the mask, held
a key's first characters (a name given twice, a count that is no number; streamed too)
(3). (5) A fault's cause was unbounded (a 64 KB status line, a count named with a megabyte)
(2). (6) A key of an LLM provider's form in the URL path (`nvapi-`, `pplx-`, `csk-`, `fw_`,
`tgp_v1_`) validated (5). (7) A key of a known form as a query value validated (2). (8) A
host no client can encode (IDNA) validated (3). (9) A `base_url` ending in a model call's
route validated, every call a 404 (3). (10) Whitespace, a control character or a non-ASCII
letter after the host validated, every call failing in the gateway (6). (11) A header named
with the key was relayed (3). (12) A Claude-login role failed Gate0 every round (1). (13)
A 401/403 sent as an event stream or gzip'd was relayed or an ordinary fault, not the key's
refusal (8). No limit declared.
"""

from __future__ import annotations

import gzip
import json
import threading
import urllib.parse

import openai
import pytest

from flashrsi_dagster.algorithms.evolver import health
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.masking import KeyMask
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import answer, chat_reply, head, sse
from tests.sabotage.test_round12_endpoint import TIMEOUT, _raw
from tests.sabotage.test_round13_endpoint import DONE
from tests.sabotage.test_round15_endpoint import _validate
from tests.sabotage.test_round16_endpoint import streamed_with_the_key
from tests.sabotage.test_round17_endpoint import _validated_quietly

CANARY = "sk-r19-canary-" + "Hd8" * 12
"""A key no other test uses, looked for in every output (50 characters: longer than the
gateway's 40-character quotes of an endpoint's words)."""
SLASH_CANARY = "r19/Canary+Key=" + "Gx2" * 8
"""A key as base64 writes one (`/`, `+`, `=`)."""
SECRET = "r19Passw0rd" + "Mk2" * 4
"""A password or key an operator put in the endpoint URL."""


# -- the key written back with some of its characters encoded ------------------------------------

PARTLY_ENCODED = {
    # Go's `url.PathEscape`: `/` encoded, `+` and `=` kept (a path segment's rules)
    "go-path-escape": SLASH_CANARY.replace("/", "%2F"),
    # PHP's `json_encode` of a URL whose path was encoded: `\/` beside `%2B`, `%3D`
    "json-escaped-path-encoding": urllib.parse.quote(SLASH_CANARY).replace("/", "\\/"),
    "only-the-plus-encoded": SLASH_CANARY.replace("+", "%2B"),
    "a-letter-encoded-too": SLASH_CANARY.replace("C", "%43"),
}


def _relayed(endpoint, text: str) -> str:
    """What a client reads of a whole answer quoting `text` as it is on the wire (a JSON
    string's escapes kept), with `SLASH_CANARY` the key."""
    body = json.dumps(chat_reply("your key: KEY")).replace("KEY", text)
    endpoint.behaviour = answer(200, body.encode())
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", SLASH_CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)
        gateway.revoke(token)
    return reply.choices[0].message.content or ""


@pytest.mark.parametrize("spelling", PARTLY_ENCODED.values(), ids=PARTLY_ENCODED)
def test_an_answer_echoing_the_key_partly_encoded_never_shows_it(spelling, endpoint):
    """Attack: a 200 answer quoting the key with only some of its characters
    percent-encoded (Go's `url.PathEscape` keeps `+` and `=`; PHP's `json_encode` writes a
    path-encoded URL's `/` as `\\/`; an encoder of `+` alone; a letter encoded, as any
    encoder may). Got through on main: `spellings` listed whole encodings, each character
    encoded by one rule. Stops it: the key is matched character by character, each as
    itself, its `%XX` escape (either case) or its JSON escape (`\\/`)."""
    got = _relayed(endpoint, spelling)
    assert "Gx2Gx2Gx2" not in got, got


@pytest.mark.parametrize("spelling", PARTLY_ENCODED.values(), ids=PARTLY_ENCODED)
def test_a_key_partly_encoded_fed_a_byte_at_a_time_is_masked(spelling):
    """Attack: the same in a stream fed a byte per read, and in a header or a fault's words
    (`KeyMask.text`). Got through on main with the answer above."""
    mask = KeyMask(SLASH_CANARY)
    text = ("before " + spelling + " after").encode()
    out = b"".join(mask.feed(text[i : i + 1]) for i in range(len(text))) + mask.end()
    assert out == b"before [REDACTED] after", out
    assert mask.text(f"x {spelling} y") == "x [REDACTED] y"


def test_a_stream_echoing_the_key_as_go_writes_a_path_never_shows_it(endpoint):
    """Attack: Go's path escape of the key in a streamed event cut inside the key. Got
    through on main (the spelling)."""
    spelling = PARTLY_ENCODED["go-path-escape"]
    delta = {"choices": [{"index": 0, "delta": {"content": "your key: " + spelling}}]}
    event = b"data: " + json.dumps(delta).encode() + b"\n\n"
    cut = event.index(b"Canary") + 3  # inside the key
    endpoint.behaviour = sse([event[:cut], event[cut:], DONE])
    got = streamed_with_the_key(endpoint, SLASH_CANARY)
    assert spelling not in got and "Gx2Gx2Gx2" not in got, got


def test_text_near_the_key_but_not_it_is_relayed_as_it_is():
    """Held: escapes of the key's characters that never complete it (the key's start, then
    other text; `%2F` and `\\/` of its own) pass unchanged, whole or a byte at a time."""
    text = b"r19%2FCanary+Ke r19\\/Canary%2B r19/Canary+Key=Gx2 %2F \\/ " * 50
    mask = KeyMask(SLASH_CANARY)
    assert mask.whole(text) == text
    out = b"".join(mask.feed(text[i : i + 7]) for i in range(0, len(text), 7)) + mask.end()
    assert out == text


# -- Gate0's ping: what it says, and what its thread does with what it cannot read ---------------


def _pinged(url: str, key: str, monkeypatch) -> tuple[str | None, list]:
    """Gate0's ping of `url` with `key`, and the exceptions that ended its thread unseen
    (`threading.excepthook`, which prints them, tracebacks and words, to stderr)."""
    monkeypatch.setattr(health, "PING_TIMEOUT", 5.0)
    monkeypatch.setattr(health, "PING_GRACE", 60.0)  # a bound for a hang only
    monkeypatch.setenv("R19_KEY", key)
    died: list = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    problem = health.endpoint_problem(LLMConfig(model="m", base_url=url, api_key="${R19_KEY}"))
    return problem, died


ECHOED_HEADS = {
    "the-key-as-a-status": b"HTTP/1.1 2OO Bearer " + CANARY.encode() + b"\r\n\r\n",
    "the-key-as-a-protocol": CANARY.encode() + b" 200 OK\r\n\r\n",
    "the-key-partly-encoded-as-a-status": (
        b"HTTP/1.1 2OO " + CANARY.replace("-", "%2D").encode() + b"\r\n\r\n"
    ),
}


@pytest.mark.parametrize("attack", ECHOED_HEADS)
def test_gate0_never_repeats_a_key_the_endpoint_echoes_in_a_broken_head(
    attack, endpoint, monkeypatch
):
    """Attack: an endpoint answers Gate0's ping with a status line that reflects the
    request's `Authorization` header (a broken proxy), as the status, the protocol, or
    percent-encoded. Got through on main: the ping's problem quoted `http.client`'s words,
    which are the line as sent, the key in it, and Gate0 prints its problems (and the
    Evolver's round records them). Stops it: the ping's words are masked for the role's key
    (`KeyMask.text`, the gateway's)."""
    endpoint.behaviour = _raw(ECHOED_HEADS[attack])
    problem, died = _pinged(endpoint.url, CANARY, monkeypatch)
    assert problem and "did not answer" in problem and "Hd8Hd8Hd8" not in problem, problem
    assert not died


def test_gate0_names_a_redirect_to_an_unreadable_location_in_one_line(endpoint, monkeypatch):
    """Attack: the ping is answered `302` with `Location: http://[::1` (no closing bracket).
    Got through on main: urllib's redirect handler reads the location before asking where
    to go (and the project's handler refuses every redirect), `urlparse` raised ValueError,
    which the ping did not catch: its thread died with a traceback on stderr, and Gate0 said
    "did not answer within 15 s" of an endpoint that had answered at once. Stops it: the
    ping's thread catches every error (its type named, its words masked)."""
    head = b"HTTP/1.1 302 Found\r\nLocation: http://[::1\r\nContent-Length: 0\r\n\r\n"
    endpoint.behaviour = _raw(head)
    problem, died = _pinged(endpoint.url, CANARY, monkeypatch)
    assert not died, died
    assert problem and "within" not in problem and "Hd8Hd8Hd8" not in problem, problem


def test_gate0_never_prints_a_key_holding_a_line_break(endpoint, monkeypatch, capsys):
    """Attack: between two rounds the operator exports the key again, read from a file with
    its newline (validate refuses it, round 15; the Evolver's Gate0 reads the environment
    at each round). Got through on main: `http.client` refused the header with
    "Invalid header value b'Bearer sk-…\\n'", an error the ping's thread did not catch:
    the key was printed whole on stderr by Python's thread hook, and Gate0 said "did not
    answer within 15 s". Stops it: a key no header can carry is left to the dry run to
    report (`validation.key_problem`, as an unset key is), never sent."""
    problem, died = _pinged(endpoint.url, CANARY + "\n", monkeypatch)
    shown = capsys.readouterr()
    assert not died and "Hd8Hd8Hd8" not in shown.out + shown.err + str(problem), died
    assert problem is None or "within" not in problem, problem


# -- a fault's cause: the key cut inside it, its size --------------------------------------------


def _failed_call(
    endpoint, behaviour, stream: bool = False, error=openai.APIError, key: str = CANARY
):
    """A chat call (with `key` the role's) meeting `behaviour`, which must fail with
    `error`: the role's accounts, and what the client was told."""
    endpoint.behaviour = behaviour
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", key, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        chat = openai_client(gateway, token).chat.completions
        with pytest.raises(error) as failed:
            if stream:
                list(chat.create(model="m", messages=USER, stream=True))
            else:
                chat.create(model="m", messages=USER)
        return gateway.revoke(token), failed.value


def _fault_of(endpoint, behaviour, stream: bool = False, key: str = CANARY) -> tuple[str, str]:
    """The cause the run's accounts keep for a chat call meeting `behaviour`, and what the
    client was told; the call must have failed."""
    used, told = _failed_call(endpoint, behaviour, stream, key=key)
    assert used.failed == 1 and used.last_fault, used
    return used.last_fault, str(told)


def _twice(name: str) -> bytes:
    """An answer holding the key `name` twice in one object."""
    return json.dumps(chat_reply()).replace('"id":', f'"{name}": 1, "{name}": 2, "id":').encode()


KEY_CUT = {
    "the-key-as-a-name-given-twice": answer(200, _twice(CANARY)),
    "the-key-after-100-characters-of-a-count": answer(
        200, chat_reply(usage={"prompt_tokens": "x" * 100 + CANARY, "completion_tokens": 1})
    ),
}


@pytest.mark.parametrize("attack", KEY_CUT)
def test_a_fault_quoting_the_key_cut_short_never_shows_a_part_of_it(attack, endpoint):
    """Attack: an answer the gateway refuses, whose refusal quotes the endpoint's words cut
    short (40 characters of a name given twice, 120 of a count that is no number), the key
    in them past the cut. Got through on main: the words were cut first, masked after, and
    a cut key is no key to the mask: its first 26 or 20 characters went to the run's
    accounts, the call log and the client's 502. Stops it: the answer is masked before it
    is read (`KeyMask.whole`), so every word quoted from it is."""
    cause, told = _fault_of(endpoint, KEY_CUT[attack])
    assert "Hd8Hd8" not in cause + told, (cause, told)


def test_a_stream_event_quoting_the_key_cut_short_never_shows_a_part_of_it(endpoint):
    """Attack: the same in a streamed event (its key given twice). Got through on main."""
    delta = {"choices": [{"index": 0, "delta": {"content": "sp"}}]}
    event = json.dumps(delta).replace("{", f'{{"{CANARY}": 1, "{CANARY}": 2, ', 1)
    cause, told = _fault_of(endpoint, sse([b"data: " + event.encode() + b"\n\n", DONE]), True)
    assert "Hd8Hd8" not in cause + told, (cause, told)


def test_a_usage_count_named_with_a_megabyte_is_a_fault_of_a_line(endpoint):
    """Attack: an answer whose usage holds a count named with a megabyte of text (ending in
    `_tokens`) and no number. Got through on main: the cause named the count whole, a
    megabyte per call in the run's accounts (100 causes kept: 100 MB), the call log and
    the client's 502. Stops it: the name is cut as the endpoint's other words are."""
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "x" * (1 << 20) + "_tokens": -1}
    cause, told = _fault_of(endpoint, answer(200, chat_reply(usage=usage)))
    assert len(cause) < 1000 and len(told) < 2000, (len(cause), len(told))


def test_a_status_line_of_64_kb_is_a_fault_of_a_line(endpoint):
    """Attack: an answer whose status line runs 64 KB (just under `http.client`'s bound),
    not a status at all. Got through on main: the cause quoted `http.client`'s words, the
    line whole: 64 KB per call in the run's accounts, the call log and the 502. Stops it:
    a cause is cut (after the key is masked in it, so no part of a key is left)."""
    cause, told = _fault_of(endpoint, _raw(b"HTTP/1.1 2OO " + b"y" * 65000 + b"\r\n\r\n"))
    assert len(cause) < 1000 and len(told) < 2000, (len(cause), len(told))


# -- the endpoint URL: keys of LLM providers' forms, hosts no client can reach --------------------

LONG = SECRET + SECRET
PROVIDER_KEYS = {
    "an-nvidia-key-in-the-path": f"https://integrate.api.nvidia.com/nvapi-{LONG}/v1",
    "a-perplexity-key-in-the-path": f"https://api.perplexity.ai/pplx-{LONG}/v1",
    "a-cerebras-key-in-the-path": f"https://api.cerebras.ai/csk-{LONG}/v1",
    "a-fireworks-key-in-the-path": f"https://api.fireworks.ai/fw_{LONG}/inference/v1",
    "a-together-key-in-the-path": f"https://api.together.xyz/tgp_v1_{LONG}/v1",
    "a-google-key-as-a-query-value": f"https://llm.example.com/v1?project=AIza{LONG}",
    "a-groq-key-as-a-query-value": f"https://llm.example.com/v1?model=gsk_{LONG}",
}


@pytest.mark.parametrize("attack", PROVIDER_KEYS)
def test_an_endpoint_url_holding_a_providers_key_is_refused_quietly(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a key of the form an OpenAI-compatible LLM provider issues, pasted into its
    endpoint's URL path (NVIDIA's `nvapi-…`, Perplexity's `pplx-…`, Cerebras' `csk-…`,
    Fireworks' `fw_…`, Together's `tgp_v1_…`), or a key of a form `KEY_IN_PATH` knows given
    as a query value under an innocent name (`?project=AIza…`, `?model=gsk_…`). Got
    through on main: the
    path's list knew code hosts' and a few model hosts' forms, not these providers', and
    query values were not looked at; each validated and was written with the config. Stops
    it: those forms are known, and a query value is read as a path segment is."""
    code, err = _validated_quietly(PROVIDER_KEYS[attack], tmp_path, monkeypatch, capsys, SECRET)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and "key" in lines[0], err


@pytest.mark.parametrize(
    "url",
    [
        "https://integrate.api.nvidia.com/v1",
        "https://api.fireworks.ai/inference/v1",
        "https://llm.example.com/nvapi/v1?model=hf_tiny",
        "https://llm.example.com/v1?deployment=csk-eu",
    ],
    ids=["nvidia", "fireworks", "short-prefixes", "a-short-value"],
)
def test_a_providers_honest_endpoint_url_is_accepted(url, tmp_path, monkeypatch, capsys):
    """Held: the providers' own endpoints, and their prefixes without a key's length after
    them, validate."""
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys, SECRET)
    assert "agent.llm.base_url" not in err, err


UNREACHABLE_HOSTS = {
    "an-empty-label-in-an-international-name": "https://ll\u00e9m..example.com/v1",
    "a-label-of-70-characters": "https://" + "\u00e9" * 70 + ".example.com/v1",
    "an-ascii-label-of-70-characters": "https://" + "a" * 70 + ".example.com/v1",
}


@pytest.mark.parametrize("attack", UNREACHABLE_HOSTS)
def test_an_endpoint_host_no_client_can_encode_is_refused_at_validate(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a host name with an empty label or a label past DNS's 63 characters (a typo,
    a pasted path). Got through on main: it validated, then every call failed in the
    gateway on `UnicodeError` from the IDNA codec (a "gateway bug" 500), or on the
    resolver; Gate0's ping thread died with a traceback. Stops it: validate encodes the
    host as every client will (IDNA) and refuses it in one line, the URL not quoted."""
    code, err = _validated_quietly(UNREACHABLE_HOSTS[attack], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and "host" in lines[0], err


@pytest.mark.parametrize(
    "url",
    ["https://b\u00fccher.example/v1", "https://llm.example.com./v1", "http://localhost:8000/v1"],
    ids=["international-name", "trailing-dot", "localhost"],
)
def test_an_endpoint_host_any_client_can_encode_is_accepted(url, tmp_path, monkeypatch, capsys):
    """Held: an international name, a fully qualified name's trailing dot, localhost."""
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys)
    assert "agent.llm.base_url" not in err, err


ROUTE_URLS = {
    "chat-completions": ("https://api.openai.com/v1/chat/completions", "chat"),
    "responses": ("https://api.openai.com/v1/responses/", "responses"),
    "messages": ("https://api.anthropic.com/v1/messages", "anthropic"),
}


@pytest.mark.parametrize("attack", ROUTE_URLS)
def test_an_endpoint_url_ending_in_its_apis_route_is_refused_at_validate(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: the operator pastes the call's whole URL from a provider's curl example
    (`…/v1/chat/completions`, `…/v1/responses`, `…/v1/messages`) as `base_url`. Got through
    on main: it validated, and every client appends the route again (`…/chat/completions/
    chat/completions`): every call of the role a 404, relayed as the model's answer, every
    rollout an error. Stops it: a `base_url` whose path ends in a model call's route is
    refused in one line, saying to give the base (`…/v1`)."""
    url, api = ROUTE_URLS[attack]
    code, _ = _validate(
        tmp_path, monkeypatch, ["--agent.llm.base_url", url, "--agent.llm.api", api]
    )
    lines = [line for line in capsys.readouterr().err.splitlines() if "agent.llm" in line]
    assert code != 0 and len(lines) == 1 and "route" in lines[0], lines


@pytest.mark.parametrize(
    "url",
    [
        "https://llm.example.com/messages-proxy/v1",
        "https://llm.example.com/responses/v1",
        "https://x.services.ai.azure.com/models?api-version=2024-05-01-preview",
    ],
    ids=["a-word-of-a-route", "a-route-before-v1", "azure-ai-models"],
)
def test_an_endpoint_url_holding_a_routes_word_is_accepted(url, tmp_path, monkeypatch, capsys):
    """Held: a route's word elsewhere in the path is a deployment's name."""
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys)
    assert "agent.llm.base_url" not in err, err


# -- the key as a relayed header's name ----------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [CANARY, CANARY.replace("-", "%2D"), CANARY.lower()],
    ids=["plain", "encoded", "lower-case"],
)
def test_a_header_named_with_the_key_is_never_relayed(spelling, endpoint):
    """Attack: a 200 answer carrying a header whose name is the key (a proxy turning the
    request's headers into names of its own), plainly, encoded (`%` is a token's
    character) or lower-cased (as HTTP/2 writes every name). Got through on main:
    `KeyMask.headers` masked values only, and the key is a well-formed header name: the
    agent read it from the answer's headers. Stops it: a header whose name holds the key,
    in any case, is dropped (masked, it would be no header name)."""
    endpoint.behaviour = answer(200, json.dumps(chat_reply("hi")).encode(), **{spelling: "1"})
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        raw = openai_client(gateway, token).chat.completions.with_raw_response.create(
            model="m", messages=USER
        )
        gateway.revoke(token)
    names = " ".join(raw.headers.keys()).lower()
    assert "hd8hd8hd8" not in names, raw.headers
    assert raw.parse().choices[0].message.content == "hi"


# -- the endpoint URL: characters no request line carries -----------------------------------------

UNSENDABLE_URLS = {
    "a-trailing-space": "https://llm.example.com/v1 ",
    "a-space-in-the-path": "https://llm.example.com/my deployment/v1",
    "a-space-in-the-query": "https://llm.example.com/v1?api-version=2024 06",
    "a-trailing-no-break-space": "https://llm.example.com/v1\u00a0",
    "a-delete-in-the-path": "https://llm.example.com/v\x7f1",
    "an-accent-in-the-path": "https://llm.example.com/d\u00e9ploiement/v1",
}


@pytest.mark.parametrize("attack", UNSENDABLE_URLS)
def test_an_endpoint_url_no_request_line_carries_is_refused_at_validate(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a `base_url` with a space, a no-break space or a control character after its
    host, or a letter that is not ASCII in its path or query (a pasted name, a deployment
    named in French). Got through on main: it validated; then every call of the role failed
    in the gateway, `http.client` refusing the request line (`InvalidURL`, a 502 each) or
    failing on it (`UnicodeEncodeError`: "the gateway's own error", a 500 each). Stops it:
    validate refuses such a URL in one line (percent-encode the path; an international
    host name is kept, IDNA-encoded by every client)."""
    code, err = _validated_quietly(UNSENDABLE_URLS[attack], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and "percent-encode" in lines[0], err


def test_a_percent_encoded_path_is_accepted(tmp_path, monkeypatch, capsys):
    """Held: the same path percent-encoded validates."""
    url = "https://b\u00fccher.example/d%C3%A9ploiement/my%20deployment/v1"
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys)
    assert "agent.llm.base_url" not in err, err


def test_gate0_takes_a_claude_login_roles_endpoint_refusing_a_keyless_ping_as_healthy(
    endpoint, monkeypatch
):
    """Attack (a careless operator's honest config): an Evolver role run by Claude Code with
    `llm.auth: login` (no `api_key`: the Claude login's token is the credential, read by
    the gateway at the call). Got through on main: Gate0 pinged the endpoint's model list
    with the placeholder key `no-api-key-configured`, the endpoint refused it (401, as
    Anthropic's does), and Gate0 called the environment unhealthy, "the key is refused",
    before every round: a login role could never run the Evolver. Stops it: a login role's
    ping carries no credential (the login stays where it lives), and a 401 or 403 to it is
    an answer: the endpoint is up."""
    endpoint.behaviour = answer(401, {"type": "error", "error": {"type": "authentication_error"}})
    monkeypatch.setattr(health, "PING_TIMEOUT", 5.0)
    llm = LLMConfig(model="claude-x", base_url=endpoint.url, api="anthropic", auth="login")
    assert health.endpoint_problem(llm) is None


# -- a key refused in an event stream -------------------------------------------------------------

REFUSED = b'data: {"error": {"message": "Incorrect API key provided: sk-r19-ca***Hd8"}}\n\n'
REFUSALS = {
    # as some OpenAI-compatible servers answer a streamed request they refuse
    "an-event-stream": {"Content-Type": "text/event-stream"},
    # compressed though the gateway asked for none (a CDN's doing)
    "gzip": {"Content-Type": "application/json", "Content-Encoding": "gzip"},
}


def _refusal(status: int, how: str):
    """A 401 or 403 whose body quotes part of the key, sent as `how` says."""
    fields = REFUSALS[how]
    body = gzip.compress(REFUSED) if "Content-Encoding" in fields else REFUSED
    fields = {**fields, "Content-Length": str(len(body))}

    def write(conn) -> bool:
        conn.sendall(head(status, fields) + body)
        return True

    return write


@pytest.mark.parametrize("how", REFUSALS)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("status", [401, 403])
def test_a_key_refused_in_any_body_is_the_keys_refusal_never_quoted(status, stream, how, endpoint):
    """Attack: the endpoint refuses the role's key (401 or 403) with a body quoting part of
    the key (`sk-r19-ca***Hd8`, as OpenAI's message does), sent as an event stream, or
    gzip'd. Got through on main: only a plain whole refusal was read as the key's
    (`refuse_key`, which stops an evaluation where every rollout sees it: no rerun helps)
    and replaced by the gateway's words; a streamed one was relayed, the part of the key
    to the agent and into the fault's cause, and a gzip'd one was "a body encoded": both
    counted as ordinary faults, rerun by the ladder. Stops it: a 401 or 403 is read whole
    and answered as the key's refusal, whatever its content type or encoding."""
    used, refused = _failed_call(endpoint, _refusal(status, how), stream, openai.APIStatusError)
    told = f"{refused} {refused.body} {used.last_fault} {used.faults}"
    assert used.key_refused == 1 and "Hd8" not in told, (used, told)
