"""One Codex session: build the context, loop model call -> tool calls under the role's
budgets, force a final answer with tools off when a budget is spent, clean up on exit.

Budgets (from the role config, in the payload): `max_turns` counts model calls that may run
tools, `max_tool_calls` counts tool calls; None is no count limit, 0 is none at all, n is a hard
stop after n. Past a budget the model is asked once more, without tools, for its answer."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from codex_core import context, hooks, settings, shell_snapshot
from codex_core.events import Events
from codex_core.shell import Shell
from codex_core.tools import NAMES, Toolbox, specs

FORCE_FINAL = (
    "Your budget for tool use in this task is spent: no tool will run any more. Reply now "
    "with your final answer as plain text."
)
ENVIRONMENT_NOTE = (
    "This task has its own environment: your shell commands run there, and its files are "
    "reachable only through the shell (edit them with shell commands)."
)
INFRA_HTTP = {408, 409, 429}
REPLAYED = ("message", "function_call")
MAX_RECORDED_ARGUMENTS = 20_000
"""Characters of a call's arguments kept in its event item (a patch can be long)."""
"""Output items replayed as input (reasoning items are not: nothing here keeps them)."""


class Failure(Exception):
    def __init__(self, message: str, kind: str = "agent") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Counters:
    model_calls: int = 0
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    answer: str = ""
    inputs: list[Any] = field(default_factory=list)


def run(payload: dict, events: Events) -> bool:
    """True when the session ended with a final answer."""
    home, cwd = Path(payload["codex_home"]), Path(payload["working_dir"])
    thread_id = str(uuid.uuid4())
    events.emit("thread.started", thread_id=thread_id)
    env = {**os.environ, "CODEX_HOME": str(home)}
    counters, snapshot, shell = Counters(), None, None
    try:
        config = settings.load(home)
        names = offered_tools(payload, config)
        prefix = payload.get("shell_prefix")
        if config.features["shell_snapshot"] and "shell" in names and not prefix:
            snapshot = shell_snapshot.create(home, thread_id, cwd, env)
        shell = Shell(cwd, env, snapshot, config.shell_timeout, config.output_limit, prefix)
        hook_runner = hooks.Hooks(home, cwd, env, config.features["hooks"])
        events.emit("turn.started")
        toolbox = Toolbox(names, cwd, shell, events)
        _loop(payload, config, toolbox, hook_runner, home, cwd, thread_id, counters)
        events.emit("turn.completed", usage=_usage(counters), stats=_stats(counters))
        return True
    except (Failure, settings.SettingsError, hooks.HookError) as exc:
        kind = getattr(exc, "kind", "config")
        events.emit("error", message=str(exc), kind=kind)
        events.emit(
            "turn.failed",
            error={"message": str(exc), "kind": kind},
            usage=_usage(counters),
            stats=_stats(counters),
        )
        return False
    except KeyboardInterrupt:
        events.emit(
            "turn.failed",
            error={"message": "cancelled", "kind": "cancelled"},
            usage=_usage(counters),
            stats=_stats(counters),
        )
        return False
    finally:
        if shell is not None:
            shell.close()
        shell_snapshot.remove(snapshot)
        shutil.rmtree(home / "plugins" / "data", ignore_errors=True)  # run state, never kept


def offered_tools(payload: dict, config: settings.Settings) -> list[str]:
    permissions = payload.get("permissions") or {}
    denied = set(permissions.get("deny_tools") or [])
    names = [n for n in NAMES if n not in denied and config.features.get(n, True)]
    if permissions.get("shell") is False:
        names = [n for n in names if n != "shell"]
    if permissions.get("edit") is False or payload.get("shell_prefix"):
        # A task with its own environment keeps its files there: only the shell reaches them.
        names = [n for n in names if n != "apply_patch"]
    return names


def _loop(payload, config, toolbox, hook_runner, home, cwd, thread_id, counters) -> None:
    """The agent loop: one model call, then its tool calls, until a reply without any."""
    llm = payload["llm"]
    client = openai.OpenAI(
        api_key=llm["api_key"],
        base_url=llm["base_url"],
        timeout=llm.get("timeout", 120),
        max_retries=llm.get("max_retries", 2),
        default_headers=llm.get("headers") or {},
    )
    instructions = _instructions(payload, config, home, cwd)
    inputs: list[Any] = counters.inputs
    inputs += _opening(payload, config, cwd, hook_runner, thread_id)
    max_turns, max_calls = payload.get("max_turns"), payload.get("max_tool_calls")
    while True:
        tools_on = (
            bool(toolbox.names)
            and _left(max_turns, counters.turns)
            and _left(max_calls, counters.tool_calls)
        )
        if not tools_on and toolbox.names:
            inputs.append(_developer(FORCE_FINAL))
        response = _create(
            client, llm, instructions, inputs, toolbox.names if tools_on else [], config
        )
        counters.model_calls += 1
        counters.turns += tools_on
        _count(response, counters)
        toolbox.events.tags = {"turn": counters.model_calls}
        text, calls = _read(response, toolbox.events)
        inputs.extend(_replayed(item) for item in response.output if item.type in REPLAYED)
        if not calls or not tools_on:
            if not text and calls:
                raise Failure("the model asked for tools after its tool budget was spent")
            counters.answer = text
            hook_runner.run("Stop", {"session_id": thread_id})
            return
        for call in calls:
            output = _one_call(call, toolbox, hook_runner, max_calls, counters)
            inputs.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": output}
            )


