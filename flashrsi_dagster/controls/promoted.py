"""What an experiment of any algorithm promoted, read from its records alone: the snapshot of
its last `adopt` at experiment scope in the decision ledger, that snapshot's final rollouts
on dev, and — only once its sealed test has run — the sealed test's result and rollouts. The
rollouts are found by what they are (rollout records holding that snapshot on that split),
not by where an algorithm keeps them; records set aside by a re-evaluation
(`*.replaced-*`) are not read. Nothing is evaluated and nothing is unsealed here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.decisions.ledger import EXPERIMENT, Ledger
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.records import Trajectory, read_record
from flashrsi_dagster.records.sealed_test import TestResult
from flashrsi_dagster.rollouts.engine import Settings, final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord


@dataclass(frozen=True)
class Promoted:
    experiment: str
    snapshot_id: str
    dev: list[Trajectory]
    """The promoted snapshot's final dev rollouts (empty when none are on record)."""
    test: TestResult | None
    """The sealed test's result; None until it has run."""
    test_rollouts: list[Trajectory]


def promoted(experiment: Experiment) -> Promoted | None:
    """The experiment's promotion and its evidence; None before anything was promoted."""
    adopted = [
        d
        for d in Ledger(experiment.paths.root).entries()
        if d.decision == "adopt" and d.scope == EXPERIMENT and d.candidate.snapshot_id
    ]
    if not adopted:
        return None
    snapshot_id = adopted[-1].candidate.snapshot_id or ""
    reruns = Settings.of(experiment.config.benchmark).max_infra_reruns
    records = experiment.paths.records
    test = _sealed_test(records, snapshot_id)
    return Promoted(
        experiment=experiment.config.experiment.name,
        snapshot_id=snapshot_id,
        dev=_rollouts(records, snapshot_id, "dev", reruns),
        test=test,
        test_rollouts=_rollouts(records, snapshot_id, "test", reruns) if test else [],
    )


def _sealed_test(records: Path, snapshot_id: str) -> TestResult | None:
    for path in sorted(records.rglob("*.json")):
        if ".replaced-" not in path.name and _is(path.read_bytes(), "sealed_test"):
            try:
                result = read_record(path, TestResult)
            except ValueError:  # a record that holds one, not the result itself
                continue
            if result.snapshot_id == snapshot_id:
                return result
    return None


def _rollouts(records: Path, snapshot_id: str, split: str, reruns: int) -> list[Trajectory]:
    """The snapshot's final rollouts on `split`, from the rollout record holding the most of
    its tasks (an algorithm that evaluates a snapshot on part of a split first, then on all of
    it, keeps both)."""
    best: list[Trajectory] = []
    for path in sorted(records.rglob("*.jsonl")):
        if ".replaced-" in path.name or not _is(_first_line(path), "trajectory"):
            continue
        final = final_trajectories(RolloutRecord(path), reruns)
        mine = [t for t in final if t.snapshot_id == snapshot_id and t.split == split]
        if len({t.task_id for t in mine}) > len({t.task_id for t in best}):
            best = mine
    return best


def _first_line(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.readline()


def _is(text: bytes, kind: str) -> bool:
    """Whether a record's text says it is of `kind` (as `RecordStore` and the rollout engine
    write it: `"kind": "<kind>"`)."""
    return f'"kind": "{kind}"'.encode() in text
