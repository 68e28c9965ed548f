"""Sabotage, fifteenth red-team pass (issue 22): a misbehaving endpoint and a careless or
hostile operator, aimed at what rounds 12-14 (`test_round12_endpoint.py`,
`test_round13_endpoint.py`, `test_round14.py`) did not try: the operator's environment (a
key read from a file with its newline, `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` set in the
shell), the framework's own calls beside the gateway (the Evolver's Gate0 ping with the real
key, the plain-LLM target's client), SSE's mixed line ends, redirects of every kind with a
second host listening, `Retry-After` as a date or negative, an endpoint that flaps, bodies
encoded where the gateway asked for none (a stream, `br`), the Responses and Messages paths'
usage and tool arguments, and the config: `llm.timeout` of `1e-300`, credentials in the
endpoint URL's query or fragment (round 14 left `?key=` accepted and written in clear).

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 74 cases, 39 got
through on main (12 holes): a key holding a line break failed the call in the gateway with
the key in the logged traceback (3), and it or a pasted quote validated (5); Gate0's ping
followed a redirect to another host with the key (3) and went through the environment's
proxy (1); the plain-LLM target's client sent its calls (and the run's token) to the
environment's proxy (2), and the unconfined MiniAgent and Claude Code inherited the proxy
(1); a stream whose blank lines end in LF then CRLF, or LF then CR, was refused as a fault
(2, and 6 cuts of it at the meter); `llm.timeout: 1e-300` validated (3); a credential in the
endpoint URL's query, or a fragment, validated (7; a key of a known shape, `sk-...`, was
already refused as a literal secret); the query an endpoint URL may keep (Azure's
`api-version`) was dropped from every call by the gateway (3) and put before Gate0's
`/models` (2); a price of `1e308` validated, and a call's cost was logged as `Infinity` (1).
"""

from __future__ import annotations

import http.server
import logging
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import httpx2
import openai
import pytest

from flashrsi_dagster.agents.claude_code.options import cli_env
from flashrsi_dagster.agents.miniagent.adapter import _server_env
from flashrsi_dagster.algorithms.evolver.health import endpoint_problem
from flashrsi_dagster.cli import main
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.environments.confinement import upstream_of
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.gateway.streams import StreamMeter
from flashrsi_dagster.llm.client import LLMClient
from tests.conftest import VALID
from tests.gateway.conftest import USER, openai_client
from tests.gateway.misbehaving_endpoint import (
    answer,
    chat_reply,
    chunked_endless,
    sse,
)
from tests.sabotage.test_round12_endpoint import (
    MESSAGE,
    RESPONSE,
    TIMEOUT,
    _charged_to_the_endpoint,
    _grant,
    _post,
)
from tests.sabotage.test_round13_endpoint import DELTA, DONE, FINISH, TEXT, _event, _pieces

CANARY = "sk-r15-canary-" + "Zq7" * 8
"""A key no other test uses, looked for in every output."""
HEX_CANARY = "e5f1c0a7" * 4
"""A key of no shape the config's literal-secret check knows (Azure's are 32 hex digits)."""


# -- a second host, and the operator's proxy ---------------------------------------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request 200 `{}` and keeps its request line and headers."""

    seen: list[str]

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.seen.append(f"{self.requestline}\n{self.headers}")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _any

    def log_message(self, *args) -> None:
        pass


