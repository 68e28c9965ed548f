"""Sabotage, sixteenth red-team pass (issue 22): a misbehaving endpoint and a careless or
hostile operator, aimed at round 15's fixes (`test_round15_endpoint.py`): the key masking
(`gateway/masking.py`) against an endpoint that writes the key back in another spelling
(JSON's `\\/`, percent-encoded), the credential refusal in an endpoint URL (other names,
`;` parameters, a password the port's error quoted), `validation.key_problem`, Gate0's ping
(`endpoints.direct_opener`: a trickle, a status line not HTTP, a 302/303), the proxy
variables in any case, the endpoint URL's query (`Upstream.query`), the SDK's `OPENAI_*`
variables, and other numbers of the config.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 53 cases, 18 got
through on main: 5 new holes, and one declared limit narrowed. The holes: a credential in
the endpoint URL under Azure Functions' `code`, as a path parameter (`;key=`) or after a `;`
in the query validated and was written with the config (3); a password in the URL's user
part was quoted by the port's error (a `/` in it, or a port typo) (2); a key holding a space
(`Bearer <key>` pasted) validated, every call then refused (2); Gate0's ping waited hours on
an answer trickled a byte at a time (2); a status line that is not HTTP escaped the ping as a
traceback (1). The limit narrowed (round 11's, docs/confinement.md "What leaves an agent is
redacted": "written otherwise than as it is"): the key written back JSON-escaped with `\\/` or
percent-encoded reached the agent, in an answer and in a stream (8).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import re
import threading
import time
import urllib.parse
from types import SimpleNamespace

import openai
import pytest

from flashrsi_dagster.agents.miniagent.adapter import _server_env
from flashrsi_dagster.algorithms.evolver import health
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.environments.confinement import upstream_of
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.masking import KeyMask
from flashrsi_dagster.llm.client import LLMClient
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import answer, chat_reply, sse
from tests.sabotage.test_round12_endpoint import TIMEOUT, _raw
from tests.sabotage.test_round13_endpoint import DONE
from tests.sabotage.test_round15_endpoint import _recording_host, _validate

CANARY = "sk-r16-canary-" + "Vx4" * 8
"""A key no other test uses, looked for in every output."""
SLASH_CANARY = "r16/Canary+Key=" + "Wq9" * 8
"""A key as base64 writes one (`/`, `+`, `=`), as some providers issue them."""


_ENCODED = urllib.parse.quote(SLASH_CANARY, safe="")
ECHOES = {
    # (the key as the answer's text quotes it, what the endpoint's encoder does to the JSON)
    "json-escaped-slash": (SLASH_CANARY, lambda data: data.replace(b"/", b"\\/")),
    "percent-encoded": (_ENCODED, lambda data: data),
    "percent-encoded-lower": (
        re.sub("%[0-9A-F]{2}", lambda hexa: hexa.group().lower(), _ENCODED),
        lambda data: data,
    ),
    "form-encoded": (urllib.parse.quote_plus(SLASH_CANARY), lambda data: data),
}
"""How an endpoint may write the key back: PHP's `json_encode` escapes `/` as `\\/` (the
client reads the key whole), a proxy percent-encodes it in a URL it quotes."""


def _echoed(body: dict, spelling: str) -> bytes:
    text, encoder = ECHOES[spelling]
    return encoder(json.dumps(body).replace("@KEY", text).encode())


@pytest.mark.parametrize("spelling", ECHOES)
def test_an_endpoint_refusing_the_key_in_another_spelling_never_shows_it(
    spelling, endpoint, caplog, tmp_path
):
    """Attack: the endpoint refuses the key (401) and quotes it in its error, spelt as its
    encoder writes it: PHP's `json_encode` escapes `/` as `\\/`, a proxy percent-encodes it
    in a URL of its message. The key is one with `/`, `+`, `=` (base64). Held on main: the
    gateway answers a refused key with its own words, never the endpoint's."""
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "calls.jsonl"
    echoed = ECHOES[spelling][0]
    body = _echoed({"error": {"message": "Incorrect API key provided: @KEY"}}, spelling)
    endpoint.behaviour = answer(401, body)
    with Gateway(log_path=log) as gateway:
        upstream = Upstream(endpoint.url, "chat", SLASH_CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)

        with pytest.raises(openai.APIStatusError) as refused:
            openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

        used = gateway.revoke(token)
    seen = refused.value.response.text + caplog.text + log.read_text() + (used.last_fault or "")
    assert used.key_refused == 1 and used.answered == 0
    assert echoed not in seen and "Wq9Wq9Wq9" not in seen, seen


