"""Hooks from `hooks/hooks.json` in the run's home, run as Codex runs them:

    {"hooks": {"SessionStart": [{"command": ["bash", "-c", "..."], "timeout": 10}],
               "PreToolUse": [...], "PostToolUse": [...]}}

Each hook gets the event as JSON on stdin, runs in the task's cwd with `CODEX_HOME` set, and is
killed at its timeout. SessionStart output is added to the model's context; a PreToolUse hook
that exits with code 2 blocks the call (its output is the reason)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

FILE = Path("hooks") / "hooks.json"
EVENTS = ("SessionStart", "PreToolUse", "PostToolUse", "Stop")
BLOCK = 2
MAX_OUTPUT = 8000


class HookError(ValueError):
    pass


@dataclass(frozen=True)
class HookResult:
    code: int | None
    output: str


class Hooks:
    def __init__(self, home: Path, cwd: Path, env: dict[str, str], enabled: bool) -> None:
        self.cwd, self.env = cwd, env
        self._hooks = _load(home / FILE) if enabled else {}

    def run(self, event: str, payload: dict) -> list[HookResult]:
        data = json.dumps({"hook_event_name": event, **payload})
        return [self._one(hook, data) for hook in self._hooks.get(event, [])]

    def _one(self, hook: dict, data: str) -> HookResult:
        """One hook in a process group of its own, killed whole at its timeout."""
        try:
            process = subprocess.Popen(
                hook["command"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=self.env,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            return HookResult(None, f"hook failed: {exc}")
        try:
            output, _ = process.communicate(data, timeout=float(hook.get("timeout", 10)))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return HookResult(None, "hook timed out")
        return HookResult(process.returncode, output[:MAX_OUTPUT])

    def blocked(self, tool: str, arguments: dict) -> str | None:
        """The reason a PreToolUse hook gives for blocking this call, if one does."""
        for result in self.run("PreToolUse", {"tool_name": tool, "tool_input": arguments}):
            if result.code == BLOCK:
                return result.output.strip() or "blocked by a PreToolUse hook"
        return None


def _load(path: Path) -> dict[str, list[dict]]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise HookError(f"{FILE}: not valid JSON: {exc}") from None
    hooks = data.get("hooks", {}) if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        raise HookError(f'{FILE}: expected {{"hooks": {{<event>: [...]}}}}')
    for event, entries in hooks.items():
        if event not in EVENTS:
            raise HookError(f"{FILE}: hooks.{event}: unknown event; known: {', '.join(EVENTS)}")
        for index, entry in enumerate(entries):
            command = entry.get("command") if isinstance(entry, dict) else None
            if not (
                isinstance(command, list) and command and all(isinstance(a, str) for a in command)
            ):
                raise HookError(f"{FILE}: hooks.{event}[{index}].command: expected an argv list")
    return hooks
