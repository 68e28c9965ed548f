"""Meta-Harness as assets, keyed `meta_harness/<name>`.

Per candidate (round x slot): `snapshot` (the seed, or the Worker's edit committed as a child
of the seed) -> the candidate's `evaluation`: `trajectories` (its dev rollouts), `scores`,
`failure_map` and `paired_stats` (against its parent's round), made together, so
rematerializing a candidate's trajectories brings the rest of it up to date. Round 0 has one
candidate per initial harness (c0, the seed; c1, … `initial_harnesses`); each later round has
`candidates_per_round` (c0, c1, …), whose runs may go side by side. Per experiment:
`promotion` (depends on every candidate's scores: a changed one marks it stale) ->
`sealed_test_score`, set apart in its own group; `summary` is reported by every step.

The algorithm lives in `flashrsi_dagster.algorithms.meta_harness`; these functions only open
the experiment named by the partition, call one step, and describe the result. Records stay
the source of truth, so a materialization that finds its step already done reads it back, and
a step asked for out of turn fails without changing anything.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
import pandas as pd

from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.algorithms.meta_harness import report
from flashrsi_dagster.algorithms.meta_harness.plan import candidate_name, rank, stale
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.checks import CheckOutcome, host
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.evaluator.compare import basis
from flashrsi_dagster.experiment.keys import NIGHTLY
from flashrsi_dagster.explorer.candidates import outcome as candidate_outcome
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.orchestration.context import (
    DRIVER_TAG,
    algorithm_of,
    candidate_algorithm,
    experiment_of,
    refusing_out_of_turn,
)
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.rollouts.scores import scores_frame, summary
from flashrsi_dagster.stats.behaviour import BehaviourSignal, behaviour
from flashrsi_dagster.stats.failures import failure_map as failure_table
from flashrsi_dagster.stats.failures import failure_map_markdown
from flashrsi_dagster.stats.paired import paired, to_markdown
from flashrsi_dagster.views import experiment_chart, score_text

PREFIX = "meta_harness"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
GROUP, SEALED_GROUP = "meta_harness", "meta_harness_sealed_test"
RESOURCES = {"experiments_home"}


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


SUMMARY = dg.AssetSpec(
    key("summary"),
    group_name=GROUP,
    partitions_def=PARTITIONS.experiments,
    deps=[dg.AssetDep(key("scores"), partition_mapping=PARTITIONS.experiment_dependency())],
    description="The experiment at a glance: score by round, best so far, rejections with "
    "their reasons, the promotion and the sealed test. Reported by every step.",
)


def _open(context: dg.AssetExecutionContext) -> tuple[MetaHarness, str, int, str]:
    return candidate_algorithm(context)  # type: ignore[return-value]


@dg.asset(
    key=key("snapshot"),
    partitions_def=PARTITIONS.grid,
    group_name=GROUP,
    kinds={"git"},
    required_resource_keys=RESOURCES,
    check_specs=[
        describe.check_spec(describe.host.EDIT_PATHS, key("snapshot")),
        describe.content_check_spec(key("snapshot")),
    ],
)
def snapshot(context: dg.AssetExecutionContext) -> Iterator:
    """The candidate's harness snapshot: the seed at round 0, else the Worker's edit in this
    slot, with its diff against the parent and what the Worker did."""
    algorithm, name, k, slot = _open(context)
    if k == 0:
        with refusing_out_of_turn():
            made = algorithm.initial(slot).id
        info = {"round": 0, "status": "seed", "snapshot_id": made, "parent_id": None}
    else:
        with refusing_out_of_turn():
            info = algorithm.edit(k, slot).model_dump(mode="json")
    store = algorithm.experiment.snapshots
    metadata = describe.snapshot(store, info, PARTITIONS, name, key("snapshot"))
    if k > 0:
        metadata.update(describe.worker(algorithm.layout.worker(k, slot)))
    yield dg.Output(info, metadata=metadata)
    where = str(context.partition_key)
    yield describe.edit_check(store, info, where)
    verdict = None if k == 0 else algorithm.content(k, slot)
    unchecked = "the seed" if k == 0 else f"nothing committed ({info['status']})"
    yield describe.content_check(verdict, key("snapshot"), where, unchecked)


@dg.multi_asset(
    outs={
        "trajectories": dg.AssetOut(
            key=key("trajectories"),
            kinds={"parquet"},
            description="One row per dev rollout of the round's snapshot (none for a "
            "rejected edit), with a passing and a failing transcript.",
        ),
        "scores": dg.AssetOut(
            key=key("scores"),
            description="The round's dev score over its fixed denominator, and its cost.",
        ),
        "failure_map": dg.AssetOut(
            key=key("failure_map"),
            description="Failures grouped by status and error class, with example task ids.",
        ),
        "paired_stats": dg.AssetOut(
            key=key("paired_stats"),
            description="The round's candidate against its parent's round, task by task.",
        ),
    },
    ins={"snapshot": dg.AssetIn(key("snapshot"))},
    internal_asset_deps={
        "trajectories": {key("snapshot")},
        "scores": {key("trajectories")},
        "failure_map": {key("trajectories")},
        "paired_stats": {key("trajectories")},
    },
    partitions_def=PARTITIONS.grid,
    group_name=GROUP,
    can_subset=False,
    required_resource_keys=RESOURCES,
    check_specs=[
        describe.check_spec(describe.host.SCORE_RANGE, key("scores")),
        describe.behaviour_check_spec(key("scores")),
        describe.adopted_check_spec(key("scores"), PARTITIONS.grid),
    ],
)
def evaluation(context: dg.AssetExecutionContext, snapshot: dict) -> Iterator:
    """The candidate's dev evaluation: run (or read back) its rollouts, then describe them."""
    algorithm, name, k, slot = _open(context)
    # Launched by hand (no driver tag): evaluate the candidate again.
    again = DRIVER_TAG not in context.run.tags
    with refusing_out_of_turn():
        record = algorithm.evaluate_round(k, slot, again=again)
    rollouts = algorithm.round_rollouts(k, slot)  # read once: the table and the transcripts
    frame = scores_frame(rollouts)
    state = algorithm.read_state()
    tasks, attempts = len(algorithm.splits.dev), algorithm.settings.attempts
    table = summary(frame, tasks, attempts) if len(frame) else {}
    metadata = describe.trajectories(record, frame, rollouts)
    yield dg.Output(frame, output_name="trajectories", metadata=metadata)
    yield dg.Output(
        {"round": k, **table},
        output_name="scores",
        metadata=describe.scores(state, k, table, slot),
    )
    yield dg.Output(
        failure_table(frame),
        output_name="failure_map",
        metadata={
            "snapshot_id": record.snapshot_id or "-",
            "failures": int((frame["status"] != "success").sum()) if len(frame) else 0,
            "map": dg.MetadataValue.md(failure_map_markdown(frame)),
        },
    )
    yield _paired(algorithm, state, k, slot, frame)
    where = str(context.partition_key)
    yield describe.score_check(table, tasks * attempts, key("scores"), where)
    yield describe.behaviour_check(
        _behaviour(algorithm, state, k, slot, rollouts), key("scores"), where
    )
    yield describe.check(_adopted(algorithm, k, slot, record), where, key("scores"))
    context.log_event(_summary(context, algorithm, name, state))


