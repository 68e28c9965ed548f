"""A real offline simulator as the upstream, a real gateway per test, real clients."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from tests.gateway.recording_upstream import RecordingUpstream, recording_upstream
from tests.offline_model.anthropic_wire import parse_sse

# Shaped like a real key, so the project's Redactor would catch it too; the tests check the
# gateway's own guards as well by grepping for the exact value.
CANARY_KEY = "sk-canary-3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e"
USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def simulator() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig()) as running:
        yield running


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "gateway.jsonl"


@pytest.fixture
def gateway(log_path: Path) -> Iterator[Gateway]:
    with Gateway(log_path=log_path) as running:
        yield running


@pytest.fixture
def upstream_of(simulator: OfflineModelServer) -> Callable[..., Upstream]:
    """An `Upstream` on the simulator, with the canary as its key."""

    def make(api: str = "chat", **fields: Any) -> Upstream:
        return Upstream(simulator.url, api, CANARY_KEY, **fields)  # type: ignore[arg-type]

    return make


@pytest.fixture
def recorder() -> Iterator[RecordingUpstream]:
    with recording_upstream() as running:
        yield running


def openai_client(gateway: Gateway, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=token, max_retries=0, timeout=60)


def anthropic_headers(token: str) -> dict[str, str]:
    return {"x-api-key": token, "anthropic-version": "2023-06-01"}


def anthropic_post(gateway: Gateway, token: str, body: dict, path: str = "messages"):
    return httpx2.post(
        f"{gateway.url}/v1/{path}", json=body, headers=anthropic_headers(token), timeout=60
    )


def anthropic_stream(gateway: Gateway, token: str, body: dict) -> list[tuple[str, dict]]:
    with httpx2.stream(
        "POST",
        f"{gateway.url}/v1/messages?beta=true",
        json={**body, "stream": True},
        headers=anthropic_headers(token),
        timeout=60,
    ) as response:
        assert response.status_code == 200, response.read()
        return parse_sse(response.iter_lines())


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
