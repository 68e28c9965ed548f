"""Terminal-Bench (and any folder of Harbor tasks) as a FlashRSI benchmark.

Every rollout is one Harbor `Trial`: Harbor builds the task's environment, runs the agent —
Harbor's own `oracle`/`nop`, or ours running inside the environment (`integrations.harbor`,
bound by `bind`) — and scores it with the task's verifier. The reward is the score. A trial that
fails outside the agent (the environment would not build or died, the verifier broke) is an
infrastructure failure, rerun by the engine's ladder; a failure no rerun can fix (the
Dockerfile cannot be built, locally or by `docker compose build`; the tests timed out or left
no reward) is the trial's, recorded with its cause and scored 0 (`_TRIAL_FAULTS`).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from harbor.environments.base import BaseEnvironment
from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.environment_type import EnvironmentType
from harbor.models.trial.config import AgentConfig, EnvironmentConfig
from harbor.models.trial.paths import TrialPaths
from harbor.models.trial.result import ExceptionInfo, TrialResult
from harbor.utils.import_path import import_class

from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.benchmarks.base import BenchmarkError, Secret, Task
from flashrsi_dagster.benchmarks.harbor import docker_runtime
from flashrsi_dagster.benchmarks.harbor.suite import (
    TASKS_DIR,
    TaskDefinitionError,
    check_task,
    local_environment,
    reward,
    run_trial,
)
from flashrsi_dagster.benchmarks.harbor.targets import HarborBuiltinAgent
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.environments.harbor_docker import OFFLINE_DOCKER_IMPORT_PATH
from flashrsi_dagster.environments.local_chroot.diagnosis import explain
from flashrsi_dagster.environments.local_chroot.dockerfile import DockerfileError
from flashrsi_dagster.environments.local_chroot.environment import (
    LOCAL_ENV_IMPORT_PATH,
    read_definition,
)
from flashrsi_dagster.integrations import harbor as harbor_executor
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory
from flashrsi_dagster.scratch import scratch_dir

DEFAULT_SPLIT_COUNTS = {"train": 3, "dev": 4, "test": 4}
"""For the 11 built-in tasks; a larger `tasks_dir` wants its own `split_counts`."""

SECRET_FOLDERS = ("solution", "tests")
"""A task's folders a harness must not carry (`secrets`)."""
MAX_SECRET_BYTES = 1 << 20
"""Larger files there (a test fixture's data) are not searched for."""

TESTS_OUTPUT_TAIL = 1000
"""Characters of the tests' output quoted when they left no reward."""

# Failures no rerun can fix, by the exception's name in Harbor's trial result: the agent's
# own (its time ran out) and the task's or the agent's (the environment's definition cannot be
# built; the tests ran out of time, died before writing a reward, or wrote one Harbor cannot
# read). Recorded with their cause, never rerun; anything else is the machinery's.
_TRIAL_FAULTS = {
    "AgentTimeoutError": Status.TIMEOUT,
    **dict.fromkeys(
        (
            "DockerfileError",  # the local environment cannot honour the Dockerfile
            "BaseImageRefused",  # ... nor its FROM image
            "BuildError",  # a Dockerfile step failed (local build or `docker compose build`)
            "VerifierTimeoutError",
            "RewardFileNotFoundError",
            "RewardFileEmptyError",
            "VerifierOutputParseError",
        ),
        Status.FAILURE,
    ),
}

BUILD_LOG_TAIL = 2000
"""Characters of a failed Docker build's log quoted in the error (as the local build's)."""
_COMPOSE_FAILED = re.compile(
    r"Docker compose command failed for environment .*?\. Command: (?P<command>.*?)\. "
    r"Return code: (?P<code>-?\d+)\. Stdout: (?P<log>.*)",
    re.DOTALL,
)
"""The bare `RuntimeError` Harbor's docker environment raises when a compose command fails."""
ENGINE_FAULTS = ("Cannot connect to the Docker daemon", "error during connect")
"""A build log saying the engine itself did not answer: the machinery's fault, rerun."""


