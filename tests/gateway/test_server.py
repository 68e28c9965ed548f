"""The gateway end to end: real clients in, the real offline simulator out, every API with and
without streaming, tokens, usage per run / role / experiment, served sockets, concurrency."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import openai
import pytest

from flashrsi_dagster.config import LLMConfig
from flashrsi_dagster.gateway import Gateway, GatewayError, RunUsage, Upstream
from flashrsi_dagster.llm.client import LLMClient
from tests.conftest import PATIENCE
from tests.gateway.conftest import (
    USER,
    anthropic_post,
    anthropic_stream,
    openai_client,
)


def _grant(gateway, upstream, run_id="r1", role="worker", experiment="x") -> str:
    return gateway.grant(experiment=experiment, role=role, run_id=run_id, upstream=upstream)


@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_through_the_openai_sdk(gateway, upstream_of, stream):
    token = _grant(gateway, upstream_of("chat"))
    client = openai_client(gateway, token)

    if stream:
        chunks = list(
            client.chat.completions.create(model="simulator/echo", messages=USER, stream=True)
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        # Usage was asked for by the gateway, not the client: its extra chunk is taken out.
        assert all(c.choices for c in chunks)
    else:
        reply = client.chat.completions.create(model="simulator/echo", messages=USER)
        text = reply.choices[0].message.content

    assert text == "hello there"
    # Revoked the moment the answer is in: the call is already counted, not in flight.
    used = gateway.revoke(token)
    assert (used.calls, used.in_flight, used.input_tokens, used.output_tokens) == (1, 0, 3, 3)


def test_a_chat_stream_that_asks_for_usage_gets_it(gateway, upstream_of):
    client = openai_client(gateway, _grant(gateway, upstream_of("chat")))

    chunks = list(
        client.chat.completions.create(
            model="simulator/echo",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == 3
    assert gateway.usage(run_id="r1").input_tokens == 3


@pytest.mark.parametrize("stream", [False, True])
def test_responses_through_the_openai_sdk(gateway, upstream_of, stream):
    token = _grant(gateway, upstream_of("responses"))
    client = openai_client(gateway, token)

    if stream:
        events = list(client.responses.create(model="simulator/echo", input="hi", stream=True))
        assert events[-1].type == "response.completed"
        text = events[-1].response.output_text
    else:
        text = client.responses.create(model="simulator/echo", input="hi").output_text

    assert text == "hi"
    used = gateway.revoke(token)
    assert (used.calls, used.in_flight) == (1, 0)
    assert used.input_tokens > 0 and used.output_tokens > 0


def test_anthropic_messages_through_the_projects_client(gateway, upstream_of, monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_TOKEN", _grant(gateway, upstream_of("anthropic")))
    llm = LLMConfig(
        model="simulator/echo",
        base_url=gateway.url,
        api="anthropic",
        api_key="${GATEWAY_TEST_TOKEN}",
        max_retries=0,
    )

    reply = LLMClient(llm, role="worker").complete(USER)

    assert reply.text == "hello there"
    used = gateway.usage(run_id="r1")
    assert (used.calls, used.input_tokens, used.output_tokens) == (1, 3, 3)


def test_anthropic_messages_streamed(gateway, upstream_of):
    token = _grant(gateway, upstream_of("anthropic"))
    body = {"model": "simulator/echo", "max_tokens": 64, "messages": USER}

    events = anthropic_stream(gateway, token, body)

    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    text = "".join(d["delta"].get("text", "") for n, d in events if n == "content_block_delta")
    assert text == "hello there"
    used = gateway.revoke(token)
    assert (used.calls, used.in_flight, used.input_tokens, used.output_tokens) == (1, 0, 3, 3)


def test_count_tokens_and_models_pass_through_uncounted(gateway, upstream_of, simulator):
    anthropic_token = _grant(gateway, upstream_of("anthropic"))
    body = {"model": "simulator/echo", "messages": USER}

    counted = anthropic_post(gateway, anthropic_token, body, path="messages/count_tokens")
    models = openai_client(gateway, _grant(gateway, upstream_of(), run_id="r2")).models.list()

    assert counted.status_code == 200 and counted.json()["input_tokens"] == 3
    assert {m.id for m in models} == set(simulator.models)
    assert gateway.usage().calls == 0


def test_unknown_missing_and_revoked_tokens_are_401_with_a_clear_message(gateway, upstream_of):
    token = _grant(gateway, upstream_of())
    gateway.revoke(token)
    no_token = httpx2.post(f"{gateway.url}/v1/chat/completions", json={})

    with pytest.raises(openai.AuthenticationError, match="gateway: unknown token"):
        openai_client(gateway, "frsi-gw-made-up").models.list()
    with pytest.raises(openai.AuthenticationError, match="token revoked: run 'r1' has ended"):
        openai_client(gateway, token).chat.completions.create(model="m", messages=USER)
    anthropic = anthropic_post(gateway, token, {"model": "m", "messages": USER})

    assert no_token.status_code == 401 and "no token" in no_token.json()["error"]["message"]
    assert anthropic.status_code == 401
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "authentication_error"


def test_revoke_reports_the_runs_usage_and_is_idempotent(gateway, upstream_of):
    token = _grant(gateway, upstream_of())
    openai_client(gateway, token).chat.completions.create(model="simulator/echo", messages=USER)

    first, again = gateway.revoke(token), gateway.revoke(token)

    assert first == again == RunUsage(3, 3, None, 1, [], 0, 0, answered=1)
    with pytest.raises(GatewayError, match="unknown token"):
        gateway.revoke("frsi-gw-never-granted")


def test_usage_per_run_role_and_experiment(gateway, upstream_of):
    runs = [
        ("x", "worker", "w1"),
        ("x", "worker", "w2"),
        ("x", "target", "t1"),
        ("y", "worker", "w3"),
    ]
    for experiment, role, run_id in runs:
        token = _grant(gateway, upstream_of(), run_id, role, experiment)
        openai_client(gateway, token).chat.completions.create(model="simulator/echo", messages=USER)

    assert gateway.usage(run_id="w1").calls == 1
    assert gateway.usage(experiment="x", role="worker").calls == 2
    assert gateway.usage(experiment="x").calls == 3
    assert gateway.usage(role="worker").calls == 3
    assert gateway.usage().input_tokens == 12


def test_serve_a_listener_made_elsewhere_then_unserve_it(gateway, upstream_of):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    gateway.serve(listener)
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=_grant(gateway, upstream_of()),
        max_retries=0,
        timeout=PATIENCE,
    )

    reply = client.chat.completions.create(model="simulator/echo", messages=USER)
    gateway.unserve(listener)

    assert reply.choices[0].message.content == "hello there"
    assert listener.fileno() == -1
    with pytest.raises(openai.APIConnectionError):  # its keep-alive connection was closed too
        client.chat.completions.create(model="simulator/echo", messages=USER)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_unserve_lets_the_request_in_progress_finish(gateway, recorder):
    listener = socket.create_server(("127.0.0.1", 0))
    gateway.serve(listener)
    token = _grant(gateway, Upstream(recorder.url, "chat", "k"))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    recorder.hold()
    result = {}
    call = threading.Thread(
        target=lambda: result.update(
            r=httpx2.post(url, json={"model": "m"}, headers={"authorization": f"Bearer {token}"})
        )
    )
    call.start()
    assert recorder.arrived.wait(PATIENCE)

    gateway.unserve(listener)
    recorder.release()
    call.join(PATIENCE)

    assert result["r"].status_code == 200
    assert result["r"].json()["choices"][0]["message"]["content"] == "ok"


def test_a_listener_served_for_one_token_refuses_the_others(gateway, upstream_of):
    listener = socket.create_server(("127.0.0.1", 0))
    jailed = _grant(gateway, upstream_of(), run_id="jailed")
    other = _grant(gateway, upstream_of(), run_id="other")
    gateway.serve(listener, token=jailed)
    base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"

    def call(token):
        client = openai.OpenAI(base_url=base, api_key=token, max_retries=0, timeout=PATIENCE)
        return client.chat.completions.create(model="simulator/echo", messages=USER)

    assert call(jailed).choices[0].message.content == "hello there"
    with pytest.raises(openai.AuthenticationError, match="not valid on this listener"):
        call(other)
    assert gateway.revoke(jailed).refused == ["gateway: this token is not valid on this listener"]


def test_serve_refuses_a_socket_that_is_not_listening(gateway):
    with socket.socket() as unbound, pytest.raises(GatewayError, match="not a listening"):
        gateway.serve(unbound)


def test_close_closes_own_and_served_listeners(upstream_of):
    listener = socket.create_server(("127.0.0.1", 0))
    served = listener.getsockname()[1]
    with Gateway() as gateway:
        gateway.serve(listener)
        own = int(gateway.url.rsplit(":", 1)[1])

    for port in (own, served):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=1)
    assert listener.fileno() == -1
    with pytest.raises(GatewayError, match="closed"):
        gateway.serve(socket.create_server(("127.0.0.1", 0)))


def test_sixteen_parallel_calls(gateway, upstream_of):
    client = openai_client(gateway, _grant(gateway, upstream_of()))

    def call(i: int) -> str:
        messages = [{"role": "user", "content": f"call {i}"}]
        return client.chat.completions.create(model="simulator/echo", messages=messages)

    with ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(call, range(16)))

    assert [r.choices[0].message.content for r in replies] == [f"call {i}" for i in range(16)]
    assert gateway.usage(run_id="r1").calls == 16


def test_close_cuts_calls_in_flight(upstream_of, recorder):
    gateway = Gateway().start()
    token = _grant(gateway, Upstream(recorder.url, "chat", None))
    recorder.hold()
    outcome = []

    def call() -> None:
        try:
            outcome.append(
                httpx2.post(
                    f"{gateway.url}/v1/chat/completions",
                    json={"model": "m"},
                    headers={"authorization": f"Bearer {token}"},
                    timeout=PATIENCE,
                )
            )
        except httpx2.HTTPError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert recorder.arrived.wait(PATIENCE)

    gateway.close()
    caller.join(PATIENCE)

    # cut, not left hanging until the upstream answers (a 200) or the client gives up
    assert isinstance(outcome[0], httpx2.RemoteProtocolError), outcome


def test_connections_beyond_a_listeners_limit_get_a_503(upstream_of):
    with Gateway(max_connections=1) as gateway:
        host, port = gateway.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as first:
            time.sleep(0.05)  # accepted, idle
            second = httpx2.get(f"{gateway.url}/v1/models")
            first.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = first.makefile("rb").read()

    assert second.status_code == 503
    assert "too many connections" in second.json()["error"]["message"]
    assert answer.startswith(b"HTTP/1.1 401 ")


def test_a_chunked_request_body_is_forwarded_whole(gateway, upstream_of):
    token = _grant(gateway, upstream_of())
    body = json.dumps({"model": "simulator/echo", "messages": USER}).encode()

    answer = httpx2.post(
        f"{gateway.url}/v1/chat/completions",
        content=iter([body[:10], body[10:]]),  # an iterator goes out chunked
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
    )

    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "hello there"


def test_a_unix_listener_is_served_too(gateway, upstream_of, tmp_path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "gateway.sock"))
    listener.listen()
    gateway.serve(listener)
    token = _grant(gateway, upstream_of())

    transport = httpx2.HTTPTransport(uds=str(tmp_path / "gateway.sock"))
    with httpx2.Client(transport=transport) as client:
        models = client.get("http://jail/v1/models", headers={"authorization": f"Bearer {token}"})

    assert models.status_code == 200 and models.json()["data"]


_JAILED_CLIENT = """
import json, os, socket, sys, urllib.request
channel = socket.socket(fileno=int(sys.argv[1]))
listener = socket.create_server(("127.0.0.1", 8080))
socket.send_fds(channel, [b"L"], [listener.fileno()])
channel.recv(1)
body = {"model": "simulator/echo", "messages": [{"role": "user", "content": "from the jail"}]}
request = urllib.request.Request(
    "http://127.0.0.1:8080/v1/chat/completions", data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["TOKEN"]},
)
reply = json.loads(urllib.request.urlopen(request, timeout=60).read())
print(reply["choices"][0]["message"]["content"])
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (Debian's bubblewrap)")
def test_serve_a_listener_made_in_a_jails_network_namespace(gateway, upstream_of):
    """The integration as the jail does it: a socket listening on the jail's own loopback,
    handed over by file descriptor; the gateway is the only thing reachable from inside."""
    token = _grant(gateway, upstream_of(), run_id="jailed")
    ours, theirs = socket.socketpair()
    jail = subprocess.Popen(
        ["bwrap", "--unshare-net", "--die-with-parent", "--dev-bind", "/", "/",
         sys.executable, "-c", _JAILED_CLIENT, str(theirs.fileno())],
        pass_fds=[theirs.fileno()], env={**os.environ, "TOKEN": token},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    theirs.close()
    ours.settimeout(PATIENCE)
    try:
        _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        if not fds:
            pytest.skip(f"bubblewrap cannot make a network namespace here: {jail.stderr.read()}")
        gateway.serve(socket.socket(fileno=fds[0]), token=token)
        ours.send(b"go")
        out, err = jail.communicate(timeout=PATIENCE)
    finally:
        jail.kill()
        ours.close()

    assert (jail.returncode, out.strip()) == (0, "from the jail"), err
    assert gateway.revoke(token).calls == 1
