"""`SWEBench`: tasks from SWE-bench instance records; a rollout works in a local checkout of
the instance's repository and is graded by the `swebench` package (`evaluation`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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
        self, data_path: Path | None = None, evolution_data_path: Path | None = None
    ) -> None:
        self.data_path = data_path
        self.evolution_data_path = evolution_data_path

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> SWEBench:
        return cls(config.data_path, config.evolution_data_path)

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

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        """The agent works in a checkout at the base commit; its changes, as a patch, are
        evaluated in a fresh checkout and graded by `swebench`'s own grading
        (`evaluation`)."""
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
            log = work / "test_output.txt"
            log.write_text(
                evaluation_log(task, source, patch, work, jailed=agent.confinement.jailed),
                encoding="utf-8",
            )
            report = official_report(task, patch, log)
            log_tail = log.read_text(encoding="utf-8")[-LOG_TAIL:]
        return scored(trajectory, patch, report, log_tail)

    def _roots(self) -> list[Path]:
        """Folders whose `repos/` may hold an instance's repository: those of the data."""
        paths = [p for p in (self.data_path, self.evolution_data_path) if p is not None]
        return [Path(p) if Path(p).is_dir() else Path(p).parent for p in paths]


def scored(trajectory: Trajectory, patch: str, report: dict[str, Any], log_tail: str) -> Trajectory:
    """The agent's trajectory scored by the report: 1.0 when resolved, else 0.0. The answer is
    the patch, which the harness grades whatever the agent said or however its run ended (a
    timeout or an error keeps its status; the edits made before it count)."""
    resolved = bool(report.get("resolved"))
    status = trajectory.status
    if status == Status.SUCCESS and not resolved:
        status = Status.FAILURE
    metadata = {**trajectory.metadata, "swe_bench": report, "test_log_tail": log_tail}
    return trajectory.model_copy(
        update={
            "answer": patch,
            "score": 1.0 if resolved else 0.0,
            "status": status,
            "metadata": metadata,
        }
    )
