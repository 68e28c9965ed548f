"""Sabotage, eighteenth red-team pass (issue 22): a misbehaving endpoint and a careless
operator, aimed at round 17's fixes (`test_round17_endpoint.py`): the endpoint URL's checks
(`LLMConfig._endpoint`, `_credential_in_url` and what it does with a URL it cannot read),
`masking.spellings`, and Gate0's ping in a thread of its own (`health.PING_GRACE`).

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests; what cannot be told
apart is a strict xfail naming the docs' words. Of 26 cases, 13 got through on main: 4 new
holes. (1) A password cut from its host by a `?` (`user:?PASS@host`, `user?PASS@host`,
`user:?a=PASS@host`) validated and was written with the config (3). (2) Query parameters
named `bearer`, `jwt`, `pass`, `sk` or a full-width KEY validated (5). (3) A key of a known
form in the path (Google's `AIza…`, a Telegram `bot<id>:<token>`) validated (2). (4) The key
percent-encoded in mixed-case hex reached the agent, in an answer, fed a byte per read and in
a relayed header (3, one hole). Declared (strict xfails): a token of no known form in the
path; a key written as HTML character references or JSON `\\u` escapes.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse

import pytest

from flashrsi_dagster.algorithms.evolver import health
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.masking import KeyMask
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import answer, chat_reply
from tests.sabotage.test_round12_endpoint import TIMEOUT
from tests.sabotage.test_round15_endpoint import _validate
from tests.sabotage.test_round17_endpoint import _validated_quietly

CANARY = "sk-r18-canary-" + "Wv4" * 8
"""A key no other test uses, looked for in every output."""
SLASH_CANARY = "r18/Canary+Key=" + "Tb6" * 8
"""A key as base64 writes one (`/`, `+`, `=`)."""
SECRET = "r18Passw0rd" + "Nk8" * 4
"""A password or key an operator put in the endpoint URL."""


# -- the endpoint URL: credentials round 17 let through -----------------------------------------

FIXED_URLS = {
    "a-password-after-an-empty-query": (f"https://user:?{SECRET}@llm.example.com/v1", "`@`"),
    "a-password-after-a-question-mark": (f"https://user?{SECRET}@llm.example.com/v1", "`@`"),
    "a-password-as-a-value-after-an-empty-port": (
        f"https://user:?a={SECRET}@llm.example.com/v1",
        "`@`",
    ),
    "a-bearer-parameter": (f"https://llm.example.com/v1?bearer={SECRET}", "credential"),
    "a-jwt-parameter": (f"https://llm.example.com/v1?jwt={SECRET}", "credential"),
    "a-pass-parameter": (f"https://llm.example.com/v1?pass={SECRET}", "credential"),
    "an-sk-parameter": (f"https://llm.example.com/v1?sk={SECRET}", "credential"),
    "a-full-width-key-parameter": (
        f"https://llm.example.com/v1?\uff2b\uff25\uff39={SECRET}",
        "credential",
    ),
    "a-google-key-in-the-path": (f"https://llm.example.com/AIza{SECRET}{SECRET}/v1", "key"),
    "a-telegram-bot-token-in-the-path": (
        f"https://llm.example.com/bot123456789:{SECRET}/v1",
        "key",
    ),
}
HELD_URLS = {
    "an-unparseable-host-and-a-key-parameter": (
        f"https://[llm.example.com/v1?key={SECRET}",
        "agent.llm.base_url",
    ),
    "an-unparseable-host-and-a-bearer-in-the-path": (
        f"https://[::1/bot123:{SECRET}",
        "agent.llm.base_url",
    ),
    "an-openai-key-in-the-path": (f"https://llm.example.com/sk-proj-{SECRET}/v1", "secret"),
    "a-full-width-at-in-the-host": (
        f"https://u:{SECRET}\uff20llm.example.com/v1",
        "agent.llm.base_url",
    ),
}


@pytest.mark.parametrize("attack", [*FIXED_URLS, *HELD_URLS])
def test_an_endpoint_url_carrying_a_credential_is_refused_quietly(
    attack, tmp_path, monkeypatch, capsys
):
    """Attack: a credential in the endpoint URL where round 17 did not look. Got through on
    main (`FIXED_URLS`): a password after a `?` (`user:?PASS@host`, `user?PASS@host`,
    `user:?a=PASS@host`: urllib reads the host `user`, the `@` in the query), parameters
    named `bearer`, `jwt`, `pass`, `sk` or a full-width KEY, and a key of a known form in
    the path (Google's `/AIza…/`, a Telegram `/bot<id>:<token>/`) validated and were written
    with the config into run_meta.json. Stops it: an `@` in a query parameter's name or
    after an empty port is refused; those words are credential words (the name read
    NFKC-normalised); a path segment of a known key form is refused. Held (`HELD_URLS`): a
    URL urllib cannot read (`https://[host…`) is refused for it, without its words, though
    `_credential_in_url` could not look; a full-width at sign is refused (urllib's NFKC
    check); an OpenAI `sk-…` key in the path is a literal secret to the config's own check."""
    url, reason = {**FIXED_URLS, **HELD_URLS}[attack]

    code, err = _validated_quietly(url, tmp_path, monkeypatch, capsys, SECRET)

    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and reason in lines[0], err


@pytest.mark.parametrize(
    "url",
    [
        "https://llm.example.com/openai/deployments/gpt-4o/v1?api-version=2024-06-01",
        "https://llm.example.com/v1?passthrough=1",
        "https://llm.example.com/bots/v1",
        "https://llm.example.com/v1/skills",
    ],
    ids=["azure-api-version", "passthrough-param", "bots-path", "skills-path"],
)
def test_an_honest_endpoint_url_is_accepted(url, tmp_path, monkeypatch, capsys):
    """Held: the new words and forms refuse no honest URL (a word inside a longer one, a
    `bots` or `skills` path)."""
    _, err = _validated_quietly(url, tmp_path, monkeypatch, capsys, SECRET)
    assert "agent.llm.base_url" not in err, err


@pytest.mark.xfail(
    strict=True,
    reason="docs/configuration.md, `llm` (inside each role), `base_url`: a secret in the "
    "path with no known key form cannot be told apart from a deployment name",
)
def test_a_bare_token_in_the_path_is_refused(tmp_path, monkeypatch, capsys):
    """Declared limit: a token of no known form as a path segment (a proxy's `/<token>/v1`)
    reads as a deployment or a tenant id does; it validates, and is written with the config."""
    _validate(
        tmp_path, monkeypatch, ["--agent.llm.base_url", f"https://llm.example.com/{SECRET}/v1"]
    )
    assert "agent.llm.base_url" in capsys.readouterr().err


@pytest.mark.xfail(
    strict=True,
    reason="docs/configuration.md, `llm` (inside each role), `base_url`: a password given as "
    "a query value before an `@` (`user?a=PASS@host`) reads as `?deployment=team@eu` does",
)
def test_a_password_as_a_query_value_before_an_at_is_refused(tmp_path, monkeypatch, capsys):
    """Declared limit: `https://user?a=PASS@host` (no colon) is, to urllib and every client,
    the host `user` with the query `a=PASS@host`: the same shape as an honest
    `?deployment=team@eu`. It validates, and is written with the config."""
    url = f"https://user?a={SECRET}@llm.example.com/v1"
    _validate(tmp_path, monkeypatch, ["--agent.llm.base_url", url])
    assert "agent.llm.base_url" in capsys.readouterr().err


# -- the key written back in another spelling ---------------------------------------------------


def _relayed(endpoint, text: str) -> str:
    body = json.dumps(chat_reply("your key: " + text)).encode()
    endpoint.behaviour = answer(200, body)
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", SLASH_CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)
        gateway.revoke(token)
    return reply.choices[0].message.content or ""


MIXED_HEX = urllib.parse.quote(SLASH_CANARY, safe="").replace("%2F", "%2f")
"""The key percent-encoded in upper hex but for one escape (`%2f`, `%2B`, `%3D`)."""


def test_an_answer_echoing_the_key_in_mixed_hex_never_shows_it(endpoint):
    """Attack: a 200 answer quoting the key percent-encoded with upper and lower hex mixed in
    one key. Got through on main: round 17's `spellings` had each encoding in one case.
    Stops it: the percent escapes of a spelling are matched in either case."""
    got = _relayed(endpoint, MIXED_HEX)
    assert MIXED_HEX not in got and "Tb6Tb6Tb6" not in got, got


def test_a_stream_of_the_key_in_mixed_hex_fed_a_byte_at_a_time_is_masked():
    """Attack: the same, fed a byte per read (a tail held back must be matched in either
    case too). Got through on main with the answer above."""
    mask = KeyMask(SLASH_CANARY)
    text = ("before " + MIXED_HEX + " after").encode()
    out = b"".join(mask.feed(text[i : i + 1]) for i in range(len(text))) + mask.end()
    assert out == b"before [REDACTED] after", out


def test_a_header_echoing_the_key_in_mixed_hex_never_shows_it(endpoint):
    """Attack: the same in a relayed header (a proxy reflecting a `Location`-like URL). Got
    through on main, and with the whole-body fix alone: headers and fault causes are masked
    as text (`KeyMask.text`), which now matches the escapes in either case too."""
    endpoint.behaviour = answer(200, json.dumps(chat_reply("hi")).encode(), X_Echo=MIXED_HEX)
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", SLASH_CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        raw = openai_client(gateway, token).chat.completions.with_raw_response.create(
            model="m", messages=USER
        )
        gateway.revoke(token)
    echoed = raw.headers.get("x-echo", "")
    assert MIXED_HEX not in echoed and "Tb6Tb6Tb6" not in echoed, raw.headers


