"""`worker.harness: adopted` in the Evolver: a round's candidates are designed by its parent,
the library's best so far (seed 003: the adopted harness makes the next), run as the Worker with
the Worker role's model. A merge (recombination) uses no Worker and names no designer."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.experiment import open_experiment
from tests.conftest import needs_jails

pytestmark = needs_jails

EXAMPLE = Path(__file__).parents[3] / "examples" / "evolver.yaml"
SMALL = [  # two rounds of one WHY x two candidates, on 12 train tasks x 2 (6 test tasks)
    *("--algorithm.max_rounds", "2", "--algorithm.max_why_per_round", "1"),
    *("--algorithm.candidates_per_why", "2", "--algorithm.recombinations_per_round", "0"),
    *("--algorithm.k", "2", "--benchmark.split_counts.train", "12"),
    *("--benchmark.split_counts.test", "6"),
]


@pytest.fixture(scope="module")
def adopted(tmp_path_factory):
    home = tmp_path_factory.mktemp("evolver-adopted")
    overrides = ["--experiment.home", str(home), "--algorithm.worker.harness", "adopted", *SMALL]
    evolver = Evolver(open_experiment(load_config(EXAMPLE, overrides)), log=lambda _: None)
    return evolver, evolver.run()


def test_every_candidate_is_designed_by_its_round_s_parent(adopted):
    evolver, state = adopted
    designed = [n for n in evolver.nodes(state) if n.produced_by is not None]
    assert designed
    assert all(n.produced_by == n.parent_id for n in designed)
    vanilla = state.cold_start.vanilla_id
    assert {n.produced_by for n in designed if n.round == 1} == {vanilla}


def test_a_promoted_node_designs_the_next_round(adopted):
    evolver, state = adopted
    first = state.round(1)
    assert first.decision.promoted is not None  # round 1 put a node in the library
    second = [n for n in evolver.nodes(state) if n.round == 2]
    assert second and {n.produced_by for n in second} == {first.decision.parent_after}
    commits = evolver.experiment.snapshots
    made = [commits.get(n.snapshot_id) for n in second if n.snapshot_id]
    assert all(s.metadata.get("produced_by") == first.decision.parent_after for s in made)


def test_the_ledger_carries_both_edges(adopted):
    evolver, _ = adopted
    entries = [e for e in Ledger.of(evolver.experiment).entries() if e.candidate.round == 2]
    assert entries and all(e.candidate.produced_by for e in entries)
