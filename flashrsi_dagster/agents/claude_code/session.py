"""One Claude Code session through `claude_agent_sdk.query`, under the role's timeout."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, SystemMessage, query

from flashrsi_dagster.agents.claude_code.extensions import ExtensionLoadError
from flashrsi_dagster.agents.claude_code.limits import ToolBudget, tool_limit
from flashrsi_dagster.agents.claude_code.options import SessionFiles, agent_options
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
    """What the SDK raised, e.g. `ResultError` after an error result, or the snapshot's
    extension that failed to load."""
    budget: ToolBudget = field(default_factory=lambda: ToolBudget(None))


def run_session(
    config: RoleConfig,
    run: RunDir,
    session: SessionFiles,
    instruction: str,
    confined: AgentRun,
) -> Outcome:
    """Run one session to its end, its failure or its timeout; never raises for the session's
    own failures (a snapshot extension that cannot load is one). When this returns the CLI has
    exited; whatever it left running is stopped when the run folder closes."""
    outcome = Outcome(budget=ToolBudget(tool_limit(config)))
    outcome.transcript.prompt(instruction)
    try:
        options = agent_options(
            config, run, session, outcome.stderr.append, confined, outcome.budget
        )
    except ExtensionLoadError as exc:
        outcome.failure = exc
        return outcome
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
                if outcome.failure is None and (failed := extension_failure(message)):
                    # A broken harness is not worth its model calls: stop the CLI; the SDK
                    # then ends the stream as it does for any CLI that exits.
                    outcome.failure = failed
                    await anyio.to_thread.run_sync(stop_processes, marker)
        except Exception as exc:  # the session's failure is data for its trajectory
            outcome.failure = outcome.failure or exc
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


def extension_failure(message: Any) -> ExtensionLoadError | None:
    """What the session's start reports it could not load: an MCP server that failed to
    start or connect, a plugin with errors."""
    if not isinstance(message, SystemMessage) or message.subtype != "init":
        return None
    failed = [
        f"MCP server {server.get('name')!r}: {server.get('status')}"
        + (f" ({server['error']})" if server.get("error") else "")
        for server in message.data.get("mcp_servers") or []
        if server.get("status") in ("failed", "needs-auth")
    ]
    failed += [
        f"plugin {plugin.get('name')!r}: {plugin.get('errors') or plugin.get('error')}"
        for plugin in message.data.get("plugins") or []
        if plugin.get("errors") or plugin.get("error")
    ]
    return ExtensionLoadError("; ".join(failed)) if failed else None
