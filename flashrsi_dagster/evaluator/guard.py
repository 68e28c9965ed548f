"""The host's fixed evaluation basis, asked before every evaluation of every algorithm.

    records/evaluator/
      manifest.json          EvaluatorManifest: the evaluator's files, recorded at the first
                             evaluation, amended only when new task data passed the checks
      sets/dev-e001.json     EvalSetVersion: the tasks of dev/e1, by id and content digest
      sets/train-e002.json   …

`Evaluator.before(name, tasks)` shows the evaluator's files to be the recorded ones (else
`EvaluatorChanged`, naming the file) and returns the version of the set the evaluation
uses, which the caller records beside its results. Its reads and writes hold the
experiment's `locks/evaluator.lock`: candidates of one round ask it side by side, and a
version or an amendment must be recorded once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from flashrsi_dagster.benchmarks.base import Benchmark, Task
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.evaluator.files import (
    Role,
    data_files,
    scoring_modules,
    set_digest,
    task_digest,
    verifier_files,
)
from flashrsi_dagster.evaluator.manifest import (
    EvaluatorChanged,
    EvaluatorManifest,
    amended,
    build,
    changed_data,
)
from flashrsi_dagster.evaluator.sets import EvalSets, EvalSetVersion
from flashrsi_dagster.experiment.lock import LOCKS, StepLock
from flashrsi_dagster.records import RecordStore, read_optional

Inherited = tuple[Path, str, bool]
"""A fork's origin: its `records/evaluator` folder, its name, whether its versions are reused."""


class Evaluator:
    """One experiment's evaluator guard and evaluation-set registry."""

    def __init__(
        self,
        records: RecordStore,
        folder: Path,
        config: BenchmarkConfig,
        benchmark: Benchmark,
        *,
        inherits: Inherited | None = None,
    ) -> None:
        """`inherits`: a fork's origin, whose versions it continues from (`EvalSets.inherit`)."""
        self.records, self.folder = records, folder
        self.config, self.benchmark = config, benchmark
        self.sets = EvalSets(records, folder / "sets")
        self.inherits = inherits
        self._lock = StepLock(records.root / LOCKS / "evaluator.lock")

    def _inherit(self) -> None:
        if self.inherits is not None:
            origin, name, reusable = self.inherits
            self.sets.inherit(origin / "sets", name, reusable=reusable)

    @property
    def manifest_path(self) -> Path:
        return self.folder / "manifest.json"

    def before(
        self, name: str, tasks: Sequence[Task], *, drawn_from: Sequence[Task] | None = None
    ) -> EvalSetVersion:
        """Verify the evaluator, then the version of the set this evaluation uses: `tasks`,
        or the whole set they are `drawn_from` (a batch of train names train's version)."""
        whole = tuple(drawn_from if drawn_from is not None else tasks)
        now = self._files(whole)
        with self._lock.held():
            return self._before(name, whole, now)

    def _before(self, name: str, whole: tuple[Task, ...], now: dict[Path, Role]) -> EvalSetVersion:
        self._inherit()
        manifest = self.manifest()
        changed = changed_data(manifest, now)
        version = self.sets.version_for(name, {t.id: task_digest(t) for t in whole})
        if changed:
            reason = f"new task data, every recorded task unchanged ({version.label})"
            self.records.write(self.manifest_path, amended(manifest, changed, reason))
        return version

    def before_sealed_test(self, tasks: Sequence[Task]) -> EvalSetVersion:
        """As `before`, and the test split shown to be the one drawn at the start."""
        recorded = self.manifest().sealed_test
        now = set_digest((t.id, task_digest(t)) for t in tasks)
        if recorded is not None and now != recorded:
            raise EvaluatorChanged(
                "the evaluator changed: the test split's tasks differ from those drawn when "
                "the experiment started (a task added, removed or edited, or the split "
                "redrawn); the sealed test is not run on another set"
            )
        with self._lock.held():
            return self._before_test(tasks)

    def _before_test(self, tasks: Sequence[Task]) -> EvalSetVersion:
        self._inherit()
        manifest = self.manifest()
        changed = changed_data(manifest, self._files(()))
        version = self.sets.version_for("test", {t.id: task_digest(t) for t in tasks})
        if changed:
            reason = f"new task data, the test split unchanged ({version.label})"
            self.records.write(self.manifest_path, amended(manifest, changed, reason))
        return version

    def manifest(self) -> EvaluatorManifest:
        """The recorded manifest, recorded now (from the whole search split and the sealed
        test's digest) if this is the experiment's first evaluation."""
        with self._lock.held():
            recorded = read_optional(self.manifest_path, EvaluatorManifest)
            if recorded is not None:
                return recorded
            return self._record_manifest()

    def _record_manifest(self) -> EvaluatorManifest:
        splits = load_splits(self.config, self.benchmark)
        sealed = splits.test_digest(task_digest) if splits.test_size else None
        made = build(self._files((*splits.train, *splits.dev)), sealed)
        return self.records.write(self.manifest_path, made)

    def _files(self, tasks: Sequence[Task]) -> dict[Path, Role]:
        files: dict[Path, Role] = {path: "module" for path in scoring_modules()}
        for task in tasks:
            files.update((path, "verifier") for path in verifier_files(task))
        files.update((path, "data") for path in data_files(self.config))
        return files