@contextmanager
def _recording_host(address: str = "127.0.0.2") -> Iterator[tuple[str, list[str]]]:
    """Another host on loopback (`http://127.0.0.2:PORT`) and what reached it."""
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer((address, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{address}:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()


PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _proxied(monkeypatch, proxy: str) -> None:
    """The operator's shell routes HTTP(S) through `proxy`, and exempts nothing."""
    for name in PROXY_NAMES:
        monkeypatch.setenv(name, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    # urllib reads the proxies when it first builds its opener: as in a fresh process
    monkeypatch.setattr(urllib.request, "_opener", None)


# -- the framework's own calls: Gate0's ping with the real key ---------------------------------


@pytest.mark.parametrize("code", [301, 307, 308])
def test_gate0_does_not_follow_a_redirect_with_the_key(code, monkeypatch):
    """Attack: the endpoint answers the Evolver's health ping (`GET /v1/models` with the
    role's real key, sent from the host, not through the gateway) with a redirect to another
    host. Got through on main: urllib followed it and sent `Authorization: Bearer <key>` (or
    `x-api-key`) to the other host, which then answered 200 (healthy). The gateway itself
    never follows one (round 12). Stops it: the ping's opener (`llm.endpoints.direct_opener`)
    follows no redirect; the ping says so."""
    monkeypatch.setenv("R15_KEY", CANARY)
    with _recording_host("127.0.0.2") as (other, stolen):
        location = f"{other}/steal"

        class Redirect(_Recorder):
            def do_GET(self) -> None:
                self.send_response(code)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_port}/v1"
            problems = [
                endpoint_problem(LLMConfig(model="m", base_url=url, api_key="${R15_KEY}", api=api))
                for api in ("chat", "anthropic")
            ]
        finally:
            server.shutdown()
            server.server_close()

    assert stolen == []
    assert all(p and f"answered HTTP {code} (a redirect, not followed)" in p for p in problems)


def test_gate0_does_not_send_the_key_through_the_environments_proxy(monkeypatch):
    """Attack: the operator's shell has `HTTP_PROXY`/`HTTPS_PROXY` set (a corporate proxy,
    or one left from another task). Got through on main: Gate0's ping (urllib) went through
    it with the real key in its headers, though the gateway, which makes every model call,
    connects to `base_url` itself: a key the user never meant a proxy to see, and a health
    answer from somewhere else. Stops it: the ping takes no proxy from the environment."""
    monkeypatch.setenv("R15_KEY", CANARY)
    with _recording_host("127.0.0.3") as (proxy, through), _recording_host() as (endpoint, seen):
        _proxied(monkeypatch, proxy)
        llm = LLMConfig(model="m", base_url=f"{endpoint}/v1", api_key="${R15_KEY}")

        problem = endpoint_problem(llm)

    assert through == [] and problem is None
    assert len(seen) == 1 and f"Bearer {CANARY}" in seen[0]


# -- the operator's proxy and the calls to the gateway -----------------------------------------


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_the_plain_llm_targets_calls_reach_the_gateway_whatever_the_proxy(
    api, monkeypatch, gateway, endpoint
):
    """Attack: the operator's `HTTP_PROXY`/`ALL_PROXY` in the framework's environment, the
    plain-LLM target (`LLMClient`, the OpenAI SDK or urllib) calling its gateway on loopback.
    Got through on main: the call went to the proxy, with the run's token, and never reached
    the gateway: the gateway saw no fault, so the failed call was the candidate's. Stops it:
    `LLMClient` takes no proxy from the environment (`trust_env=False`, urllib's
    `direct_opener`)."""
    endpoint.behaviour = answer() if api == "chat" else answer(200, MESSAGE)
    token = _grant(gateway, endpoint, api)
    with _recording_host("127.0.0.3") as (proxy, through):
        _proxied(monkeypatch, proxy)
        llm = LLMConfig(model="m", api=api, max_retries=0)
        client = LLMClient(llm, "target", via=(gateway.url, token))
        try:
            completion = client.complete([{"role": "user", "content": "hi"}])
        finally:
            client.close()

    assert through == [] and completion.text == "spam"
    used = gateway.revoke(token)
    assert (used.answered, used.failed) == (1, 0)


def test_the_gateway_reaches_its_endpoint_directly_whatever_the_proxy(
    monkeypatch, gateway, endpoint
):
    """Held on main, and declared (docs/confinement.md, "The environment's proxies"): the
    gateway's own call to `base_url` (`http.client`) takes no proxy from the environment, so
    the real key goes to the configured endpoint and nowhere else."""
    endpoint.behaviour = answer()
    token = _grant(gateway, endpoint)
    direct = openai.DefaultHttpxClient(trust_env=False)  # this test's own client: no proxy
    client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=token, http_client=direct)
    with _recording_host("127.0.0.3") as (proxy, through):
        _proxied(monkeypatch, proxy)
        reply = client.chat.completions.create(model="m", messages=USER)

    assert through == [] and reply.choices[0].message.content == "spam"
    assert gateway.revoke(token).answered == 1


def test_unconfined_agents_do_not_inherit_the_environments_proxy(monkeypatch, tmp_path):
    """Attack: the same proxy, and an agent run unconfined (`confinement: none`), which keeps
    the framework's environment less its secrets. Got through on main: the MiniAgent fork
    server and the Claude Code CLI inherited `HTTPS_PROXY` and `ALL_PROXY`, so their calls to
    the gateway on loopback went to the proxy (the token with them) and failed, each the
    candidate's error. Stops it: both leave out (Claude Code: blanks) every proxy variable.
    Jailed runs start from an allow-list, which never held one."""
    _proxied(monkeypatch, "http://127.0.0.3:9")
    monkeypatch.setenv("no_proxy", "example.com")

    miniagent = _server_env(SimpleNamespace(jail=None, env={}))  # type: ignore[arg-type]
    run = SimpleNamespace(config=tmp_path / "c", tmp=tmp_path / "t")
    claude = cli_env(LLMConfig(model="m"), run, "target", base_url="http://127.0.0.1:1")  # type: ignore[arg-type]

    assert not [n for n in miniagent if n.lower().endswith("_proxy")]
    assert all(claude[n] == "" for n in [*PROXY_NAMES, "no_proxy"])


# -- a key that cannot go in a header ----------------------------------------------------------

BROKEN_KEYS = {
    "a-trailing-newline": CANARY + "\n",
    "a-trailing-cr": CANARY + "\r",
    "a-header-injected": CANARY + "\r\nX-Injected: 1",
}


@pytest.mark.parametrize("key", BROKEN_KEYS)
def test_a_key_with_a_line_break_is_an_infrastructure_fault_that_never_logs_it(
    key, endpoint, caplog, tmp_path
):
    """Attack: the role's key read from a file with its newline (a Kubernetes secret made
    `--from-file`, a `.env` file with CRLF). Got through on main: `http.client` refused the
    header with `ValueError: Invalid header value b'Bearer <key>\\r'`, and the gateway logged
    that traceback, the key in it (the CallLog line kept the masked words only by luck of
    the escape). Stops it: the gateway masks the key, as written and as Python quotes it, in
    a failure's words and its traceback. The call stays the infrastructure's fault."""
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "calls.jsonl"
    endpoint.behaviour = answer()
    with Gateway(log_path=log) as gateway:
        upstream = Upstream(endpoint.url, "chat", BROKEN_KEYS[key], timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)

        with pytest.raises(openai.InternalServerError):
            openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

        used = gateway.revoke(token)
    assert used.failed == 1 and used.answered == 0 and "gateway" in (used.last_fault or "")
    logged = caplog.text + "".join(r.getMessage() for r in caplog.records) + log.read_text()
    assert CANARY[:20] not in logged


KEY_VALUES = {
    "a-trailing-newline": (CANARY + "\n", "whitespace at its ends"),
    "a-trailing-cr": (CANARY + "\r", "whitespace at its ends"),
    "a-leading-space": (" " + CANARY, "whitespace at its ends"),
    "empty": ("", "is empty"),
    "a-pasted-closing-quote": (CANARY + "\u201d", "not ASCII"),
}


@pytest.mark.parametrize("value", KEY_VALUES)
def test_a_key_no_header_can_carry_is_refused_at_validate(value, tmp_path, monkeypatch, capsys):
    """Attack: the same key, and `flashrsi validate`. Got through on main: it validated, and
    every call of the role then failed (a line break: the gateway's error) or was refused
    (a space, a pasted `\u201d`: 401 or the gateway's error), the whole budget spent on
    nothing. Stops it: the dry run refuses such a key in one line naming the key's path,
    never quoting it."""
    key, fragment = KEY_VALUES[value]
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", key)
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    monkeypatch.chdir(tmp_path)

    code = main(["validate", "--config", str(folder / "exp.yaml")])

    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "agent.llm.api_key" in line]
    assert code == 2 and len(lines) == 1 and fragment in lines[0], err
    assert CANARY[:20] not in out + err