def _adopted(algorithm: MetaHarness, k: int, slot: str, record) -> CheckOutcome:
    """The candidate's outcome so far: the ledger's once it judged it, else a refused edit's
    rejection, the seed, or an evaluated candidate waiting for the promotion's ranking (which
    reports the ranking on this partition: `describe.decided_checks`)."""
    mine = [e for e in Ledger.of(algorithm.experiment).entries() if e.candidate.round == k]
    mine = [e for e in mine if e.candidate.slot == slot]
    if mine:
        return host.decided(candidate_outcome(mine[-1]), mine[-1].reason)
    if record.status != "evaluated":
        return host.adopted(record.status, record.reason, was_adopted=False)
    if k == 0:
        return host.adopted("seed", "the baseline the candidates are ranked against", True)
    return host.adopted("evaluated", "not ranked yet: the promotion ranks it", True)


def _paired(algorithm: MetaHarness, state, k: int, slot: str, frame: pd.DataFrame) -> dg.Output:
    parent = state.parent_round(k, slot)
    if parent is None or not len(frame):
        return dg.Output(
            {"round": k, "compared": False},
            output_name="paired_stats",
            metadata={"compared": False},
        )
    record = state.round(k, slot)
    on = basis(record.eval_set if record else None, parent.eval_set)
    if not on.comparable:  # a score on another evaluation set is never a lift
        value = {"round": k, "parent_round": parent.round, "compared": False, "basis": on.label}
        return dg.Output(
            value, output_name="paired_stats", metadata={"compared": False, "basis": on.label}
        )
    stats = paired(frame, algorithm.round_frame(parent.round))
    metadata = {
        **describe.lineage(state, k, slot),
        "parent_round": parent.round,
        "basis": on.label,
        **describe.figures(
            lift=stats.mean_difference,
            standard_error=stats.standard_error,
            z=stats.z,
            p_value=stats.p_value,
            p_value_t=stats.p_value_t,
            p_value_sign=stats.p_value_sign,
            p_value_permutation=stats.p_value_permutation,
        ),
        "verdict": stats.verdict,
        "won": stats.won,
        "lost": stats.lost,
        "tied": stats.tied,
        "table": dg.MetadataValue.md(to_markdown(stats)),
    }
    value = {"round": k, "parent_round": parent.round, "compared": True, "basis": on.label}
    return dg.Output(
        {**value, **stats.model_dump(mode="json")}, output_name="paired_stats", metadata=metadata
    )