@pytest.mark.parametrize("spelling", ECHOES)
def test_an_answer_echoing_the_key_in_another_spelling_never_shows_it(spelling, endpoint):
    """Attack: a 200 answer whose content quotes the key, escaped by the endpoint's JSON
    encoder or percent-encoded. Got through on main (round 11 declared "written otherwise
    than as it is" a limit, docs/confinement.md): the gateway masked the key only as it is,
    and the agent read it. Stops it: `KeyMask` masks the key in each spelling an endpoint
    writes it back in (`masking.spellings`)."""
    echoed = ECHOES[spelling][0]
    endpoint.behaviour = answer(200, _echoed(chat_reply("your key: @KEY"), spelling))
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", SLASH_CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)
        gateway.revoke(token)
    got = reply.choices[0].message.content or ""
    assert echoed not in got and "Wq9Wq9Wq9" not in got, got


@pytest.mark.parametrize("spelling", ECHOES)
def test_a_stream_echoing_the_key_in_another_spelling_never_shows_it(spelling, endpoint):
    """Attack: the same in a streamed answer's event (a model made to repeat its request's
    headers, its JSON encoder escaping `/`), the event cut in two chunks inside the key
    (round 11 declared the key cut across two deltas a limit; this is one delta)."""
    echoed = ECHOES[spelling][0]
    delta = {"choices": [{"index": 0, "delta": {"content": "your key: @KEY"}}]}
    event = b"data: " + _echoed(delta, spelling) + b"\n\n"
    cut = event.index(b"Canary") + 3
    endpoint.behaviour = sse([event[:cut], event[cut:], DONE])
    got = streamed_with_the_key(endpoint)
    assert echoed not in got and "Wq9Wq9Wq9" not in got, got


def streamed_with_the_key(endpoint, key: str = SLASH_CANARY) -> str:
    """What a client reads of a chat stream the endpoint answers, relayed by a gateway whose
    role's key is `key` (a base64 key: `/`, `+`, `=` differ in each spelling)."""
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", key, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        chunks = openai_client(gateway, token).chat.completions.create(
            model="m", messages=USER, stream=True
        )
        got = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        gateway.revoke(token)
    return got


def test_a_key_masked_in_every_spelling_leaves_other_text_alone():
    """The other way round: a text without the key, with `%2F` and `\\/` of its own, is
    relayed as it is."""
    text = b'{"path": "a\\/b", "url": "x%2Fy%2B", "note": "Wq9Wq"}'
    assert KeyMask(SLASH_CANARY).whole(text) == text


# -- the credential in the endpoint URL ---------------------------------------------------------

HEX = "e6f2c1a8" * 4

HELD_URLS = {
    "capitalised-key": "https://llm.example.com/v1?Key=@",
    "upper-api-key": "https://llm.example.com/v1?API_KEY=@",
    "percent-encoded-name": "https://llm.example.com/v1?%6Bey=@",
    "sas-sig": "https://llm.example.com/v1?sv=2022-11-02&sig=@",
    "signature": "https://llm.example.com/v1?X-Amz-Signature=@",
    "password": "https://llm.example.com/v1?password=@",
    "secret": "https://llm.example.com/v1?client_secret=@",
    "auth": "https://llm.example.com/v1?auth=@",
    "userinfo": "https://user:@KEY@llm.example.com/v1",
}
FIXED_URLS = {
    "azure-functions-code": "https://llm.example.com/api/v1?code=@",
    "path-parameter": "https://llm.example.com/v1;key=@",
    "semicolon-separated": "https://llm.example.com/v1?api-version=1;key=@",
    "userinfo-and-a-port-typo": "https://user:@KEY@llm.example.com:44x/v1",
    "a-password-with-a-slash": "https://user:a/@KEY@llm.example.com/v1",
}


