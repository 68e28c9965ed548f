"""The Codex CLI adapter: one `codex exec --json` per run, in the jail, behind the gateway.

The run's `CODEX_HOME` (`home.py`) holds copies of the snapshot's `AGENTS.md`, `skills/`,
`hooks/` and `config.toml`, the latter with the framework's keys over the snapshot's: the
model gateway as the only provider (a custom provider speaking the Responses API, keyed by the
run's gateway token), the role's model, no approvals, no hosted web search.
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.agents.budgets import Budget, budget_verdict
from flashrsi_dagster.agents.codex_cli import settings
from flashrsi_dagster.agents.codex_cli.catalog import catalog_for
from flashrsi_dagster.agents.codex_cli.events import Transcript, read_events
from flashrsi_dagster.agents.codex_cli.home import (
    FRAMEWORK_KEYS,
    PROVIDER,
    TOKEN_ENV,
    RunHome,
    run_home,
    snapshot_config,
    write_config,
)
from flashrsi_dagster.agents.codex_cli.install import CodexInstall, find_install
from flashrsi_dagster.agents.codex_cli.process import CodexProcess, start
from flashrsi_dagster.agents.output import file_tail
from flashrsi_dagster.agents.permissions import permission_verdict
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import AgentRun, gateway_verdict
from flashrsi_dagster.environments.jail import Mount, read_from_jail
from flashrsi_dagster.gateway import RunUsage
from flashrsi_dagster.llm.usage import cost_of
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage

HARNESS = Path(__file__).with_name("harness")
STDERR_TAIL = 4000
MAX_EVENTS_BYTES = 64 << 20
"""A run's event stream is read up to this size; a larger one is no result."""
SANDBOX = "danger-full-access"
"""The CLI's own sandbox is off, whatever `permissions.edit` says: its `read-only` and
`workspace-write` modes run every command through a bubblewrap helper of its own
(`codex-linux-sandbox`, a PATH alias it refuses to create under a temp folder), which fails
inside the jail, so not one command would run (tried with 0.169.0: "bwrap: execvp
codex-linux-sandbox: No such file or directory"). The jail is the confinement: the run sees
only its folders, no network but the gateway, no other process; with `edit: false` the
working folder is mounted read-only, which the kernel enforces whatever the CLI does."""


class CodexCLI(Agent):
    name = "codex-cli"
    description = (
        "The real Codex CLI (npm @openai/codex): `codex exec` with the snapshot's AGENTS.md, "
        "skills, hooks and config.toml, the model gateway as its only provider."
    )
    has_file_tools = True
    supported_apis = ("responses",)
    shell_tools = settings.SHELL_TOOLS
    api_hint = " (the Codex CLI speaks only the Responses API to a custom provider)"
    protected = tuple(f"config.toml#{key}" for key in FRAMEWORK_KEYS)
    """The `config.toml` keys that choose the provider and model, grant permissions or open
    the network (`home.FRAMEWORK_KEYS`): the framework overwrites them at run time, and no
    candidate may change them. The rest of `config.toml` (features, tool settings, prompts),
    `AGENTS.md`, skills and hooks stay evolvable."""

    @classmethod
    def config_problems(cls, config: RoleConfig, where: str) -> list[str]:
        return super().config_problems(config, where) + settings.problems(config, where)

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def _setup(self) -> None:
        self._processes: set[CodexProcess] = set()

    def close(self) -> None:
        """Stop this agent's runs still in flight (each ends as cancelled)."""
        for process in list(self._processes):
            process.cancelled = True
            process.stop()

    def _run(
        self, working_dir: Path, instruction: str, mounts: tuple[Mount, ...] = ()
    ) -> Trajectory:
        config = self.run_config
        install = find_install()
        snapshot = snapshot_config(self.files_dir)
        working = Path(working_dir).resolve()
        clock = time.monotonic()
        with run_home(self.files_dir) as run:
            with self._confine(run, install, working, mounts) as confined:
                self._prepare(run, install, snapshot, confined, instruction)
                process = start(
                    _argv(install, config, working, run.has_hooks),
                    _env(install, run, confined),
                    working,
                    run,
                    confined,
                )
                self._processes.add(process)
                try:
                    code = process.wait(config.timeout)
                finally:
                    self._processes.discard(process)
            # The run's files are read once its jail is gone, as data (never through a link).
            transcript = read_events(read_from_jail(run.events, MAX_EVENTS_BYTES) or b"")
            tail = file_tail(run.stderr, STDERR_TAIL)
        trajectory = self._trajectory(transcript, process, code, tail, instruction, confined.usage)
        trajectory = trajectory.model_copy(update={"duration": time.monotonic() - clock})
        return self._verdicts(trajectory, confined.usage, process.timed_out)

    def _confine(
        self, run: RunHome, install: CodexInstall, working: Path, mounts: tuple[Mount, ...]
    ) -> AbstractContextManager[AgentRun]:
        """The run's jail: its home and (unless `edit: false`) the working folder writable,
        the CLI's install read-only; the gateway holding it to its turns and permissions."""
        config = self.run_config
        edit = config.permissions.edit
        return self.confinement.run(
            self.role,
            config.llm,
            writable=(run.home, working) if edit else (run.home,),
            read_only=(Mount(install.prefix), *(() if edit else (Mount(working),)), *mounts),
            max_model_calls=Budget.of(config).max_model_calls,
            deny_tools=self.gateway_denied(config),
        )

    def _verdicts(
        self, trajectory: Trajectory, usage: RunUsage | None, timed_out: bool
    ) -> Trajectory:
        """The trajectory as the gateway saw the run: its tokens and model calls, and an
        error when it refused calls past the role's turns or offering a withheld tool (the
        CLI's config withholds them; the gateway is the backstop)."""
        if usage is not None:
            counted = trajectory.usage.model_copy(update={"turns": usage.calls})
            trajectory = trajectory.model_copy(update={"usage": counted})
        trajectory = gateway_verdict(trajectory, usage, timed_out)
        trajectory = budget_verdict(trajectory, Budget.of(self.run_config), usage)
        return permission_verdict(trajectory, usage)

    def _prepare(
        self,
        run: RunHome,
        install: CodexInstall,
        snapshot: dict[str, Any],
        confined: AgentRun,
        instruction: str,
    ) -> None:
        """The run's config, model catalog and prompt, written once the gateway's address
        inside the jail is known. The CLI reads the config at start; a command that rewrote
        it later would change nothing that matters (the jail reaches only the gateway, and
        the command line repeats the provider, model, sandbox and approvals)."""
        config = self.run_config
        apply_patch = "apply_patch" not in config.permissions.deny_tools
        catalog = catalog_for(install, config.llm.model, apply_patch=apply_patch)
        run.catalog.write_text(json.dumps(catalog), encoding="utf-8")
        framework = settings.framework_config(
            config, self.role, confined.openai_base_url, run.catalog, SANDBOX
        )
        write_config(run, snapshot, framework)
        run.prompt.write_text(instruction, encoding="utf-8")

    def _trajectory(
        self,
        transcript: Transcript,
        process: CodexProcess,
        code: int | None,
        tail: str,
        instruction: str,
        usage: RunUsage | None,
    ) -> Trajectory:
        config = self.run_config
        tokens_in = transcript.usage.get("input_tokens", 0)
        tokens_out = transcript.usage.get("output_tokens", 0)
        error = _error(transcript, process, code, config.timeout, tail)
        metadata = {
            "exit_code": code,
            "thread_id": transcript.thread_id,
            "stderr_tail": self.redactor.text(tail),
        }
        return Trajectory(
            task_id="",
            snapshot_id="",
            status=_status(process, error, usage),
            answer=transcript.answer,
            messages=self.redactor.value(transcript.messages(instruction)),
            usage=Usage(
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost=cost_of(config.llm.price, tokens_in, tokens_out),
                tool_calls=transcript.tool_calls,
            ),
            error=ErrorInfo.model_validate(self.redactor.value(error.model_dump()))
            if error
            else None,
            metadata=metadata,
        )


