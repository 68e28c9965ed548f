"""One harness on one split, without evolving anything: `flashrsi eval`.

A user checks a benchmark, an agent and an environment here before spending on evolution.
The test split is not offered: it stays sealed for the experiment's final evaluation.

`split="all"` checks a whole suite (every task of the benchmark, drawn into no split, the
oracle at 1 and nop at 0, say). That is not an experiment: it is refused in the folder of an
experiment that was started, and a folder it ran in cannot become one (`ALL_TASKS_RECORDS`,
see `experiment.paths`), so an experiment's test split stays sealed as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from flashrsi_dagster.agents import harness_components, harness_dir, target_agent
from flashrsi_dagster.benchmarks.base import BenchmarkError, Task
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.environments.confinement import confinement_for
from flashrsi_dagster.experiment import ExperimentPaths, redactor_for
from flashrsi_dagster.experiment.fork import fork_seed
from flashrsi_dagster.records import RecordStore
from flashrsi_dagster.rollouts.engine import Progress, Settings, evaluate_snapshot
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import parquet_bytes, scores_frame, summary
from flashrsi_dagster.snapshots import Snapshot, SnapshotError, SnapshotStore
from flashrsi_dagster.validation import ALL

EVAL_SPLITS = ("dev", "train")


@dataclass(frozen=True)
class Evaluation:
    split: str
    snapshot: Snapshot
    record_path: Path
    scores_path: Path
    frame: pd.DataFrame
    summary: dict[str, Any]


def evaluate(
    config: ExperimentConfig,
    *,
    split: str,
    task_ids: Sequence[str] | None = None,
    snapshot_id: str | None = None,
    fresh: bool = False,
    progress: Progress | None = None,
) -> Evaluation:
    if split not in (*EVAL_SPLITS, ALL):
        raise BenchmarkError(
            f"--split must be one of {', '.join(EVAL_SPLITS)}, or {ALL} outside an experiment "
            "(test is sealed)"
        )
    paths, redactor = ExperimentPaths(config.experiment.dir), redactor_for(config)
    benchmark = load_benchmark(config.benchmark)
    if split == ALL:
        if paths.run_meta.is_file():
            raise BenchmarkError(
                f"--split {ALL} runs every task, the test split's too, which experiment "
                f"{config.experiment.name!r} keeps sealed ({paths.run_meta} exists); check "
                "a suite under an experiment name of its own"
            )
        pool = benchmark.tasks()
    else:
        pool = getattr(load_splits(config.benchmark, benchmark), split)
    tasks = _select(pool, task_ids, split)
    if snapshot_id and not SnapshotStore.made_at(paths.snapshots):  # checked before it is made
        raise SnapshotError(
            f"no snapshot with id {snapshot_id!r}: experiment {config.experiment.name!r} has no "
            f"snapshots yet ({paths.snapshots} does not exist); nothing was written"
        )
    store = SnapshotStore(paths.snapshots, secret_filter=redactor)
    if snapshot_id:
        snapshot = store.get(snapshot_id)
    elif config.experiment.fork is not None:  # a fork's seed is its origin's candidate
        snapshot = fork_seed(store, config)
    else:
        snapshot = store.create_seed(harness_dir(config.agent), harness_components(config.agent))
    name = _record_name(split, snapshot, tasks, config)
    records = RecordStore(paths.root, redactor)
    record = RolloutRecord(paths.records / "eval" / name, records)
    if fresh:
        records.remove(record.path)
    settings = Settings.of(config.benchmark)
    confinement = confinement_for(config, paths.gateway_log, redactor)
    with ExitStack() as agents:
        final = evaluate_snapshot(
            store,
            snapshot,
            lambda checkout: agents.enter_context(
                target_agent(config.agent, checkout, confinement=confinement)
            ),
            benchmark,
            tasks,
            record,
            split=split,
            settings=settings,
            progress=progress,
        )
    frame = scores_frame(final)
    scores_path = record.path.with_suffix(".parquet")
    records.write_bytes(scores_path, parquet_bytes(frame))
    return Evaluation(
        split,
        snapshot,
        record.path,
        scores_path,
        frame,
        summary(frame, len(tasks), settings.attempts),
    )


def _select(tasks: Sequence[Task], task_ids: Sequence[str] | None, split: str) -> list[Task]:
    if not task_ids:
        return list(tasks)
    by_id = {t.id: t for t in tasks}
    unknown = [i for i in task_ids if i not in by_id]
    if unknown:
        raise BenchmarkError(f"not in the {split} split: {', '.join(unknown)}")
    return [by_id[i] for i in task_ids]


def _record_name(
    split: str, snapshot: Snapshot, tasks: Sequence[Task], config: ExperimentConfig
) -> str:
    """Same harness, agent settings, benchmark settings and tasks: same record, so an
    interrupted eval resumes; anything else gets a record of its own."""
    identity = [
        [t.id for t in tasks],
        config.agent.model_dump(mode="json"),
        config.benchmark.model_dump(mode="json", exclude={"limit", "concurrency"}),
    ]
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
    return f"{split}-{snapshot.short_id}-{digest}.jsonl"
