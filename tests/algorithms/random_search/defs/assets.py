"""Random search as assets, keyed `random_search/<name>`: per round, `round` (the candidate's
snapshot and dev score, with its contamination and score checks); per experiment, `promotion`
(depending on every round) -> `sealed_test_score`. The bodies open the experiment the
partition names, call one engine step and describe its result; the records stay the truth."""

from collections.abc import Iterator

import dagster as dg

from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.orchestration.context import (
    candidate_algorithm,
    experiment_algorithm,
    refusing_out_of_turn,
)
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.records import read_optional
from flashrsi_dagster.rollouts.scores import scores_frame, summary
from tests.algorithms.random_search.run import RandomSearch

PREFIX = "random_search"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
RESOURCES = {"experiments_home"}


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


def _round(context: dg.AssetExecutionContext) -> tuple[RandomSearch, int]:
    search, _, k, _ = candidate_algorithm(context)
    return search, k  # type: ignore[return-value]


def _experiment(context: dg.AssetExecutionContext) -> tuple[RandomSearch, str]:
    return experiment_algorithm(context)  # type: ignore[return-value]


@dg.asset(
    key=key("round"),
    partitions_def=PARTITIONS.grid,
    group_name=PREFIX,
    required_resource_keys=RESOURCES,
    check_specs=[
        dg.AssetCheckSpec(
            "score_in_unit_interval",
            asset=key("round"),
            description="The dev score lies in [0, 1] over tasks x attempts, none missing.",
        ),
        describe.content_check_spec(key("round")),
    ],
)
def round_(context: dg.AssetExecutionContext) -> Iterator:
    """The round's snapshot (the seed, or the drawn edit of it) and its dev evaluation."""
    search, k = _round(context)
    with refusing_out_of_turn():
        record = search.evaluate_round(k)
    frame = scores_frame(search.round_rollouts(k))
    tasks, attempts = len(search.splits.dev), search.settings.attempts
    table = summary(frame, tasks, attempts) if len(frame) else {}
    yield dg.Output(record.model_dump(mode="json"), metadata={"status": record.status, **table})
    where = str(context.partition_key)
    yield describe.score_check(table, tasks * attempts, key("round"), where)
    verdict = read_optional(search.layout.content(k), ContentVerdict)
    unchecked = "the seed" if k == 0 else f"no snapshot to check ({record.reason})"
    yield describe.content_check(verdict, key("round"), where, unchecked)


@dg.asset(
    key=key("promotion"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    deps=[dg.AssetDep(key("round"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def promotion(context: dg.AssetExecutionContext) -> dg.Output:
    """The best dev score over every round (a tie keeps the earlier round)."""
    search, _ = _experiment(context)
    with refusing_out_of_turn():
        chosen = search.promote()
    return dg.Output(chosen.model_dump(mode="json"), metadata={"round": chosen.round})


@dg.asset(
    key=key("sealed_test_score"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    kinds={"sealed"},
    deps=[promotion],
    required_resource_keys=RESOURCES,
    check_specs=describe.sealed_check_specs(key("sealed_test_score"), gap=True),
)
def sealed_test_score(context: dg.AssetExecutionContext) -> Iterator:
    """The promoted snapshot on the sealed test split, evaluated once."""
    search, name = _experiment(context)
    read_back = search.read_state().test is not None
    with refusing_out_of_turn():
        result = search.sealed_test()
    state = search.read_state()
    yield dg.Output(
        result.model_dump(mode="json"), metadata=describe.sealed_test(state, read_back=read_back)
    )
    threshold = context.resources.experiments_home.dev_test_gap_warning
    yield from describe.sealed_checks(search, state, threshold, key("sealed_test_score"), name)


ASSETS = [round_, promotion, sealed_test_score]
ROUND_ASSETS = [round_]
FINAL_ASSETS = [promotion, sealed_test_score]
