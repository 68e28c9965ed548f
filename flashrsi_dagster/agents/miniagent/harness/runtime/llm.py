"""The model client: the OpenAI SDK, Chat Completions or Responses, settings passed explicitly.

The loop keeps messages in the Chat Completions shape; the Responses API gets them translated.
SDK retries follow `max_retries`; every call is bounded by `timeout`. Every setting comes from
the config dict the run was given, none from the environment: no base URL given means the
SDK's public endpoint, never `OPENAI_BASE_URL` (nor `OPENAI_API_KEY` for a missing key).

With `debug`, each call's request body and response are kept in `exchanges` (bounded: the
first `MAX_EXCHANGES` calls, each side cut at `MAX_EXCHANGE_CHARS` characters of JSON).

Requests go through the client's `post` with the body as built here: `create()` re-walks every
message through the SDK's typed-dict transform on each call, which costs tens of milliseconds
per turn once a conversation is long, for a body that is already in wire form.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion
from openai.types.responses import Response


@dataclass
class Reply:
    message: dict[str, Any]
    """The assistant message, Chat Completions shape (content, tool_calls)."""
    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """[{"id", "name", "arguments" (dict)}]."""
    input_tokens: int = 0
    output_tokens: int = 0


DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_EXCHANGES = 200
MAX_EXCHANGE_CHARS = 20_000


class LLM:
    def __init__(self, config: dict[str, Any], *, debug: bool = False) -> None:
        self.config = config
        self.exchanges: list[dict[str, str]] | None = [] if debug else None
        self.client = openai.OpenAI(
            base_url=config.get("base_url") or DEFAULT_BASE_URL,
            api_key=config.get("api_key") or "unused",
            timeout=config.get("timeout", 120.0),
            max_retries=config.get("max_retries", 2),
            default_headers=config.get("headers") or None,
        )

    def complete(
        self, messages: list[dict], tools: list[dict], *, tools_off: bool = False
    ) -> Reply:
        """One call; `tools_off`: the tools are described (the history calls them) but the
        model may not call one (`tool_choice: none`)."""
        if self.config.get("api", "chat") == "responses":
            return self._responses(messages, tools, tools_off)
        return self._chat(messages, tools, tools_off)

    def close(self) -> None:
        self.client.close()

    def _params(self) -> dict[str, Any]:
        c = self.config
        params: dict[str, Any] = {"model": c["model"]}
        if c.get("temperature") is not None:
            params["temperature"] = c["temperature"]
        return params

    def _post(self, path: str, body: dict[str, Any], cast_to: type) -> Any:
        body = {**body, **(self.config.get("extra_body") or {})}
        response = self.client.post(path, body=body, cast_to=cast_to)
        if self.exchanges is not None and len(self.exchanges) < MAX_EXCHANGES:
            self.exchanges.append(
                {"request": _cut(json.dumps(body)), "response": _cut(response.model_dump_json())}
            )
        return response

    def _chat(self, messages: list[dict], tools: list[dict], tools_off: bool) -> Reply:
        params = self._params()
        if self.config.get("max_tokens"):
            params["max_tokens"] = self.config["max_tokens"]
        effort = (self.config.get("reasoning") or {}).get("effort")
        if effort:
            params["reasoning_effort"] = effort
        if tools:
            params["tools"] = [{"type": "function", "function": t} for t in tools]
            if tools_off:
                params["tool_choice"] = "none"
        response = self._post("/chat/completions", {"messages": messages, **params}, ChatCompletion)
        message = response.choices[0].message
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": _arguments(c.function.arguments)}
            for c in message.tool_calls or []
        ]
        wire: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ]
        usage = response.usage
        return Reply(
            wire,
            message.content or "",
            calls,
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
        )

    def _responses(self, messages: list[dict], tools: list[dict], tools_off: bool) -> Reply:
        params = self._params()
        if self.config.get("max_tokens"):
            params["max_output_tokens"] = self.config["max_tokens"]
        effort = (self.config.get("reasoning") or {}).get("effort")
        if effort:
            params["reasoning"] = {"effort": effort}
        if tools:
            params["tools"] = [{"type": "function", **t} for t in tools]
            if tools_off:
                params["tool_choice"] = "none"
        instructions, items = _responses_input(messages)
        if instructions:
            params["instructions"] = instructions
        response = self._post("/responses", {"input": items, **params}, Response)
        calls = [
            {"id": i.call_id, "name": i.name, "arguments": _arguments(i.arguments)}
            for i in response.output
            if i.type == "function_call"
        ]
        wire: dict[str, Any] = {"role": "assistant", "content": response.output_text or None}
        if calls:
            wire["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for c in calls
            ]
        usage = response.usage
        return Reply(
            wire,
            response.output_text or "",
            calls,
            usage.input_tokens if usage else 0,
            usage.output_tokens if usage else 0,
        )


def _responses_input(messages: list[dict]) -> tuple[str, list[dict]]:
    instructions, items = [], []
    for m in messages:
        if m["role"] == "system":
            instructions.append(m["content"])
        elif m["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": m["tool_call_id"],
                    "output": m["content"],
                }
            )
        else:
            if m.get("content"):
                items.append({"role": m["role"], "content": m["content"]})
            for c in m.get("tool_calls") or []:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c["id"],
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    }
                )
    return "\n\n".join(instructions), items


def _cut(text: str) -> str:
    if len(text) <= MAX_EXCHANGE_CHARS:
        return text
    return text[:MAX_EXCHANGE_CHARS] + f"...[{len(text) - MAX_EXCHANGE_CHARS} characters cut]"


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_invalid_json": raw}
    return value if isinstance(value, dict) else {"_invalid_json": raw}