# -- streams: SSE's line ends mixed --------------------------------------------------------------


def _ended_by(blank: bytes) -> list[bytes]:
    return [event.replace(b"\n\n", blank) for event in (DELTA, FINISH, DONE)]


FIXED_LINE_ENDS = {"lf-then-crlf": b"\n\r\n", "lf-then-cr": b"\n\r"}
HELD_LINE_ENDS = {"crlf-then-lf": b"\r\n\n", "cr-then-crlf": b"\r\r\n"}


@pytest.mark.parametrize("blank", [*FIXED_LINE_ENDS, *HELD_LINE_ENDS])
def test_a_stream_whose_blank_lines_mix_line_ends_is_relayed(blank, gateway, endpoint):
    """The other way round: SSE ends a line with CRLF, LF or CR, and an event at an empty
    line, so `data: ...\\n\\r\\n` (LF, then an empty line ended by CRLF) ends an event, as the
    OpenAI SDK reads it. Got through on main: the meter knew three blank lines only (`\\n\\n`,
    `\\r\\n\\r\\n`, `\\r\\r`), read the whole stream as one event, and refused it as JSON with
    extra data: a correct answer charged to the infrastructure and rerun for nothing. Stops
    it: `StreamMeter` finds any line end followed by an empty line."""
    ends = {**FIXED_LINE_ENDS, **HELD_LINE_ENDS}[blank]
    endpoint.behaviour = sse(_ended_by(ends))
    token = _grant(gateway, endpoint)

    chunks = list(
        openai_client(gateway, token).chat.completions.create(model="m", messages=USER, stream=True)
    )

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("blank", [*FIXED_LINE_ENDS, *HELD_LINE_ENDS, "crlf-crlf"])
def test_the_meter_fed_a_mixed_stream_cut_anywhere_relays_it_whole(blank, size):
    """The same at the meter, cut every `size` bytes (a CR alone at a cut may be the start
    of a CRLF): every byte relayed once, in order, the stream closed."""
    ends = {**FIXED_LINE_ENDS, **HELD_LINE_ENDS, "crlf-crlf": b"\r\n\r\n"}[blank]
    stream = b"".join(_ended_by(ends))
    meter = StreamMeter("chat")

    out = b"".join(meter.feed(piece) for piece in _pieces(stream, size)) + meter.end()

    assert out.rstrip(b"\r\n") == stream.rstrip(b"\r\n")
    assert meter.incomplete() is None and meter.reported is None


