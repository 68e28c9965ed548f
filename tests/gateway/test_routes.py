"""Only the model endpoints are forwarded: a real key can do much more than a run needs."""

from __future__ import annotations

import httpx2
import pytest

from flashrsi_dagster.gateway.routes import route_of
from tests.gateway.conftest import anthropic_post


@pytest.mark.parametrize(
    ("method", "path", "known"),
    [
        ("POST", "/v1/chat/completions", True),
        ("POST", "/v1/responses", True),
        ("POST", "/v1/messages", True),
        ("POST", "/v1/messages/count_tokens", True),
        ("GET", "/v1/models", True),
        ("GET", "/v1/models/openai/gpt-4o", True),
        ("GET", "/v1/models/../files", False),
        ("GET", "/v1/models/%2e%2e/files", False),
        ("POST", "/v1/files", False),
        ("GET", "/v1/chat/completions", False),
        ("POST", "/v1/fine_tuning/jobs", False),
    ],
)
def test_route_of(method, path, known):
    assert (route_of(method, path) is not None) is known


def test_other_paths_are_404_in_the_clients_dialect(gateway, upstream_of):
    token = gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream_of())

    files = httpx2.post(f"{gateway.url}/v1/files", headers={"authorization": f"Bearer {token}"})

    assert files.status_code == 404
    assert files.json()["error"]["message"] == "gateway: no route POST /v1/files"


def test_a_route_of_the_other_api_family_is_404(gateway, upstream_of):
    token = gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream_of("chat"))

    answer = anthropic_post(gateway, token, {"model": "simulator/echo", "messages": []})

    assert answer.status_code == 404
    assert "this run's upstream speaks the openai API" in answer.json()["error"]["message"]


def test_a_body_over_the_limit_is_413(upstream_of):
    from flashrsi_dagster.gateway import Gateway

    with Gateway(max_body_bytes=1000) as gateway:
        token = gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream_of())
        answer = httpx2.post(
            f"{gateway.url}/v1/chat/completions",
            content=b"x" * 1001,
            headers={"authorization": f"Bearer {token}"},
        )

    assert answer.status_code == 413
    assert gateway.usage().calls == 0
