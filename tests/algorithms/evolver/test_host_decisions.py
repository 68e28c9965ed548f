"""The host's decisions act on the Evolver's search: after a roll-back of the baseline
mid-search the next round starts from the restored baseline, and no later round promotes the
node the roll-back set aside; a node that violates the declared trade-off rule is not promoted
(the offline demo, real MiniAgent runs through the simulator)."""

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
SMALL = (  # rounds of one WHY x two candidates, on 12 train tasks x 2: the demo's round 1
    # still promotes a node (the decisions act on the search, whatever its size)
    *("--algorithm.max_why_per_round", "1", "--algorithm.recombinations_per_round", "0"),
    *("--algorithm.candidates_per_why", "2"),
    *("--algorithm.k", "2", "--benchmark.split_counts.train", "12"),
)


def test_the_round_after_a_roll_back_starts_from_the_restored_baseline(tmp_path):
    args = ["--experiment.home", str(tmp_path), *SMALL, "--algorithm.max_rounds", "2"]
    evolver = Evolver(open_experiment(load_config(EXAMPLE, args)), log=lambda _: None)
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
    state = evolver.run(until="sealed_test")  # the search; its test split is not the point
    assert state.round(2).plan.parent_id == vanilla  # the next round, from the baseline
    later = [rd.decision for rd in state.rounds[1:]]
    assert all(d.promoted != first.decision.promoted for d in later)
    assert all(d.parent_after != promoted for d in later)
    assert Ledger.of(evolver.experiment).baseline().candidate.snapshot_id != promoted


def test_a_node_that_violates_the_trade_off_rule_is_not_promoted(tmp_path):
    args = ["--experiment.home", str(tmp_path), *SMALL, "--algorithm.max_rounds", "1"]
    config = load_config(EXAMPLE, [*args, "--comparison.min_lift", "1"])  # round 1 is the claim
    evolver = Evolver(open_experiment(config), log=lambda _: None)
    state = evolver.run(until="sealed_test")

    first = state.round(1).decision
    assert first.promoted is None and first.refused  # the demo's round 1 promotes otherwise
    assert state.parent() == state.cold_start.vanilla_id
    entries = {e.id: e for e in Ledger.of(evolver.experiment).entries()}
    for found in first.refused:
        entry = entries[f"evolver/promotion/r001/refused/1.{found.candidate.slot}"]
        assert entry.decision == "reject" and entry.scope == "experiment"
        assert entry.evidence.comparison.verdict == "violates"
        assert "score lift >= +1" in entry.reason