# -- the endpoint: held ------------------------------------------------------------------------


def _flapping() -> object:
    """503, then a good answer, then 503 again...: an endpoint being restarted behind a
    balancer."""
    calls = iter(range(1_000_000))

    def write(conn):
        down = next(calls) % 2 == 0
        return (answer(503, {"error": {"message": "down"}}) if down else answer())(conn)

    return write


HELD_WHOLE = {
    "retry-after-negative": (
        answer(429, {"error": {"message": "slow"}}, Retry_After="-5"),
        "answered HTTP 429",
    ),
    "retry-after-an-http-date": (
        answer(429, {"error": {"message": "slow"}}, Retry_After="Wed, 21 Oct 2015 07:28:00 GMT"),
        "answered HTTP 429",
    ),
    "retry-after-garbage-on-a-503": (
        answer(503, {"error": {"message": "down"}}, Retry_After="soon"),
        "answered HTTP 503",
    ),
    "brotli": (answer(200, b"\x1b\x00\x00", Content_Encoding="br"), "encoded as 'br'"),
    "gzip-named-in-capitals-after-identity": (
        answer(200, b"x", Content_Encoding="identity, GZIP"),
        "encoded as 'identity, gzip'",
    ),
    "usage-strings": (
        answer(200, chat_reply(usage={"prompt_tokens": "10", "completion_tokens": "2"})),
        "prompt_tokens = 10, not a count",
    ),
}


@pytest.mark.parametrize("attack", HELD_WHOLE)
def test_a_whole_answer_beside_round_12s_is_the_infrastructures_fault(attack, gateway, endpoint):
    """Held on main: `Retry-After` negative, as an HTTP date, or not a number (the gateway
    relays the status as a fault and never waits on the endpoint's word), `br` and a second
    encoding after `identity`, usage counts written as strings."""
    behaviour, cause = HELD_WHOLE[attack]
    _charged_to_the_endpoint(gateway, endpoint, behaviour, cause)


HELD_STREAMS = {
    "keep-alives-trickled-forever": (
        chunked_endless(b": keep-alive\n\n", 0.2, "text/event-stream"),
        f"did not answer within {TIMEOUT:g} s",
    ),
    "a-gzipped-stream": (
        answer(200, b"\x1f\x8b", Content_Type="text/event-stream", Content_Encoding="gzip"),
        "encoded as 'gzip'",
    ),
    "usage-a-string-in-the-last-chunk": (
        sse([DELTA, _event({"choices": [], "usage": {"prompt_tokens": "1"}}), DONE]),
        "not a count",
    ),
}


