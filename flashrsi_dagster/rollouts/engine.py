"""The rollout engine: one agent, one snapshot, many tasks, bounded concurrency, resumable.

Each (task, attempt) is run until it has a final result: an infrastructure failure is rerun
at most `max_infra_reruns` times, then kept as score 0 — never dropped, so the denominator is
always tasks x attempts. Every finished rollout is appended to the record at once; a restart
reads the record and runs only what is missing.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.agents.base import Agent, ContainerUnsupported
from flashrsi_dagster.benchmarks.base import Benchmark, SystemicFault, Task
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.environments.confinement import KEY_REFUSED
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot, SnapshotStore

Progress = Callable[[int, int, Trajectory], None]
"""progress(finished, total, latest): called after every final rollout."""


@dataclass(frozen=True)
class Settings:
    attempts: int = 1
    concurrency: int = 4
    max_infra_reruns: int = 2

    @classmethod
    def of(cls, config: BenchmarkConfig) -> Settings:
        """The rollout settings a benchmark section asks for."""
        return cls(config.attempts, config.concurrency, config.max_infra_reruns)


def is_final(trajectory: Trajectory, reruns_allowed: int) -> bool:
    return (
        trajectory.status != Status.INFRA_ERROR
        or trajectory.metadata.get("rerun", 0) >= reruns_allowed
    )


def run_rollouts(
    benchmark: Benchmark,
    agent: Agent,
    tasks: list[Task] | tuple[Task, ...],
    record: RolloutRecord,
    *,
    split: str,
    settings: Settings = Settings(),
    progress: Progress | None = None,
) -> list[Trajectory]:
    """The final trajectory of every (task, attempt), in task order. A batch the agent
    cannot run inside its tasks' environments is refused first (`refuse_uncontained`)."""
    refuse_uncontained(benchmark, agent, tasks)
    recorded = record.load()
    done = _final_by_key(recorded, settings.max_infra_reruns)
    tries = _tries_by_key(recorded)
    todo = [(t, a) for t in tasks for a in range(settings.attempts) if (t.id, a) not in done]
    total, lock = len(tasks) * settings.attempts, threading.Lock()

    def work(task: Task, attempt: int) -> None:
        final = _run_until_final(
            benchmark,
            agent,
            task,
            attempt,
            split,
            record,
            settings,
            first_rerun=tries.get((task.id, attempt), 0),
        )
        with lock:
            done[(task.id, attempt)] = final
            if progress:
                progress(len(done), total, final)

    with agent.frozen(), ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        # each rollout in a copy of this context: its gateway token names the host's
        # candidate (`environments/attribution.py`)
        futures = [pool.submit(contextvars.copy_context().run, work, t, a) for t, a in todo]
        for future in futures:
            future.result()
    return [done[(t.id, a)] for t in tasks for a in range(settings.attempts)]


def refuse_uncontained(benchmark: Benchmark, agent: Agent, tasks: Sequence[Task]) -> None:
    """Tasks with their own environment run the agent inside it: the benchmark's runner binds
    its executor (`benchmark.bind`, Terminal-Bench: Harbor), then an agent still unbound, or
    one whose `_check_container()` fails, is refused before any task runs — one message
    naming the agent type and how many such tasks the batch has. Before that, whatever the
    agent, a benchmark's `preflight()` may refuse a machine its environments cannot run on."""
    count = sum(task.environment is not None for task in tasks)
    if not count:
        return
    preflight = getattr(benchmark, "preflight", None)
    if preflight is not None:
        preflight()
    if agent.task_environment_only:
        return
    bind = getattr(benchmark, "bind", None)
    if bind is not None:
        bind(agent)
    problem = None
    if agent.environment_executor is None:
        problem = (
            "it is bound to no environment executor (call "
            "flashrsi_dagster.integrations.harbor.bind(agent) before the rollout)"
        )
    else:
        try:
            agent._check_container()
        except ContainerUnsupported as exc:
            problem = str(exc)
    if problem is not None:
        raise ContainerUnsupported(
            f"refused before its first task: agent type {agent.name!r} cannot run the "
            f"{count} task(s) of this batch that have their own environment: {problem}"
        )


