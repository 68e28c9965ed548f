"""Codex's tools as Responses function tools, and running one call: `shell`, `apply_patch`,
`update_plan`. Each call becomes one event item and one output for the model."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_core import apply_patch
from codex_core.events import Events
from codex_core.shell import Shell

NAMES = ("shell", "apply_patch", "update_plan")
PLAN_STATUSES = ("pending", "in_progress", "completed")

SPECS: dict[str, dict[str, Any]] = {
    "shell": {
        "description": "Runs a command (an argv list) in the working folder and returns its "
        'exit code and output. Use ["bash", "-lc", "<script>"] for shell syntax.',
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "array", "items": {"type": "string"}},
                "workdir": {"type": "string", "description": "Folder to run in, relative."},
                "timeout_ms": {"type": "number", "description": "Timeout in milliseconds."},
            },
            "required": ["command"],
        },
    },
    "apply_patch": {
        "description": "Edits files with a patch: `*** Begin Patch`, then `*** Add File: <path>` "
        "(lines with +), `*** Delete File: <path>` or `*** Update File: <path>` (optional "
        "`*** Move to: <path>`, hunks after `@@` with ' ', '-', '+' lines), then `*** End Patch`. "
        "Paths are relative to the working folder.",
        "parameters": {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The whole patch."}},
            "required": ["input"],
        },
    },
    "update_plan": {
        "description": "Records your plan: steps with a status (pending, in_progress, completed).",
        "parameters": {
            "type": "object",
            "properties": {
                "explanation": {"type": "string"},
                "plan": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {"type": "string", "enum": list(PLAN_STATUSES)},
                        },
                        "required": ["step", "status"],
                    },
                },
            },
            "required": ["plan"],
        },
    },
}


def specs(names: list[str]) -> list[dict[str, Any]]:
    return [{"type": "function", "name": name, **SPECS[name]} for name in names]


@dataclass
class Toolbox:
    names: list[str]
    cwd: Path
    shell: Shell
    events: Events

    def call(self, name: str, raw_arguments: str, call_id: str) -> str:
        """The output the model sees; every outcome is also an event item."""
        if name not in self.names:
            return self._error(name, call_id, f"unknown tool {name!r}; available: {self.names}")
        try:
            arguments = json.loads(raw_arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            return self._error(name, call_id, f"arguments are not valid JSON: {exc}")
        handler: Callable[[dict, str], str] = getattr(self, f"_{name}")
        try:
            return handler(arguments, call_id)
        except (ValueError, TypeError, OSError) as exc:
            return self._error(name, call_id, str(exc))

    def _shell(self, arguments: dict, call_id: str) -> str:
        argv = arguments.get("command")
        if isinstance(argv, str):  # a script given as text, as chat-style models send it
            argv = ["bash", "-lc", argv]
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise ValueError("`command` must be a non-empty list of strings")
        if argv[0] == "apply_patch" and len(argv) == 2 and "apply_patch" in self.names:
            return self._apply_patch({"input": argv[1]}, call_id)  # as Codex intercepts it
        timeout = arguments.get("timeout_ms")
        seconds = (
            float(timeout) / 1000 if isinstance(timeout, int | float) and timeout > 0 else None
        )
        result = self.shell.run(argv, arguments.get("workdir"), seconds)
        self.events.item(
            "command_execution",
            call_id=call_id,
            command=shlex.join(argv),
            aggregated_output=result.output,
            exit_code=result.exit_code,
            status="completed" if result.exit_code == 0 else "failed",
        )
        return result.for_model()

    def _apply_patch(self, arguments: dict, call_id: str) -> str:
        patch = arguments.get("input")
        if not isinstance(patch, str):
            raise ValueError("`input` must be the patch text")
        try:
            ops = apply_patch.parse(patch)
            summary = apply_patch.apply(patch, self.cwd)
        except apply_patch.PatchError as exc:
            result = f"Error: apply_patch failed: {exc}"
            self.events.item(
                "file_change", call_id=call_id, changes=[], status="failed", result=result
            )
            return result
        changes = [{"path": op.move_to or op.path, "kind": op.kind} for op in ops]
        self.events.item(
            "file_change", call_id=call_id, changes=changes, status="completed", result=summary
        )
        return summary

    def _update_plan(self, arguments: dict, call_id: str) -> str:
        plan = arguments.get("plan")
        if not isinstance(plan, list):
            raise ValueError("`plan` must be a list of {step, status}")
        items = []
        for entry in plan:
            if not isinstance(entry, dict) or entry.get("status") not in PLAN_STATUSES:
                raise ValueError(f"each step needs `step` and a status in {PLAN_STATUSES}")
            items.append(
                {"text": str(entry.get("step", "")), "completed": entry["status"] == "completed"}
            )
        self.events.item("todo_list", call_id=call_id, items=items)
        return "Plan updated"

    def _error(self, name: str, call_id: str, message: str) -> str:
        self.events.item("error", call_id=call_id, tool=name, message=message)
        return f"Error: {message}"
