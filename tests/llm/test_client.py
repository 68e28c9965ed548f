"""The per-role model client against the offline simulator: three APIs, usage, bounds."""

from __future__ import annotations

import openai
import pytest

from flashrsi_dagster.config import LLMConfig
from flashrsi_dagster.llm.client import AnthropicAPIError, LLMClient
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


def _llm(server, script: str, api: str, **fields) -> LLMConfig:
    base = server.root_url if api == "anthropic" else server.url
    return LLMConfig(model=f"simulator/script:{script}", base_url=base, api=api, **fields)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_each_api_returns_text_tool_calls_and_usage(server, api):
    server.add_script(
        f"apis-{api}",
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
            {"text": "all done"},
        ],
    )
    client = LLMClient(_llm(server, f"apis-{api}", api), role="worker")
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "list"}]

    first = client.complete(messages, TOOLS)
    call = first.tool_calls[0]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "a.txt"},
    ]
    second = client.complete(messages, TOOLS)

    assert (call.name, call.arguments) == ("shell", {"command": "ls"})
    assert second.text == "all done" and second.tool_calls == ()
    usage = client.meter.snapshot()
    assert (usage.role, usage.calls, usage.failed_calls) == ("worker", 2, 0)
    assert usage.input_tokens == first.input_tokens + second.input_tokens > 0
    assert usage.cost is None
    logged = [r for r in server.requests if r.model == f"simulator/script:apis-{api}"]
    assert [r.role for r in logged] == ["worker", "worker"]
    client.close()


def test_cost_is_computed_where_the_model_is_priced(server):
    server.add_script("priced", [{"text": "x"}])
    price = {"input_per_mtok": 2.0, "output_per_mtok": 10.0}
    client = LLMClient(_llm(server, "priced", "chat", price=price), role="target")

    completion = client.complete([{"role": "user", "content": "hi"}])

    expected = (completion.input_tokens * 2.0 + completion.output_tokens * 10.0) / 1e6
    assert completion.cost == pytest.approx(expected)
    assert client.meter.snapshot().cost == pytest.approx(expected)


def test_every_call_is_bounded_by_the_role_timeout():
    config = ServerConfig(failure_rate=1.0, failure_kinds=("hang",), hang_seconds=30)
    with OfflineModelServer(config) as hanging:
        client = LLMClient(
            LLMConfig(model="simulator/echo", base_url=hanging.url, timeout=1, max_retries=0),
            role="target",
        )
        with pytest.raises(openai.APITimeoutError):  # not the answer after the 30 s hang
            client.complete([{"role": "user", "content": "hi"}])

    assert client.meter.snapshot().failed_calls == 1


def test_anthropic_errors_are_retried_then_raised(server):
    server.add_script("flaky", [{"error": 500}, {"text": "recovered"}, {"error": 500}])
    client = LLMClient(_llm(server, "flaky", "anthropic", max_retries=1), role="target")

    assert client.complete([{"role": "user", "content": "hi"}]).text == "recovered"
    with pytest.raises(AnthropicAPIError, match="HTTP 500"):
        LLMClient(_llm(server, "flaky", "anthropic", max_retries=0), role="target").complete(
            [{"role": "user", "content": "hi"}]
        )


def test_offline_base_url_starts_the_shared_simulator():
    client = LLMClient(LLMConfig(model="simulator/echo", base_url="offline"), role="target")

    assert client.complete([{"role": "user", "content": "ping"}]).text == "ping"
