"""Versioned evaluation sets: `dev/e1`, `train/e1`, `train/e2`, …

A version names a fixed task set: every task's id and content digest (`files.task_digest`).
Versions are recorded once and never rewritten (`records/evaluator/sets/<name>-e<n>.json`,
through the integrity chain). An evaluation on a set that matches no version of its name
(a task added to the evolution data between runs, say) makes the next version; one added
explicitly (`EvalSets.extend`) does too. The old version and its results stay.

A recorded task may not change under its id (that would edit the checker: refused), and a
task may not move between the train, dev and test splits (the sealed test would leak).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.benchmarks.splits import SPLITS
from flashrsi_dagster.evaluator.files import set_digest
from flashrsi_dagster.evaluator.manifest import EvaluatorChanged
from flashrsi_dagster.records import Record, RecordStore, read_record

_NAME = re.compile(r"[a-z][a-z0-9_-]*")


class EvalSetVersion(Record):
    kind: Literal["eval_set"] = "eval_set"
    name: str = Field(description="The set: a split name (train, dev, test) or another name.")
    version: int = Field(ge=1, description="1, 2, …: e1, e2, … of this name.")
    tasks: dict[str, str] = Field(description="Task id -> content digest, in set order.")
    digest: str = Field(description="One digest of the (id, content) pairs.")
    previous: str | None = Field(None, description="The label of the version before it.")
    added: list[str] = Field(default_factory=list, description="Ids new since `previous`.")
    removed: list[str] = Field(default_factory=list, description="Ids gone since `previous`.")
    reason: str
    inherited_from: str | None = Field(
        None, description="The experiment this version was recorded in, when a fork inherited it."
    )
    reusable: bool = Field(
        True,
        description="False: an inherited version a new night does not reuse (`experiment.fork."
        "eval_sets: next`): the same tasks evaluated again make the next version.",
    )

    @property
    def label(self) -> str:
        return label(self.name, self.version)


def label(name: str, version: int) -> str:
    return f"{name}/e{version}"


class EvalSets:
    """The versions of one experiment's evaluation sets, under `folder`."""

    def __init__(self, records: RecordStore, folder: Path) -> None:
        self.records, self.folder = records, folder

    def path(self, name: str, version: int) -> Path:
        return self.folder / f"{name}-e{version:03d}.json"

    def versions(self, name: str | None = None) -> list[EvalSetVersion]:
        """Every recorded version (of `name`), oldest first."""
        pattern = f"{name}-e*.json" if name else "*-e*.json"
        found = [read_record(p, EvalSetVersion) for p in self.folder.glob(pattern)]
        # by number, not by file name: e1000 comes after e999
        return sorted(
            (v for v in found if name is None or v.name == name), key=lambda v: (v.name, v.version)
        )

    def version_for(
        self, name: str, tasks: Mapping[str, str], reason: str = "evaluated"
    ) -> EvalSetVersion:
        """The version holding exactly `tasks` (id -> digest), recorded now if none does."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"evaluation set name {name!r}: expected a lower-case name")
        known = self.versions()
        _refuse_edits(name, tasks, known)
        digest = set_digest(tasks.items())
        same = [v for v in known if v.name == name and v.digest == digest and v.reusable]
        if same:
            return same[0]
        return self._record(name, dict(tasks), digest, [v for v in known if v.name == name], reason)

    def inherit(self, origin: Path, experiment: str, *, reusable: bool) -> list[EvalSetVersion]:
        """Copy every version recorded in `origin` (another experiment's sets folder: the one
        a fork starts from) under its own label, marked as inherited; numbering continues
        from them. Done once, before this experiment records a version of its own."""
        if any(v.inherited_from is None for v in self.versions()):
            return []
        found = [read_record(p, EvalSetVersion) for p in sorted(origin.glob("*-e*.json"))]
        copied = []
        for version in found:
            if self.path(version.name, version.version).exists():  # copied before a crash
                continue
            update = {"inherited_from": version.inherited_from or experiment}
            update["reusable"] = reusable and version.reusable
            copy = EvalSetVersion.model_validate(
                {**version.model_dump(exclude={"created", "kind"}), **update}
            )
            copied.append(self.records.write(self.path(version.name, version.version), copy))
        return copied

    def extend(self, name: str, new: Mapping[str, str], reason: str) -> EvalSetVersion:
        """A new version of `name`: its latest plus `new` tasks (a failing task added
        explicitly). The latest version is not touched."""
        mine = self.versions(name)
        if not mine:
            raise ValueError(f"no evaluation set {name!r} to extend")
        clash = sorted(set(new) & set(mine[-1].tasks))
        if clash:
            raise ValueError(f"{mine[-1].label} already holds {', '.join(clash)}")
        return self.version_for(name, {**mine[-1].tasks, **new}, reason)

    def _record(
        self,
        name: str,
        tasks: dict[str, str],
        digest: str,
        mine: list[EvalSetVersion],
        reason: str,
    ) -> EvalSetVersion:
        last = mine[-1] if mine else None
        version = EvalSetVersion(
            name=name,
            version=(last.version + 1) if last else 1,
            tasks=tasks,
            digest=digest,
            previous=last.label if last else None,
            added=[t for t in tasks if t not in last.tasks] if last else [],
            removed=[t for t in last.tasks if t not in tasks] if last else [],
            reason=reason,
        )
        return self.records.write(self.path(name, version.version), version)


def _refuse_edits(name: str, tasks: Mapping[str, str], known: list[EvalSetVersion]) -> None:
    for version in known:
        for task_id, digest in tasks.items():
            was = version.tasks.get(task_id)
            if was is None:
                continue
            if was != digest:
                raise EvaluatorChanged(
                    f"the evaluator changed: task {task_id}'s instruction or verifier differs "
                    f"from the one recorded in {version.label}; a recorded task is never "
                    "edited (add the new one under a new id: it goes into a new version)"
                )
            if name != version.name and {name, version.name} <= set(SPLITS):
                raise EvaluatorChanged(
                    f"task {task_id} was in {version.label} and is now in {name}: the splits "
                    "changed under the experiment (e.g. a row added to a pool the splits are "
                    "drawn from); start a new experiment"
                )
