"""Sabotage, seventeenth red-team pass (issue 22): a misbehaving endpoint and a careless
operator, aimed at round 16's fixes (`test_round16_endpoint.py`): the endpoint URL's checks
(`LLMConfig._endpoint`: the `@` refusal, the port's error that no longer quotes the URL, the
other errors that still did), `_credential_in_url`'s message, `masking.spellings`, and
Gate0's one deadline (`endpoints.opener_within`) against a resolver that never answers, a
TLS handshake trickled and other broken answers.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 28 cases, 11 got
through on main: 5 new holes. (1) urllib's own words, kept in the port's and the `[host]`'s
errors, quoted what they could not read: a password holding `?` (`user:pa?ss@`), a key
pasted as the port (also after `[::1]`) or in brackets as a host (4). (2) The errors of a
URL with no host (`https://?u:pw@h`, a space in the host) and of port 0 quoted the URL
whole (3). (3) A credential parameter whose `=` was percent-encoded (`?key%3D<secret>`) was
refused by a message quoting the decoded name, the secret in it (1). (4) The key
percent-encoded with `/` kept (`urllib.parse.quote`'s default, as a path is encoded) reached
the agent, in an answer and in a stream (2, one hole). (5) Gate0's ping over `https://`
waited on an endpoint trickling its TLS handshake, the deadline's socket registered only
once the handshake was done (1).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import pathlib
import socket
import threading
import time
import urllib.parse

import pytest

from flashrsi_dagster.algorithms.evolver import health
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.masking import KeyMask
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import answer, chat_reply, sse
from tests.sabotage.test_round12_endpoint import TIMEOUT, _raw
from tests.sabotage.test_round13_endpoint import DONE
from tests.sabotage.test_round15_endpoint import _validate
from tests.sabotage.test_round16_endpoint import streamed_with_the_key

CANARY = "sk-r17-canary-" + "Qz7" * 8
"""A key no other test uses, looked for in every output."""
SLASH_CANARY = "r17/Canary+Key=" + "Jm5" * 8
"""A key as base64 writes one (`/`, `+`, `=`)."""
SECRET = "r17Passw0rd" + "Hx3" * 4
"""A password or key an operator put in the endpoint URL."""


def _validated_quietly(
    url: str, tmp_path, monkeypatch, capsys, secret: str = SECRET
) -> tuple[int, str]:
    """Validates with `url` as the target's endpoint; nothing printed or written holds
    `secret` (`run_meta.json` and every other file under the run's folder included)."""
    code, _ = _validate(tmp_path, monkeypatch, ["--agent.llm.base_url", url])
    out = capsys.readouterr()
    files = "".join(
        p.read_text(errors="replace")
        for p in pathlib.Path(tmp_path).rglob("*")
        if p.is_file() and p.name != "exp.yaml"
    )
    seen = out.out + out.err + files
    assert secret not in seen and secret[:11] not in seen, seen
    return code, out.err


# -- the endpoint URL's errors ------------------------------------------------------------------

FIXED_URLS = {
    "a-password-holding-a-question-mark": (f"https://user:{SECRET}?x@llm.example.com/v1", "port"),
    "a-key-pasted-as-the-port": (f"https://llm.example.com:{SECRET}/v1", "port"),
    "a-key-as-the-port-of-an-ipv6-host": (f"https://[::1]:{SECRET}/v1", "port"),
    "a-key-in-brackets-as-a-host": (f"https://[{SECRET}]/v1", "IP address"),
    "no-host-and-a-password-after-the-query": (f"https://?u:{SECRET}@llm.example.com", "no host"),
    "a-space-in-the-host-and-a-key-in-the-path": (
        f"https://llm example.com/{SECRET}",
        "whitespace",
    ),
    "port-0-and-a-key-in-the-path": (f"https://llm.example.com:0/bot{SECRET}/v1", "port 0"),
    "a-credential-name-with-its-equals-encoded": (
        f"https://llm.example.com/v1?key%3D{SECRET}",
        "holds a credential",
    ),
}
HELD_URLS = {
    "a-password-with-an-encoded-at": (f"https://me%40corp:{SECRET}@llm.example.com/v1", "`@`"),
    "userinfo-before-an-ipv6-host": (f"https://u:{SECRET}@[::1]/v1", "`@`"),
    "a-backslash-before-the-at": (f"https://u:{SECRET}\\@llm.example.com/v1", "`@`"),
    "a-percent-encoded-key-name": (f"https://llm.example.com/v1?k%65y={SECRET}", "credential"),
    "an-at-in-an-honest-path": ("https://llm.example.com/v1/models@2024", "`@`"),
}


@pytest.mark.parametrize("attack", [*FIXED_URLS, *HELD_URLS])
def test_an_endpoint_urls_error_never_repeats_what_it_holds(attack, tmp_path, monkeypatch, capsys):
    """Attack: endpoint URLs that fail a check other than the `@` refusal, with a password or
    key in them. Got through on main (`FIXED_URLS`): round 16 kept urllib's words in the
    port's error, and they quote the port's text (a password holding `?` ends the host
    there, its rest read as the port; a key pasted as the port); a `[host]` that is no IP
    address was quoted by urllib's own error; the errors of no host, whitespace in the host
    and port 0 quoted the URL whole; a credential parameter whose `=` was percent-encoded
    was named in the message, decoded, the secret with it. Stops it: none of these errors
    quotes the URL or urllib's words, and a credential parameter is named by its word only.
    Held (`HELD_URLS`): the `@` refusal comes first (an `%40` in the user, an IPv6 host, a
    backslash); an `@` in an honest path is refused too, in the same words."""
    url, reason = {**FIXED_URLS, **HELD_URLS}[attack]

    code, err = _validated_quietly(url, tmp_path, monkeypatch, capsys)

    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code != 0 and len(lines) == 1 and reason in lines[0], err


def test_an_ipv6_endpoint_is_accepted(tmp_path, monkeypatch, capsys):
    """Held on main: an IPv6 literal with its port is an honest URL."""
    _validate(tmp_path, monkeypatch, ["--agent.llm.base_url", "https://[::1]:8443/v1"])
    assert "agent.llm.base_url" not in capsys.readouterr().err


# -- the key written back in another spelling ---------------------------------------------------

PATH_ENCODED = urllib.parse.quote(SLASH_CANARY)  # `/` kept: `quote`'s default


def test_an_answer_echoing_the_key_encoded_as_a_path_never_shows_it(endpoint):
    """Attack: a 200 answer quoting the key percent-encoded as a path is (`/` kept, `+`, `=`
    encoded: `urllib.parse.quote`'s default, JavaScript's `encodeURI` of a query). Got
    through on main: round 16's `spellings` encoded `/` always. Stops it: each encoding with
    `/` encoded and kept."""
    body = json.dumps(chat_reply("your key: " + PATH_ENCODED)).encode()
    endpoint.behaviour = answer(200, body)
    with Gateway() as gateway:
        upstream = Upstream(endpoint.url, "chat", SLASH_CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)
        reply = openai_client(gateway, token).chat.completions.create(model="m", messages=USER)
        gateway.revoke(token)
    got = reply.choices[0].message.content or ""
    assert PATH_ENCODED not in got and "Jm5Jm5Jm5" not in got, got


def test_a_stream_echoing_the_key_encoded_as_a_path_in_three_reads_never_shows_it(endpoint):
    """Attack: the same in a streamed event cut in three chunks inside the key. Got through
    on main (the spelling); the cut across three reads held."""
    delta = {"choices": [{"index": 0, "delta": {"content": "your key: " + PATH_ENCODED}}]}
    event = b"data: " + json.dumps(delta).encode() + b"\n\n"
    start = event.index(b"Canary")
    cuts = [event[: start + 2], event[start + 2 : start + 12], event[start + 12 :]]
    endpoint.behaviour = sse([*cuts, DONE])
    got = streamed_with_the_key(endpoint, SLASH_CANARY)
    assert PATH_ENCODED not in got and "Jm5Jm5Jm5" not in got, got


@pytest.mark.parametrize(
    "spelling",
    [urllib.parse.quote(SLASH_CANARY, safe=""), json.dumps(SLASH_CANARY)[1:-1]],
    ids=["percent-encoded", "json-escaped"],
)
def test_a_key_spelt_otherwise_fed_a_byte_at_a_time_is_masked(spelling):
    """Held on main: a spelling longer than the key (each `%2B` three bytes for one), fed a
    byte per read, is held back until known whole, then masked; nothing of it passes."""
    mask = KeyMask(SLASH_CANARY)
    text = ("before " + spelling + " after").encode()
    out = b"".join(mask.feed(text[i : i + 1]) for i in range(len(text))) + mask.end()
    assert out == b"before [REDACTED] after", out


def test_a_text_with_many_percents_is_relayed_as_it_is():
    """Held on main: a long answer full of `%` and key-like starts (`r17%2F`, `r17/C`) that
    never complete, fed in reads of 4 KB: relayed unchanged (no spelling matched in part)."""
    mask = KeyMask(SLASH_CANARY)
    text = b"r17%2FCanar% r17/Canary+Ke %25 " * 20000
    out = b"".join(mask.feed(text[i : i + 4096]) for i in range(0, len(text), 4096))
    assert out + mask.end() == text


# -- Gate0's ping: a TLS handshake trickled, other broken answers -------------------------------


@contextlib.contextmanager
def _tls_trickler():
    """A TCP server that reads a client's hello, then starts a TLS handshake record of 16 KB
    and sends it one byte every 0.2 s (each read of the client's gets a byte in time)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"\x16\x03\x03\x40\x00")
                for byte in itertools.repeat(b"\x02"):
                    if stop.is_set():
                        return
                    conn.sendall(byte)
                    time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.getsockname()[1]}/v1"
    finally:
        stop.set()
        server.close()


def test_gate0_does_not_wait_on_a_trickled_tls_handshake(monkeypatch):
    """Attack: an `https://` endpoint trickles its TLS handshake a byte every 0.2 s, before
    round 16's deadline holds the socket (it does once `connect` returns). Held on main:
    Python's `ssl` bounds the whole handshake by the socket's timeout, not each read."""
    monkeypatch.setattr(health, "PING_TIMEOUT", 1.0)
    monkeypatch.setenv("R17_KEY", CANARY)
    found: list[str | None] = []
    with _tls_trickler() as url:
        llm = LLMConfig(model="m", base_url=url, api_key="${R17_KEY}")
        ping = threading.Thread(
            target=lambda: found.append(health.endpoint_problem(llm)), daemon=True
        )
        ping.start()
        ping.join(90)  # a bound for a hang only: the ping's own deadline is 1 s

    assert found and found[0] and "did not answer" in found[0], found
    assert CANARY not in found[0]


def test_gate0_does_not_wait_on_a_resolver_that_never_answers(monkeypatch):
    """Attack: the endpoint's name never resolves (a resolver that takes the query and never
    answers; the machine's edge, `socket.getaddrinfo`, stands in for it). Got through on
    main: round 16's deadline shuts sockets, and there is none while the name resolves: the
    ping, Gate0 and the Evolver's round waited as long as the resolver did, without a word.
    Stops it: the ping runs in a thread of its own, which Gate0 stops waiting on at its
    deadline (and a grace): "did not answer within 1 s"."""
    monkeypatch.setattr(health, "PING_TIMEOUT", 1.0)
    monkeypatch.setattr(health, "PING_GRACE", 0.5, raising=False)  # absent on main
    monkeypatch.setenv("R17_KEY", CANARY)
    answered = threading.Event()

    def never(*args, **kwargs):
        answered.wait(120)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", never)
    found: list[str | None] = []
    llm = LLMConfig(model="m", base_url="https://llm.r17.invalid/v1", api_key="${R17_KEY}")
    ping = threading.Thread(target=lambda: found.append(health.endpoint_problem(llm)), daemon=True)
    try:
        ping.start()
        ping.join(30)  # a bound for a hang only: the ping's own deadline is 1 s
    finally:
        answered.set()  # the resolver answers at last: no thread outlives the test

    assert found and found[0] and "did not answer within 1 s" in found[0], found
    assert CANARY not in found[0]


def _head(*lines: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"


BROKEN_PINGS = {
    "a-header-line-too-long": _head(b"X-A: " + b"a" * 70000),
    "too-many-headers": _head(*[b"X-%d: 1" % i for i in range(150)]),
    "a-broken-chunk-size": _head(b"Transfer-Encoding: chunked") + b"zz\r\n{}\r\n",
    "endless-100-continues": b"HTTP/1.1 100 Continue\r\n\r\n" * 2000,
    "a-status-of-four-digits": b"HTTP/1.1 2000 OK\r\n\r\n",
}


@pytest.mark.parametrize("attack", BROKEN_PINGS)
def test_gate0_calls_a_malformed_answer_unhealthy_in_one_line(attack, endpoint, monkeypatch):
    """Held on main: a header line past 64 KB, 150 headers, a chunk size that is no number,
    2000 `100 Continue` heads then a close, a status of four digits: each is "did not
    answer" (an `http.client.HTTPException` or `OSError`), the key not repeated."""
    monkeypatch.setenv("R17_KEY", CANARY)
    endpoint.behaviour = _raw(BROKEN_PINGS[attack])

    problem = health.endpoint_problem(
        LLMConfig(model="m", base_url=endpoint.url, api_key="${R17_KEY}")
    )

    assert problem and "did not answer" in problem and CANARY not in problem, problem


def _sent(data: bytes):
    """Writes `data` as far as the client reads it (the ping stops at 64 KB)."""

    def write(conn: socket.socket) -> bool:
        with contextlib.suppress(OSError):
            conn.sendall(data)
        return False

    return write


HEALTHY_PINGS = {
    "a-huge-model-list": _head(b"Content-Length: 50000000") + b"[" * 50_000_000,
    "a-body-shorter-than-its-length": _head(b"Content-Length: 100") + b"{}",
}


@pytest.mark.parametrize("attack", HEALTHY_PINGS)
def test_gate0_takes_a_200_as_healthy_whatever_its_body(attack, endpoint, monkeypatch):
    """Held on main: a 200 with a 50 MB model list is healthy, 64 KB of it read; so is a 200
    whose body ends short (the endpoint answered: the calls' own faults are the ladder's)."""
    monkeypatch.setenv("R17_KEY", CANARY)
    endpoint.behaviour = _sent(HEALTHY_PINGS[attack])

    problem = health.endpoint_problem(
        LLMConfig(model="m", base_url=endpoint.url, api_key="${R17_KEY}")
    )

    assert problem is None
