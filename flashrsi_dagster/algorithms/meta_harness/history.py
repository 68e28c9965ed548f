"""The Worker's history folder: every earlier version and every record, as files.

Shown to the Worker at `.history/` inside its edit folder during each step::

    .history/
      index.json                    snapshot id -> its folder, round, slot, parent, dev score,
                                    status, the target's token totals on dev
      frontier.json                 the Pareto frontier of dev score x context tokens per task
                                    (`frontier.py`), best dev score first
      snapshots/<short id>/         a checkout of every evaluated snapshot (regressed ones too)
      trajectories/round-<k>/       round k's candidate c0 (`round-<k>-c<i>/`: slot c<i>)
        round.json                  the round's outcome (evaluated / rejected, score, reason)
        edit.json                   the edit decision of a Worker step (committed, no-op, refused)
        worker.json                 the Worker's own trajectory of that step
        summary.json                the candidate in brief: status, dev score, tokens, changed
                                    files, and the Worker's report (its final message) with
                                    the hypothesis and axis of change its marker lines give
        dev/<task id>.json          every evaluation rollout (redacted, as recorded)

Records are copied as written (already redacted); nothing is concatenated or truncated, and
every path is relative to the edit folder.

The folder is a **view** the framework keeps per experiment, outside the experiment home
(the Worker must find no way to the records), and brings up to date once per step: only
what the records added since is written, so a step's cost does not grow with the history.
A jailed Worker sees the view through a read-only bind mount — nothing is copied, nothing
is checked afterwards, because nothing can have changed. An unconfined Worker
(`confinement: none`) gets a copy of it (`environments/confinement.lent_copies`), removed
after the step with whatever the Worker wrote in it: the view itself is never lent.

With several candidates per round, each slot has a view of its own (`for_experiment(slot=)`):
the candidates of a round run side by side, and none may rebuild or drop a view another's
Worker is reading. Each is given the rounds before its own only, so every
candidate of a round sees the same history, whichever of them ran first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

from flashrsi_dagster import scratch
from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.algorithms.meta_harness import markers
from flashrsi_dagster.algorithms.meta_harness.frontier import frontier
from flashrsi_dagster.algorithms.meta_harness.records import (
    EditRecord,
    Layout,
    RoundRecord,
    candidate_stem,
)
from flashrsi_dagster.records import Trajectory, read_optional, write_text_atomic
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import HISTORY_DIR, SnapshotStore

# Reserved in every snapshot: the guard refuses a symlink into it.
HISTORY = HISTORY_DIR


_remembered: dict[str, tuple[tuple[int, int, int], dict]] = {}
"""Cache root -> (its manifest file's identity, the manifest) as this process wrote it."""


def _identity(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


class HistoryView:
    """The history folder of one experiment, kept at `root/tree` between Worker steps."""

    VERSION = 3

    def __init__(self, root: Path, store: SnapshotStore, layout: Layout) -> None:
        self.root, self.store, self.layout = Path(root), store, layout
        self.tree, self._manifest_path = self.root / "tree", self.root / "manifest.json"
        self._source = {"records": str(layout.folder.resolve()), "store": str(store.root)}

    @classmethod
    def for_experiment(
        cls, store: SnapshotStore, layout: Layout, slot: str = ONLY_SLOT
    ) -> HistoryView:
        """The view of the experiment's candidate `slot` in the framework's temp root, never
        inside the experiment home. It outlives the process (each Dagster run of the daemon
        flow is one), so a step adds only the rounds since whichever process runs it; the
        experiment's end removes it."""
        key = hashlib.sha256(str(layout.folder.resolve()).encode()).hexdigest()[:20]
        name = key if slot == ONLY_SLOT else f"{key}-{slot}"
        return cls(scratch.root() / "history" / name, store, layout)

    def update(self, rounds: list[RoundRecord]) -> Path:
        """Bring the view up to date with `rounds` and return its folder."""
        manifest = self._load()
        if manifest is None:
            shutil.rmtree(self.tree, ignore_errors=True)
            manifest = {"version": self.VERSION, "source": self._source, "snapshots": {}}
            manifest["rounds"] = {}
        self.tree.mkdir(parents=True, exist_ok=True)
        _sync(self.tree, manifest, self.store, self.layout, rounds)
        self._save(manifest)
        return self.tree

    def discard(self) -> None:
        _remembered.pop(str(self.root), None)
        shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(OSError):  # the views' folder, once no experiment has one
            self.root.parent.rmdir()

    def _load(self) -> dict | None:
        remembered = _remembered.pop(str(self.root), None)
        try:
            if remembered and remembered[0] == _identity(self._manifest_path):
                manifest = remembered[1]  # this process wrote it: no need to parse it again
            else:
                manifest = json.loads(self._manifest_path.read_text())
            self._manifest_path.unlink()  # a manifest only ever describes a finished update
        except (OSError, ValueError):
            return None
        if manifest.get("version") != self.VERSION or manifest.get("source") != self._source:
            return None
        return manifest

    def _save(self, manifest: dict) -> None:
        # Not fsynced: a torn manifest after a crash only means a fresh build.
        partial = self._manifest_path.with_suffix(".partial")
        partial.write_text(json.dumps(manifest))
        os.replace(partial, self._manifest_path)
        _remembered[str(self.root)] = (_identity(self._manifest_path), manifest)


def _sync(
    history: Path, manifest: dict, store: SnapshotStore, layout: Layout, rounds: list[RoundRecord]
) -> None:
    index: dict[str, dict] = {}
    wanted_rounds = {}
    for record in rounds:
        if record.snapshot_id and record.snapshot_id not in index:
            folder = f"snapshots/{record.snapshot_id[:12]}"
            if manifest["snapshots"].get(record.snapshot_id) != folder:
                _replace(history / folder)
                store.check_out(record.snapshot_id, history / folder)
                store.forget_checkout(history / folder)
                manifest["snapshots"][record.snapshot_id] = folder
            index[record.snapshot_id] = {
                "folder": f"{HISTORY}/{folder}",
                "round": record.round,
                "slot": record.slot,
                "parent_id": record.parent_id,
                "dev_score": record.dev_score,
                "status": record.status,
                "tokens": _tokens(record),
            }
        folder = f"trajectories/{candidate_stem(record.round, record.slot)}"
        wanted_rounds[folder] = signature = _signature(layout, record.round, record.slot)
        if manifest["rounds"].get(folder) != signature:
            _replace(history / folder)
            _copy_round(history / folder, layout, record)
    _drop_unwanted(history, manifest, wanted_rounds, set(index))
    _write_json(history / "index.json", index)
    _write_json(history / "frontier.json", [p.as_json() for p in frontier(rounds)])


def _write_json(path: Path, value: object) -> None:
    write_text_atomic(path, json.dumps(value, indent=1) + "\n")
    os.chmod(path, 0o644)  # the jail user reads it; atomic writes are 0600


def _tokens(record: RoundRecord) -> dict | None:
    """The target's token totals over a candidate's dev rollouts (None: not recorded)."""
    if record.dev_input_tokens is None:
        return None
    return {
        "input": record.dev_input_tokens,
        "output": record.dev_output_tokens,
        "context_per_task": record.dev_input_tokens / max(record.dev_tasks, 1),
    }


def _drop_unwanted(history: Path, manifest: dict, rounds: dict, snapshot_ids: set[str]) -> None:
    """Rounds and snapshots the records no longer name (a replaced evaluation, say)."""
    for folder in set(manifest["rounds"]) - set(rounds):
        _replace(history / folder)
    for snapshot_id in set(manifest["snapshots"]) - snapshot_ids:
        _replace(history / manifest["snapshots"].pop(snapshot_id))
    manifest["rounds"] = rounds


def _replace(folder: Path) -> None:
    """Remove `folder`, ready to be written again."""
    if folder.is_symlink() or folder.exists():
        _remove(folder)


def _signature(layout: Layout, k: int, slot: str) -> list:
    """What a candidate's copy was made from: a changed record means a changed copy."""
    signature = []
    paths = (layout.round(k, slot), layout.edit(k, slot), layout.worker(k, slot))
    for path in (*paths, layout.rollouts(k, slot)):
        try:
            signature.append(list(_identity(path)))
        except FileNotFoundError:
            signature.append(None)
    return signature


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _copy_round(folder: Path, layout: Layout, record: RoundRecord) -> None:
    k, slot = record.round, record.slot
    folder.mkdir(parents=True, exist_ok=True)
    for source, name in (
        (layout.round(k, slot), "round.json"),
        (layout.edit(k, slot), "edit.json"),
        (layout.worker(k, slot), "worker.json"),
    ):
        if source.exists():
            shutil.copyfile(source, folder / name)
    summary = candidate_summary(record, read_optional(layout.edit(k, slot), EditRecord))
    summary["report"], summary["hypothesis"], summary["axis"] = _report(
        layout.worker(k, slot), slot
    )
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    rollouts = layout.rollouts(k, slot)
    if rollouts.exists():
        (folder / "dev").mkdir(exist_ok=True)
        for trajectory in RolloutRecord(rollouts).load():
            name = f"{trajectory.task_id}.attempt-{trajectory.attempt}.json"
            (folder / "dev" / name).write_text(trajectory.model_dump_json(indent=1) + "\n")


def candidate_summary(record: RoundRecord, edit: EditRecord | None) -> dict:
    """What a candidate was and what came of it, in one small file (the reference's
    `evolution_summary.jsonl` line): the Worker reads it before choosing a direction."""
    return {
        "round": record.round,
        "slot": record.slot,
        "status": record.status,
        "dev_score": record.dev_score,
        "tokens": _tokens(record),
        "reason": record.reason,
        "changed": edit.changed if edit else [],
    }


def _report(worker: Path, slot: str) -> tuple[str | None, str | None, str | None]:
    """The Worker's final message (its report), and the hypothesis and axis of change its
    marker lines give (None each when it wrote none). A coordinated session's report has a
    section per candidate (`Candidate c1:`): the candidate's own is read, when there is one."""
    try:
        trajectory = Trajectory.model_validate_json(worker.read_text())
    except (OSError, ValueError):
        return None, None, None
    text = _section(trajectory.answer or _last_assistant_text(trajectory), slot)
    found = {}
    for line in (text or "").splitlines():
        for marker in (markers.HYPOTHESIS, markers.AXIS):
            if line.strip().startswith(marker):
                found[marker] = line.strip().removeprefix(marker).strip() or None
    return text, found.get(markers.HYPOTHESIS), found.get(markers.AXIS)


def _section(text: str | None, slot: str) -> str | None:
    """The lines from `Candidate <slot>:` to the next `Candidate …:` line, or all of `text`."""
    lines = (text or "").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip().startswith("Candidate ")]
    mine = [i for i in starts if lines[i].strip().startswith(f"Candidate {slot}:")]
    if not mine:
        return text
    end = next((i for i in starts if i > mine[0]), len(lines))
    return "\n".join(lines[mine[0] : end])


def _last_assistant_text(trajectory: Trajectory) -> str | None:
    for message in reversed(trajectory.messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            return message["content"]
    return None
