"""A real simulator server per test, and the real OpenAI SDK pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig


@pytest.fixture
def server() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig()) as running:
        yield running


@pytest.fixture
def client(server: OfflineModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="not-a-real-key", max_retries=0)