class TerminalBench:
    name = "terminal_bench"
    solved_with_tools = True
    default_split_counts = DEFAULT_SPLIT_COUNTS

    def __init__(self, tasks_dir: Path | None = None, environment: str = "local") -> None:
        self.tasks_dir = Path(tasks_dir) if tasks_dir else TASKS_DIR
        self.environment = _environment(environment)
        self._environment_class = _environment_class(self.environment)

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> TerminalBench:
        return cls(config.tasks_dir, config.harbor_environment)

    def tasks(self) -> list[Task]:
        return self.tasks_from(self.tasks_dir)

    def tasks_from(self, path: Path) -> list[Task]:
        """The tasks of a folder of Harbor task folders."""
        folders = sorted(p.parent for p in Path(path).glob("*/task.toml"))
        if not folders:
            raise BenchmarkError(f"{path}: no Harbor task folders (*/task.toml) found")
        tasks = [_task(folder) for folder in folders]
        if self.environment.import_path == LOCAL_ENV_IMPORT_PATH:
            _refuse_what_the_local_environment_cannot_run(path, tasks)
        return tasks

    def adapter_problem(self, adapter: type[Agent]) -> str | None:
        """Harbor's own agents run anywhere Harbor does; ours run inside the task's
        environment, which the adapter must declare it can (`_container_dependencies`)."""
        if adapter.task_environment_only or adapter._container_dependencies is not None:
            return None
        return (
            f"{adapter.name} cannot run commands in a task's own environment, which every "
            f"{self.name} task has: its adapter declares no container support. Use one that "
            "does (miniagent, claude-code) or one of Harbor's own (harbor-oracle, harbor-nop)"
        )

    def secrets(self, task: Task) -> list[Secret]:
        """The instruction, and every file of the task's `solution/` and `tests/` (the
        reference solution, the verifier and the expected outputs it holds)."""
        found = [Secret("input", "instruction.md", task.instruction)]
        if task.environment is not None:
            for part in SECRET_FOLDERS:
                for path in sorted((task.environment / part).rglob("*")):
                    if path.is_file() and path.stat().st_size <= MAX_SECRET_BYTES:
                        name = path.relative_to(task.environment).as_posix()
                        text = path.read_bytes().decode("utf-8", "replace")
                        found.append(Secret("reference", name, text))
        return found

    def preflight(self) -> None:
        """Called by the rollout engine before a batch, whatever the agent: Harbor's `docker`
        environment is refused where the machine lacks a part of it (every trial would fail
        alike), naming the part."""
        if self._uses_docker() and (lack := docker_runtime.missing()):
            raise BenchmarkError(f"benchmark.harbor_environment: docker cannot run here: {lack}")

    def _uses_docker(self) -> bool:
        if self._environment_class is not None:
            return issubclass(self._environment_class, DockerEnvironment)
        return self.environment.type == EnvironmentType.DOCKER

    def bind(self, agent: Agent) -> None:
        """The runner's executor for this benchmark's tasks: Harbor (called by the rollout
        engine before a batch; an agent bound already stays as it is)."""
        if agent.environment_executor is None:
            harbor_executor.bind(agent)

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        loan = harbor_executor.Loan(agent, task.id, split, attempt)
        with scratch_dir("trial-") as trials:
            if isinstance(agent, HarborBuiltinAgent):
                config = AgentConfig(name=agent.harbor_name)
                result = self._trial(task, trials, config)
            else:
                with harbor_executor.lend(loan) as token:
                    config = AgentConfig(
                        import_path=harbor_executor.IMPORT_PATH, kwargs={"token": token}
                    )
                    result = self._trial(task, trials, config)
            tests_said = _tests_output(trials / result.trial_name)
        return _trajectory(task, split, attempt, agent, result, loan.trajectory, tests_said)

    def _trial(self, task: Task, trials: Path, agent: AgentConfig) -> TrialResult:
        assert task.environment is not None
        return asyncio.run(
            run_trial(
                task.environment, trials_dir=trials, agent=agent, environment=self.environment
            )
        )


def _docker_build_error(task: Task, failure: ExceptionInfo) -> ErrorInfo | None:
    """A failed `docker compose build` in Harbor's docker environment (which raises a bare
    `RuntimeError` for it) as the task's failure, a `BuildError` as the local environment's,
    with the build log's tail; None for any other failure, or where the log says the engine
    did not answer."""
    found = _COMPOSE_FAILED.match(failure.exception_message)
    if failure.exception_type != "RuntimeError" or found is None:
        return None
    if found["command"].split()[-1:] != ["build"]:
        return None
    log = found["log"].rpartition(". Stderr:")[0].strip() or found["log"].strip()
    if any(fault in log for fault in ENGINE_FAULTS):
        return None
    return ErrorInfo(
        type="BuildError",
        message=(
            f"task {task.id}: its Docker image did not build (docker compose build exited "
            f"{found['code']}): {log[-BUILD_LOG_TAIL:]}"
        ),
        traceback=failure.exception_traceback,
    )