def _argv(install: CodexInstall, config: RoleConfig, working: Path, hooks: bool) -> list[str]:
    """`codex exec` on the prompt from stdin. The framework's choices are repeated on the
    command line, which outranks every config file the CLI reads."""
    return [
        str(install.binary),
        "exec",
        "--json",
        "--color",
        "never",
        "--skip-git-repo-check",
        "--cd",
        str(working),
        "--sandbox",
        SANDBOX,
        "--model",
        config.llm.model,
        "--config",
        'approval_policy="never"',
        "--config",
        f'model_provider="{PROVIDER}"',
        # The snapshot's hooks run in the jail: no trust store to consult.
        *(["--dangerously-bypass-hook-trust"] if hooks else []),
        "-",
    ]


def _env(install: CodexInstall, run: RunHome, confined: AgentRun) -> dict[str, str]:
    """The allow-list and the run's own variables, nothing of the host's (no `OPENAI_*`)."""
    return {
        **confined.env,
        "PATH": f"{install.tools_path}:{confined.env['PATH']}",
        "HOME": str(run.home),
        "CODEX_HOME": str(run.home),
        TOKEN_ENV: confined.token,
    }


def _error(
    transcript: Transcript, process: CodexProcess, code: int | None, timeout: float, tail: str
) -> ErrorInfo | None:
    if process.timed_out:
        return ErrorInfo(
            type="TimeoutError", message=f"the run exceeded its timeout of {timeout} s"
        )
    if process.cancelled:
        return ErrorInfo(type="Cancelled", message="the run was cancelled (the agent was closed)")
    if transcript.failures:
        return ErrorInfo(type="CodexError", message="; ".join(transcript.failures)[-2000:])
    if code != 0:
        said = [line for line in tail.splitlines() if line.startswith("Error")][-1:]
        message = f"the Codex CLI exited with code {code}"
        return ErrorInfo(type="ProcessError", message=": ".join([message, *said]))
    if not transcript.completed or transcript.answer is None:
        return ErrorInfo(type="NoAnswer", message="the Codex CLI finished without an answer")
    return None


def _status(process: CodexProcess, error: ErrorInfo | None, usage: RunUsage | None) -> Status:
    if process.timed_out:
        return Status.TIMEOUT
    if error is None:
        return Status.SUCCESS
    # The CLI words an endpoint's failure its own way ("experiencing high demand" for a 500):
    # a failed turn is the endpoint's when the gateway saw calls fail (5xx, 429, no answer).
    if error.type == "CodexError" and usage is not None and usage.failed:
        return Status.INFRA_ERROR
    return Status.ERROR
