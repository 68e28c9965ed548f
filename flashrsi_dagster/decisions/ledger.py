"""The decision ledger: every adopt, reject and roll-back of an experiment, with its reason and
its evidence, one JSON line each in `records/ledger.jsonl` (appended through the integrity
chain, redacted like every record).

An entry says what was decided about which candidate, against which baseline, on which
evaluation set, why, and where its raw results are (`raw`: records under the experiment
folder, never deleted; the candidate's content is its snapshot, which the store keeps under
`refs/snapshots/<id>`, so no garbage collection reaches it). Entries are derived from the
algorithms' own records (`decisions(state)`) and appended by `Ledger.sync`, which skips ids
already there: a step read back, resumed or re-run never writes an entry twice. Only a
roll-back (`decisions.rollback`) is not derived: it is a decision of the host's user.

`scope` says what an adopted candidate becomes the baseline of: `experiment` (what later runs
start from: the promotion, a roll-back), `branch:<module>` or `integration` (ModularRSI's
branches). The experiment's baseline is the candidate of its last `experiment` entry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.decisions.compare import Comparison
from flashrsi_dagster.experiment.lock import LOCKS, StepLock
from flashrsi_dagster.records import Record, RecordStore

LEDGER = "records/ledger.jsonl"
EXPERIMENT = "experiment"
"""The scope of decisions about the experiment's baseline."""


def eval_set_version(split: str, task_ids: Iterable[str]) -> str:
    """The version of an evaluation set: its split and a digest of its sorted task ids.

    The one place the ledger names evaluation sets; when versioned sets land, this returns
    their version instead."""
    ids = sorted(set(task_ids))
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
    return f"{split}:{len(ids)}:sha256-{digest}"


class Ref(BaseModel):
    """A snapshot, and the round and slot that made it (None for a hand-picked one)."""

    model_config = ConfigDict(extra="forbid")

    snapshot_id: str | None = Field(description="None when the edit committed nothing.")
    round: int | None = None
    slot: str | None = None
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness made this one (`worker.harness: adopted`, "
        "DGM's self-modification); None: the Worker role's own harness, or none (a seed).",
    )


class Evidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: dict[str, float | int | None] = Field(default_factory=dict)
    paired: dict[str, Any] | None = Field(
        None, description="The paired statistics against the baseline (`stats.paired`)."
    )
    gates: list[dict[str, Any]] = Field(
        default_factory=list, description="Gate verdicts in order: name, passed, reason."
    )
    comparison: Comparison | None = Field(
        None, description="The multi-metric comparison, judged by the declared trade-off rule."
    )
    not_compared: str | None = Field(None, description="Why there is no comparison.")
    behaviour: dict[str, Any] | None = Field(
        None,
        description="The behaviour signal against the same baseline (`stats.behaviour`): a "
        "higher score with far fewer model calls or tokens is flagged, never rejected.",
    )
    entries: list[str] = Field(
        default_factory=list, description="Ledger entries this one rests on (a roll-back's)."
    )
    runs: list[str] = Field(
        default_factory=list,
        description="A roll-back's: each run of the experiment in flight it cancelled and "
        "waited for, and what was done to stop it.",
    )
    verified: list[str] = Field(
        default_factory=list,
        description="A roll-back's: what was checked before the baseline was restored.",
    )
    contamination: dict[str, Any] | None = Field(
        None,
        description="The content check's verdict on a candidate it rejected: the rules "
        "crossed and every hit (task, split, file, lines, kind; held-out tasks unnamed).",
    )


class Decision(Record):
    kind: Literal["decision"] = "decision"
    id: str = Field(description="Stable: the same decision derived again has the same id.")
    decision: Literal["adopt", "reject", "rollback"]
    algorithm: str
    scope: str = Field(description="`experiment`, `branch:<module>` or `integration`.")
    candidate: Ref
    baseline: Ref = Field(description="What the candidate was compared with (or replaces).")
    reason: str
    evidence: Evidence = Field(default_factory=Evidence)
    eval_set: str | None = Field(
        description="The evaluation set's version (`eval_set_version`); None: none was run."
    )
    raw: list[str] = Field(
        default_factory=list,
        description="Records (relative to the experiment folder) with the raw results.",
    )


class Ledger:
    """An experiment's ledger: read by anyone, appended to only through `records`."""

    def __init__(self, root: Path, records: RecordStore | None = None) -> None:
        self.root = Path(root)
        self.path = self.root / LEDGER
        self.records = records

    @classmethod
    def of(cls, experiment) -> Ledger:
        return cls(experiment.paths.root, experiment.records)

    def entries(self) -> list[Decision]:
        """Every entry in order (a torn last line, left by a crash, is not one yet)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")[:-1]
        return [Decision.model_validate_json(line) for line in lines if line.strip()]

    def append(self, decision: Decision) -> Decision:
        assert self.records is not None, "a ledger opened for reading"
        value = self.records.redactor.value(decision.model_dump(mode="json"))
        line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        self.records.append_line(self.path, (line + "\n").encode("utf-8"))
        return Decision.model_validate(value)

    def sync(self, decisions: Iterable[Decision]) -> list[Decision]:
        """Append the decisions not on record yet, in order; returns those appended. Holds
        the ledger's lock: candidates of one round sync side by side, and each must see what
        the other appended."""
        with StepLock(self.root / LOCKS / "ledger.lock").held():
            known = {d.id for d in self.entries()}
            added = []
            for decision in decisions:
                if decision.id not in known:
                    added.append(self.append(decision))
                    known.add(decision.id)
            return added

    def baseline(self) -> Decision | None:
        """The entry that set the experiment's baseline last (None: no promotion yet); a
        refused adoption (`reject`, `decisions.adoption`) set nothing."""
        return latest_baseline(self.entries())


def latest_baseline(entries: list[Decision]) -> Decision | None:
    """Of `entries`, the last that set the experiment's baseline (adopted or restored it)."""
    made = (d for d in reversed(entries) if d.decision != "reject")
    return next((d for d in made if d.scope == EXPERIMENT), None)


def raw_paths(root: Path, *paths: Path) -> list[str]:
    """Those of `paths` that exist, relative to the experiment folder."""
    return [p.relative_to(root).as_posix() for p in paths if p.exists()]
