"""The `Agent` base class: one role (target or Worker) running one harness snapshot.

An adapter subclasses `Agent`, sets `name` and `description`, and implements `_run`. The base
class owns what every adapter needs the same way: the role config copied at construction and
frozen per run and per batch, the snapshot folder, the RunConfig record at the head of the
messages, timing, and turning an unexpected exception into an error trajectory.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from flashrsi_dagster.agents.budgets import Budget
from flashrsi_dagster.agents.permissions import denied_tools
from flashrsi_dagster.agents.protected_limits import ProtectedLimits
from flashrsi_dagster.agents.run_config import run_config_message
from flashrsi_dagster.config.experiment import ExperimentConfig, role_key
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.llm.client import AnthropicAPIError, infra_errors
from flashrsi_dagster.records import ErrorInfo, Redactor, Status, Trajectory, Usage


def status_of(exc: BaseException) -> Status:
    """An endpoint that is down, overloaded or too slow is infrastructure, rerun by the
    ladder; anything else is the agent's own error."""
    if isinstance(exc, infra_errors()):
        return Status.INFRA_ERROR
    if isinstance(exc, AnthropicAPIError) and (exc.status >= 500 or exc.status == 429):
        return Status.INFRA_ERROR
    return Status.ERROR


@dataclass(frozen=True)
class TaskEnvironment:
    """Where a task's commands run when the task has its own environment (e.g. a Harbor
    container): the agent's shell runs `shell_prefix + [command]` instead of bash on the host."""

    shell_prefix: tuple[str, ...]
    workdir: str = "/"


class AgentConfigError(TypeError):
    """An agent was built from the wrong config (e.g. a whole experiment config)."""


class ContainerUnsupported(AgentConfigError):
    """The agent cannot run inside a task's environment (or is not set up to, here)."""