@pytest.mark.parametrize("attack", HELD_STREAMS)
def test_a_stream_beside_round_12s_is_the_infrastructures_fault(attack, gateway, endpoint):
    """Held on main: a stream of keep-alive comments only, one every 0.2 s, never an event
    (every read is in time; the call's one deadline ends it), a stream gzipped, usage as a
    string in the usage chunk."""
    behaviour, cause = HELD_STREAMS[attack]
    _charged_to_the_endpoint(gateway, endpoint, behaviour, cause, stream=True)


@pytest.mark.parametrize("code", [307, 308])
def test_a_redirect_to_another_host_is_not_followed_with_the_key(code, endpoint):
    """Held on main: a 307 or 308 (which keep the method and body) to a second host that is
    listening: the gateway does not follow it, the other host sees nothing, the key with it."""
    with _recording_host() as (other, seen), Gateway() as gateway:
        location = f"{other}/v1/chat/completions"
        endpoint.behaviour = answer(code, b"", Location=location)
        upstream = Upstream(endpoint.url, "chat", CANARY, timeout=TIMEOUT)
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)

        with pytest.raises(openai.APIStatusError):
            openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

        used = gateway.revoke(token)
    assert seen == [] and f"a redirect (HTTP {code})" in (used.last_fault or "")


def test_a_flapping_endpoint_costs_the_infrastructure_one_fault_per_503(gateway, endpoint):
    """Held on main: an endpoint that answers 503 and 200 in turn, a client retrying once:
    each 503 is a fault of the endpoint, each 200 an answer, the run's last call answered."""
    endpoint.behaviour = _flapping()
    token = _grant(gateway, endpoint)
    client = openai_client(gateway, token).with_options(max_retries=1)

    replies = [client.chat.completions.create(model="m", messages=USER) for _ in range(3)]

    assert [r.choices[0].message.content for r in replies] == ["spam"] * 3
    used = gateway.revoke(token)
    assert (used.failed, used.answered, used.last_fault) == (3, 3, None)


# -- the Responses and Messages paths ----------------------------------------------------------


def test_a_messages_answer_with_usage_as_strings_is_the_endpoints_fault(gateway, endpoint):
    """Held on main: `input_tokens: "5"` on the Messages path (Claude Code's)."""
    endpoint.behaviour = answer(200, MESSAGE | {"usage": {"input_tokens": "5", "output_tokens": 1}})
    token = _grant(gateway, endpoint, "anthropic")

    response = _post(gateway, token, "anthropic")

    used = gateway.revoke(token)
    assert response.status_code == 502 and "input_tokens = 5, not a count" in used.last_fault


