"""Meta-Harness as assets. Per round x candidate: `snapshot` (the seed, or the Worker's edit
committed as a child of the seed) -> `trajectories` (its dev rollouts) -> `scores`,
`failure_map`, `paired_stats` (vs the seed). Per experiment: `promotion` -> `sealed_test_score`.

The algorithm lives in `flashrsi_dagster.algorithms.meta_harness`; these functions only open
the experiment named by the partition, call one step, and describe the result. Records stay
the source of truth, so a materialization that finds its step already done reads it back.
"""

from collections.abc import Sequence

import dagster as dg
import pandas as pd
from pydantic import Field

from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord
from flashrsi_dagster.assets.partitions import (
    CANDIDATE_DIMENSION,
    ROUND_DIMENSION,
    SLOT,
    experiments,
    parse_round_key,
    register,
    round_candidates,
)
from flashrsi_dagster.resources.experiments import ExperimentsResource
from flashrsi_dagster.rollouts.scores import summary
from flashrsi_dagster.views import RoundRow, experiment_chart

GROUP = "meta_harness"
DRIVER_TAG = "flashrsi/driver"
"""Set on runs the round driver launches; a run without it (e.g. from the UI) re-runs work."""


def _round(context: dg.AssetExecutionContext) -> tuple[str, int]:
    key = context.partition_key
    assert isinstance(key, dg.MultiPartitionKey)
    return parse_round_key(key.keys_by_dimension[ROUND_DIMENSION])


def _lineage(rounds: Sequence[RoundRecord], k: int) -> dict[str, str]:
    """Round k's snapshot and parent ids, for metadata ("-" for a rejected step's snapshot)."""
    this = next((r for r in rounds if r.round == k), None)
    return {
        "snapshot_id": (this and this.snapshot_id) or "-",
        "parent_id": (this and this.parent_id) or "-",
    }


def _score_by_round(name: str, rounds: Sequence[RoundRecord], promoted: int | None = None) -> str:
    return experiment_chart(
        RoundRow(name, r.round, SLOT, r.status, r.dev_score, r.reason, promoted=r.round == promoted)
        for r in rounds
    )


def _rematerializing(context: dg.AssetExecutionContext) -> bool:
    return DRIVER_TAG not in context.run.tags


class NewExperiment(dg.Config):
    """The Launchpad's settings for an experiment that does not exist yet: launch round 0 of
    a new `<experiment>.r000` partition and it is created from `config_file`, named after the
    partition. An existing experiment keeps the config it was created with (its run_meta)."""

    config_file: str = Field(
        "examples/meta_harness.yaml",
        description="Experiment YAML, relative to the code location's folder (`flashrsi ui` "
        "runs it in the folder holding the home); the default is the offline demo.",
    )
    max_steps: int = Field(2, ge=1, description="Worker steps after the seed round.")
    benchmark_limit: int | None = Field(9, ge=1, description="At most this many tasks per split.")


def _open_or_create(
    context: dg.AssetExecutionContext, experiments_home: ExperimentsResource, new: NewExperiment
) -> None:
    name, k = _round(context)
    if name in experiments_home.names():
        if new != NewExperiment():
            context.log.warning(f"{name} exists; its own config applies, not the launch config")
        return
    if k != 0:
        raise dg.Failure(f"experiment {name!r} does not exist: launch its round 0 ({name}.r000)")
    overrides = ["--algorithm.max_steps", str(new.max_steps)]
    if new.benchmark_limit is not None:
        overrides += ["--benchmark.limit", str(new.benchmark_limit)]
    experiment = experiments_home.create(new.config_file, name=name, overrides=overrides)
    register(context.instance, name, experiment.config.algorithm.max_steps)
    context.log.info(f"created experiment {name} from {new.config_file}")


@dg.asset(partitions_def=round_candidates, group_name=GROUP, kinds={"git"})
def snapshot(
    context: dg.AssetExecutionContext, config: NewExperiment, experiments_home: ExperimentsResource
) -> dict:
    """The round's harness snapshot: the seed at round 0, else the Worker's edit."""
    _open_or_create(context, experiments_home, config)
    name, k = _round(context)
    algorithm = experiments_home.meta_harness(name, log=context.log.info)
    try:
        if k == 0:
            seed = algorithm.seed()
            info = {"round": 0, "status": "seed", "snapshot_id": seed.id, "parent_id": None}
        else:
            info = algorithm.edit(k).model_dump(mode="json")
        store = algorithm.experiment.snapshots
    finally:
        algorithm.close()
    metadata = {
        "snapshot_id": info.get("snapshot_id") or "-",
        "parent_id": info.get("parent_id") or "-",
        "status": info["status"],
        "reason": info.get("reason") or "-",
    }
    if info.get("snapshot_id") and info.get("parent_id"):
        stats = store.diff_stats(info["parent_id"], info["snapshot_id"])
        metadata.update(
            files_changed=stats.files, insertions=stats.insertions, deletions=stats.deletions
        )
    context.add_output_metadata(metadata)
    return info


