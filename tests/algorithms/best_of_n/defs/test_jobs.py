"""Best-of-N through a real Dagster instance: its assets, jobs and checks in the definitions,
its round x candidate grid, and the control driven through its jobs by the same step -> run
mapping the sensor uses (samples side by side as slots of one round)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.best_of_n.defs.assets import PARTITIONS, key
from flashrsi_dagster.config import load_config
from flashrsi_dagster.definitions import defs as code_location
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.explorer.links import node_url
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from tests.dagster_instances import instance_on, sqlite_only

defs = code_location()  # as Dagster loads it (`@dg.definitions`)

EXAMPLE = Path(__file__).parents[4] / "examples" / "best_of_n.yaml"


def test_the_definitions_hold_its_assets_jobs_and_checks():
    graph = defs.resolve_asset_graph()
    jobs = {j.name for j in defs.resolve_all_job_defs()}

    assert {key("sample"), key("promotion"), key("sealed_test_score")} <= graph.get_all_asset_keys()
    assert {"best_of_n", "best_of_n_finalize"} <= jobs
    checks = {k.to_user_string() for k in graph.asset_check_keys}
    assert {
        "best_of_n/sample:score_in_unit_interval",
        "best_of_n/sample:content_not_contaminated",
        "best_of_n/sealed_test_score:evaluated_once_after_promotion",
        "best_of_n/sealed_test_score:splits_disjoint",
    } <= checks


@sqlite_only
def test_the_driver_runs_the_control_as_runs_of_its_jobs(tmp_path, storage):
    overrides = ["--experiment.home", str(tmp_path / "home"), "--benchmark.limit", "3"]
    overrides += ["--algorithm.samples", "2", "--algorithm.side_by_side", "1"]
    experiment = open_experiment(load_config(EXAMPLE, overrides))
    name = experiment.config.experiment.name
    with instance_on(storage) as instance:
        state = drive_on(instance, experiment, say=lambda _: None)

        assert [r.sample for r in state.samples] == [0, 1]
        assert [(r.round, r.slot) for r in state.samples] == [(1, "c0"), (2, "c0")]
        assert state.test is not None
        runs = instance.get_runs()
        assert sorted({r.job_name for r in runs}) == ["best_of_n", "best_of_n_finalize"]
        assert all(r.tags[EXPERIMENT_TAG] == name for r in runs)
        done = {str(k) for k in instance.get_materialized_partitions(key("sample"))}
        assert done == {
            str(PARTITIONS.key(name, k, s)) for k, s in ((0, "c0"), (1, "c0"), (2, "c0"))
        }
        sample = _latest(instance, "sample", PARTITIONS.key(name, 2, "c0"))
        assert sample["candidate"].value == "sample 1"
        assert sample["worker_model_calls"].value == state.samples[1].spend.model_calls
        node = state.samples[1].snapshot_id or "r2.c0"  # an edit that committed nothing
        assert sample["explorer"].url == node_url(name, node)  # its node in the explorer
        promotion = _latest(instance, "promotion", name)
        assert promotion["snapshot_id"].value == state.promotion.snapshot_id
        assert "budget: spent" in promotion["budget"].value
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(key("sealed_test_score"), "evaluated_once_after_promotion")]
        )
        assert checks and all(c.status.value == "SUCCEEDED" for c in checks.values())


def _latest(instance: dg.DagsterInstance, name: str, partition) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key(name), asset_partitions=[str(partition)]), limit=1
    ).records
    return records[0].asset_materialization.metadata
