"""One Claude Code session through `claude_agent_sdk.query`, under the role's timeout."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, query

from flashrsi_dagster.agents.claude_code.options import agent_options
from flashrsi_dagster.agents.claude_code.processes import stop_processes
from flashrsi_dagster.agents.claude_code.run_dir import RunDir
from flashrsi_dagster.agents.claude_code.transcript import Transcript
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import AgentRun

STDERR_LINES = 200


@dataclass
class Outcome:
    transcript: Transcript = field(default_factory=Transcript)
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_LINES))
    timed_out: bool = False
    failure: Exception | None = None
    """What the SDK raised, e.g. `ResultError` after an error result."""


def run_session(
    config: RoleConfig,
    run: RunDir,
    working_dir: Path,
    instruction: str,
    role: str,
    append: str | None,
    confined: AgentRun,
) -> Outcome:
    """Run one session to its end, its failure or its timeout; never raises for the session's
    own failures. When this returns the CLI has exited; whatever it left running is stopped
    when the run folder closes."""
    outcome = Outcome()
    outcome.transcript.prompt(instruction)
    options = agent_options(config, run, working_dir, role, append, outcome.stderr.append, confined)
    _run_sync(_drive(options, instruction, config.timeout, run.marker, outcome))
    return outcome


def _run_sync(coroutine: Coroutine[Any, Any, None]) -> None:
    """A fresh event loop, so callers may be worker threads; a caller already inside an event
    loop (a notebook, an async op) gets one on a helper thread instead of a RuntimeError."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="claude-code") as pool:
        pool.submit(asyncio.run, coroutine).result()


async def _drive(
    options: ClaudeAgentOptions, instruction: str, timeout: float, marker: bytes, outcome: Outcome
) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(_watchdog, timeout, marker, outcome, group.cancel_scope)
        try:
            async for message in query(prompt=instruction, options=options):
                outcome.transcript.add(message)
        except Exception as exc:  # the session's failure is data for its trajectory
            outcome.failure = exc
        group.cancel_scope.cancel()


async def _watchdog(
    timeout: float, marker: bytes, outcome: Outcome, scope: anyio.CancelScope
) -> None:
    """At the deadline, stop the CLI before cancelling: the SDK's own shutdown would give it
    5 s after closing its input and 5 s more after SIGTERM."""
    await anyio.sleep(timeout)
    outcome.timed_out = True
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(stop_processes, marker)
    scope.cancel()
