"""DGM end to end on the offline simulator, at the smallest settings: the seed admitted, each
child made by its parent's own harness (`produced_by`), admitted by loading and editing (never
by score), scored in stages, the best by dev tested once; through the engine and through a
real Dagster instance; and the two ablations of the paper as config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.dgm.run import Dgm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.experiment import open_experiment

EXAMPLE = Path(__file__).parents[3] / "examples" / "dgm.yaml"
SMALL = (
    "--algorithm.generations",
    "1",
    "--algorithm.dev_candidates",
    "2",
    "--algorithm.staged.first_tasks",
    "2",
    "--benchmark.split_counts.train",
    "4",
    "--benchmark.split_counts.dev",
    "2",
    "--benchmark.split_counts.test",
    "2",
)


def _config(tmp_path: Path, *overrides: str):
    home = ("--experiment.home", str(tmp_path / "home"))
    return load_config(EXAMPLE, [*home, *SMALL, *overrides])


def _drive(config, how: str):
    dgm = Dgm(open_experiment(config), log=lambda _: None)
    if how == "engine":
        return dgm, dgm.run()
    import dagster as dg

    from flashrsi_dagster.deployment.cli_driver import drive_on

    with dg.instance_for_test() as instance:
        state = drive_on(instance, open_experiment(config), say=lambda _: None)
        assert config.experiment.name in instance.get_materialized_partitions(
            dg.AssetKey(["dgm", "promotion"])
        )
    return dgm, state


@pytest.mark.parametrize("how", ["engine", "dagster"])
def test_children_are_made_by_their_parents_admitted_by_ability_and_the_best_tested_once(
    tmp_path, how
):
    dgm, state = _drive(_config(tmp_path), how)

    seed, *children = state.candidates
    assert seed.admitted and seed.editing_passed and seed.produced_by is None
    assert len(children) == 2
    for child in children:
        assert child.produced_by == child.parent_id == seed.snapshot_id  # it edited itself
        assert child.entry
        if child.admitted:
            assert child.compiled and child.editing_passed
            assert len(child.stage_scores) == (2 if child.stage_scores[0] >= 0.4 else 1)
    assert state.promotion.snapshot_id == state.promotion.ranking[0][2]
    assert [t.snapshot_id for t in state.tests] == [state.promotion.snapshot_id]
    entries = Ledger.of(dgm.experiment).entries()
    archive = [e for e in entries if e.scope == "archive"]
    assert len(archive) == 2  # one decision per child, admitted or not, with its edges
    assert all("parent" in e.reason for e in archive)


def test_the_first_stage_below_the_threshold_stops_there(tmp_path):
    config = _config(tmp_path, "--algorithm.staged.threshold", "1.0")
    _, state = _drive(config, "engine")

    for c in state.admitted():
        assert len(c.stage_scores) == (2 if c.stage_scores[0] >= 1.0 else 1)
        assert c.stage_tasks[0] == 2


def test_without_self_improvement_the_fixed_worker_edits(tmp_path):
    config = _config(tmp_path, "--algorithm.self_improvement", "false")
    _, state = _drive(config, "engine")

    assert all(c.produced_by is None for c in state.candidates)
    assert all(c.parent_id == state.candidates[0].snapshot_id for c in state.candidates[1:])


def test_without_open_ended_exploration_every_parent_is_the_latest_admitted(tmp_path):
    config = _config(
        tmp_path,
        "--algorithm.open_ended",
        "false",
        "--algorithm.generations",
        "2",
        "--algorithm.children_per_generation",
        "1",
    )
    _, state = _drive(config, "engine")

    for g in (1, 2):
        child = state.candidate(g)
        latest = [c for c in state.admitted() if c.generation < g][-1]
        assert child.parent_id == latest.snapshot_id


def test_the_demo_records_a_stepping_stone_and_a_child_refused_for_its_editing(tmp_path):
    """The example as shipped (seed 3): a read of its records, not of the policy's intent."""
    config = load_config(EXAMPLE, ["--experiment.home", str(tmp_path / "home")])
    dgm, state = _drive(config, "engine")

    lines = dgm.summary(state)
    assert any(line.startswith("stepping stone:") for line in lines), "\n".join(lines)
    refused = [c for c in state.candidates if c.status == "refused"]
    assert any("lost its editing ability: replace_line" in r for c in refused for r in c.reasons)
    editing = json.loads(dgm.layout.editing(refused[0].generation, refused[0].slot).read_text())
    assert editing["passed"] is False