@dg.asset(partitions_def=round_candidates, group_name=GROUP, kinds={"parquet"})
def trajectories(
    context: dg.AssetExecutionContext, snapshot: dict, experiments_home: ExperimentsResource
) -> pd.DataFrame:
    """One row per dev rollout of the round's snapshot (empty for a rejected edit)."""
    name, k = _round(context)
    algorithm = experiments_home.meta_harness(name, log=context.log.info)
    try:
        if _rematerializing(context):
            algorithm.restart_round(k)
        record = algorithm.evaluate_seed() if k == 0 else algorithm.finish_round(k)
        frame = algorithm.round_frame(k)
    finally:
        algorithm.close()
    context.add_output_metadata(
        {
            "snapshot_id": record.snapshot_id or "-",
            "status": record.status,
            "dev_score": record.dev_score,
            "rollouts": len(frame),
            "preview": dg.MetadataValue.md(
                frame.head(20).to_markdown(index=False)
                if len(frame)
                else "_no rollouts: the edit was rejected_"
            ),
        }
    )
    return frame


@dg.asset(partitions_def=round_candidates, group_name=GROUP)
def scores(
    context: dg.AssetExecutionContext,
    trajectories: pd.DataFrame,
    experiments_home: ExperimentsResource,
) -> dict:
    """The round's dev score and its cost, beside the score of every round so far."""
    name, k = _round(context)
    algorithm = experiments_home.meta_harness(name, log=context.log.info)
    rounds = algorithm.state().rounds
    n_tasks = len(algorithm.splits.dev)
    table = summary(trajectories, n_tasks, algorithm.settings.attempts) if len(trajectories) else {}
    seed_score = next((r.dev_score for r in rounds if r.round == 0), None)
    score = table.get("score")
    context.add_output_metadata(
        {
            **_lineage(rounds, k),
            "dev_score": score,
            "change_vs_seed": None if score is None or seed_score is None else score - seed_score,
            "score_by_round": dg.MetadataValue.md(_score_by_round(name, rounds)),
        }
    )
    return {"round": k, **table}


@dg.asset(partitions_def=round_candidates, group_name=GROUP)
def failure_map(context: dg.AssetExecutionContext, trajectories: pd.DataFrame) -> pd.DataFrame:
    """Failures grouped by status and error class, with example task ids."""
    from flashrsi_dagster.stats.failures import failure_map as build
    from flashrsi_dagster.stats.failures import failure_map_markdown

    table = build(trajectories)
    snapshots = trajectories["snapshot_id"].unique() if len(trajectories) else []
    context.add_output_metadata(
        {
            "snapshot_id": snapshots[0] if len(snapshots) else "-",
            "rollouts": len(trajectories),
            "failures": int(table["count"].sum()) if len(table) else 0,
            "map": dg.MetadataValue.md(failure_map_markdown(trajectories)),
        }
    )
    return table


@dg.asset(partitions_def=round_candidates, group_name=GROUP)
def paired_stats(
    context: dg.AssetExecutionContext,
    trajectories: pd.DataFrame,
    experiments_home: ExperimentsResource,
) -> dict:
    """The round's candidate against its parent (the seed), task by task."""
    from flashrsi_dagster.stats.paired import paired, to_markdown

    name, k = _round(context)
    algorithm = experiments_home.meta_harness(name, log=context.log.info)
    if k == 0 or not len(trajectories):
        context.add_output_metadata({"compared": False})
        return {"round": k, "compared": False}
    stats = paired(trajectories, algorithm.round_frame(0))
    context.add_output_metadata(
        {
            **_lineage(algorithm.state().rounds, k),
            "lift": stats.mean_difference,
            "standard_error": stats.standard_error,
            "z": stats.z,
            "p_value": stats.p_value,
            "won": stats.won,
            "lost": stats.lost,
            "tied": stats.tied,
            "table": dg.MetadataValue.md(to_markdown(stats)),
        }
    )
    return {"round": k, "compared": True, **stats.model_dump(mode="json")}


@dg.asset(partitions_def=experiments, group_name=GROUP)
def promotion(context: dg.AssetExecutionContext, experiments_home: ExperimentsResource) -> dict:
    """The best dev score over all rounds; a tie keeps the earlier snapshot."""
    algorithm = experiments_home.meta_harness(context.partition_key, log=context.log.info)
    chosen = algorithm.promote()
    rounds = algorithm.state().rounds
    seed = next(r for r in rounds if r.round == 0)
    context.add_output_metadata(
        {
            "snapshot_id": chosen.snapshot_id,
            "round": chosen.round,
            "dev_score": chosen.dev_score,
            "change_vs_seed": chosen.dev_score - (seed.dev_score or 0.0),
            "score_by_round": dg.MetadataValue.md(
                _score_by_round(context.partition_key, rounds, promoted=chosen.round)
            ),
        }
    )
    return chosen.model_dump(mode="json")


@dg.asset(partitions_def=experiments, group_name=GROUP, deps=[promotion])
def sealed_test_score(
    context: dg.AssetExecutionContext, experiments_home: ExperimentsResource
) -> dict:
    """The promoted snapshot on the sealed test split: evaluated once, after the search."""
    algorithm = experiments_home.meta_harness(context.partition_key, log=context.log.info)
    try:
        result = algorithm.sealed_test()
    finally:
        algorithm.close()
    promoted = algorithm.state().promotion
    context.add_output_metadata(
        {
            "snapshot_id": result.snapshot_id,
            "round": promoted.round if promoted else "-",
            "test_score": result.test_score,
            "dev_score": promoted.dev_score if promoted else None,
            "tasks": result.test_tasks,
        }
    )
    return result.model_dump(mode="json")


ROUND_ASSETS = [snapshot, trajectories, scores, failure_map, paired_stats]
FINAL_ASSETS = [promotion, sealed_test_score]
__all__ = ["CANDIDATE_DIMENSION", "DRIVER_TAG", "FINAL_ASSETS", "ROUND_ASSETS"]
