"""The MiniAgent adapter: runs the built-in harness (or any snapshot of it) as a subprocess."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.base import Agent, AgentConfigError, TaskEnvironment
from flashrsi_dagster.agents.budgets import Budget, budget_verdict
from flashrsi_dagster.agents.miniagent.launcher import ForkServer, Run
from flashrsi_dagster.agents.output import file_tail
from flashrsi_dagster.agents.permissions import denied_tools, permission_verdict, unknown_tools
from flashrsi_dagster.agents.protected_limits import ProtectedLimits, limits_verdict
from flashrsi_dagster.config.experiment import role_key
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import AgentRun, gateway_verdict
from flashrsi_dagster.environments.jail import Mount, read_from_jail
from flashrsi_dagster.environments.runtime import (
    HARNESS_DISTRIBUTIONS,
    compile_snapshot,
    python_runtime,
)
from flashrsi_dagster.gateway import RunUsage
from flashrsi_dagster.llm.client import ROLE_HEADER
from flashrsi_dagster.llm.endpoints import is_proxy_variable
from flashrsi_dagster.llm.usage import cost_of
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage
from flashrsi_dagster.records.redaction import is_secret_env_name
from flashrsi_dagster.scratch import scratch_dir

HARNESS = Path(__file__).with_name("harness")
TOOLS = ("shell", "editor", "read_skill", "web_fetch", "web_search")
"""The built-in harness's tool names (what `permissions.deny_tools` may name)."""
MAX_LLM_IO = 200
"""Model exchanges `debug_llm_io` keeps, each side cut at MAX_LLM_IO_CHARS."""
MAX_LLM_IO_CHARS = 20_000
CANCEL_GRACE_SECONDS = 2.0
_STDERR_TAIL = 4000
MAX_RESULT_BYTES = 64 << 20
"""A run's result (its whole trajectory) is read up to this size; larger is no result."""
BEACON_NAME = re.compile(r"[\w.:-]{1,64}")
MAX_BEACONS = 64
"""The activation beacons a trajectory keeps (`harness/runtime/beacon.py`): the harness
applies the same rules, but it is evolvable code, so they are enforced again here."""