def _instructions(payload: dict, config: settings.Settings, home: Path, cwd: Path) -> str:
    found = context.skills(home, config.plugins, cwd)
    instructions = context.instructions(home, found)
    if payload.get("shell_prefix"):
        instructions += "\n\n" + ENVIRONMENT_NOTE
    return instructions


def _opening(payload, config, cwd: Path, hook_runner, thread_id: str) -> list[dict]:
    """The input before the first model call: the project's AGENTS.md, what SessionStart
    hooks said, then the task."""
    opening = []
    doc = context.project_doc(cwd, config.project_doc_max_bytes)
    if doc:
        opening.append(_developer(doc))
    start = {"session_id": thread_id, "cwd": str(cwd)}
    for result in hook_runner.run("SessionStart", start):
        if result.output.strip():
            opening.append(_developer(f"SessionStart hook:\n{result.output.strip()}"))
    opening.append({"role": "user", "content": payload["instruction"]})
    return opening


def _one_call(call, toolbox, hook_runner, max_calls, counters) -> str:
    arguments = call.arguments[:MAX_RECORDED_ARGUMENTS]
    toolbox.events.tags = {"turn": counters.model_calls, "tool": call.name, "arguments": arguments}
    if not _left(max_calls, counters.tool_calls):
        return _refused(toolbox, call, f"the tool-call budget ({max_calls}) is spent")
    counters.tool_calls += 1
    blocked = hook_runner.blocked(call.name, _arguments(call.arguments))
    if blocked:
        return _refused(toolbox, call, f"blocked by a hook: {blocked}")
    output = toolbox.call(call.name, call.arguments, call.call_id)
    hook_runner.run("PostToolUse", {"tool_name": call.name, "tool_response": output[:2000]})
    return output


def _refused(toolbox, call, why: str) -> str:
    """A call that does not run is still an item of the session, and the model is told."""
    toolbox.events.item("error", call_id=call.call_id, tool=call.name, message=why)
    return f"Error: {why}; this call did not run."


def _create(client, llm, instructions, inputs, names, config):
    # The input goes in as plain JSON (`extra_body`): the SDK would otherwise walk every item
    # against its type unions on every call, ~1 ms per item, quadratic over a long run.
    body: dict[str, Any] = {"input": inputs, **(llm.get("extra_body") or {})}
    request: dict[str, Any] = {"model": llm["model"], "instructions": instructions}
    if names:
        request["tools"] = specs(names)
        request["parallel_tool_calls"] = config.parallel_tool_calls
    if llm.get("temperature") is not None:
        request["temperature"] = llm["temperature"]
    if llm.get("max_tokens"):
        request["max_output_tokens"] = llm["max_tokens"]
    if (llm.get("reasoning") or {}).get("effort"):
        request["reasoning"] = {"effort": llm["reasoning"]["effort"]}
    try:
        return client.responses.create(**request, extra_body=body)
    except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError) as exc:
        raise Failure(f"model call failed: {exc}", "infra") from None
    except openai.APIStatusError as exc:
        kind = "infra" if exc.status_code in INFRA_HTTP or exc.status_code >= 500 else "agent"
        raise Failure(f"model call failed: HTTP {exc.status_code}: {exc.message}", kind) from None


def _read(response, events: Events) -> tuple[str, list]:
    texts, calls = [], []
    for item in response.output:
        if item.type == "message":
            text = "".join(getattr(part, "text", "") or "" for part in item.content)
            if text:
                texts.append(text)
                events.item("agent_message", text=text)
        elif item.type == "function_call":
            calls.append(item)
    return "\n".join(texts), calls


def _replayed(item) -> dict:
    """An output item as the next request's input, with only the fields the API needs: the
    SDK walks every key of the input on every call, so lean items keep long runs cheap."""
    if item.type == "function_call":
        return {
            "type": "function_call",
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
        }
    text = "".join(getattr(part, "text", "") or "" for part in item.content)
    return {"role": "assistant", "content": text}


def _count(response, counters: Counters) -> None:
    usage = response.usage
    if usage is None:
        return
    counters.input_tokens += usage.input_tokens or 0
    counters.output_tokens += usage.output_tokens or 0
    details = getattr(usage, "input_tokens_details", None)
    counters.cached_input_tokens += getattr(details, "cached_tokens", 0) or 0


def _left(budget: int | None, used: int) -> bool:
    return budget is None or used < budget


def _arguments(raw: str) -> dict:
    import json

    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _developer(text: str) -> dict:
    return {"role": "developer", "content": text}


def _usage(c: Counters) -> dict:
    return {
        "input_tokens": c.input_tokens,
        "cached_input_tokens": c.cached_input_tokens,
        "output_tokens": c.output_tokens,
    }


def _stats(c: Counters) -> dict:
    return {
        "model_calls": c.model_calls,
        "turns": c.turns,
        "tool_calls": c.tool_calls,
        "answer": c.answer,
    }
