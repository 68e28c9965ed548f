"""The diagnosis model call: failed train runs in, one WHY (and a WHERE hint, audit only) per
failing task out, read strictly (`protocol.read_diagnoses`). Runs go in batches so a large
train split never makes one oversized prompt; each batch's call is kept as a record. A
malformed answer is asked again with its parse error (`Evolver.ask_until_read`); only when
`answer_retries` are spent does the round become `errored`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.evolver.failure_map import Diagnosis
from flashrsi_dagster.algorithms.evolver.prompts import diagnose_instruction
from flashrsi_dagster.algorithms.evolver.protocol import read_diagnoses
from flashrsi_dagster.algorithms.evolver.taxonomy import Taxonomy
from flashrsi_dagster.algorithms.evolver.train_runs import run_summary
from flashrsi_dagster.answers import ProtocolError
from flashrsi_dagster.records import Status, Trajectory

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.run import Evolver

BATCH = 10


class DiagnosisFailed(RuntimeError):
    """The diagnosis call failed or its answer could not be read."""


def diagnose_tasks(
    e: Evolver, r: int, taxonomy: Taxonomy, runs: Mapping[str, Trajectory]
) -> list[Diagnosis]:
    """Diagnoses of the failing train tasks `runs` (task -> a failed run of it)."""
    found: list[Diagnosis] = []
    tasks = sorted(runs)
    for n, start in enumerate(range(0, len(tasks), BATCH), 1):
        batch = tasks[start : start + BATCH]
        text = diagnose_instruction(taxonomy, {t: run_summary(runs[t]) for t in batch})

        def read(call: Trajectory, batch: list[str] = batch) -> list[Diagnosis]:
            if call.status != Status.SUCCESS:
                detail = call.error.message if call.error else "no answer"
                raise DiagnosisFailed(f"the diagnosis call failed ({call.status}): {detail}")
            return read_diagnoses(call.answer, failing=batch, whys=taxonomy.names(), round=r)

        try:
            found += e.ask_until_read(text, r, f"diagnose-{n}", read)
        except ProtocolError as exc:
            raise DiagnosisFailed(str(exc)) from None
    return found