@pytest.mark.parametrize("url", [*HELD_URLS, *FIXED_URLS])
def test_a_credential_elsewhere_in_the_endpoint_url_is_refused_without_quoting_it(
    url, tmp_path, monkeypatch, capsys
):
    """Attack: the key in the endpoint URL under a name or in a place round 15 did not try.
    Got through on main (`FIXED_URLS`): Azure Functions' `?code=`, a path parameter
    `;key=`, a `;` after the query's last `&` validated (the URL written with the config);
    a password holding `/`, or followed by a port typo, failed on the port, whose error
    quoted the URL with the password. Stops it: `code` is a credential word, `;` parameters
    are read, any `@` before the query is refused first, the port's error quotes nothing.
    Held on main (`HELD_URLS`): other cases and spellings of the names, `user:key@`."""
    base_url = {**HELD_URLS, **FIXED_URLS}[url].replace("@KEY", HEX).replace("=@", "=" + HEX)

    code, _ = _validate(tmp_path, monkeypatch, ["--agent.llm.base_url", base_url])

    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code == 2 and len(lines) == 1, err
    assert HEX not in out + err


def test_an_endpoint_url_with_an_at_sign_in_its_query_is_accepted(tmp_path, monkeypatch, capsys):
    """The other way round: an `@` after the `?` is a query's (a deployment named by an
    email-like id), no user or password."""
    args = ["--agent.llm.base_url", "https://llm.example.com/v1?deployment=team@eu"]

    _validate(tmp_path, monkeypatch, args)

    assert "base_url" not in capsys.readouterr().err


# -- the key's value --------------------------------------------------------------------------

FIXED_KEYS = {
    "a-bearer-prefix-pasted": "Bearer " + CANARY,
    "two-keys-pasted": CANARY + " " + CANARY,
}
HELD_KEYS = {
    "a-cyrillic-lookalike": CANARY.replace("a", "\u0430"),
    "only-whitespace": "   ",
    "a-zero-width-space": CANARY[:10] + "\u200b" + CANARY[10:],
    "a-no-break-space": CANARY[:10] + "\u00a0" + CANARY[10:],
}


@pytest.mark.parametrize("value", [*FIXED_KEYS, *HELD_KEYS])
def test_a_key_no_endpoint_takes_is_refused_at_validate(value, tmp_path, monkeypatch, capsys):
    """Attack: the key's variable holds `Bearer <key>` (copied from a curl line: the gateway
    then sends `Bearer Bearer <key>`) or two keys with a space. Got through on main (a space
    inside is printable, and round 15 refused whitespace at the ends only): validated, and
    every call of the role was refused (401). Stops it: `key_problem` refuses any whitespace.
    Held on main: a lookalike letter, only spaces, a zero-width or no-break space."""
    monkeypatch.setenv("R16_KEY", {**FIXED_KEYS, **HELD_KEYS}[value])

    _, _ = _validate(tmp_path, monkeypatch, ["--agent.llm.api_key", "${R16_KEY}"])

    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "agent.llm.api_key" in line]
    assert len(lines) == 1, err
    assert CANARY[4:20] not in out + err


def test_a_key_of_punctuation_is_accepted(tmp_path, monkeypatch, capsys):
    """The other way round: a base64 key (`/`, `+`, `=`) and one with `.`, `_`, `~`."""
    monkeypatch.setenv("R16_KEY", SLASH_CANARY + "._~-")

    _validate(tmp_path, monkeypatch, ["--agent.llm.api_key", "${R16_KEY}"])

    assert "api_key" not in capsys.readouterr().err


# -- the config's other numbers ---------------------------------------------------------------

HELD_NUMBERS = {
    "timeout-nan": (["--agent.llm.timeout", ".nan"], "agent.llm.timeout"),
    "price-nan": (
        ["--agent.llm.price", "{input_per_mtok: .nan, output_per_mtok: 1}"],
        "agent.llm.price.input_per_mtok",
    ),
    "spend-cap-infinite": (["--agent.spend_cap", "{usd: .inf}"], "agent.spend_cap.usd"),
    "spend-cap-nan": (["--agent.spend_cap", "{usd: .nan}"], "agent.spend_cap.usd"),
    "spend-cap-1e30-tokens": (["--agent.spend_cap", "{tokens: 1.0e+30}"], "agent.spend_cap"),
    "temperature-nan": (["--agent.llm.temperature", ".nan"], "agent.llm.temperature"),
    "retries-1e18": (["--agent.llm.max_retries", "1.0e+18"], "agent.llm.max_retries"),
    "max-tokens-1e18": (["--agent.llm.max_tokens", "1.0e+18"], "agent.llm.max_tokens"),
    "concurrency-1e18": (["--benchmark.concurrency", "1.0e+18"], "benchmark.concurrency"),
}


@pytest.mark.parametrize("attack", HELD_NUMBERS)
def test_a_number_of_no_sane_size_is_one_line(attack, tmp_path, monkeypatch, capsys):
    """Held on main: `.nan` for a timeout, a price, a temperature, a spending cap; an
    infinite cap; 1e18 retries, output tokens, rollouts at once; 1e30 tokens of cap."""
    args, key = HELD_NUMBERS[attack]

    _validate(tmp_path, monkeypatch, args)

    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if key in line]) == 1, err


# -- Gate0's ping: a trickle, a redirect of another code ----------------------------------------


def _trickled(head_too: bool):
    """A 200 of a megabyte, one byte every 0.2 s (each read gets a byte in time); the head
    too when `head_too`."""

    def write(conn) -> bool:
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
        )
        pieces = [head[i : i + 1] for i in range(len(head))] if head_too else [head]
        for piece in itertools.chain(pieces, itertools.repeat(b"x")):
            try:
                conn.sendall(piece)
            except OSError:
                return False
            time.sleep(0.2)
        return False

    return write


@pytest.mark.parametrize("head_too", [False, True], ids=["a-body", "a-head"])
def test_gate0_does_not_wait_on_a_trickled_answer(head_too, endpoint, monkeypatch):
    """Attack: the endpoint answers the Evolver's health ping with a megabyte (or its head)
    trickled one byte every 0.2 s. Got through on main: the ping's socket timeout bounds each
    read only, and it read up to 64 KB: about 3.6 hours of a round waiting on Gate0 (the
    whole experiment stopped, nothing printed). Stops it: the ping has one deadline
    (`PING_TIMEOUT`) from connecting to its last byte; past it the connection is shut and
    the ping says so."""
    monkeypatch.setattr(health, "PING_TIMEOUT", 1.0)
    monkeypatch.setenv("R16_KEY", CANARY)
    endpoint.behaviour = _trickled(head_too)
    found: list[str | None] = []
    llm = LLMConfig(model="m", base_url=endpoint.url, api_key="${R16_KEY}")
    ping = threading.Thread(target=lambda: found.append(health.endpoint_problem(llm)), daemon=True)

    ping.start()
    ping.join(120)  # a bound for a hang only: the ping's own deadline is 1 s

    assert found and found[0] and "did not answer within 1 s" in found[0], found


