"""One model client per role: OpenAI Chat / Responses through the `openai` SDK, Anthropic
Messages over HTTP. Messages and tools are given in the Chat Completions shape and translated.
Every call is bounded by the role's timeout and retried by its `max_retries`."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.llm import translate
from flashrsi_dagster.llm.endpoints import (
    OFFLINE,
    anthropic_base_url,
    direct_opener,
    openai_base_url,
)
from flashrsi_dagster.llm.usage import UsageMeter

if TYPE_CHECKING:
    import openai

ROLE_HEADER = "x-flashrsi-role"
ANTHROPIC_VERSION = "2023-06-01"
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


def infra_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the endpoint failed, not the agent. The SDK is imported when
    first needed, here and by a client's first call: it takes a second to import, and most
    processes of the framework (a Dagster run, the UI) never call a model themselves. An
    agent running inside a task environment may have no SDK at all (Claude Code's brings only
    its own): then no exception can be the SDK's."""
    errors: tuple[type[BaseException], ...] = (urllib.error.URLError, TimeoutError)
    try:
        import openai
    except ModuleNotFoundError:
        return errors
    return (
        openai.APIConnectionError,  # includes timeouts
        openai.RateLimitError,
        openai.InternalServerError,
        *errors,
    )


class AnthropicAPIError(RuntimeError):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"Anthropic Messages API returned HTTP {status}: {detail}")
        self.status = status


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...]
    input_tokens: int
    output_tokens: int
    cost: float | None


class LLMClient:
    """The model connection of one role (`agent.llm` or `algorithm.worker.llm`)."""

    def __init__(
        self,
        llm: LLMConfig,
        role: str,
        *,
        meter: UsageMeter | None = None,
        via: tuple[str, str] | None = None,
    ) -> None:
        """`via`: (root URL, token) of a model gateway to call instead of the role's endpoint
        with its key (the gateway forwards to that endpoint and injects the key)."""
        self.config = llm.model_copy(deep=True)
        self.role = role
        self._via = via
        self.meter = meter or UsageMeter(role, llm.model, llm.price)
        self._openai: openai.OpenAI | None = None

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None
    ) -> Completion:
        call = {"chat": self._chat, "responses": self._responses, "anthropic": self._anthropic}
        try:
            text, calls, tokens_in, tokens_out = call[self.config.api](messages, tools or [])
        except Exception:
            self.meter.record_failure()
            raise
        cost = self.meter.record(tokens_in, tokens_out)
        return Completion(text, tuple(calls), tokens_in, tokens_out, cost)

    def close(self) -> None:
        if self._openai is not None:
            self._openai.close()

    # -- OpenAI ---------------------------------------------------------------------------

    def _sdk(self) -> openai.OpenAI:
        if self._openai is None:
            import openai

            self._openai = openai.OpenAI(
                base_url=f"{self._via[0]}/v1" if self._via else openai_base_url(self.config),
                api_key=self._key(),
                timeout=self.config.timeout,
                max_retries=self.config.max_retries,
                default_headers={ROLE_HEADER: self.role},
                # the environment's proxies and redirects are not followed (`endpoints.py`)
                http_client=openai.DefaultHttpxClient(trust_env=False, follow_redirects=False),
            )
        return self._openai

    def _key(self) -> str:
        return self._via[1] if self._via else resolve_key(self.config)

    def _common(self) -> dict[str, Any]:
        c = self.config
        params: dict[str, Any] = {"model": c.model}
        if c.temperature is not None:
            params["temperature"] = c.temperature
        if c.extra_body:
            params["extra_body"] = c.extra_body
        return params

    def _chat(self, messages: list[dict], tools: list[dict]):
        params = self._common()
        if self.config.max_tokens:
            params["max_tokens"] = self.config.max_tokens
        if self.config.reasoning and self.config.reasoning.effort:
            params["reasoning_effort"] = self.config.reasoning.effort
        if tools:
            params["tools"] = tools
        response = self._sdk().chat.completions.create(messages=messages, **params)
        message = response.choices[0].message
        calls = [
            ToolCall(c.id, c.function.name, _arguments(c.function.arguments))
            for c in message.tool_calls or []
        ]
        usage = response.usage
        return message.content or "", calls, usage.prompt_tokens, usage.completion_tokens

    def _responses(self, messages: list[dict], tools: list[dict]):
        params = self._common()
        if self.config.max_tokens:
            params["max_output_tokens"] = self.config.max_tokens
        if self.config.reasoning and self.config.reasoning.effort:
            params["reasoning"] = {"effort": self.config.reasoning.effort}
        instructions, items = translate.to_responses_input(messages)
        if instructions:
            params["instructions"] = instructions
        if tools:
            params["tools"] = translate.to_responses_tools(tools)
        response = self._sdk().responses.create(input=items, **params)
        calls = [
            ToolCall(item.call_id, item.name, _arguments(item.arguments))
            for item in response.output
            if item.type == "function_call"
        ]
        usage = response.usage
        return response.output_text or "", calls, usage.input_tokens, usage.output_tokens

    # -- Anthropic ------------------------------------------------------------------------

    def _anthropic(self, messages: list[dict], tools: list[dict]):
        system, turns = translate.to_anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": turns,
            "max_tokens": self.config.max_tokens or 4096,
            **self.config.extra_body,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = translate.to_anthropic_tools(tools)
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        if self.config.reasoning and self.config.reasoning.budget_tokens:
            budget = self.config.reasoning.budget_tokens
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        data = self._post_anthropic(body)
        text = "".join(b["text"] for b in data["content"] if b["type"] == "text")
        calls = [
            ToolCall(b["id"], b["name"], b.get("input") or {})
            for b in data["content"]
            if b["type"] == "tool_use"
        ]
        usage = data.get("usage", {})
        return text, calls, usage.get("input_tokens", 0), usage.get("output_tokens", 0)

    def _post_anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self._via[0] if self._via else anthropic_base_url(self.config)}/v1/messages",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "content-type": "application/json",
                "anthropic-version": ANTHROPIC_VERSION,
                "x-api-key": self._key(),
                ROLE_HEADER: self.role,
            },
        )
        for attempt in range(self.config.max_retries + 1):
            try:
                with direct_opener().open(request, timeout=self.config.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                if exc.code not in _RETRY_STATUS or attempt == self.config.max_retries:
                    detail = exc.read().decode(errors="replace")[:500]
                    raise AnthropicAPIError(exc.code, detail) from None
            time.sleep(min(8.0, 0.5 * 2**attempt))
        raise AssertionError("unreachable")


def resolve_key(llm: LLMConfig) -> str:
    """The role's key, read from the environment now. Keys come from the config only, never
    from OPENAI_API_KEY-style fallbacks; a role without one sends a placeholder that a real
    endpoint will answer with a clear 401."""
    if llm.api_key is not None:
        return llm.api_key.resolve()
    return "offline-simulator" if llm.base_url == OFFLINE else "no-api-key-configured"


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": value}
