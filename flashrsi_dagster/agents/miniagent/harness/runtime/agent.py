"""MiniAgent's runtime: ask the model, run the tools it calls, repeat until it answers.

`run(params, on_step)` takes plain dicts (no framework types) and returns the result dict;
`on_step` receives the result so far after every turn, so a kill loses at most one turn.
The result's `beacons` are the activation beacons fired so far (`runtime/beacon.py`), its
`budget` the run's count budgets and why they ended the turns (`runtime/budget.py`), and with
`debug_llm_io` its `llm_io` the model requests and responses (`runtime/llm.py`).

The five mechanisms an evolution may target each have a place of their own, a function whose
docstring opens with the mechanism's name: the agent loop (`run`, `_turn`), context management
(`build_context`), tool use (`use_tool`, and each tool's `_run` under `tools/`), observation
management (`runtime/tool_result.py`) and task completion detection (`final_answer`). This file
holds four of them, so it is shared between modules. `forced_answer` is the budgets' end of a
run (`runtime/budget.py`), not an evolvable place.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from runtime.beacon import fired
from runtime.budget import Budget
from runtime.context import Cancelled, Context
from runtime.llm import LLM, Reply
from runtime.permissions import permitted_tools
from runtime.tool_result import error_text, observation
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


def run(params: dict[str, Any], on_step: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Agent loop: load the harness, then one turn after another (a model call and the tools
    it calls) until the model answers, a budget ends the turns (then the forced final
    answer) or the run is cancelled; every failure is recorded in the result, none raised."""
    result: dict[str, Any] = {
        "status": "running",
        "answer": None,
        "error": None,
        "error_kind": None,
        "messages": [{"role": "user", "content": params["instruction"]}],
        "usage": {"input_tokens": 0, "output_tokens": 0, "turns": 0, "tool_calls": 0},
        "beacons": {},
    }
    llm = None
    # Absent: the default of 50; present as null: no count limit (never read as 0).
    budget = Budget(params.get("max_turns", 50), params.get("max_tool_calls"))
    try:
        ctx, system, tools = _load(params)
        result["messages"] = build_context(system, params["instruction"], ctx)
        llm = LLM(params["llm"], debug=bool(params.get("debug_llm_io")))
        schemas = [tool.schema for tool in tools.values()]
        while budget.next_turn():
            if _turn(llm, schemas, tools, ctx, result, budget):
                result["status"] = "completed"
                return result
            if on_step:
                _progress(result, budget, llm)
                on_step(result)
        forced_answer(llm, schemas, result, budget)
        result["status"] = "completed"
    except (Cancelled, KeyboardInterrupt):
        _fail(result, "cancelled", "agent", Cancelled("the run was cancelled"))
    except _INFRA_ERRORS as exc:
        _fail(result, "error", "infra", exc)
    except Exception as exc:  # the agent's own failure (a broken harness included): recorded
        _fail(result, "error", "agent", exc)
    finally:
        _progress(result, budget, llm)
        if llm is not None:
            llm.close()
    return result


def _load(params: dict[str, Any]) -> tuple[Context, str, dict]:
    """The run's context, system prompt and tools: the harness's, less what the run's
    permissions withhold, plus the web tool when the run has the web."""
    files_dir, working_dir = Path(params["files_dir"]), Path(params["working_dir"])
    ctx, system, tools = load_workspace(files_dir, working_dir, **params.get("limits", {}))
    if params.get("cancel") is not None:
        ctx.cancel = params["cancel"]
    if params.get("shell_prefix"):
        # The task's files live in its environment, reachable only through the shell.
        ctx.shell_prefix = list(params["shell_prefix"])
        tools.pop("editor", None)
    web = params.get("web") or {}
    if web.get("enabled"):
        ctx.web = {"base_url": params["llm"].get("base_url"), "token": params["llm"]["api_key"]}
    return ctx, system, permitted_tools(tools, ctx, params.get("permissions") or {}, web)


def _progress(result: dict, budget: Budget, llm: LLM | None) -> None:
    result["beacons"] = fired()
    result["budget"] = budget.record()
    if llm is not None and llm.exchanges is not None:
        result["llm_io"] = llm.exchanges


def _turn(
    llm: LLM, schemas: list[dict], tools: dict, ctx: Context, result: dict, budget: Budget
) -> bool:
    """Agent loop: one model call and its tool calls; True when the model gave its final
    answer. A call past the tool-call budget is not run: the model reads why."""
    reply = _ask(llm, result, schemas)
    answer = final_answer(reply)
    if answer is not None:
        result["answer"] = answer
        return True
    for call in reply.tool_calls:
        if budget.take_tool_call():
            result["usage"]["tool_calls"] += 1
            output = use_tool(call, tools, ctx)
        else:
            output = budget.refusal()
        result["messages"].append(observation(call, output))
    return False


def _ask(llm: LLM, result: dict, schemas: list[dict], *, tools_off: bool = False) -> Reply:
    """One model call on the history so far, counted in usage and appended to it."""
    reply = llm.complete(result["messages"], schemas, tools_off=tools_off)
    usage = result["usage"]
    usage["turns"] += 1
    usage["input_tokens"] += reply.input_tokens
    usage["output_tokens"] += reply.output_tokens
    result["messages"].append(reply.message)
    return reply


def forced_answer(llm: LLM, schemas: list[dict], result: dict, budget: Budget) -> None:
    """The forced final answer, once a budget ended the turns: one last model call with
    tools off (`tool_choice: none`); its text is the answer, and a tool call it makes anyway
    is not run."""
    result["messages"].append({"role": "user", "content": budget.forced_answer_prompt()})
    result["answer"] = _ask(llm, result, schemas, tools_off=True).text


def build_context(system: str, instruction: str, ctx: Context) -> list[dict[str, Any]]:
    """Context management: what the model is given to start from, the system prompt (with a
    note when the task has its own environment) and the task; each turn then sends this
    history, grown by the turns before it, whole."""
    if ctx.shell_prefix:
        system += ENVIRONMENT_NOTE
    return [{"role": "system", "content": system}, {"role": "user", "content": instruction}]


def use_tool(call: dict[str, Any], tools: dict, ctx: Context) -> str:
    """Tool use: run one call the model made with the tool it names; an unknown tool or
    arguments that are not a JSON object are the model's mistake, reported to it."""
    tool = tools.get(call["name"])
    if tool is None:
        output = error_text(f"unknown tool {call['name']!r}; available: {', '.join(tools)}")
    elif "_invalid_json" in call["arguments"]:
        raw = call["arguments"]["_invalid_json"]
        output = error_text(f"arguments are not a JSON object: {raw}")
    else:
        output = tool.run(call["arguments"], ctx)
    return output


def final_answer(reply: Reply) -> str | None:
    """Task completion detection: the task is done when the model replies without a tool
    call, and that reply's text is the answer; None while it still calls tools."""
    if reply.tool_calls:
        return None
    return reply.text


def _fail(result: dict, status: str, kind: str, exc: BaseException) -> None:
    result["status"] = status
    result["error_kind"] = kind
    result["error"] = {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }
