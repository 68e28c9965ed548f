"""`SWEBench`: tasks from SWE-bench instance records; a rollout works in a local checkout of
the instance's repository and is graded by the `swebench` package: its tests run on this
machine (`evaluation`) or, with `benchmark.swe_bench_grading: docker`, in the instance's image
by the package's own harness (`docker_harness`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flashrsi_dagster.benchmarks.base import BenchmarkError, Secret, Task
from flashrsi_dagster.benchmarks.swe_bench import repos
from flashrsi_dagster.benchmarks.swe_bench.evaluation import (
    evaluation_log,
    official_report,
    require_swebench,
)
from flashrsi_dagster.benchmarks.swe_bench.instances import read_instances
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.scratch import scratch_dir

if TYPE_CHECKING:
    from flashrsi_dagster.agents.base import Agent

LOG_TAIL = 4000
"""Characters of the test log kept in a trajectory's metadata."""

NO_DATA = (
    "SWE-bench has no built-in data: download it separately (e.g. the Hugging Face dataset "
    "princeton-nlp/SWE-bench_Verified, as parquet or JSON Lines) and pass the file or its "
    "folder as benchmark.data_path"
)


class SWEBench:
    name = "swe_bench"
    solved_with_tools = True

    default_split_counts = None
    """None: Lite (300), Verified (500) and the full set (2,294) differ too much for one
    default; give benchmark.split_counts, or a `split` field in the data."""

    def __init__(
        self,
        data_path: Path | None = None,
        evolution_data_path: Path | None = None,
        grading: Literal["local", "docker"] = "local",
    ) -> None:
        self.data_path = data_path
        self.evolution_data_path = evolution_data_path
        self.grading = grading
        self._images: dict[str, str] = {}
        self._images_lock = threading.Lock()

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> SWEBench:
        return cls(config.data_path, config.evolution_data_path, config.swe_bench_grading)

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

    def missing_parts(self) -> list[str]:
        """What keeps instances from running here, one line per repository, under the key of
        the data they come from (`repos.missing`: a repository with no copy beside the data,
        or without an instance's base commit); `flashrsi validate` (and so `run` and `eval`)
        refuses on it before any run."""
        found = [f"benchmark.data_path: {p}" for p in repos.missing(self.tasks(), self._roots())]
        if self.evolution_data_path is not None:
            evolution = self.tasks_from(Path(self.evolution_data_path))
            missing = repos.missing(evolution, self._roots())
            found += [f"benchmark.evolution_data_path: {p}" for p in missing]
        return found

    def adapter_problem(self, adapter: type[Agent]) -> str | None:
        if adapter.task_environment_only:
            return (
                f"{adapter.name} runs only inside a Harbor task's environment, and {self.name} "
                "tasks are not Harbor tasks"
            )
        return None

    def preflight(self) -> None:
        """Called by the rollout engine before a batch: grading in Docker is refused where no
        engine answers or the instance images' base cannot be had, naming what is missing
        (every rollout would fail alike)."""
        if self.grading != "docker":
            return
        require_swebench()
        # docker_harness is imported where used: `python -m` of it imports this package first,
        # and a module imported before `-m` runs it is imported twice
        from flashrsi_dagster.benchmarks.swe_bench import docker_harness
        from flashrsi_dagster.images.engine import ImageError

        try:
            docker_harness.require_base()
        except ImageError as exc:
            raise BenchmarkError(
                f"benchmark.swe_bench_grading: docker cannot run here: {exc} "
                "(or grade on this machine: swe_bench_grading: local)"
            ) from None

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        """The agent works in a checkout at the base commit; its changes, as a patch, are
        evaluated and graded by `swebench`'s own grading, here or in the instance's image."""
        require_swebench()
        source = repos.find_source(task.verifier["repo"], self._roots())
        with scratch_dir("swe-") as work:
            repos.check_out(source, task.verifier["base_commit"], work / "repo")
            trajectory = agent.run(
                work / "repo", task.instruction, task_id=task.id, split=split, attempt=attempt
            )
            if trajectory.status == Status.INFRA_ERROR:  # rerun by the engine's ladder
                return trajectory.model_copy(update={"score": 0.0})
            repos.check_out(source, task.verifier["base_commit"], work / "base")
            patch = repos.diff_against(work / "base", work / "repo")
            if self.grading == "docker":
                from flashrsi_dagster.benchmarks.swe_bench import docker_harness

                image = self._image(task, source)
                report = docker_harness.evaluate(task, patch, image, work / "logs")
                log, graded_in = docker_harness.graded_log(work / "logs", task), image
            else:
                log, graded_in = work / "test_output.txt", "local"
                jailed = agent.confinement.jailed
                log.write_text(evaluation_log(task, source, patch, work, jailed=jailed), "utf-8")
                report = official_report(task, patch, log)
            said = log.read_text(errors="replace") if log.is_file() else report.get("error", "")
        return scored(trajectory, patch, report, said[-LOG_TAIL:], graded_in)

    def _image(self, task: Task, source: Path) -> str:
        """`task`'s instance image, built once per process (the engine's cache keeps its
        layers: a later process's build of it is quick)."""
        from flashrsi_dagster.benchmarks.swe_bench import docker_harness

        with self._images_lock:
            if task.id not in self._images:
                self._images[task.id] = docker_harness.build_instance_image(task, source)
            return self._images[task.id]

    def _roots(self) -> list[Path]:
        """Folders whose `repos/` may hold an instance's repository: those of the data."""
        paths = [p for p in (self.data_path, self.evolution_data_path) if p is not None]
        return [Path(p) if Path(p).is_dir() else Path(p).parent for p in paths]


def scored(
    trajectory: Trajectory,
    patch: str,
    report: dict[str, Any],
    log_tail: str,
    graded_in: str = "local",
) -> Trajectory:
    """The agent's trajectory scored by the report: 1.0 when resolved, else 0.0. The answer is
    the patch, which the harness grades whatever the agent said or however its run ended (a
    timeout or an error keeps its status; the edits made before it count). `graded_in`: where
    the tests ran, `local` or the instance image's name."""
    resolved = bool(report.get("resolved"))
    status = trajectory.status
    if status == Status.SUCCESS and not resolved:
        status = Status.FAILURE
    metadata = {
        **trajectory.metadata,
        "swe_bench": report,
        "test_log_tail": log_tail,
        "graded_in": graded_in,
    }
    return trajectory.model_copy(
        update={
            "answer": patch,
            "score": 1.0 if resolved else 0.0,
            "status": status,
            "metadata": metadata,
        }
    )
