"""STOP end to end on the offline simulator, through a real Dagster instance (smallest
settings): the seed improver scored, one self-improvement round, the promotion, the sealed
test once, every program contamination-checked before it was scored."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.experiment import open_experiment

EXAMPLE = Path(__file__).parents[3] / "examples" / "stop.yaml"


def test_one_round_through_dagster_to_the_sealed_test(tmp_path):
    config = load_config(
        EXAMPLE,
        [
            "--experiment.home", str(tmp_path / "home"),
            "--algorithm.rounds", "1",
            "--algorithm.groups", "1",
            "--algorithm.group_size", "2",
            "--benchmark.split_counts.train", "2",
            "--benchmark.split_counts.dev", "2",
            "--benchmark.split_counts.test", "2",
        ],
    )  # fmt: skip
    with dg.instance_for_test() as instance:
        state = drive_on(instance, open_experiment(config), say=lambda _: None)
        promoted = instance.get_materialized_partitions(dg.AssetKey(["stop", "promotion"]))

    assert [r.round for r in state.rounds] == [0, 1]
    assert state.promotion is not None and config.experiment.name in promoted
    assert state.test is not None and state.test.snapshot_id == state.promotion.snapshot_id
    folder = tmp_path / "home" / config.experiment.name / "records" / "stop"
    scored = [p for p in (folder / "improvers").glob("*.json") if "-content" not in p.name]
    checked = list((folder / "improvers").glob("*-content.json"))
    assert len(checked) == len(scored)  # every program judged before it was scored
    assert state.rounds[0].train_meta_utility is not None
