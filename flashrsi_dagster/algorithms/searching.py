"""What every algorithm class does the same way on top of the seam (`base.Algorithm`): the
benchmark and the evaluator guard it builds once, its record writes, its ledger sync, the
next step, and the engine's own loop over the steps (as `evolve()` and tests run it; hosts
drive `do()` one step per run instead). A class using it has `experiment`, `builders`, `log`
and the seam's methods."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.benchmarks.base import Benchmark
from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.evaluator import Evaluator


class Searching:
    experiment: Any
    builders: Any

    @cached_property
    def benchmark(self) -> Benchmark:
        return self.builders.benchmark(self.experiment.config.benchmark)

    @cached_property
    def evaluator(self) -> Evaluator:
        """The evaluator guard asked before every evaluation (`evaluator.Evaluator`)."""
        return Evaluator(
            self.experiment.records,
            self.experiment.paths.records / "evaluator",
            self.experiment.config.benchmark,
            self.benchmark,
        )

    def write[R](self, path: Path, record: R) -> R:
        """Write a record; returns the stored (redacted) copy, the one to show or log."""
        return self.experiment.records.write(path, record)  # type: ignore[type-var]

    def next(self) -> Step:
        return self.next_step(self.read_state())  # type: ignore[attr-defined]

    def record_decisions(self) -> None:
        """Append to the ledger what the records decided and it does not hold yet."""
        Ledger.of(self.experiment).sync(self.decisions(self.read_state()))  # type: ignore[attr-defined]

    def run(self, *, until: str | None = None) -> Any:
        """Every remaining step, in order (stopping before the first `until` step, if given);
        safe to call again after a crash (a folder whose records fail the integrity check is
        refused, naming the files). Returns the state at the end."""
        self.experiment.records.verify()
        try:
            while not (step := self.next()).finished and step.action != until:
                self.do(step)  # type: ignore[attr-defined]
        finally:
            self.close()  # type: ignore[attr-defined]
        return self.read_state()  # type: ignore[attr-defined]