def _behaviour(algorithm: MetaHarness, state, k: int, slot: str, rollouts) -> BehaviourSignal | str:
    """The candidate's dev rollouts against its parent's, or why they are not compared."""
    parent = state.parent_round(k, slot)
    if parent is None:
        return "no parent: the seed is the baseline"
    if not rollouts:
        return "no rollouts: the edit was rejected"
    record = state.round(k, slot)
    on = basis(record.eval_set if record else None, parent.eval_set)
    if not on.comparable:
        return on.label
    parents = algorithm.round_rollouts(parent.round, parent.slot)
    return behaviour(rollouts, parents, algorithm.experiment.config.behaviour)


def _summary(context, algorithm: MetaHarness, name: str, state) -> dg.AssetMaterialization:
    """The experiment's summary as of `state`; a nightly experiment's beside the night before
    (only then are the home's other experiments listed: every step reports a summary)."""
    metadata = describe.summary(algorithm.experiment, state)
    experiments = context.resources.experiments_home
    nightly = NIGHTLY.fullmatch(name) is not None
    previous = describe.previous_night(name, experiments.names(PREFIX)) if nightly else None
    if previous is not None:
        before = experiments.algorithm(previous).read_state()
        metadata.update(describe.night_comparison(state, previous, before))
    return dg.AssetMaterialization(asset_key=SUMMARY.key, partition=name, metadata=metadata)


@dg.asset(
    key=key("promotion"),
    partitions_def=PARTITIONS.experiments,
    group_name=GROUP,
    deps=[dg.AssetDep(key("scores"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def promotion(context: dg.AssetExecutionContext) -> Iterator:
    """The best dev score over every candidate of every round (a tie keeps the earlier round,
    then the lower slot), once every candidate has its result. It re-ranks until the sealed
    test has run, then stays frozen."""
    name = experiment_of(context)
    algorithm: MetaHarness = algorithm_of(context, name)  # type: ignore[assignment]
    with refusing_out_of_turn():
        chosen = algorithm.promote()
    state = algorithm.read_state()
    yield dg.Output(chosen.model_dump(mode="json"), metadata=_promotion(name, state))
    entries = Ledger.of(algorithm.experiment).entries()
    for judged in describe.decided_checks(
        context.instance, entries, PARTITIONS, name, key("scores")
    ):
        context.log_event(judged)
    context.log_event(_summary(context, algorithm, name, state))


@dg.asset(
    key=key("sealed_test_score"),
    partitions_def=PARTITIONS.experiments,
    group_name=SEALED_GROUP,
    kinds={"sealed"},
    deps=[promotion],
    required_resource_keys=RESOURCES,
    check_specs=describe.sealed_check_specs(key("sealed_test_score"), gap=True),
)
def sealed_test_score(context: dg.AssetExecutionContext) -> Iterator:
    """The promoted snapshot on the sealed test split: evaluated once, after the search; a
    later materialization reads that one result back. With `sealed_test_frontier`, the
    frontier's other members are then tested once each (shown as `frontier_tests`)."""
    name = experiment_of(context)
    algorithm: MetaHarness = algorithm_of(context, name)  # type: ignore[assignment]
    read_back = algorithm.read_state().test is not None
    with refusing_out_of_turn():
        result = algorithm.sealed_test()
    state = algorithm.read_state()
    metadata = describe.sealed_test(state, read_back=read_back)
    if state.frontier_tests:  # `sealed_test_frontier`: the other members, tested once each
        metadata["frontier_tests"] = dg.MetadataValue.md(
            "\n".join(f"- {line}" for line in report.frontier_test_lines(state))
        )
    yield dg.Output(result.model_dump(mode="json"), metadata=metadata)
    threshold = context.resources.experiments_home.dev_test_gap_warning
    yield from describe.sealed_checks(algorithm, state, threshold, key("sealed_test_score"), name)
    context.log_event(_summary(context, algorithm, name, state))


ASSETS = [snapshot, evaluation, promotion, sealed_test_score, SUMMARY]
ROUND_ASSETS = [snapshot, evaluation]
FINAL_ASSETS = [promotion, sealed_test_score]


def _promotion(name: str, state) -> dict[str, Any]:
    chosen, seed = state.promotion, state.round(0)
    metadata: dict[str, Any] = {
        "snapshot_id": chosen.snapshot_id,
        "round": chosen.round,
        "slot": chosen.slot,
        **describe.figures(
            dev_score=chosen.dev_score,
            change_vs_seed=chosen.dev_score - ((seed and seed.dev_score) or 0.0),
        ),
        "chart": dg.MetadataValue.md(experiment_chart(describe.chart_rows(name, state))),
    }
    if stale(state):  # only after the sealed test: before it, the promotion re-ranks
        leader = rank(state.rounds)[0]
        ahead = state.candidate_of(leader[1])
        name = candidate_name(leader[0], ahead.slot if ahead else ONLY_SLOT)
        metadata["ranking_changed"] = (
            f"{name} now leads on dev ({score_text(leader[2])}); the promotion "
            "is frozen because the sealed test has run, and the test is not run again"
        )
    return metadata
