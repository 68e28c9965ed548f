"""Attacks on the paths where a round's candidates run side by side (separate runs, one
experiment home): an operator's re-evaluation racing the candidates in flight.

A process's step is stood for by a thread holding the same locks on files of its own opening:
`flock` locks belong to open files, so two openings in one process contend as two processes'
would."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from flashrsi_dagster.algorithms.meta_harness import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.lock import LOCKS, StepLock
from tests.sabotage.helpers import EXAMPLE


def _opened(home: Path) -> MetaHarness:
    overrides = ["--experiment.home", str(home), "--benchmark.limit", "3"]
    overrides += ["--algorithm.max_steps", "2", "--algorithm.candidates_per_round", "2"]
    return MetaHarness(open_experiment(load_config(EXAMPLE, overrides)), log=lambda _: None)


def test_re_evaluating_a_round_waits_for_the_next_rounds_candidates_in_flight(tmp_path):
    """Round 2's candidates read round 1's records (their Workers' history, the order check
    of each edit): a rematerialization of round 1 that moved them aside meanwhile would give
    round 2's candidates different histories, or refuse the one that starts late ("round 1
    has no result yet"). So it is a sequential step: it waits for every candidate in flight."""
    harness = _opened(tmp_path)
    while (step := harness.next()).round is not None and step.round <= 1:
        harness.do(step)
    harness.close()
    root, record = harness.experiment.paths.root, harness.layout.round(1, "c0")
    before = record.read_bytes()
    in_flight, release, done = threading.Event(), threading.Event(), threading.Event()

    def round_2_candidate() -> None:  # another process's candidate step, at work
        with StepLock.of(root).held(shared=True), StepLock(root / LOCKS / "r002.c0.lock").held():
            in_flight.set()
            release.wait(60)

    threading.Thread(target=round_2_candidate, daemon=True).start()
    assert in_flight.wait(10)
    operator = _opened(tmp_path)  # the UI's rematerialization, in a run of its own
    redo = threading.Thread(
        target=lambda: (operator.evaluate_round(1, "c0", again=True), done.set()), daemon=True
    )
    redo.start()
    time.sleep(2)
    archived = sorted(p.name for p in harness.layout.folder.glob("*replaced-*"))
    assert not done.is_set() and archived == [] and record.read_bytes() == before
    release.set()
    redo.join(120)
    assert done.is_set()
    archived = sorted(p.name for p in harness.layout.folder.glob("*replaced-*"))
    assert sorted(name.split(".replaced-")[0] for name in archived) == [
        "round-001",
        "round-001-dev",
    ]
    assert operator.read_state().round(1, "c0").status == "evaluated"
    operator.close()
    operator.experiment.records.verify()