@pytest.mark.parametrize("code", [302, 303])
def test_gate0_follows_no_redirect_of_another_code(code, endpoint, monkeypatch):
    """Held on main: a 302 or a 303 (which turn the method into GET, the key kept by urllib's
    own handler) is not followed either (round 15 tried 301, 307, 308)."""
    monkeypatch.setenv("R16_KEY", CANARY)
    endpoint.behaviour = answer(code, b"", Location="http://127.0.0.2:9/steal")

    problem = health.endpoint_problem(
        LLMConfig(model="m", base_url=endpoint.url, api_key="${R16_KEY}")
    )

    assert problem and f"answered HTTP {code} (a redirect, not followed)" in problem
    assert CANARY not in problem


BROKEN_PINGS = {
    "a-status-line-not-http": (b"HELLO\r\n\r\n", "did not answer"),
    "closed-at-once": (b"", "did not answer"),
}


@pytest.mark.parametrize("attack", BROKEN_PINGS)
def test_gate0_calls_a_broken_answer_unhealthy_in_one_line(attack, endpoint, monkeypatch):
    """Attack: the endpoint answers the health ping with a status line that is not HTTP, or
    closes the connection at once. Got through on main for the first: `http.client`'s
    `BadStatusLine` (no `OSError`, so urllib leaves it unwrapped) escaped the ping: Gate0,
    and the Evolver's round with it, stopped with a traceback instead of a line saying which
    endpoint is unhealthy. Stops it: the ping takes it as "did not answer". The second held
    (`RemoteDisconnected` is an `OSError`)."""
    data, cause = BROKEN_PINGS[attack]
    monkeypatch.setenv("R16_KEY", CANARY)
    endpoint.behaviour = _raw(data)

    problem = health.endpoint_problem(
        LLMConfig(model="m", base_url=endpoint.url, api_key="${R16_KEY}")
    )

    assert problem and cause in problem and CANARY not in problem


# -- the operator's environment and the endpoint URL's query: held ------------------------------


def test_an_unconfined_miniagent_drops_a_proxy_variable_in_any_case(monkeypatch):
    """Held on main: `Https_Proxy` and `All_Proxy` (Python's urllib, hence httpx and the
    OpenAI SDK, read a proxy variable in any case) are dropped as their upper and lower
    case twins are."""
    for name in ("Https_Proxy", "All_Proxy", "hTTP_pROXY"):
        monkeypatch.setenv(name, "http://127.0.0.3:9")

    env = _server_env(SimpleNamespace(jail=None, env={}))  # type: ignore[arg-type]

    assert not [n for n in env if n.lower().endswith("_proxy")]


@pytest.mark.parametrize(
    ("suffix", "sent"),
    [
        ("?", "/openai/v1/chat/completions "),
        ("?tag=a%26b%20c", "/openai/v1/chat/completions?tag=a%26b%20c "),
    ],
    ids=["an-empty-query", "a-percent-encoded-query"],
)
def test_the_endpoint_urls_query_is_sent_as_written(suffix, sent, monkeypatch):
    """Held on main: a URL ending in a bare `?` adds no `?` to the call; a percent-encoded
    query goes as written (not decoded, not encoded twice). The operator's `OPENAI_BASE_URL`,
    `OPENAI_ORG_ID` and `OPENAI_PROJECT_ID` change nothing: the plain-LLM target's client
    calls its gateway, and the gateway sends no organisation the client names."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.3:9/v1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-r16")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-r16")
    with _recording_host() as (endpoint, seen), Gateway() as gateway:
        upstream = upstream_of(LLMConfig(model="m", base_url=f"{endpoint}/openai/v1{suffix}"))
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        client = LLMClient(LLMConfig(model="m", max_retries=0), "target", via=(gateway.url, token))
        with contextlib.suppress(Exception):  # the host answers `{}`: what it saw matters
            client.complete([{"role": "user", "content": "hi"}])
        client.close()
        gateway.revoke(token)

    assert len(seen) == 1 and seen[0].startswith(f"POST {sent}"), seen
    assert "org-r16" not in seen[0] and "proj-r16" not in seen[0]
