"""The HTTP server: routes, error shapes, the request log, robustness and shutdown."""

from __future__ import annotations

import threading

import httpx2
import openai
import pytest

from flashrsi_dagster.offline_model import OfflineModelServer, RequestRecord, ServerConfig
from flashrsi_dagster.offline_model.policies import BUILTIN
from tests.offline_model.anthropic_wire import HEADERS, post_messages

CHAT = {"model": "simulator/echo", "messages": [{"role": "user", "content": "hello"}]}


def test_urls_point_at_a_free_loopback_port(server):
    assert server.port > 0
    assert server.root_url == f"http://127.0.0.1:{server.port}"
    assert server.url == f"{server.root_url}/v1"


def test_unknown_paths_are_404_json_in_the_callers_dialect(server):
    openai_style = httpx2.get(f"{server.url}/engines")
    anthropic_style = httpx2.post(f"{server.root_url}/v1/complete", json={}, headers=HEADERS)

    assert openai_style.status_code == anthropic_style.status_code == 404
    assert "has no route GET /v1/engines" in openai_style.json()["error"]["message"]
    assert anthropic_style.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize("path", ["chat/completions", "responses"])
def test_malformed_json_is_a_400_in_openai_shape(server, path):
    broken = httpx2.post(f"{server.url}/{path}", content=b'{"model": ')
    not_an_object = httpx2.post(f"{server.url}/{path}", json=["model"])

    assert broken.status_code == not_an_object.status_code == 400
    assert "not valid JSON" in broken.json()["error"]["message"]
    assert "must be a JSON object" in not_an_object.json()["error"]["message"]
    assert broken.json()["error"]["type"] == "invalid_request_error"


def test_models_are_listed_in_anthropic_shape_for_anthropic_clients(server):
    models = httpx2.get(f"{server.url}/models", headers=HEADERS).json()

    assert models["data"][0]["type"] == "model"
    assert models["first_id"] == "simulator/echo"
    assert models["has_more"] is False


def test_the_v1_prefix_and_query_strings_are_optional(server):
    plain = httpx2.post(f"{server.root_url}/chat/completions", json=CHAT)
    queried = httpx2.post(f"{server.url}/chat/completions?api-version=1", json=CHAT)

    assert plain.json()["choices"][0]["message"]["content"] == "hello"
    assert queried.status_code == 200


def test_the_request_log_records_api_model_role_stream_and_token_estimates(server, client):
    server.clear_requests()
    completion = client.chat.completions.create(**CHAT, extra_headers={"x-flashrsi-role": "target"})
    post_messages(server.root_url, {**CHAT, "max_tokens": 5, "stream": True})
    httpx2.get(f"{server.url}/models")

    chat, anthropic, models = server.requests

    assert isinstance(chat, RequestRecord)
    assert (chat.api, chat.model, chat.role, chat.stream) == (
        "chat",
        "simulator/echo",
        "target",
        False,
    )
    assert (chat.input_tokens, chat.output_tokens) == (
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
    )
    assert (chat.status_code, chat.fault) == (200, None)
    assert (anthropic.api, anthropic.role, anthropic.stream) == ("anthropic", None, True)
    assert models.api == "models"
    server.clear_requests()
    assert server.requests == []


def test_request_bodies_are_kept_only_when_asked_for(server):
    body = {**CHAT, "max_tokens": 5, "system": "be brief"}
    post_messages(server.root_url, body)
    with OfflineModelServer(ServerConfig(record_bodies=True)) as recording:
        post_messages(recording.root_url, body)
        httpx2.get(f"{recording.url}/models")
        kept, models = recording.requests

    assert server.requests[-1].body is None
    assert kept.body == body
    assert models.body is None


def test_a_failing_policy_is_a_500_and_the_server_keeps_serving(server, client, monkeypatch):
    def broken(conversation):
        raise RuntimeError("policy bug")

    monkeypatch.setitem(BUILTIN, "simulator/broken", broken)

    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(**{**CHAT, "model": "simulator/broken"})

    assert "internal error: RuntimeError: policy bug" in failed.value.body["message"]
    assert client.chat.completions.create(**CHAT).choices[0].message.content == "hello"


def test_a_chunked_request_body_is_read(server):
    def body():
        yield b'{"model": "simulator/echo", '
        yield b'"messages": [{"role": "user", "content": "in pieces"}]}'

    answer = httpx2.post(f"{server.url}/chat/completions", content=body())

    assert answer.json()["choices"][0]["message"]["content"] == "in pieces"


def test_concurrent_requests_all_get_their_own_answer(server):
    answers: dict[int, str] = {}

    def ask(i: int) -> None:
        body = {"model": "simulator/echo", "messages": [{"role": "user", "content": f"n{i}"}]}
        reply = httpx2.post(f"{server.url}/chat/completions", json=body, timeout=60)
        answers[i] = reply.json()["choices"][0]["message"]["content"]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == {i: f"n{i}" for i in range(24)}


def test_shutdown_is_prompt_with_idle_keep_alive_connections_open():
    server = OfflineModelServer(ServerConfig()).start()
    endpoint = f"{server.url}/chat/completions"
    with httpx2.Client() as keep_alive:
        assert keep_alive.post(endpoint, json=CHAT).status_code == 200
        server.close()  # shuts the idle connection, so joining its handler does not wait

        with pytest.raises(httpx2.HTTPError):
            keep_alive.post(endpoint, json=CHAT)


def test_accepted_keys_refuse_any_other_key_with_401_as_a_real_endpoint_does():
    with OfflineModelServer(ServerConfig(accepted_keys=("sk-right",))) as server:
        right = openai.OpenAI(base_url=server.url, api_key="sk-right", max_retries=0)
        wrong = openai.OpenAI(base_url=server.url, api_key="sk-wrong", max_retries=0)
        messages = [{"role": "user", "content": "hello"}]

        answered = right.chat.completions.create(model="simulator/echo", messages=messages)
        with pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model="simulator/echo", messages=messages)

    assert answered.choices[0].message.content
    assert [r.status_code for r in server.requests] == [200, 401]