def _tests_output(trial_dir: Path) -> str:
    """The end of what the task's tests printed in this trial (with what it means, where it
    is a failure the local environment makes), or ""."""
    path = TrialPaths(trial_dir).test_stdout_path
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace")
    tail = text.strip()[-TESTS_OUTPUT_TAIL:]
    cause = explain(text)
    return f"{cause}. {tail}" if cause else tail


def _task(path: Path) -> Task:
    try:
        definition = check_task(path)
    except TaskDefinitionError as exc:
        raise BenchmarkError(str(exc)) from None
    # Harbor names a task `org/name` in `[task]`; the name alone is the id (ids name files).
    return Task(
        id=definition.task.short_name if definition.task else path.name,
        instruction=(path / "instruction.md").read_text(encoding="utf-8"),
        environment=path.resolve(),
        metadata=dict(definition.metadata),
    )


def _refuse_what_the_local_environment_cannot_run(path: Path, tasks: list[Task]) -> None:
    """Every task whose definition the local environment would refuse at its trial's start
    (its FROM image, a Dockerfile line), named before any run (`flashrsi validate` too)."""
    problems = []
    for task in tasks:
        assert task.environment is not None
        try:
            read_definition(task.environment / "environment", task.id)
        except (DockerfileError, OSError) as exc:
            problems.append(str(exc) if task.id in str(exc) else f"task {task.id}: {exc}")
    if problems:
        raise BenchmarkError(
            f"{path}: the local environment cannot run {len(problems)} of {len(tasks)} "
            f"tasks: {'; '.join(problems)}"
        )


def _environment(name: str) -> EnvironmentConfig:
    if name == "local":
        return local_environment()
    if name == "docker-offline":
        return EnvironmentConfig(import_path=OFFLINE_DOCKER_IMPORT_PATH)
    if ":" in name:
        return EnvironmentConfig(import_path=name)
    if name not in set(EnvironmentType):
        raise BenchmarkError(
            f"benchmark.harbor_environment: unknown Harbor environment {name!r}; expected "
            "local, docker-offline, package.module:Class, or one of Harbor's: "
            f"{', '.join(EnvironmentType)}"
        )
    return EnvironmentConfig(type=name)


def _environment_class(config: EnvironmentConfig) -> type[BaseEnvironment] | None:
    """The class behind an import path, imported now so that a wrong path is refused before
    any trial (Harbor would import it only when the first one starts); None for a type."""
    if config.import_path is None:
        return None
    try:
        return import_class(config.import_path, base=BaseEnvironment, label="environment")
    except (ValueError, TypeError) as exc:
        raise BenchmarkError(f"benchmark.harbor_environment: {exc}") from None


def _trajectory(
    task: Task,
    split: str,
    attempt: int,
    agent: Agent,
    result: TrialResult,
    ours: Trajectory | None,
    tests_said: str = "",
) -> Trajectory:
    score = reward(result)
    base = ours or Trajectory(
        task_id=task.id, snapshot_id=agent.snapshot_id or "", status=Status.SUCCESS
    )
    failure = result.exception_info
    metadata = {**base.metadata, "reward": score, "trial": result.trial_name}
    run = result.agent_execution
    if ours is None and run is not None and run.started_at and run.finished_at:
        # The agent's run, as for our agents (`run_inside`): not the build or the verifier.
        base = base.model_copy(
            update={
                "started": run.started_at,
                "duration": (run.finished_at - run.started_at).total_seconds(),
            }
        )
    if failure is not None and score is None:
        message = failure.exception_message
        if failure.exception_type == "RewardFileNotFoundError" and tests_said:
            message = f"{message}; the tests' last output: {tests_said}"
        error = _docker_build_error(task, failure) or ErrorInfo(
            type=failure.exception_type,
            message=message,
            traceback=failure.exception_traceback,
        )
        status = _TRIAL_FAULTS.get(error.type, Status.INFRA_ERROR)
        return base.model_copy(
            update={
                "status": status,
                "score": 0.0,
                "error": error,
                "split": split,
                "attempt": attempt,
                "metadata": metadata,
            }
        )
    solved = score is not None and score >= 1.0
    status = (
        base.status
        if base.status != Status.SUCCESS
        else (Status.SUCCESS if solved else Status.FAILURE)
    )
    return base.model_copy(
        update={
            "status": status,
            "score": score or 0.0,
            "split": split,
            "attempt": attempt,
            "metadata": metadata,
        }
    )