CORRECT_OTHER = {
    "responses-without-usage": ("responses", {k: v for k, v in RESPONSE.items() if k != "usage"}),
    "responses-arguments-not-json": (
        "responses",
        RESPONSE
        | {
            "output": [
                {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{not json"}
            ]
        },
    ),
    "messages-tool-use-with-an-empty-input": (
        "anthropic",
        MESSAGE | {"content": [{"type": "tool_use", "id": "t", "name": "bash", "input": {}}]},
    ),
}


@pytest.mark.parametrize("case", CORRECT_OTHER)
def test_a_correct_answer_on_the_other_paths_is_relayed(case, gateway, endpoint):
    """The other way round, held on main: a Responses answer without usage (its tokens
    unknown, not a fault), a function call whose arguments are not JSON (the model's words,
    which Codex answers with an error), a tool use with an empty input."""
    api, reply = CORRECT_OTHER[case]
    endpoint.behaviour = answer(200, reply)
    token = _grant(gateway, endpoint, api)

    response = _post(gateway, token, api)

    assert response.status_code == 200, response.text
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


def test_a_messages_stream_with_partial_json_not_json_is_relayed(gateway, endpoint):
    """Held on main: an `input_json_delta` whose pieces never make JSON is the model's."""
    events = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "t", "name": "bash", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": "{not"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]  # fmt: skip
    endpoint.behaviour = sse([_event(e, e["type"]) for e in events])
    token = _grant(gateway, endpoint, "anthropic")

    body = _post(gateway, token, "anthropic", stream=True)

    assert body is not None and b"message_stop" in body
    used = gateway.revoke(token)
    assert (used.answered, used.failed, used.last_fault) == (1, 0, None)


def test_a_chat_stream_with_a_chunk_after_done_is_one_answer(gateway, endpoint):
    """Held on main: a chunk after `[DONE]` (the SDK stops reading there)."""
    endpoint.behaviour = sse([DELTA, FINISH, DONE, DELTA])
    token = _grant(gateway, endpoint)

    chunks = list(
        openai_client(gateway, token).chat.completions.create(model="m", messages=USER, stream=True)
    )

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    assert gateway.revoke(token).last_fault is None


# -- the operator's config -----------------------------------------------------------------------


def _validate(tmp_path: Path, monkeypatch, args: list[str]) -> tuple[int, str]:
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    monkeypatch.chdir(tmp_path)
    return main(["validate", "--config", str(folder / "exp.yaml"), *args]), str(folder)


FIXED_TIMEOUTS = {
    "llm-timeout-1e-300": (["--agent.llm.timeout", "1e-300"], "agent.llm.timeout"),
    "llm-timeout-half-a-second": (["--agent.llm.timeout", "0.5"], "agent.llm.timeout"),
    "worker-llm-timeout-1e-300": (
        ["--algorithm.worker.llm.timeout", "1e-300"],
        "algorithm.worker.llm.timeout",
    ),
}
HELD_TIMEOUTS = {
    "llm-timeout-1e300": (["--agent.llm.timeout", "1e300"], "agent.llm.timeout"),
}


def test_a_price_whose_cost_is_no_number_is_one_line(tmp_path, monkeypatch, capsys):
    """Attack: `llm.price.input_per_mtok: 1e308` (finite, so it validated). Got through on
    main: the first call cost `inf`, and the gateway's log took `"cost_usd": Infinity`, which
    is not JSON (every reader but Python's refuses the line). Stops it: a price is at most
    `MAX_PRICE` (100,000 USD per million tokens)."""
    args = ["--agent.llm.price", "{input_per_mtok: 1.0e+308, output_per_mtok: 1}"]

    code, _ = _validate(tmp_path, monkeypatch, args)

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "agent.llm.price.input_per_mtok" in line]
    assert code == 2 and len(lines) == 1 and "less than or equal" in lines[0], err


@pytest.mark.parametrize("attack", [*FIXED_TIMEOUTS, *HELD_TIMEOUTS])
def test_an_absurd_llm_timeout_is_one_line(attack, tmp_path, monkeypatch, capsys):
    """Attack: `llm.timeout: 1e-300` (round 13 left it: every call then timed out, each an
    infrastructure fault, the whole experiment rerun into nothing). Got through on main.
    Stops it: a model call has at least `MIN_CALL_TIMEOUT` (1 s); a week at most held."""
    args, key = {**FIXED_TIMEOUTS, **HELD_TIMEOUTS}[attack]

    code, _ = _validate(tmp_path, monkeypatch, args)

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if key in line]
    assert code == 2 and len(lines) == 1, err
    assert "greater than or equal to 1" in lines[0] or "less than or equal" in lines[0]


CREDENTIAL_URLS = {
    "gemini-key": "https://llm.example.com/v1beta/openai?key=@",
    "api-key": "https://llm.example.com/v1?api_key=@",
    "token": "https://llm.example.com/v1?api-version=2024-02-01&token=@",
    "access-token": "https://llm.example.com/v1?access_token=@",
    "goog-api-key": "https://llm.example.com/v1?x-goog-api-key=@",
    "camel-case": "https://llm.example.com/v1?apiKey=@",
    "a-fragment": "https://llm.example.com/v1#@",
}


@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_a_credential_in_the_endpoint_url_is_refused_and_never_written(
    url, tmp_path, monkeypatch, capsys
):
    """Attack: the key in the endpoint URL's query (Gemini's `?key=`, `?api_key=`, a token)
    or fragment, then `flashrsi run`. Got through on main (round 14 kept it "as Azure's
    `?api-version=`"): validated, and the URL, the canary in it, was written in clear with
    the config into the experiment's `run_meta.json`. Stops it: `LLMConfig` refuses a query
    parameter named as a credential, and a fragment (never sent), in one line that does not
    quote the URL; nothing is written."""
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    monkeypatch.chdir(tmp_path)
    base_url = CREDENTIAL_URLS[url].replace("@", HEX_CANARY)
    overrides = ["--agent.llm.base_url", base_url, "--experiment.home", str(tmp_path / "home")]

    code = main(["run", "--config", str(folder / "exp.yaml"), *overrides])

    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code == 2 and len(lines) == 1, err
    assert HEX_CANARY not in out + err
    written = [
        p for p in tmp_path.rglob("*") if p.is_file() and HEX_CANARY.encode() in p.read_bytes()
    ]
    assert written == [] and not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    "query",
    [
        "api-version=2024-02-01",
        "deployment=gpt-4o&api-version=2024-10-21",
        "v=1",
        "max_token=512",
        "auth=none",
        "session_affinity=1",
        "token=",
    ],
)
def test_an_endpoint_url_with_an_honest_query_is_accepted(query, tmp_path, monkeypatch, capsys):
    """The other way round: Azure's `api-version`, a deployment, a version are no secrets;
    nor is a value under 8 characters under a credential's name (`?max_token=512`,
    `?auth=none`, refused until the fourth stop of 2026-12-05): no key is that short, the
    mask's and the redactor's rule (`MIN_SECRET_LENGTH`)."""
    args = ["--agent.llm.base_url", f"https://llm.example.com/v1?{query}"]

    _validate(tmp_path, monkeypatch, args)

    assert "base_url" not in capsys.readouterr().err