class MiniAgent(Agent):
    name = "miniagent"
    description = "FlashRSI's built-in tool-using agent: shell, editor and skills, as a subprocess."
    has_file_tools = True
    supports_environment = True
    supported_apis = ("chat", "responses")
    shell_tools = ("shell",)
    _container_dependencies = HARNESS_DISTRIBUTIONS
    """Inside a task environment: its harness's imports (`openai`, `pyyaml`); the entry's
    own needs are the framework's (`integrations.staging`)."""
    api_hint = " (it talks to OpenAI-compatible endpoints; use type claude-code for anthropic)"
    supports_web = True
    limits_file = ("agent.yaml", ProtectedLimits(shell_timeout=60.0, output_limit=20_000))
    """The defaults are the harness's own (`runtime/context.py`), for a limit left out."""
    protected = (
        "agent.yaml#limits",
        "runtime/beacon.py",
        "runtime/budget.py",
        "runtime/permissions.py",
    )
    """agent.yaml's `limits` (shell_timeout, output_limit) are budgets; `runtime/beacon.py` is
    the instrument the Evolver's Gate-b reads (a candidate could delete it to break every later
    beacon); `runtime/budget.py` and `runtime/permissions.py` apply the role's budgets and
    permissions. Its prompt, tools, skills and the rest of its runtime stay evolvable.
    `max_turns`, `max_tool_calls`, the permissions and the timeouts come from the role config
    (and are enforced again outside the harness: see `_run`). The limits too are held outside
    the harness: `agents/protected_limits.py`."""

    @classmethod
    def config_problems(cls, config: RoleConfig, where: str) -> list[str]:
        problems = super().config_problems(config, where)
        return problems + unknown_tools(config, TOOLS, where, cls.name)

    @classmethod
    def gateway_denied(cls, config: RoleConfig) -> frozenset[str]:
        """The permissions' tools, the web's while it is off, the search's without a search
        page."""
        searchless = () if config.web.searches else ("web_search",)
        return denied_tools(config, cls.shell_tools, ("web_fetch", "web_search")) | set(searchless)

    def _setup(self) -> None:
        self._runs: set[Run] = set()

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def close(self) -> None:
        """Kill this agent's runs still in flight; the shared fork server stays warm."""
        for run in list(self._runs):
            run.cancel(CANCEL_GRACE_SECONDS)

    def _run(
        self,
        working_dir: Path,
        instruction: str,
        environment: TaskEnvironment | None = None,
        mounts: tuple[Mount, ...] = (),
    ) -> Trajectory:
        config = self.run_config
        if environment is not None and not config.permissions.edit:
            # Its files live in the task's own environment, which no mount of ours reaches.
            raise AgentConfigError(
                f"{role_key(self.role)}.permissions.edit: false cannot be enforced in a task "
                "environment (its files are reached through the shell there)"
            )
        budget = Budget.of(config)
        limits = self.protected_limits()
        assert limits is not None
        work = Path(working_dir).resolve()
        # edit: false is the kernel's to enforce: the task folder is mounted read-only.
        editable = (work,) if config.permissions.edit else ()
        seen = () if config.permissions.edit else (Mount(work),)
        compile_snapshot(self.files_dir)
        with scratch_dir("miniagent-run-") as run_dir:
            # The run writes only its result, in a folder of its own; its stderr goes to a
            # file it cannot reach (the fork server opens it before the run joins its jail).
            out, stderr = run_dir / "out", run_dir / "stderr.log"
            out.mkdir()
            output = out / "result.json"
            with self.confinement.run(
                self.role,
                config.llm,
                writable=(*editable, out),
                read_only=(*seen, Mount(self.files_dir), *mounts),
                runtime=python_runtime(),
                bridge=environment.shell_prefix if environment else None,
                max_model_calls=budget.max_model_calls,
                web=config.web,
                deny_tools=self.gateway_denied(config),
                shell_timeout=limits.shell_timeout,
                output_limit=limits.output_limit,
            ) as confined:
                payload = self._payload(config, working_dir, instruction, output, confined)
                payload["stderr"] = str(stderr)
                if confined.shell_prefix:
                    payload["shell_prefix"] = confined.shell_prefix
                server = ForkServer.shared(_server_env(confined))
                run = server.run(payload)
                clock = time.monotonic()  # from the moment the run's process exists
                self._runs.add(run)
                try:
                    timed_out = run.wait(config.timeout, grace=CANCEL_GRACE_SECONDS)
                finally:
                    self._runs.discard(run)
            result = _parse_result(read_from_jail(output, MAX_RESULT_BYTES))
            tail = file_tail(stderr, _STDERR_TAIL)
        trajectory = self._trajectory(
            result, timed_out, run.exit_code, tail, time.monotonic() - clock
        )
        trajectory = limits_verdict(trajectory, limits, confined)
        return _verdicts(trajectory, result, budget, confined.usage, timed_out)

    def _payload(
        self,
        config: RoleConfig,
        working_dir: Path,
        instruction: str,
        output: Path,
        confined: AgentRun,
    ) -> dict[str, Any]:
        llm = config.llm
        payload: dict[str, Any] = {
            "output": str(output),
            "files_dir": str(self.files_dir),
            "working_dir": str(Path(working_dir).resolve()),
            "instruction": instruction,
            **Budget.of(config).payload(),
            "permissions": config.permissions.model_dump(mode="json"),
            "web": {"enabled": config.web.enabled, "search": config.web.searches},
            "debug_llm_io": config.debug_llm_io,
            "llm": {
                **llm.model_dump(mode="json", exclude={"api_key", "base_url", "price"}),
                "base_url": confined.openai_base_url,
                "api_key": confined.token,
                "headers": {ROLE_HEADER: self.role},
            },
            "secrets": [confined.token],
        }
        if confined.jail is not None:
            group = confined.jail.group
            payload["jail"] = {
                "pid": confined.jail.pid,
                "env": confined.env,
                "cgroups": [str(procs) for procs in group.procs] if group else [],
            }
        return payload

    def _trajectory(
        self,
        result: dict[str, Any] | None,
        timed_out: bool,
        code: int | None,
        tail: str,
        duration: float,
    ) -> Trajectory:
        result = result or {}
        usage = result.get("usage") or {}
        price = self.run_config.llm.price
        tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        error = result.get("error")
        if timed_out:
            error = {
                "type": "TimeoutError",
                "message": f"the run exceeded its timeout of {self.run_config.timeout} s",
            }
        elif not result:
            error = {
                "type": "ProcessError",
                "message": f"MiniAgent exited with code {code} without a result",
            }
        return Trajectory(
            task_id="",
            snapshot_id="",
            status=_status(result, timed_out),
            answer=result.get("answer"),
            messages=result.get("messages") or [],
            usage=Usage(
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost=cost_of(price, tokens_in, tokens_out),
                turns=usage.get("turns", 0),
                tool_calls=usage.get("tool_calls", 0),
            ),
            duration=duration,
            error=ErrorInfo(**error) if error else None,
            metadata=self._metadata(result, code, tail),
        )

    def _metadata(self, result: dict[str, Any], code: int | None, tail: str) -> dict[str, Any]:
        """The exit code, the stderr tail and, when a beacon fired, `beacons`: name -> count
        in first-fired order. Absent means no beacon fired (or the run left no result)."""
        metadata: dict[str, Any] = {"exit_code": code, "stderr_tail": self.redactor.text(tail)}
        beacons = self._beacons(result.get("beacons"))
        if beacons:
            metadata["beacons"] = beacons
        if self.run_config.debug_llm_io:
            metadata["llm_io"] = _llm_io(result.get("llm_io"))
        activation = _activation(result.get("activation"))
        if activation is not None:
            metadata["activation"] = activation
        return metadata

    def _beacons(self, raw: Any) -> dict[str, int]:
        """The well-formed part of what the run reported: at most MAX_BEACONS names, each
        matching BEACON_NAME with a positive count. A name that redaction would change holds
        a secret and is dropped, not redacted: a beacon is no channel out of a run."""
        if not isinstance(raw, dict):
            return {}
        kept: dict[str, int] = {}
        for name, count in raw.items():
            if len(kept) == MAX_BEACONS:
                break
            named = isinstance(name, str) and BEACON_NAME.fullmatch(name)
            if named and self.redactor.text(name) == name and type(count) is int and count > 0:
                kept[name] = count
        return kept


