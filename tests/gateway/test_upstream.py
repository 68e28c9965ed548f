"""Upstream side: the real key goes out in the upstream's style and the token never does; the
client never sees the key; hung and missing upstreams; calls in flight at revoke; keep-alive."""

from __future__ import annotations

import json
import threading

import httpx2
import openai
import pytest

from flashrsi_dagster.gateway import Upstream
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from tests.conftest import PATIENCE
from tests.gateway.conftest import CANARY_KEY, USER, anthropic_headers, openai_client

CHAT = {"model": "m", "messages": USER}


def _grant(gateway, upstream, run_id="r1") -> str:
    return gateway.grant(experiment="x", role="worker", run_id=run_id, upstream=upstream)


def test_openai_upstreams_get_the_real_key_as_bearer_and_never_the_token(gateway, recorder):
    token = _grant(gateway, Upstream(recorder.url, "chat", CANARY_KEY))
    headers = {
        "x-api-key": token,
        "OpenAI-Organization": "someone-else",
        "Cookie": "session=1",
        "Connection": "keep-alive, X-Hop",
        "X-Hop": "1",
        "X-Kept": "yes",
    }

    httpx2.post(f"{gateway.url}/v1/chat/completions?v=1", json=CHAT, headers=headers)

    method, path, received = recorder.requests[0]
    lowered = {k.lower(): v for k, v in received.items()}
    assert (method, path) == ("POST", "/v1/chat/completions?v=1")
    assert lowered["authorization"] == f"Bearer {CANARY_KEY}"
    assert lowered["x-kept"] == "yes"
    assert not {"x-api-key", "openai-organization", "cookie", "x-hop"} & lowered.keys()
    assert token not in repr(received)


def test_a_login_token_goes_upstream_as_bearer_with_the_oauth_beta(gateway, recorder):
    token = _grant(gateway, Upstream(recorder.url, "anthropic", CANARY_KEY, oauth=True))
    headers = {**anthropic_headers(token), "anthropic-beta": "tools-1"}

    httpx2.post(f"{gateway.url}/v1/messages", json=CHAT, headers=headers)

    lowered = {k.lower(): v for k, v in recorder.requests[0][2].items()}
    assert lowered["authorization"] == f"Bearer {CANARY_KEY}"
    assert lowered["anthropic-beta"] == "tools-1,oauth-2025-04-20"
    assert "x-api-key" not in lowered
    assert token not in repr(recorder.requests[0])


def test_anthropic_upstreams_get_x_api_key_and_the_version(gateway, recorder):
    token = _grant(gateway, Upstream(recorder.url, "anthropic", CANARY_KEY))

    httpx2.post(
        f"{gateway.url}/v1/messages", json=CHAT, headers={"authorization": f"Bearer {token}"}
    )
    httpx2.post(f"{gateway.url}/v1/messages", json=CHAT, headers=anthropic_headers(token))

    (_, _, bare), (_, _, versioned) = recorder.requests
    for received in (bare, versioned):
        lowered = {k.lower(): v for k, v in received.items()}
        assert lowered["x-api-key"] == CANARY_KEY
        assert "authorization" not in lowered
        assert lowered["anthropic-version"] == "2023-06-01"
        assert token not in repr(received)


def test_the_client_never_sees_the_key_even_when_the_upstream_quotes_it(gateway, recorder):
    recorder.answer = (401, {"error": {"message": f"Incorrect API key provided: {CANARY_KEY}"}})
    client = openai_client(gateway, _grant(gateway, Upstream(recorder.url, "chat", CANARY_KEY)))

    with pytest.raises(openai.AuthenticationError) as refused:
        client.chat.completions.create(model="m", messages=USER)

    assert CANARY_KEY not in refused.value.response.text
    assert "refused the gateway's credentials (HTTP 401)" in refused.value.message
    assert CANARY_KEY not in repr(Upstream(recorder.url, "chat", CANARY_KEY))


def test_a_hung_upstream_is_a_504_within_its_timeout(gateway):
    hanging = ServerConfig(failure_rate=1.0, failure_kinds=("hang",), hang_seconds=5)
    with OfflineModelServer(hanging) as simulator:
        token = _grant(gateway, Upstream(simulator.url, "chat", None, timeout=0.3))

        with pytest.raises(openai.APIStatusError) as failed:
            openai_client(gateway, token).chat.completions.create(
                model="simulator/echo", messages=USER
            )

    assert failed.value.status_code == 504  # the gateway's answer, not the hang's end
    assert "did not answer within 0.3 s" in failed.value.message
    assert gateway.revoke(token).timed_out == 1


def test_an_upstream_stalling_mid_stream_is_cut_and_what_it_used_counts(gateway, recorder):
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 7}}}
    recorder.stream = [b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n"]
    recorder.hold()
    token = _grant(gateway, Upstream(recorder.url, "anthropic", None, timeout=0.3))

    request = {"model": "m", "stream": True}
    with (
        pytest.raises(httpx2.RemoteProtocolError),  # no clean end: the client knows it is cut
        httpx2.stream(
            "POST", f"{gateway.url}/v1/messages", json=request, headers=anthropic_headers(token)
        ) as response,
    ):
        assert response.status_code == 200
        list(response.iter_lines())

    used = gateway.revoke(token)
    assert (used.calls, used.timed_out, used.input_tokens) == (1, 1, 7)


def test_an_unreachable_upstream_is_a_502(gateway):
    with OfflineModelServer(ServerConfig()) as simulator:
        gone = simulator.url  # a port nobody listens on once the simulator closes
    token = _grant(gateway, Upstream(gone, "chat", None, timeout=1))

    with pytest.raises(openai.APIStatusError) as failed:
        openai_client(gateway, token).chat.completions.create(model="m", messages=USER)

    assert failed.value.status_code == 502
    assert "ConnectionRefusedError" in failed.value.message


def test_a_call_pending_at_revoke_is_in_flight_and_still_counted_when_it_ends(gateway, recorder):
    token = _grant(gateway, Upstream(recorder.url, "chat", None))
    recorder.hold()
    call = threading.Thread(
        target=lambda: openai_client(gateway, token).chat.completions.create(
            model="m", messages=USER
        )
    )
    call.start()
    assert recorder.arrived.wait(PATIENCE)

    at_revoke = gateway.revoke(token)
    recorder.release()
    call.join(PATIENCE)

    assert (at_revoke.in_flight, at_revoke.calls) == (1, 0)
    after = gateway.revoke(token)
    assert (after.in_flight, after.calls, after.input_tokens) == (0, 1, 10)
    assert gateway.usage(run_id="r1").calls == 1


def test_upstream_connections_are_kept_alive_between_calls(gateway, recorder):
    client = openai_client(gateway, _grant(gateway, Upstream(recorder.url, "chat", None)))

    for _ in range(3):
        client.chat.completions.create(model="m", messages=USER)

    assert len(recorder.peers) == 3 and len(set(recorder.peers)) == 1