def test_a_form_encoded_key_with_a_space_cannot_be_configured(monkeypatch):
    """Held: a `+` for a space needs a key holding one, and such a key is refused before any
    call (round 16, `validation.key_problem`), so no spelling of it is needed."""
    from flashrsi_dagster.validation import key_problem

    assert key_problem("sk-r18 canary" + "x" * 20)


@pytest.mark.xfail(
    strict=True,
    reason="docs/confinement.md, What leaves an agent is redacted: a key written otherwise "
    "(JSON `\\u` escapes, HTML character references) is not masked",
)
@pytest.mark.parametrize(
    "spelling",
    [SLASH_CANARY.replace("/", "&#x2F;"), SLASH_CANARY.replace("/", "\\u002F")],
    ids=["html-entity", "json-u-escape"],
)
def test_a_key_written_as_character_references_is_masked(spelling):
    """Declared limit: `&#x2F;` for the key's `/`, `\\u002F` in a JSON string. Every
    character of a key can be written so, in many ways; the records' redactor and the key's
    shape are what remains."""
    assert KeyMask(SLASH_CANARY).whole(spelling.encode()) == b"[REDACTED]"


# -- Gate0's ping threads -----------------------------------------------------------------------


def test_pings_left_on_a_hung_resolver_end_with_it_and_say_nothing(monkeypatch, capsys):
    """Attack: five Gate0 pings (five experiments, or five rounds) on a resolver that never
    answers, each leaving its thread behind; then the resolver answers, late. Held on main:
    each ping is "did not answer within 1 s", one thread each (bounded by the calls, none
    spawned by a thread); once the resolver answers they end, their late result goes to a
    list no one reads: nothing printed, no record written, the key nowhere."""
    monkeypatch.setattr(health, "PING_TIMEOUT", 0.5)
    monkeypatch.setattr(health, "PING_GRACE", 0.2)
    monkeypatch.setenv("R18_KEY", CANARY)
    answered = threading.Event()

    def never(*args, **kwargs):
        answered.wait(120)
        raise socket.gaierror(socket.EAI_AGAIN, f"Temporary failure for {CANARY}")

    monkeypatch.setattr(socket, "getaddrinfo", never)
    before = set(threading.enumerate())
    llm = LLMConfig(model="m", base_url="https://llm.r18.invalid/v1", api_key="${R18_KEY}")
    try:
        found = [health.endpoint_problem(llm) for _ in range(5)]
        left = set(threading.enumerate()) - before
    finally:
        answered.set()
    for thread in left:
        thread.join(30)  # a bound for a hang only: the resolver has answered

    assert all(p and "did not answer within 0.5 s" in p and CANARY not in p for p in found)
    assert len(left) <= 5 and not any(t.is_alive() for t in left), left
    out = capsys.readouterr()
    assert CANARY not in out.out + out.err and not out.out, out
