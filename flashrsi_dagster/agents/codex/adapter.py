"""The Codex adapter: each call runs the selected snapshot's own Python core (`python_core/`)
in a process of its own, inside the run's jail, behind the model gateway.

Never the native Codex CLI and never a core of the host's: a `cli_path` (or any key pointing
at a binary) is refused, and the core runs from a copy in the call's own home (`home.py`).
The core speaks the OpenAI Responses API with Codex's tools and prints `codex exec --json`
events, which `events.py` turns into the trajectory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.base import Agent, AgentConfigError, TaskEnvironment
from flashrsi_dagster.agents.budgets import Budget, budget_verdict
from flashrsi_dagster.agents.codex.events import trajectory_of
from flashrsi_dagster.agents.codex.home import ENTRY, build_home, home_problems
from flashrsi_dagster.agents.output import file_tail
from flashrsi_dagster.agents.permissions import permission_verdict, unknown_tools
from flashrsi_dagster.agents.protected_limits import ProtectedLimits, limits_verdict
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import AgentRun, gateway_verdict
from flashrsi_dagster.environments.jail import Mount, read_from_jail
from flashrsi_dagster.environments.runtime import interpreter, python_runtime, site_packages
from flashrsi_dagster.llm.client import ROLE_HEADER
from flashrsi_dagster.records import Redactor, Trajectory
from flashrsi_dagster.scratch import scratch_dir

HARNESS = Path(__file__).with_name("harness")
TOOLS = ("shell", "apply_patch", "update_plan")
CANCEL_GRACE_SECONDS = 2.0
MAX_EVENTS_BYTES = 64 << 20
"""A run's event stream is read up to this size; larger is no result."""
STDERR_TAIL = 4000


