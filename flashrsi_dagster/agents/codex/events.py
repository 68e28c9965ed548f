"""The core's JSONL events (the `codex exec --json` shapes) as a `Trajectory`.

The stream is data from a jailed, evolvable process: lines that are not JSON objects are
skipped and counted, and nothing in it is trusted beyond its shape (the gateway's count
replaces the token usage it reports)."""

from __future__ import annotations

import json
from typing import Any

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.llm.usage import cost_of
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage

TERMINAL = ("turn.completed", "turn.failed")


def parse_events(data: bytes | None) -> tuple[list[dict[str, Any]], int]:
    """The events in order, and how many lines were not events."""
    events, bad = [], 0
    for line in (data or b"").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            events.append(event)
        else:
            bad += 1
    return events, bad


def trajectory_of(
    data: bytes | None,
    instruction: str,
    *,
    timed_out: bool,
    timeout: float,
    exit_code: int | None,
    stderr_tail: str,
    price: PriceConfig | None,
    duration: float,
) -> Trajectory:
    events, bad = parse_events(data)
    end = next((e for e in reversed(events) if e["type"] in TERMINAL), None)
    messages = [{"role": "user", "content": instruction}, *_messages(events)]
    last = messages[-1]
    final = last["content"] if last["role"] == "assistant" and "tool_calls" not in last else ""
    usage = _usage(end, price)
    status, error = _outcome(end, events, timed_out, timeout, exit_code)
    thread = next((e.get("thread_id") for e in events if e["type"] == "thread.started"), None)
    return Trajectory(
        task_id="",
        snapshot_id="",
        status=status,
        answer=final if status == Status.SUCCESS else None,
        messages=messages,
        usage=usage,
        duration=duration,
        error=error,
        metadata={
            "thread_id": thread if isinstance(thread, str) else None,
            "exit_code": exit_code,
            "stderr_tail": stderr_tail,
            "malformed_event_lines": bad,
        },
    )


def _messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session in Chat Completions shape, as MiniAgent records it (so the views read every
    adapter alike): per model call (`turn`), one assistant message with its text and tool
    calls, then one `tool` message per call with what the tool returned."""
    out: list[dict[str, Any]] = []
    assistant: dict[str, Any] | None = None
    turn: Any = None
    for event in events:
        item = event.get("item")
        if event["type"] != "item.completed" or not isinstance(item, dict):
            continue
        if assistant is None or item.get("turn") != turn or _answered(out, assistant):
            assistant, turn = {"role": "assistant", "content": ""}, item.get("turn")
            out.append(assistant)
        if item.get("type") == "agent_message":
            text = str(item.get("text", ""))
            assistant["content"] = "\n".join(t for t in (assistant["content"], text) if t)
        elif isinstance(item.get("tool"), str):
            call_id = str(item.get("call_id", ""))
            call = {"name": item["tool"], "arguments": str(item.get("arguments", ""))}
            assistant.setdefault("tool_calls", []).append(
                {"id": call_id, "type": "function", "function": call}
            )
            out.append(_tool_message(item, call_id))
    return [m for m in out if m["role"] != "assistant" or m["content"] or m.get("tool_calls")]


def _answered(out: list[dict[str, Any]], assistant: dict[str, Any]) -> bool:
    """A text that follows tool results within one turn cannot join the earlier message."""
    return out[-1] is not assistant and not assistant.get("tool_calls")


def _tool_message(item: dict[str, Any], call_id: str) -> dict[str, Any]:
    kind = item.get("type")
    if kind == "command_execution":
        content = str(item.get("aggregated_output", ""))
    elif kind == "file_change":
        content = str(item.get("result", ""))
    elif kind == "todo_list":
        content = "Plan updated"
    else:
        content = f"Error: {item.get('message', '')}"
    extra = {k: item[k] for k in ("type", "command", "exit_code", "status", "changes") if k in item}
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "name": item["tool"],
        "content": content,
        **extra,
    }


def _usage(end: dict[str, Any] | None, price: PriceConfig | None) -> Usage:
    usage = end.get("usage") if end else None
    stats = end.get("stats") if end else None
    usage = usage if isinstance(usage, dict) else {}
    stats = stats if isinstance(stats, dict) else {}
    tokens_in, tokens_out = _count(usage, "input_tokens"), _count(usage, "output_tokens")
    return Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost=cost_of(price, tokens_in, tokens_out),
        turns=_count(stats, "model_calls"),
        tool_calls=_count(stats, "tool_calls"),
    )


def _count(table: dict[str, Any], key: str) -> int:
    value = table.get(key)
    return value if type(value) is int and value >= 0 else 0


def _outcome(end, events, timed_out, timeout, exit_code) -> tuple[Status, ErrorInfo | None]:
    if timed_out:
        return Status.TIMEOUT, ErrorInfo(
            type="TimeoutError", message=f"the run exceeded its timeout of {timeout:g} s"
        )
    if end is not None and end["type"] == "turn.completed":
        return Status.SUCCESS, None
    if end is not None:
        error = end.get("error") if isinstance(end.get("error"), dict) else {}
        kind = error.get("kind")
        status = Status.INFRA_ERROR if kind == "infra" else Status.ERROR
        name = {"config": "CodexConfigError", "cancelled": "Cancelled"}.get(kind, "CodexError")
        return status, ErrorInfo(type=name, message=str(error.get("message") or "turn failed"))
    started = any(e["type"] == "thread.started" for e in events)
    return Status.ERROR, ErrorInfo(
        type="ProcessError",
        message=f"the Codex core exited with code {exit_code} "
        f"{'before finishing its turn' if started else 'without starting a session'}",
    )