def evaluate_snapshot(
    store: SnapshotStore,
    snapshot: Snapshot,
    agent_for: Callable[[Path], Agent],
    benchmark: Benchmark,
    tasks: list[Task] | tuple[Task, ...],
    record: RolloutRecord,
    *,
    split: str,
    settings: Settings,
    progress: Progress | None = None,
) -> list[Trajectory]:
    """A snapshot on tasks: checked out in a scratch folder, the agent (`agent_for(checkout)`,
    which may be one kept across snapshots) pointed at it, every rollout run or resumed."""
    with scratch_dir("target-") as tmp:
        checkout = store.check_out(snapshot, tmp / "harness")
        try:
            agent = agent_for(checkout)
            agent.update(checkout, snapshot.id)
            final = run_rollouts(
                benchmark, agent, tasks, record, split=split, settings=settings, progress=progress
            )
        finally:
            store.forget_checkout(checkout)
    refuse_key_refusals(final, agent.role)
    return final


def refuse_key_refusals(final: list[Trajectory], role: str) -> None:
    """Every rollout refused for its key: a wrong or revoked key, not the harness's score.
    Recording those zeros as the snapshot's score (and going on to the sealed test) would
    spend the search on nothing; stop instead, naming the role."""
    if final and all(t.error is not None and t.error.type == KEY_REFUSED for t in final):
        raise KeyRefused(
            f"the model endpoint refused the {role} role's key on every rollout "
            f"({len(final)}): check its llm.api_key and llm.base_url"
        )


class KeyRefused(SystemicFault):
    """The endpoint refused the role's key on every rollout of an evaluation."""


def _run_until_final(
    benchmark: Benchmark,
    agent: Agent,
    task: Task,
    attempt: int,
    split: str,
    record: RolloutRecord,
    settings: Settings,
    first_rerun: int,
) -> Trajectory:
    rerun = first_rerun
    while True:
        trajectory = _one(benchmark, agent, task, attempt, split)
        trajectory = trajectory.model_copy(
            update={
                "metadata": {**trajectory.metadata, "rerun": rerun},
                "score": 0.0 if trajectory.status == Status.INFRA_ERROR else trajectory.score,
            }
        )
        record.append(trajectory)
        if is_final(trajectory, settings.max_infra_reruns):
            return trajectory
        rerun += 1


def _one(benchmark: Benchmark, agent: Agent, task: Task, attempt: int, split: str) -> Trajectory:
    try:
        return benchmark.rollout(agent, task, split=split, attempt=attempt)
    except SystemicFault:
        raise
    except Exception as exc:  # a fault outside the agent (environment, verifier): infrastructure
        return Trajectory(
            task_id=task.id,
            split=split,
            snapshot_id=agent.snapshot_id or "",
            attempt=attempt,
            status=Status.INFRA_ERROR,
            score=0.0,
            error=ErrorInfo.from_exception(exc),
        )


def final_trajectories(record: RolloutRecord, reruns: int) -> list[Trajectory]:
    """The final rollout of every (task, attempt) the record holds, by task id then attempt:
    the record's order is the order the rollouts finished in (concurrent, resumed after a
    kill), which no reader may depend on."""
    final = _final_by_key(record.load(), reruns)
    return [final[key] for key in sorted(final)]


def _final_by_key(trajectories: list[Trajectory], reruns: int) -> dict:
    return {(t.task_id, t.attempt): t for t in trajectories if is_final(t, reruns)}


def _tries_by_key(trajectories: list[Trajectory]) -> dict:
    tries: dict = {}
    for t in trajectories:
        tries[(t.task_id, t.attempt)] = tries.get((t.task_id, t.attempt), 0) + 1
    return tries