def test_a_one_second_llm_timeout_is_accepted(tmp_path, monkeypatch, capsys):
    """The other way round: one second, the least, validates (tests use two)."""
    _validate(tmp_path, monkeypatch, ["--agent.llm.timeout", "1"])

    assert "llm.timeout" not in capsys.readouterr().err


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_the_endpoint_urls_query_goes_with_every_call(api, tmp_path):
    """Attack (an operator's honest config): Azure OpenAI's `base_url:
    https://NAME.openai.azure.com/openai/deployments/DEP?api-version=2024-10-21`, which
    validates (its query is no credential). Got through on main: the gateway forwarded the
    URL's path only, so every call went out without `api-version` (Azure answers 404 or
    400: a 4xx, each task the agent's error); an Anthropic URL with a query was cut into a
    broken path. Stops it: the gateway sends the URL's query with every call, before the
    client's own (`Upstream.query`)."""
    with _recording_host() as (endpoint, seen), Gateway() as gateway:
        url = f"{endpoint}/openai/v1?api-version=2024-10-21"
        upstream = upstream_of(LLMConfig(model="m", base_url=url, api=api))
        token = gateway.grant(experiment="x", role="target", run_id="r", upstream=upstream)

        path, field = {
            "chat": ("chat/completions", "messages"),
            "responses": ("responses", "input"),
            "anthropic": ("messages", "messages"),
        }[api]
        headers = {"Authorization": f"Bearer {token}", "x-api-key": token}
        body = {"model": "m", "max_tokens": 9, field: USER}
        httpx2.post(f"{gateway.url}/v1/{path}?x=1", json=body, headers=headers, timeout=60)
        gateway.revoke(token)

    assert seen and seen[0].startswith(f"POST /openai/v1/{path}?api-version=2024-10-21&x=1 ")


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_gate0_pings_the_model_list_with_the_urls_query(api, monkeypatch):
    """Attack: the same Azure-style URL, and the Evolver's Gate0. Got through on main: the
    ping appended `/models` after the query (`...?api-version=2024-10-21/models`), a model
    list no endpoint serves: a healthy endpoint called unhealthy, the round stopped. Stops
    it: `endpoints.with_path` puts the path before the query."""
    monkeypatch.setenv("R15_KEY", HEX_CANARY)
    with _recording_host() as (endpoint, seen):
        url = f"{endpoint}/openai/v1?api-version=2024-10-21"

        problem = endpoint_problem(
            LLMConfig(model="m", base_url=url, api_key="${R15_KEY}", api=api)
        )

    assert problem is None
    assert seen and seen[0].startswith("GET /openai/v1/models?api-version=2024-10-21 ")
