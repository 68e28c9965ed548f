"""After a roll-back of the baseline mid-search, the Evolver's next round starts from the
restored baseline, and no later round promotes the node the roll-back set aside (the offline
demo, real MiniAgent runs through the simulator)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger, rollback
from flashrsi_dagster.environments.attribution import work_for
from flashrsi_dagster.experiment import open_experiment
from tests.conftest import needs_jails

pytestmark = [needs_jails, pytest.mark.slow]

EXAMPLE = Path(__file__).parents[3] / "examples" / "evolver.yaml"


def test_the_round_after_a_roll_back_starts_from_the_restored_baseline(tmp_path):
    config = load_config(EXAMPLE, ["--experiment.home", str(tmp_path)])
    evolver = Evolver(open_experiment(config), log=lambda _: None)
    while (first := evolver.read_state().round(1)) is None or first.decision is None:
        step = evolver.next()
        work_for(step.candidate)
        evolver.do(step)
    promoted = first.decision.parent_after
    vanilla = evolver.read_state().cold_start.vanilla_id
    assert first.decision.promoted and promoted != vanilla  # the demo's round 1 promotes

    entry = rollback(evolver, vanilla, "round 1's node regressed on new tasks")

    assert entry.baseline.snapshot_id == promoted
    assert evolver.read_state().parent() == vanilla
    state = evolver.run()
    assert state.round(2).plan.parent_id == vanilla  # the next round, from the baseline
    later = [rd.decision for rd in state.rounds[1:]]
    assert all(d.promoted != first.decision.promoted for d in later)
    assert all(d.parent_after != promoted for d in later)
    assert Ledger.of(evolver.experiment).baseline().candidate.snapshot_id != promoted