def _server_env(confined: AgentRun) -> dict[str, str]:
    """The fork server's environment. A jailed run's process is a fork of the server, and
    `/proc/<pid>/environ` shows the server's original environment whatever the run sets
    later: jailed runs get a server started with the allow-list only. Unconfined runs keep
    the framework's environment less every secret-named variable."""
    if confined.jail is not None:
        return confined.env
    # No OPENAI_* / FLASHRSI_* either: the model config comes from the payload alone.
    return {
        k: v
        for k, v in os.environ.items()
        if not is_secret_env_name(k)
        and not k.startswith(("OPENAI_", "FLASHRSI_"))
        and not is_proxy_variable(k)  # its calls go to the gateway on loopback
    }


def _verdicts(
    trajectory: Trajectory,
    result: dict[str, Any] | None,
    budget: Budget,
    usage: RunUsage | None,
    timed_out: bool,
) -> Trajectory:
    """The run as the framework judges it, not as the harness reports it: the gateway's
    usage and faults, then the budgets and permissions held outside the harness."""
    trajectory = gateway_verdict(trajectory, usage, timed_out)
    stop = (result or {}).get("budget")
    stop = stop.get("stopped_by") if isinstance(stop, dict) else None
    trajectory = budget_verdict(trajectory, budget, usage, stop)
    return permission_verdict(trajectory, usage)


def _llm_io(raw: Any) -> list[dict[str, str]]:
    """The model exchanges a run kept, bounded again here (the harness is evolvable code);
    the base class redacts them with the rest of the trajectory."""
    if not isinstance(raw, list):
        return []
    kept = []
    for item in raw[:MAX_LLM_IO]:
        if isinstance(item, dict):
            kept.append(
                {
                    side: str(item.get(side, ""))[:MAX_LLM_IO_CHARS]
                    for side in ("request", "response")
                }
            )
    return kept


def _status(result: dict[str, Any], timed_out: bool) -> Status:
    if timed_out:
        return Status.TIMEOUT
    if result.get("status") == "completed":
        return Status.SUCCESS
    if result.get("error_kind") == "infra":
        return Status.INFRA_ERROR
    return Status.ERROR


def _parse_result(data: bytes | None) -> dict[str, Any] | None:
    try:
        result = json.loads(data) if data else None
    except ValueError:
        return None
    return result if isinstance(result, dict) else None


MAX_OBSERVED = 10_000
"""Files opened, and lines run per file, kept of a run's activation record: a harness has a
few dozen files and a few thousand lines; more would only grow every trajectory."""


def _activation(raw: Any) -> dict[str, Any] | None:
    """The entry's record of which harness files the run opened and which of their Python
    lines ran (`_entry._observe`), checked for shape; None when absent or malformed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("opened"), list):
        return None
    opened = [p for p in raw["opened"] if isinstance(p, str)][:MAX_OBSERVED]
    lines = raw.get("lines")
    if isinstance(lines, dict):
        lines = {
            path: [n for n in numbers if isinstance(n, int)][:MAX_OBSERVED]
            for path, numbers in list(lines.items())[:MAX_OBSERVED]
            if isinstance(path, str) and isinstance(numbers, list)
        }
    else:
        lines = None
    return {"opened": opened, "lines": lines}
