"""`SWEBench`: tasks from downloaded SWE-bench data; rollouts need the official Docker images."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from flashrsi_dagster.benchmarks.base import BenchmarkError, Secret, SystemicFault, Task
from flashrsi_dagster.benchmarks.swe_bench.instances import read_instances
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.records import Trajectory

if TYPE_CHECKING:
    from flashrsi_dagster.agents.base import Agent

DOCKER_PING_TIMEOUT = 5.0
"""Seconds allowed for the Docker engine to answer."""

NO_DATA = (
    "SWE-bench has no built-in data: download it separately (e.g. the Hugging Face dataset "
    "princeton-nlp/SWE-bench_Verified, as parquet or JSON Lines) and pass the file or its "
    "folder as benchmark.data_path"
)


class EnvironmentUnavailable(SystemicFault):
    """This machine lacks what a rollout needs; the message says what and why."""


class SWEBench:
    name = "swe_bench"
    solved_with_tools = True

    default_split_counts = None
    """None: Lite (300), Verified (500) and the full set (2,294) differ too much for one
    default; give benchmark.split_counts, or a `split` field in the data."""

    def __init__(self, data_path: Path | None = None) -> None:
        self.data_path = data_path

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> SWEBench:
        return cls(config.data_path)

    def tasks(self) -> list[Task]:
        if self.data_path is None:
            raise BenchmarkError(NO_DATA)
        return read_instances(Path(self.data_path))

    def tasks_from(self, path: Path) -> list[Task]:
        """Tasks of another file or folder in the same format (e.g. evolution data)."""
        return read_instances(Path(path))

    def secrets(self, task: Task) -> list[Secret]:
        """The issue, the gold patch and the test patch: each patch whole and its added lines
        alone (a harness may carry the new code without the diff's markup)."""
        found = [Secret("input", "problem statement", task.instruction)]
        for key, name in (("gold_patch", "gold patch"), ("test_patch", "test patch")):
            patch = task.verifier.get(key) or ""
            added = "\n".join(
                line[1:]
                for line in patch.splitlines()
                if line.startswith("+") and not line.startswith("+++")
            )
            found += [
                Secret("reference", name, patch),
                Secret("reference", f"{name} (added lines)", added),
            ]
        return found

    def adapter_problem(self, adapter: type[Agent]) -> str | None:
        if adapter.task_environment_only:
            return (
                f"{adapter.name} runs only inside a Harbor task's environment, and {self.name} "
                "tasks are not Harbor tasks"
            )
        return None

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        """Refuses: a rollout runs in the task's official image, which needs Docker, and the
        container runner is not built; `grade` scores logs from the official harness."""
        problem = docker_problem()
        if problem is not None:
            raise EnvironmentUnavailable(
                f"SWE-bench task {task.id} is evaluated in the Docker image "
                f"{task.metadata.get('image')}, so it needs a Docker engine, and none is "
                f"reachable here ({problem}). Run where Docker is available (set DOCKER_HOST "
                "for a remote engine), or grade existing test logs with parse_pytest_log() "
                "and grade()."
            )
        raise SystemicFault(
            "a Docker engine is reachable, but FlashRSI does not yet run SWE-bench rollouts "
            f"in containers (task {task.id}); grade logs from the official harness with "
            "parse_pytest_log() and grade()."
        )


def docker_problem() -> str | None:
    """Why no Docker engine answers, or None when one does."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return "the `docker` Python package is not installed"
    try:
        client = docker.from_env(timeout=DOCKER_PING_TIMEOUT)
        try:
            client.ping()
        finally:
            client.close()
    except (DockerException, OSError) as exc:  # requests' connection errors are OSErrors
        # Where docker-py looked, since its own message often does not say.
        address = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        return f"no answer at {address}: {type(exc).__name__}: {exc}"
    return None
