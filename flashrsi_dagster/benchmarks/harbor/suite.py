"""Run Harbor-format tasks through Harbor's own `Trial` and `Job` with the local environment.

The built-in suite lives in `tasks/`: small Terminal-Bench-style tasks (files, text, CSV and
JSON, scripts to fix, git, a service, permissions, archives, logs) that need only the host's
bash, coreutils, python3, git, sed, awk, grep, tar and curl. Every task's tests fail for the
`nop` agent and pass for the `oracle` agent (which runs the task's `solution/solve.sh`).

A second suite, `docker_tasks/`, is written in Terminal-Bench 2's manner for Harbor's docker
environments (`harbor_environment: docker` or `docker-offline`): multi-stage Dockerfiles on
Debian and Ubuntu base images, packages installed with apt, `ENV PATH="/x:$PATH"`, a service
the verifier finds with `pgrep`, rewards in `reward.json` and in `reward.txt`. Select it with
`benchmark.tasks_dir` set to `DOCKER_TASKS_DIR`.

Harbor reports a malformed `task.toml` without naming the file; `check_task` (called by the
runners here) names it, and the other files a task needs.
"""

from __future__ import annotations

import time
import tomllib
import uuid
from dataclasses import dataclass
from pathlib import Path

from harbor.job import Job
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult
from harbor.models.task.config import TaskConfig as TaskDefinition
from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig
from harbor.models.trial.result import TrialResult
from harbor.trial.trial import Trial
from pydantic import ValidationError

from flashrsi_dagster.environments.local_chroot.environment import LOCAL_ENV_IMPORT_PATH

TASKS_DIR = Path(__file__).parent / "tasks"
DOCKER_TASKS_DIR = Path(__file__).parent / "docker_tasks"
REQUIRED_FILES = ("instruction.md", "environment", "tests/test.sh")


class TaskDefinitionError(ValueError):
    """A task folder Harbor could not load, with the file at fault in the message."""


def builtin_task_dirs(suite: Path = TASKS_DIR) -> list[Path]:
    """A built-in suite's task folders (`TASKS_DIR` or `DOCKER_TASKS_DIR`), sorted by id."""
    return sorted(path for path in suite.iterdir() if (path / "task.toml").is_file())


def check_task(task_dir: Path) -> TaskDefinition:
    """Parse `task_dir/task.toml` and check the task's files, naming the file at fault."""
    path = Path(task_dir) / "task.toml"
    try:
        definition = TaskDefinition.model_validate(tomllib.loads(path.read_text("utf-8")))
    except OSError as exc:
        raise TaskDefinitionError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TaskDefinitionError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TaskDefinitionError(f"{path}: invalid TOML: {exc}") from exc
    except ValidationError as exc:
        # One line per task: pydantic's own text spans several, with links.
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise TaskDefinitionError(f"{path}: invalid task config: {problems}") from exc
    for name in REQUIRED_FILES:
        if not (path.parent / name).exists():
            raise TaskDefinitionError(f"{path.parent / name}: missing")
    return definition


def local_environment(**kwargs: object) -> EnvironmentConfig:
    """Harbor's environment config selecting the local environment; `kwargs` are its
    settings (see `LocalChrootConfig`)."""
    return EnvironmentConfig(import_path=LOCAL_ENV_IMPORT_PATH, kwargs=dict(kwargs))


def _agent(agent: str | AgentConfig) -> AgentConfig:
    """`"oracle"`, `"nop"` (or any Harbor agent name), an import path, or a full config."""
    if isinstance(agent, AgentConfig):
        return agent
    return AgentConfig(import_path=agent) if ":" in agent else AgentConfig(name=agent)


async def run_trial(
    task_dir: Path,
    *,
    trials_dir: Path,
    agent: str | AgentConfig = "oracle",
    environment: EnvironmentConfig | None = None,
) -> TrialResult:
    """One task, one agent, through Harbor's `Trial` (the result is also written to
    `trials_dir/<trial name>/result.json`)."""
    check_task(task_dir)
    config = TrialConfig(
        task=TaskConfig(path=Path(task_dir)),
        trials_dir=trials_dir,
        agent=_agent(agent),
        environment=environment or local_environment(),
    )
    trial = await Trial.create(config)
    return await trial.run()


def reward(result: TrialResult) -> float | None:
    """The trial's score from its verifier's rewards, None when there are none.

    Harbor's verifier reads `reward.json` (a JSON object of numbers under any keys) before
    `reward.txt` (one number, stored as `reward`), and its metrics score a one-key result by
    that key's value, whatever its name. So: the `reward` key where there is one (Harbor's
    own key, the one its telemetry reads), else the first number by sorted key, as Harbor's
    hub shows a trial's reward (for a one-key result, that key's value).
    """
    rewards = result.verifier_result.rewards if result.verifier_result else None
    if not rewards:
        return None
    if "reward" in rewards:
        return float(rewards["reward"])
    return next(
        (float(rewards[key]) for key in sorted(rewards) if not isinstance(rewards[key], bool)),
        None,
    )


async def run_job(
    task_dirs: list[Path],
    *,
    jobs_dir: Path,
    agent: str | AgentConfig = "oracle",
    n_concurrent_trials: int = 8,
    environment: EnvironmentConfig | None = None,
) -> JobResult:
    """Every task once, through Harbor's `Job` (which runs the trials concurrently)."""
    for task_dir in task_dirs:
        check_task(task_dir)
    config = JobConfig(
        job_name=f"local-{uuid.uuid4().hex[:8]}",
        jobs_dir=jobs_dir,
        n_concurrent_trials=n_concurrent_trials,
        quiet=True,
        environment=environment or local_environment(),
        agents=[_agent(agent)],
        tasks=[TaskConfig(path=Path(task_dir)) for task_dir in task_dirs],
    )
    job = await Job.create(config)
    return await job.run()


@dataclass(frozen=True)
class SuiteTiming:
    wall_sec: float
    rewards: dict[str, float | None]
    """Reward per task id: 1.0 everywhere when the oracle solved the whole suite."""


async def time_builtin_suite(jobs_dir: Path, *, n_concurrent_trials: int = 8) -> SuiteTiming:
    """Benchmark helper: the built-in suite with the oracle agent through Harbor's own Job
    and the local environment; the wall time covers `Job.create` and `Job.run`."""
    started = time.perf_counter()
    result = await run_job(
        builtin_task_dirs(), jobs_dir=jobs_dir, n_concurrent_trials=n_concurrent_trials
    )
    wall_sec = time.perf_counter() - started
    rewards = {trial.task_name: reward(trial) for trial in result.trial_results}
    return SuiteTiming(wall_sec, rewards)
