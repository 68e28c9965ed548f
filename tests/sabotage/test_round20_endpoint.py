"""Sabotage, twentieth red-team pass (issue 22): a misbehaving endpoint and a careless
operator, aimed at round 19's fixes (`test_round19_endpoint.py`): `KeyMask` matching the key
character by character (a stream's held-back tail, long keys, multi-byte characters), an
answer masked before it is read, `MAX_CAUSE`, a refused key read whole, Gate0's ping,
and validate's new refusals of endpoint URLs, both ways.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 35 cases, 15 got
through on main (2 of them declared): 5 new holes. (1) A `Content-Encoding` reflecting the
key was quoted cut short (and lower-cased) before the mask: 34 of its characters in the
accounts, the log and the 502 (2, the canary case included). (2) Gate0's problem quoted a
64 KB status line whole (1). (3) The key echoed in other letters (lower-cased, upper-cased
across reads) reached the agent (4). (4) A key of a known form as a URL parameter's name
(`?AIza…`) validated (3). (5) HTTP 407, 421, 425 were the request's own 4xx, counted
answered (3). Declared: the key percent-encoded twice or in base64 (2, strict xfails).
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse

import openai
import pytest

from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.masking import KeyMask
from flashrsi_dagster.records.redaction import REDACTED
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import _drip, _repeat, answer, chat_reply, head, sse
from tests.sabotage.test_round12_endpoint import TIMEOUT, _raw, _then
from tests.sabotage.test_round13_endpoint import DONE
from tests.sabotage.test_round17_endpoint import _validated_quietly
from tests.sabotage.test_round19_endpoint import (
    CANARY,
    SECRET,
    SLASH_CANARY,
    _fault_of,
    _pinged,
    _relayed,
)


def _fed(mask: KeyMask, data: bytes, step: int = 1) -> bytes:
    """`data` through `mask` as a stream read `step` bytes at a time."""
    return b"".join(mask.feed(data[i : i + step]) for i in range(0, len(data), step)) + mask.end()


# -- an endpoint's header quoted in a fault's cause ----------------------------------------------


def test_a_content_encoding_quoting_the_key_never_shows_a_part_of_it(endpoint):
    """Attack: a 200 answer whose `Content-Encoding` is a few characters, then the key (a
    proxy reflecting the request's headers into its own). Got through on main: the body is
    masked before it is read (round 19), but the head is not: `check_head` quoted the
    header's first 40 characters, lower-cased, and the mask, run on the cause afterwards,
    met a cut, lower-cased key: 34 of its characters went to the run's accounts, the call
    log and the client's 502. Stops it: the header is masked before it is quoted."""
    cause, told = _fault_of(endpoint, answer(200, Content_Encoding="br, " + CANARY))
    assert "hd8hd8" not in (cause + told).lower(), (cause, told)
    assert "sk-r19-canary" not in (cause + told).lower(), (cause, told)


def test_a_cause_cut_at_its_bound_beside_the_key_holds_no_part_of_it(endpoint):
    """Held: a status line of 390 characters, then the key: the cause is cut at
    `MAX_CAUSE`, after the mask, so the cut lands in `[REDACTED]` or past it, never in the
    key."""
    line = b"HTTP/1.1 2OO " + b"y" * 370 + CANARY.encode() + b"z" * 50 + b"\r\n\r\n"
    cause, told = _fault_of(endpoint, _raw(line))
    assert "Hd8" not in cause + told and "sk-r19" not in cause + told, (cause, told)


def test_a_refusal_that_never_ends_is_a_timeout_of_the_endpoint(endpoint):
    """Held: a 401 whose body never comes (a Content-Length, then silence) is read within
    the upstream's deadline: the call fails as the endpoint's timeout, with its cause, and
    is not the key's refusal."""
    behaviour = _then(head(401, {"Content-Length": "100000"}) + b'{"error": ', "stall")
    cause, told = _fault_of(endpoint, behaviour)
    assert "did not answer within" in cause and "Hd8" not in cause + told, cause


def _refusing_forever(every: float):
    """A 401 as an event stream that never ends, each event quoting the key."""
    event = b'data: {"error": "bad key ' + CANARY.encode() + b'"}\n\n'

    def write(conn) -> bool:
        fields = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
        conn.sendall(head(401, fields))
        _drip(conn, _repeat(b"%x\r\n%s\r\n" % (len(event), event), None), every)
        return False

    return write


@pytest.mark.parametrize("every", [0.0, 0.2], ids=["past-the-bound", "past-the-deadline"])
def test_a_refusal_streamed_forever_is_a_fault_with_its_cause(every, endpoint):
    """Held: a 401 sent as an event stream that never ends, each event quoting the key,
    fast (past the answer's bound) or slowly (past the deadline): read whole, it fails as
    the endpoint's fault with its cause (the bound, the deadline), the key in none of it,
    and the gateway goes on serving."""
    cause, told = _fault_of(endpoint, _refusing_forever(every))
    assert "Hd8" not in cause + told and ("bound" in cause or "within" in cause), cause


@pytest.mark.parametrize("status", [407, 421, 425])
def test_a_status_of_the_way_to_the_endpoint_is_its_fault(status, endpoint):
    """Attack: the endpoint answers 407 (a proxy on its way wants its own credentials), 421
    (a request sent on a connection to the wrong server) or 425 (too early: replay it
    later). Got through on main: only 408, 409, 429 and 5xx were the endpoint's faults; these
    were relayed as the request's own 4xx and counted answered, so a rollout failing on the
    way to the endpoint was the candidate's failure, not the infrastructure's. Stops it:
    they are faults of the endpoint (`FAULT_STATUSES`), with their cause; still relayed."""
    body = {"error": {"message": f"HTTP {status}", "type": "proxy_error"}}
    cause, _ = _fault_of(endpoint, answer(status, body))
    assert f"HTTP {status}" in cause, cause


# -- Gate0's ping: the size of what it says ------------------------------------------------------


def test_gate0_names_a_status_line_of_64_kb_in_a_line(endpoint, monkeypatch):
    """Attack: the ping is answered with a status line of 64 KB (just under `http.client`'s
    bound), no status at all. Got through on main: the gateway cuts a fault's cause
    (`MAX_CAUSE`, round 19), Gate0 did not: its problem quoted `http.client`'s words, the
    line whole, 64 KB printed by Gate0 and kept in the Evolver's round. Stops it: the
    ping's problem is cut as the gateway's causes are (after the key is masked)."""
    endpoint.behaviour = _raw(b"HTTP/1.1 2OO " + b"y" * 65000 + CANARY.encode() + b"\r\n\r\n")
    problem, died = _pinged(endpoint.url, CANARY, monkeypatch)
    assert not died and problem and len(problem) < 1000, len(problem or "")


# -- the key written back in other letters or encoded again --------------------------------------


def test_an_answer_echoing_the_key_lower_cased_never_shows_it(endpoint):
    """Attack: a 200 answer quoting the key lower-cased (a proxy that folds the headers it
    reflects, as HTTP/2 folds names, or a model asked to repeat the key in small letters).
    Got through on main: the mask matched each letter in its own case only (its `%XX`
    escape in either case): the key, less its letters' case, reached the agent, who needs
    only try the cases of its letters. Stops it: the key is matched whatever its letters'
    case (the whole key, over 20 characters: no honest text holds it in other letters)."""
    got = _relayed(endpoint, SLASH_CANARY.lower())
    assert "gx2gx2gx2" not in got.lower(), got


@pytest.mark.parametrize("step", [1, 5, 64])
def test_a_key_in_other_letters_cut_across_reads_is_masked(step):
    """Attack: the key upper-cased, then lower-cased and encoded, in a stream fed `step`
    bytes per read (a tail held back in other letters), and in a fault's words. Got
    through on main with the answer above."""
    mask = KeyMask(SLASH_CANARY)
    spelling = urllib.parse.quote(SLASH_CANARY.lower(), safe="")
    text = f"a {SLASH_CANARY.upper()} b {spelling} c".encode()
    assert _fed(mask, text, step) == f"a {REDACTED} b {REDACTED} c".encode()
    assert mask.text(f"x {SLASH_CANARY.upper()} y") == f"x {REDACTED} y"


@pytest.mark.xfail(
    strict=True,
    reason="declared: docs/confinement.md 'What leaves an agent is redacted' (the key "
    "encoded twice or in base64 is the endpoint's own encoding of it)",
)
@pytest.mark.parametrize(
    "spelling",
    [
        urllib.parse.quote(urllib.parse.quote(SLASH_CANARY, safe=""), safe=""),
        base64.b64encode(SLASH_CANARY.encode()).decode(),
    ],
    ids=["percent-encoded-twice", "base64"],
)
def test_a_key_encoded_twice_or_in_base64_is_not_masked(spelling, endpoint):
    """Attack: the key percent-encoded twice (`%252F`: a URL quoting a URL it had
    encoded) or in base64 (an echoed `Basic` header). Got through on main, and stays
    through: each is an encoding of the key's bytes the endpoint chose, as a hex dump or
    a cipher would be; the mask follows the escapes a key takes as text (JSON's, a URL's),
    and the list of encodings has no end. The records' redactor masks known keys in what
    a run leaves; what an agent reads of an endpoint that encodes the key is declared."""
    got = _relayed(endpoint, spelling)
    assert spelling not in got and "Gx2Gx2Gx2" not in got, got


# -- the mask on keys of other shapes ------------------------------------------------------------


@pytest.mark.parametrize("step", [1, 2, 3, 7])
def test_a_key_of_multi_byte_characters_cut_inside_a_character_is_masked(step):
    """Held: a key of Cyrillic letters and an emoji (validate refuses such a key; the mask
    takes any), cut inside a character's bytes and inside its `%XX` escapes, is masked,
    and text beside it is relayed whole."""
    key = "r20-\u043a\u043b\u044e\u0447-\U0001f511-" + "Qz7" * 6
    encoded = urllib.parse.quote(key, safe="")
    text = f"\u043a {key} \U0001f511 {encoded} %F0%9F".encode()
    got = _fed(KeyMask(key), text, step)
    assert got == f"\u043a {REDACTED} \U0001f511 {REDACTED} %F0%9F".encode(), got


def test_a_long_key_under_many_partial_matches_is_masked_and_text_kept():
    """Held: a 2 KB key (a JWT-like access token) and a stream of 64 KB of partial matches
    (its first 1 KB over and over, each spelt partly encoded), fed 257 bytes per read:
    every partial match is relayed as it is, the whole key masked. The cost is measured
    in bench/RESULTS.md, not asserted."""
    key = "eyJ" + "aB3-_" * 409
    part = key[:1000].replace("-", "%2D")
    text = (part + " ") * 64 + key
    got = _fed(KeyMask(key), text.encode(), 257)
    assert got == ((part + " ") * 64 + REDACTED).encode()


# -- the endpoint URL: a key of a known form as a parameter's name -------------------------------

LONG = SECRET + SECRET
BARE_KEYS = {
    "a-google-key-as-the-whole-query": (
        f"https://generativelanguage.googleapis.com/v1beta/openai?AIza{LONG}"
    ),
    "a-groq-key-as-a-query-name": f"https://llm.example.com/v1?gsk_{LONG}&api-version=1",
    "a-hugging-face-key-as-a-path-parameter": f"https://llm.example.com/v1;hf_{LONG}",
    "an-nvidia-key-after-a-semicolon": f"https://llm.example.com/v1?x=1;nvapi-{LONG}",
    "a-google-key-after-key=-in-a-path-segment": f"https://llm.example.com/v1/key=AIza{LONG}",
    "the-same-percent-encoded": f"https://llm.example.com/v1/key%3DAIza{LONG}",
    "a-groq-key-inside-a-value": f"https://llm.example.com/v1?project=team-gsk_{LONG}",
}


@pytest.mark.parametrize("attack", BARE_KEYS)
def test_an_endpoint_url_holding_a_known_key_as_a_name_is_refused_quietly(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a key of a known form given bare in the URL's query or as a path parameter,
    with no `name=` before it (`?AIza…`, `?gsk_…&api-version=1`, `/v1;hf_…`, `?x=1;nvapi-…`:
    the operator forgot `key=`). Got through on main: round 19 read a parameter's value
    for a key's form, and its name for a credential's word; a bare key is a name with an
    empty value, and no word: three validated and were written with the config (`hf_…`
    held, a literal secret to the config's own check). Stops it: a parameter's name is
    read for a key's form as its value is. The last three (a key form after `key=` in a
    path segment, percent-encoded too, or inside a value) got through round 20's fix, whose
    forms were matched only at a segment's or a value's start: a form is now looked for
    wherever a word may start, in the decoded text."""
    code, err = _validated_quietly(BARE_KEYS[attack], tmp_path, monkeypatch, capsys, SECRET)
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and ("key" in lines[0] or "secret" in lines[0]), err


# -- endpoint URLs an operator gives honestly ----------------------------------------------------

HONEST_URLS = {
    "a-compose-service-with-an-underscore": "http://llm_server:8000/v1",
    "an-ipv6-literal": "http://[::1]:8000/v1",
    "cloudflare-ai-gateway": (
        "https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/my-gw/openai"
    ),
    "azure-deployment": (
        "https://x.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21"
    ),
    "a-route-word-in-a-deployment": "https://llm.example.com/v1/completions-gateway",
    "a-fireworks-model-query": "https://llm.example.com/v1?model=accounts/fireworks/models/x",
    "azure-v1": "https://res.openai.azure.com/openai/v1/",
    "vertex-ai": (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
        "/endpoints/openapi"
    ),
    "baseten": "https://model-abc123.api.baseten.co/environments/production/sync/v1",
    "a-link-local-ipv6-with-its-zone": "http://[fe80::1%25eth0]:8000/v1",
}


@pytest.mark.parametrize("url", HONEST_URLS.values(), ids=HONEST_URLS)
def test_an_honest_endpoint_url_is_accepted(url, tmp_path, monkeypatch, capsys):
    """Held: endpoints operators give (a compose service's name with `_`, an IPv6 literal,
    Cloudflare's AI gateway with its 32-hex account id, an Azure deployment, a route's word
    in a name, a Fireworks model path as a query value, Azure's v1, Vertex AI, Baseten, a
    link-local IPv6 address with its zone) validate."""
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys)
    assert "agent.llm.base_url" not in err, err


# -- a canary key, looked for in every output ----------------------------------------------------

CANARY20 = "sk-r20-canary-" + "Vq5" * 12
"""A key no other test uses."""


def _echoes(key: str) -> dict:
    """Endpoint behaviours, each writing `key` back in a way rounds 19-20 met."""
    low, up = key.lower(), key.upper()
    delta = {"choices": [{"index": 0, "delta": {"content": "k: " + up}}]}
    event = b"data: " + json.dumps(delta).encode() + b"\n\n"
    return {
        "a-reflected-content-encoding": answer(200, Content_Encoding="br, " + key),
        "a-lower-cased-key-in-content": answer(200, chat_reply("your key: " + low)),
        "a-lower-cased-key-in-a-header": answer(200, chat_reply("hi"), X_Echo="Bearer " + low),
        "an-upper-cased-key-cut-in-a-stream": sse([event[:30], event[30:], DONE]),
        "a-refusal-quoting-the-key": answer(401, {"error": {"message": "bad key " + key}}),
        "a-status-line-of-the-key": _raw(b"HTTP/1.1 2OO " + key.encode() + b"\r\n\r\n"),
    }


def test_a_canary_key_echoed_every_way_is_in_no_output(endpoint, tmp_path, caplog, capfd):
    """Attack: the endpoint writes a canary key back every way this round found (a header
    quoted in a fault, lower-cased in content and in a header, upper-cased across a
    stream's reads, a refusal, a status line), each call through the real openai SDK.
    Got through on main (the first three ways). Stops it: the fixes above; then nothing
    the client reads, the run's accounts, the call log, the gateway's log or the
    process's output holds any run of the key in any case."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with Gateway(log_path=tmp_path / "gateway.jsonl") as gateway:
        for name, behaviour in _echoes(CANARY20).items():
            endpoint.behaviour = behaviour
            upstream = Upstream(endpoint.url, "chat", CANARY20, timeout=TIMEOUT)
            token = gateway.grant(experiment="x", role="target", run_id=name, upstream=upstream)
            chat = openai_client(gateway, token).chat.completions.with_raw_response
            stream = name.endswith("stream")
            try:
                raw = chat.create(model="m", messages=USER, stream=stream)
                seen += [str(raw.headers), raw.http_response.read().decode()]
            except openai.APIError as exc:
                seen.append(f"{exc} {exc.body}")
            seen.append(repr(gateway.revoke(token)))
    out = capfd.readouterr()
    written = [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    everything = "\n".join([*seen, *written, caplog.text, out.out, out.err]).lower()
    assert "vq5vq5" not in everything and "r20-canary" not in everything, everything