class Codex(Agent):
    name = "codex"
    description = (
        "Codex as FlashRSI's own Python core (python_core/ in the snapshot): shell, apply_patch "
        "and update_plan over the OpenAI Responses API, with AGENTS.md, skills, hooks and plugins."
    )
    has_file_tools = True
    supports_environment = True
    supported_apis = ("responses",)
    shell_tools = ("shell",)
    api_hint = " (the Codex core speaks the Responses API only)"
    limits_file = ("config.toml", ProtectedLimits(shell_timeout=120.0, output_limit=20_000))
    """The defaults are the core's own (`codex_core/settings.py`), for a limit left out."""
    protected = ("config.toml#limits",)
    """`[limits]` (shell_timeout, output_limit) are budgets the run is held to. The core's
    code, AGENTS.md, skills, hooks, plugins and the rest of config.toml stay evolvable;
    `max_turns`, `max_tool_calls`, permissions and the timeouts come from the role config.
    The limits are held outside the core too: `agents/protected_limits.py`."""

    @classmethod
    def config_problems(cls, config: RoleConfig, where: str) -> list[str]:
        problems = super().config_problems(config, where)
        problems += unknown_tools(config, TOOLS, where, cls.name)
        # The seed harness is checked now; every snapshot is checked again before its run.
        harness = config.source_dir or HARNESS
        problems += [f"{where}.source_dir: {p}" for p in home_problems(harness)]
        return problems

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def _setup(self) -> None:
        self._processes: set[subprocess.Popen[bytes]] = set()

    def close(self) -> None:
        """Stop this agent's runs still in flight."""
        for process in list(self._processes):
            _stop(process, CANCEL_GRACE_SECONDS)

    def _run(
        self,
        working_dir: Path,
        instruction: str,
        environment: TaskEnvironment | None = None,
        mounts: tuple[Mount, ...] = (),
    ) -> Trajectory:
        config = self.run_config
        problems = home_problems(self.files_dir)
        if problems:
            raise AgentConfigError("; ".join(problems))
        working_dir = Path(working_dir).resolve()
        limits = self.protected_limits()
        assert limits is not None
        edit = config.permissions.edit
        with scratch_dir("codex-run-") as run_dir:
            home = run_dir / "home"
            build_home(self.files_dir, home)
            events, stderr = run_dir / "events.jsonl", run_dir / "stderr.log"
            with self.confinement.run(
                self.role,
                config.llm,
                writable=(home, working_dir) if edit else (home,),
                read_only=(*(() if edit else (Mount(working_dir),)), *mounts),
                runtime=python_runtime(),
                bridge=environment.shell_prefix if environment else None,
                # The core is evolvable code: the gateway holds it to the role's budgets and
                # withheld tools whatever the core does with its payload.
                max_model_calls=Budget.of(config).max_model_calls,
                deny_tools=self.gateway_denied(config),
                shell_timeout=limits.shell_timeout,
                output_limit=limits.output_limit,
            ) as confined:
                payload = self._payload(config, working_dir, instruction, home, confined)
                if confined.shell_prefix:
                    payload["shell_prefix"] = confined.shell_prefix
                clock = time.monotonic()
                code, timed_out = self._start_and_wait(
                    confined, home, working_dir, payload, events, stderr
                )
                duration = time.monotonic() - clock
            data = read_from_jail(events, MAX_EVENTS_BYTES)
            tail = file_tail(stderr, STDERR_TAIL)
        redactor = Redactor([confined.token])
        trajectory = trajectory_of(
            data, instruction, timed_out=timed_out, timeout=config.timeout, exit_code=code,
            stderr_tail=redactor.text(self.redactor.text(tail)), price=config.llm.price,
            duration=duration,
        )  # fmt: skip
        trajectory = Trajectory.model_validate(redactor.value(trajectory.model_dump(mode="json")))
        trajectory = limits_verdict(trajectory, limits, confined)
        trajectory = gateway_verdict(trajectory, confined.usage, timed_out)
        trajectory = budget_verdict(trajectory, Budget.of(config), confined.usage)
        return permission_verdict(trajectory, confined.usage)

    def _start_and_wait(
        self,
        confined: AgentRun,
        home: Path,
        working_dir: Path,
        payload: dict[str, Any],
        events: Path,
        stderr: Path,
    ) -> tuple[int | None, bool]:
        argv = [*interpreter(), "-I", "-S", str(home / ENTRY), str(site_packages())]
        env = {**confined.env, "CODEX_HOME": str(home), "HOME": str(home)}
        if confined.jail is not None:
            argv, env = confined.jail.enter_argv(argv, env, working_dir), {"PATH": env["PATH"]}
        with events.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=out, stderr=err, env=env,
                cwd=working_dir, start_new_session=True,
            )  # fmt: skip
        self._processes.add(process)
        try:
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                process.stdin.write(json.dumps(payload).encode())
                process.stdin.close()
            try:
                process.wait(self.run_config.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            _stop(process, CANCEL_GRACE_SECONDS)
        finally:
            self._processes.discard(process)
        return process.returncode, timed_out

    def _payload(
        self,
        config: RoleConfig,
        working_dir: Path,
        instruction: str,
        home: Path,
        confined: AgentRun,
    ) -> dict[str, Any]:
        llm = config.llm
        return {
            "codex_home": str(home),
            "working_dir": str(working_dir),
            "instruction": instruction,
            "max_turns": config.max_turns,
            "max_tool_calls": config.max_tool_calls,
            "permissions": config.permissions.model_dump(mode="json"),
            "llm": {
                **llm.model_dump(mode="json", exclude={"api_key", "base_url", "price", "auth"}),
                "base_url": confined.openai_base_url,
                "api_key": confined.token,
                "headers": {ROLE_HEADER: self.role},
            },
            "secrets": [confined.token],
        }


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the run's process group and give the core `grace` seconds to end its session
    (write its last events, kill its commands); then SIGKILL what is left. The group, not the
    process we started, is waited for: in a jail that process is `nsenter`, which dies at once
    and leaves the core running in the jail's PID namespace (so a run whose `nsenter` is gone
    may still be finishing: a cancel from another thread, or a SIGTERM from outside)."""
    if process.poll() is None or _group_alive(process.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _group_alive(group: int) -> bool:
    """A member of process group `group` is running (zombies do not count: a jail's first
    process may never reap an orphan)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)"
        except (OSError, IndexError):
            continue
        if fields[2] == str(group) and fields[0] != "Z":
            return True
    return False