class Agent(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    has_file_tools: ClassVar[bool] = False
    """True when the agent can list, read and edit files: required of a Worker."""
    supports_environment: ClassVar[bool] = False
    """True when `_run` accepts `environment=` and runs its commands there."""
    task_environment_only: ClassVar[bool] = False
    """True when the agent runs only inside a task's own environment (Harbor's own agents)."""
    supported_apis: ClassVar[tuple[str, ...]] = ("chat", "responses", "anthropic")
    """The `llm.api` dialects the adapter speaks, preferred first."""
    api_hint: ClassVar[str] = ""
    """Said after a refused `llm.api`: where to go instead."""
    shell_tools: ClassVar[tuple[str, ...]] = ()
    """The harness's names for its shell tools, withheld under `permissions.shell: false`."""
    supports_login: ClassVar[bool] = False
    """True when the adapter can use its harness's native login (`llm.auth: login`)."""
    _container_dependencies: ClassVar[tuple[str, ...] | None] = None
    """The distributions (names; versions are the host's installed ones) the adapter needs
    beyond the framework's own to run inside a task's environment; None: it cannot."""
    environment_executor: Any = None
    """What runs this agent inside task environments (`integrations.harbor.bind`); None:
    unbound, and a batch with environment tasks is refused."""
    supports_web: ClassVar[bool] = False
    """True when the adapter offers its agent the web through the gateway (`web.enabled`)."""
    limits_file: ClassVar[tuple[str, ProtectedLimits] | None] = None
    """The harness file whose protected `limits` key holds `shell_timeout` and `output_limit`,
    and the harness's own defaults for them (`agents/protected_limits.py`); None: none."""
    protected: ClassVar[tuple[str, ...]] = ()
    """The harness's evaluator-protected entries (`glob` or `glob#key`): the files, or keys,
    that hold a permission or a budget the run is held to; no candidate may change them
    (`snapshots.protection`). A harness's `components.yaml` `protected:` section replaces it."""

    def __init__(
        self,
        config: RoleConfig,
        files_dir: Path,
        *,
        role: str = "target",
        confinement: Confinement | None = None,
    ) -> None:
        if isinstance(config, ExperimentConfig):
            raise AgentConfigError(
                f"{type(self).__name__} takes one role's config — config.agent for the target "
                "or config.algorithm.worker for the Worker — not the whole experiment config"
            )
        if not isinstance(config, RoleConfig):
            raise AgentConfigError(f"expected a RoleConfig, got {type(config).__name__}")
        problems = type(self).config_problems(config, role_key(role))
        if problems:
            raise AgentConfigError("; ".join(problems))
        self.config = config.model_copy(deep=True)
        self.role = role
        self.files_dir = Path(files_dir).resolve()
        self.snapshot_id: str | None = None
        self._frozen: RoleConfig | None = None
        self._confinement = confinement
        # Knows the role's own key even when its variable is not named like a secret.
        key = self.config.llm.api_key
        self.redactor = Redactor([key.resolve()] if key and key.env_var in os.environ else [])
        self._setup()

    @classmethod
    def config_problems(cls, config: RoleConfig, where: str) -> list[str]:
        """What this adapter cannot honour in a role's config, one line each naming the key
        under `where` (`agent`, `algorithm.worker`). It starts nothing, so the dry run asks
        it before anything is written; construction refuses the same problems."""
        problems = []
        api = config.llm.api
        if api not in cls.supported_apis:
            problems.append(
                f"{where}.llm.api: {cls.name} does not speak {api!r}, only "
                f"{' or '.join(cls.supported_apis)}: set {where}.llm.api: "
                f"{cls.supported_apis[0]}{cls.api_hint}"
            )
        if config.llm.auth == "login" and not cls.supports_login:
            problems.append(
                f"{where}.llm.auth: {cls.name} has no native login; set {where}.llm.api_key "
                "and auth: key"
            )
        if config.web.enabled and not cls.supports_web:
            problems.append(
                f"{where}.web.enabled: {cls.name} has no web tools behind the gateway; set "
                f"{where}.web.enabled: false"
            )
        return problems

    def _setup(self) -> None:  # noqa: B027 - optional hook
        """Called at the end of construction: an adapter checks its role config here (naming
        the key) and builds what it keeps between runs. The default needs nothing."""

    @property
    def confinement(self) -> Confinement:
        """The jail and gateway policy runs use: the experiment's, else jailed behind the
        process's shared gateway (built on first use, so agents that start no process and
        call no model never need one)."""
        if self._confinement is None:
            self._confinement = Confinement()
        return self._confinement

    def _check_container(self) -> None:
        """Before a run inside a task's environment: raise `ContainerUnsupported` saying why
        this agent cannot. An override calls this first, then checks its own needs."""
        if type(self)._container_dependencies is None:
            raise ContainerUnsupported(
                f"agent type {self.name!r} cannot run inside a task environment: its adapter "
                "declares no _container_dependencies"
            )
        if not self.run_config.permissions.edit:
            # Inside, the environment is the confinement: no read-only mount of ours reaches
            # the task's files there.
            raise ContainerUnsupported(
                f"{role_key(self.role)}.permissions.edit: false cannot be enforced inside a task "
                "environment"
            )

    @classmethod
    def gateway_budget(cls, config: RoleConfig) -> Budget:
        """The budget the gateway and the verdict after the run hold a run of `config` to
        (`Budget.max_model_calls` is the gateway's cap); the role's own by default."""
        return Budget.of(config)

    def protected_limits(self) -> ProtectedLimits | None:
        """The snapshot's protected limits (`limits_file`), which the host and the gateway
        enforce outside the harness; None for an adapter without them."""
        if self.limits_file is None:
            return None
        try:
            return ProtectedLimits.read(self.files_dir, *self.limits_file)
        except ValueError as exc:
            raise AgentConfigError(str(exc)) from None

    @classmethod
    def gateway_denied(cls, config: RoleConfig) -> frozenset[str]:
        """The tool names the gateway refuses to see offered in this role's model calls: the
        permissions' `deny_tools`, and `shell_tools` under `shell: false`. Granted with the
        run's token, on the host, wherever the agent runs."""
        return denied_tools(config, cls.shell_tools)

    # -- what adapters implement ----------------------------------------------------------

    @classmethod
    def builtin_harness(cls) -> Path:
        """The harness folder used when the role sets no `source_dir`."""
        raise AgentConfigError(f"agent type {cls.name!r} has no built-in harness; set source_dir")

    @abstractmethod
    def _run(self, working_dir: Path, instruction: str) -> Trajectory:
        """Run the harness on `working_dir` with the task's `instruction` (and, when given,
        `environment=` for a task environment and `mounts=` for read-only folders).

        Read settings only from `self.run_config`; return the harness's answer, status,
        messages and usage; close every process or session started before returning."""

    # -- what callers use ------------------------------------------------------------------

    @property
    def run_config(self) -> RoleConfig:
        """The config frozen for the current run or batch (the live config outside one)."""
        return self._frozen if self._frozen is not None else self.config

    def update(self, files_dir: Path, snapshot_id: str | None = None) -> None:
        """Run a different snapshot next: changes the files, never the model or connection."""
        self.files_dir = Path(files_dir).resolve()
        self.snapshot_id = snapshot_id

    @contextmanager
    def frozen(self) -> Iterator[RoleConfig]:
        """Freeze the config for a batch of runs: edits to `self.config` apply to the next one."""
        if self._frozen is not None:
            yield self._frozen
            return
        self._frozen = self.config.model_copy(deep=True)
        try:
            yield self._frozen
        finally:
            self._frozen = None

    def run(
        self,
        working_dir: Path,
        instruction: str,
        *,
        task_id: str,
        split: str | None = None,
        attempt: int = 0,
        environment: TaskEnvironment | None = None,
        mounts: Sequence[Mount] = (),
    ) -> Trajectory:
        """One run. Never raises for the agent's own failures: they are error trajectories.

        `mounts` are extra folders the run sees read-only (say, a history view inside the
        working folder); in a jail they are bind mounts the agent cannot change."""
        started, clock = datetime.now(UTC), time.monotonic()
        with self.frozen() as config:
            try:
                # The config may have been edited since construction: refuse what the
                # adapter cannot honour, as construction did.
                problems = self.config_problems(config, role_key(self.role))
                if problems:
                    raise AgentConfigError("; ".join(problems))
                extra: dict[str, Any] = {}
                if environment is not None:
                    if not self.supports_environment:
                        raise AgentConfigError(
                            f"agent type {self.name!r} cannot run commands in a task environment"
                        )
                    extra["environment"] = environment
                if mounts:
                    extra["mounts"] = tuple(mounts)
                trajectory = self._run(Path(working_dir), instruction, **extra)
            except Exception as exc:  # one run's failure is data, not a crash of the batch
                trajectory = Trajectory(
                    task_id=task_id,
                    snapshot_id="",
                    status=status_of(exc),
                    error=ErrorInfo.from_exception(exc),
                )
            header = run_config_message(config, self.snapshot_id, self.role, self.redactor)
            # The agent never held the key (the gateway did), but a model or an endpoint's
            # error text may echo it: what leaves `run` is redacted whatever the adapter did.
            trajectory = Trajectory.model_validate(
                self.redactor.value(trajectory.model_dump(mode="json"))
            )
            return trajectory.model_copy(
                update={
                    "task_id": task_id,
                    "split": split,
                    "attempt": attempt,
                    "snapshot_id": self.snapshot_id or "",
                    "messages": [header, *trajectory.messages],
                    "started": started,
                    "duration": trajectory.duration or (time.monotonic() - clock),
                    "usage": trajectory.usage or Usage(),
                }
            )

    def edit(
        self, checkout: Path, prompt: str, *, task_id: str, mounts: Sequence[Mount] = ()
    ) -> Trajectory:
        """A directory edit: the agent changes the files of `checkout` in place as `prompt`
        asks (the caller commits them). Only an agent with file tools can be asked."""
        if not self.has_file_tools:
            raise AgentConfigError(f"agent type {self.name!r} has no file tools to edit with")
        return self.run(checkout, prompt, task_id=task_id, mounts=mounts)

    def close(self) -> None:  # noqa: B027 - optional hook, most adapters hold nothing
        """Release long-lived resources (sessions, servers); the default holds none."""

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
