"""MiniAgent's loop: ask the model, run the tools it calls, repeat until it answers.

`run(params, on_step)` takes plain dicts (no framework types) and returns the result dict;
`on_step` receives the result so far after every turn, so a kill loses at most one turn.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from runtime.context import Cancelled
from runtime.llm import LLM
from runtime.workspace import load_workspace

# Failures of the model endpoint, not of the agent: the framework may rerun these.
_INFRA_ERRORS = (
    openai.APIConnectionError,
    openai.APITimeoutError,
    openai.RateLimitError,
    openai.InternalServerError,
)


ENVIRONMENT_NOTE = (
    "\n\nThis task runs in its own environment: every shell command runs there, in the task's "
    "working directory. Read and change files with shell commands (the editor is not available)."
)


class TurnLimit(Exception):
    pass


def run(params: dict[str, Any], on_step: Callable[[dict], None] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "status": "running",
        "answer": None,
        "error": None,
        "error_kind": None,
        "messages": [{"role": "user", "content": params["instruction"]}],
        "usage": {"input_tokens": 0, "output_tokens": 0, "turns": 0, "tool_calls": 0},
    }
    llm = None
    try:
        files_dir, working_dir = Path(params["files_dir"]), Path(params["working_dir"])
        ctx, system, tools = load_workspace(files_dir, working_dir, **params.get("limits", {}))
        if params.get("cancel") is not None:
            ctx.cancel = params["cancel"]
        if params.get("shell_prefix"):
            # The task's files live in its environment, reachable only through the shell.
            ctx.shell_prefix = list(params["shell_prefix"])
            tools.pop("editor", None)
            system += ENVIRONMENT_NOTE
        result["messages"].insert(0, {"role": "system", "content": system})
        llm = LLM(params["llm"])
        schemas = [tool.schema for tool in tools.values()]
        for _ in range(params.get("max_turns", 50)):
            if _turn(llm, schemas, tools, ctx, result):
                result["status"] = "completed"
                return result
            if on_step:
                on_step(result)
        raise TurnLimit(f"no final answer within max_turns={params.get('max_turns', 50)}")
    except (Cancelled, KeyboardInterrupt):
        _fail(result, "cancelled", "agent", Cancelled("the run was cancelled"))
    except _INFRA_ERRORS as exc:
        _fail(result, "error", "infra", exc)
    except Exception as exc:  # the agent's own failure (a broken harness included): recorded
        _fail(result, "error", "agent", exc)
    finally:
        if llm is not None:
            llm.close()
    return result


def _turn(llm: LLM, schemas: list[dict], tools: dict, ctx, result: dict) -> bool:
    """One model call and its tool calls; True when the model gave its final answer."""
    reply = llm.complete(result["messages"], schemas)
    usage = result["usage"]
    usage["turns"] += 1
    usage["input_tokens"] += reply.input_tokens
    usage["output_tokens"] += reply.output_tokens
    result["messages"].append(reply.message)
    if not reply.tool_calls:
        result["answer"] = reply.text
        return True
    for call in reply.tool_calls:
        usage["tool_calls"] += 1
        tool = tools.get(call["name"])
        if tool is None:
            output = f"Error: unknown tool {call['name']!r}; available: {', '.join(tools)}"
        elif "_invalid_json" in call["arguments"]:
            output = f"Error: arguments are not a JSON object: {call['arguments']['_invalid_json']}"
        else:
            output = tool.run(call["arguments"], ctx)
        result["messages"].append({"role": "tool", "tool_call_id": call["id"], "content": output})
    return False


def _fail(result: dict, status: str, kind: str, exc: BaseException) -> None:
    result["status"] = status
    result["error_kind"] = kind
    result["error"] = {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }
