"""`worker.harness: adopted` in ModularRSI: each step is analysed and edited by the version it
starts from — the module's branch as it stands, or the merge so far — run as the Worker with the
Worker role's model (seed 003). On the offline demo, one accepted branch version rewrites the
agent's final answer, so as the Worker it answers its analysis outside the protocol: that step
is rejected (not the experiment aborted) and the version edits no more."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.experiment import open_experiment
from tests.conftest import needs_jails

pytestmark = needs_jails

EXAMPLE = Path(__file__).parents[3] / "examples" / "modular_rsi.yaml"


@pytest.fixture(scope="module")
def adopted(tmp_path_factory):
    home = tmp_path_factory.mktemp("modular-adopted")
    overrides = ["--experiment.home", str(home), "--algorithm.worker.harness", "adopted"]
    algorithm = ModularRSI(open_experiment(load_config(EXAMPLE, overrides)), log=lambda _: None)
    return algorithm, algorithm.run()


def test_each_step_is_made_by_the_version_it_starts_from(adopted):
    _, state = adopted
    made = [r for r in state.steps.values() if r.produced_by is not None]
    assert made
    assert all(r.produced_by == r.parent_id for r in made)
    seed = min(made, key=lambda r: r.created).parent_id
    assert any(r.produced_by != seed for r in made)  # a branch's own accepted version edited


def test_a_version_that_fails_as_the_worker_is_rejected_and_passed_over(adopted):
    algorithm, state = adopted
    [failed] = [r for r in state.steps.values() if r.improver_failed]
    assert failed.status == "rejected" and "without a JSON object" in failed.reason
    assert state.aborted is None and state.test is not None  # the search went on to the end
    assert failed.produced_by in state.failed_improvers()
    assert any("failed as the Worker and edit no more" in line for line in algorithm.summary(state))


def test_the_ledger_names_who_made_each_candidate(adopted):
    algorithm, _ = adopted
    made = [e for e in Ledger.of(algorithm.experiment).entries() if e.candidate.produced_by]
    assert made and all(e.candidate.produced_by == e.baseline.snapshot_id for e in made)
