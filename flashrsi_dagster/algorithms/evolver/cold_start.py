"""The cold start: vanilla on the whole train split x K (the stability ledger and the frozen
baseline), the taxonomy (the benchmark's table, or two-stage induction from these failures),
and the first failure map: every train task vanilla does not always pass, diagnosed once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.evolver.diagnosis_call import diagnose_tasks
from flashrsi_dagster.algorithms.evolver.failure_map import FailureMap, fold
from flashrsi_dagster.algorithms.evolver.records import ColdStart
from flashrsi_dagster.algorithms.evolver.taxonomy import Taxonomy, TaxonomyError, builtin, induce
from flashrsi_dagster.algorithms.evolver.train_runs import run_summary
from flashrsi_dagster.records import Status, Trajectory

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.run import Evolver

INDUCTION_SAMPLES = 20


class ColdStartStep:
    def __init__(self, evolver: Evolver) -> None:
        self.e = evolver

    def run(self) -> ColdStart:
        e = self.e
        vanilla = e.seed()
        eval_set = e.evaluation_set()
        final = e.rollouts(vanilla, e.train_ids, e.layout.cold_start_rollouts, e.config.k)
        ledger = e.vanilla()
        rates = ledger.rates()
        failing = sorted(t for t, rate in rates.items() if rate < 1.0)
        taxonomy = self.taxonomy(final, failing)
        e.write(e.layout.taxonomy, taxonomy)
        worst = _worst_runs(final, failing)
        diagnoses = diagnose_tasks(e, 0, taxonomy, worst)
        empty = FailureMap(whys=taxonomy.names())
        e.write(e.layout.failure_map(0), fold(empty, vanilla.id, 0, diagnoses, {}))
        record = ColdStart(
            vanilla_id=vanilla.id,
            k=e.config.k,
            rates=rates,
            mean=ledger.mean(e.train_ids, e.config.k),
            taxonomy=f"{taxonomy.source}:{taxonomy.benchmark}",
            eval_set=eval_set,
            failing=len(failing),
        )
        return e.write(e.layout.cold_start, record)

    def taxonomy(self, final: list[Trajectory], failing: list[str]) -> Taxonomy:
        """The benchmark's table, unless induction is asked for or there is none; a failed
        induction raises TaxonomyError (never another benchmark's table)."""
        name = self.e.benchmark.name
        table = builtin(name)
        if table is not None and self.e.config.taxonomy == "builtin":
            return table
        samples = [run_summary(t) for t in _worst_runs(final, failing).values()]
        calls = iter(range(1, 3))

        def ask(instruction: str) -> str:
            run = self.e.ask(instruction, 0, f"induce-{next(calls)}")
            if run.status != Status.SUCCESS or not run.answer:
                detail = run.error.message if run.error else "no answer"
                raise TaxonomyError(f"{name}: the induction call failed ({run.status}): {detail}")
            return run.answer

        return induce(name, samples[:INDUCTION_SAMPLES], ask)


def _worst_runs(final: list[Trajectory], failing: list[str]) -> dict[str, Trajectory]:
    """Per failing task, one failed run (its first), the one the diagnosis reads."""
    runs: dict[str, Trajectory] = {}
    for t in sorted(final, key=lambda t: (t.task_id, t.attempt)):
        if t.task_id in failing and (t.score or 0.0) < 1.0:
            runs.setdefault(t.task_id, t)
    return runs
