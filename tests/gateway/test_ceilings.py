"""The role's per-call settings held by the gateway: whatever an evolved harness asks for, a
model call gets at most the role's `llm.max_tokens` output tokens and its reasoning effort or
thinking budget; asking for less is the harness's choice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.environments.confinement import upstream_of
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from tests.gateway.conftest import CANARY_KEY

MODEL = "simulator/echo"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}
USER = {"chat": "messages", "responses": "input", "anthropic": "messages"}


@pytest.fixture(scope="module")
def recording() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


def _sent(recording: OfflineModelServer, api: str, asked: dict[str, Any], **ceilings: Any) -> dict:
    """What the upstream received for a request with `asked`, under `ceilings`."""
    body = {"model": MODEL, USER[api]: [{"role": "user", "content": "hi"}], **asked}
    with Gateway() as gateway:
        upstream = Upstream(recording.url, api, CANARY_KEY, **ceilings)  # type: ignore[arg-type]
        token = gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream)
        answer = httpx2.post(
            f"{gateway.url}{PATHS[api]}",
            json=body,
            headers={"Authorization": f"Bearer {token}", "x-api-key": token},
            timeout=30,
        )
    assert answer.status_code == 200, answer.text
    return recording.requests[-1].body


@pytest.mark.parametrize(
    ("api", "asked", "field", "ceiling"),
    [
        ("chat", {"max_tokens": 100_000}, "max_tokens", 256),
        ("chat", {"max_completion_tokens": 100_000}, "max_completion_tokens", 256),
        ("chat", {}, "max_tokens", 256),
        ("chat", {"max_tokens": "100000"}, "max_tokens", 256),
        ("responses", {"max_output_tokens": 100_000}, "max_output_tokens", 256),
        ("anthropic", {"max_tokens": 100_000}, "max_tokens", 256),
    ],
    ids=["chat", "chat-completion-tokens", "chat-none-named", "chat-a-string", "responses",
         "anthropic"],
)  # fmt: skip
def test_a_call_asking_past_the_roles_max_tokens_gets_the_max(
    recording, api, asked, field, ceiling
):
    assert _sent(recording, api, asked, max_output=ceiling)[field] == ceiling


def test_a_call_asking_for_less_keeps_it_and_no_ceiling_changes_nothing(recording):
    assert _sent(recording, "chat", {"max_tokens": 100}, max_output=256)["max_tokens"] == 100
    assert _sent(recording, "chat", {"max_tokens": 100_000})["max_tokens"] == 100_000
    assert "max_tokens" not in _sent(recording, "chat", {})


def test_a_call_asking_for_more_reasoning_than_the_role_gets_the_roles(recording):
    chat = _sent(recording, "chat", {"reasoning_effort": "high"}, effort="low")
    responses = _sent(recording, "responses", {"reasoning": {"effort": "xhigh"}}, effort="low")
    unnamed = _sent(recording, "chat", {}, effort="medium")
    less = _sent(recording, "chat", {"reasoning_effort": "minimal"}, effort="medium")
    thinking = {"type": "enabled", "budget_tokens": 60_000}
    anthropic = _sent(
        recording, "anthropic", {"max_tokens": 2000, "thinking": thinking}, thinking=1024
    )

    assert (chat["reasoning_effort"], responses["reasoning"]["effort"]) == ("low", "low")
    assert (unnamed["reasoning_effort"], less["reasoning_effort"]) == ("medium", "minimal")
    assert anthropic["thinking"]["budget_tokens"] == 1024


def test_a_chat_call_asking_for_reasoning_in_another_dialect_gets_the_roles(recording):
    """OpenRouter reads `reasoning: {effort, max_tokens}` in a chat call, Anthropic's
    OpenAI-compatible endpoint `thinking: {budget_tokens}`: held like `reasoning_effort`."""
    openrouter = {"reasoning": {"effort": "high", "max_tokens": 60_000}}
    anthropic = {"thinking": {"type": "enabled", "budget_tokens": 60_000}}
    held = _sent(recording, "chat", openrouter, effort="low", thinking=1024)
    thought = _sent(recording, "chat", anthropic, thinking=1024)
    capped = _sent(recording, "chat", openrouter | anthropic, max_output=256)

    assert held["reasoning"] == {"effort": "low", "max_tokens": 1024}
    assert thought["thinking"]["budget_tokens"] == 1024
    assert (capped["reasoning"]["max_tokens"], capped["thinking"]["budget_tokens"]) == (256, 256)
    assert _sent(recording, "chat", openrouter)["reasoning"] == openrouter["reasoning"]


def test_a_chat_call_asking_for_many_answers_gets_one_or_the_roles(recording):
    """`n: 16` is sixteen samples for one call of the run's turn budget."""
    assert _sent(recording, "chat", {"n": 16})["n"] == 1
    assert _sent(recording, "chat", {"n": 16}, choices=3)["n"] == 3
    assert _sent(recording, "chat", {"n": 2}, choices=3)["n"] == 2
    assert "n" not in _sent(recording, "chat", {})


def test_the_ceilings_are_the_roles_llm_settings():
    llm = LLMConfig(
        model="m", base_url="offline", max_tokens=300, extra_body={"n": 3},
        reasoning={"effort": "low", "budget_tokens": 2048},  # type: ignore[arg-type]
    )  # fmt: skip
    upstream = upstream_of(llm)
    assert (upstream.max_output, upstream.effort, upstream.thinking) == (300, "low", 2048)
    assert upstream.choices == 3 and upstream_of(LLMConfig(model="m")).choices == 1
