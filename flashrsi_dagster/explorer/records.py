"""One candidate's records: the Worker's trajectory, every target trajectory, the decisions
with their evidence, its code and its diff to its parent.

A candidate's records are those its ledger entries list as raw results, and the records beside
them that share their name's stem (`round-001-worker.json` beside `round-001.json`): the
algorithms name a candidate's records after it, and not every one lists its Worker run. Only
these files are ever read, so a request cannot reach any other file. Test-split trajectories
are left out until the experiment is finalised (`candidates.sealed_test`)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from flashrsi_dagster.decisions.ledger import Decision
from flashrsi_dagster.experiment.paths import ExperimentPaths
from flashrsi_dagster.explorer.candidates import node_id
from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.views.messages import read_entries

_OTHER_SLOT = re.compile(r"c\d+[-.]")
"""`round-001-c1-worker.json` beside `round-001.json` is slot c1's, not slot c0's."""
MAX_FILE_BYTES = 2_000_000
"""A snapshot file larger than this is named, not sent."""
USAGE_COUNTS = ("input_tokens", "output_tokens", "model_calls", "tool_calls", "turns")


def node_decisions(entries: list[Decision], node: str) -> list[Decision]:
    return [e for e in entries if node_id(e.candidate) == node]


def node_records(paths: ExperimentPaths, decisions: list[Decision]) -> list[Path]:
    """The candidate's record files: its entries' raw results and their stem's siblings."""
    found: dict[Path, None] = {}
    for decision in decisions:
        for raw in decision.raw:
            path = (paths.root / raw).resolve()
            if not path.is_relative_to(paths.records.resolve()) or not path.is_file():
                continue
            found[path] = None
            stem = path.name.split(".")[0]
            for sibling in sorted(path.parent.glob(f"{stem}-*.json*")):
                if not _OTHER_SLOT.match(sibling.name[len(stem) + 1 :]):
                    found.setdefault(sibling.resolve(), None)
    return list(found)


def trajectories(paths: ExperimentPaths, files: list[Path], public_test: bool) -> dict[str, Any]:
    """The Worker's trajectories (no split) and the target's (with one), each with its
    entries; test-split ones only once the sealed test is public."""
    worker, target = [], []
    for path in files:
        for trajectory in _read_trajectories(path):
            if trajectory.split == "test" and not public_test:
                continue
            shown = trajectory_json(trajectory, path.relative_to(paths.root).as_posix())
            (target if trajectory.split else worker).append(shown)
    return {"worker": worker, "target": target, "tokens": tokens_by_role(worker, target)}


def _read_trajectories(path: Path) -> list[Trajectory]:
    """The trajectories a record file holds: a JSON record of kind `trajectory`, or the
    lines of a JSONL file that are (other records are not)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines() if path.suffix == ".jsonl" else [text]
    found = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a torn last line, left by a crash: not a record yet
        if isinstance(value, dict) and value.get("kind") == "trajectory":
            # from the JSON text: only that carries the encoded values `Trajectory` restores
            found.append(Trajectory.model_validate_json(line))
    return found


def trajectory_json(trajectory: Trajectory, record: str) -> dict[str, Any]:
    return {
        "record": record,
        "task_id": trajectory.task_id,
        "split": trajectory.split,
        "attempt": trajectory.attempt,
        "status": str(trajectory.status),
        "score": trajectory.score,
        "answer": trajectory.answer,
        "error": trajectory.error.model_dump() if trajectory.error else None,
        "usage": trajectory.usage.model_dump(),
        "duration": trajectory.duration,
        "entries": [dataclasses.asdict(e) for e in read_entries(trajectory.messages)],
    }


def tokens_by_role(worker: list[dict], target: list[dict]) -> dict[str, dict[str, Any]]:
    """Tokens, model calls and cost the candidate's trajectories record, per role."""
    roles = {}
    for role, runs in (("worker", worker), ("target", target)):
        total: Counter = Counter()
        costs = [r["usage"]["cost"] for r in runs if r["usage"]["cost"] is not None]
        for run in runs:
            usage = run["usage"]
            total.update({k: usage.get(k) or 0 for k in USAGE_COUNTS})
            total.update({"runs": 1})
        roles[role] = {k: total[k] for k in (*USAGE_COUNTS, "runs")}
        roles[role]["cost"] = sum(costs) if costs else None
    return roles


def other_records(paths: ExperimentPaths, files: list[Path]) -> list[dict[str, Any]]:
    """The candidate's records that are not trajectories (its round, edit, content check,
    promotion), as they are on disk."""
    shown = []
    for path in files:
        if path.suffix != ".json":
            continue
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict) and value.get("kind") in {"trajectory", "sealed_test"}:
            continue
        shown.append({"record": path.relative_to(paths.root).as_posix(), "value": value})
    return shown


def code_tree(store: SnapshotStore | None, snapshot_id: str) -> list[dict[str, Any]]:
    if store is None:
        return []
    return [{"path": p, "bytes": len(data)} for p, data in sorted(store.files(snapshot_id).items())]


def code_file(store: SnapshotStore | None, snapshot_id: str, path: str) -> dict[str, Any]:
    """One file of the snapshot (`SnapshotError` for a path not in it, or not a path)."""
    if store is None:
        raise LookupError("this experiment has no snapshot store")
    data = store.read_file_at(snapshot_id, path)
    if len(data) > MAX_FILE_BYTES:
        return {"path": path, "bytes": len(data), "text": None, "note": "too large to show"}
    try:
        return {"path": path, "bytes": len(data), "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"path": path, "bytes": len(data), "text": None, "note": "binary"}


def diff_to_parent(store: SnapshotStore | None, snapshot_id: str) -> dict[str, Any]:
    """The unified diff from the snapshot's parent commit to it, whole (git's own); the page
    lays it out unified or side by side."""
    if store is None:
        return {"parent": None, "diff": "", "stats": None}
    parent = store.get(snapshot_id).parent_id
    if parent is None:
        return {"parent": None, "diff": "", "stats": None}
    stats = store.diff_stats(parent, snapshot_id)
    return {
        "parent": parent,
        "diff": store.diff(parent, snapshot_id),
        "stats": dataclasses.asdict(stats),
    }
