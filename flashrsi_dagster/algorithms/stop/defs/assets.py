"""STOP as assets, keyed `stop/<name>`: per round, `round` (the improver's snapshot, its
train and dev meta-utilities, with its contamination check and a warning check on every
circumvention attempt flagged); per experiment, `promotion` -> `sealed_test_score`. The bodies
open the experiment the partition names, call one engine step and describe its result."""

from collections.abc import Iterator

import dagster as dg

from flashrsi_dagster.algorithms.stop.run import Stop
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.orchestration.context import (
    candidate_algorithm,
    experiment_algorithm,
    refusing_out_of_turn,
)
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.records import read_optional

PREFIX = "stop"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
RESOURCES = {"experiments_home"}
NO_CIRCUMVENTION = "no_circumvention_attempt"


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


@dg.asset(
    key=key("round"),
    partitions_def=PARTITIONS.grid,
    group_name=PREFIX,
    required_resource_keys=RESOURCES,
    check_specs=[
        dg.AssetCheckSpec(
            "meta_utility_in_unit_interval",
            asset=key("round"),
            description="The train and dev meta-utilities lie in [0, 1].",
        ),
        dg.AssetCheckSpec(
            NO_CIRCUMVENTION,
            asset=key("round"),
            description="Warns when the round's improver, or its self-improvement run, tried "
            "to get round the jail, the caps or the utility (each attempt refused, counted "
            "and listed; a flagged improver is never kept or promoted).",
        ),
        describe.content_check_spec(key("round")),
    ],
)
def round_(context: dg.AssetExecutionContext) -> Iterator:
    """The round's improver (the seed, or what the current improver made of itself)."""
    search, name, k, slot = candidate_algorithm(context)
    assert isinstance(search, Stop)
    with refusing_out_of_turn():
        record = search.evaluate_round(k)
    where = str(context.partition_key)
    improver = search.improver_record(k)
    attempts = search.round_attempts(k)
    metadata = {
        "status": record.status,
        "snapshot_id": record.snapshot_id or "-",
        "parent_id": record.parent_id or "-",
        **describe.figures(
            train_meta_utility=record.train_meta_utility, dev_meta_utility=record.dev_score
        ),
        "circumvention_attempts": len(attempts),
        **describe.explorer_link(name, record.snapshot_id, k, slot),
    }
    yield dg.Output(record.model_dump(mode="json"), metadata=metadata)
    scores = [s for s in (record.train_meta_utility, record.dev_score) if s is not None]
    yield describe.check_result(
        where,
        describe.figures(train=record.train_meta_utility, dev=record.dev_score),
        check_name="meta_utility_in_unit_interval",
        asset_key=key("round"),
        passed=all(0.0 <= s <= 1.0 for s in scores),
    )
    listed = "\n".join(f"- {a.kind} ({a.source}, {a.run}): {a.detail}" for a in attempts) or "-"
    yield describe.check_result(
        where,
        {"attempts": len(attempts), "listed": dg.MetadataValue.md(listed)},
        check_name=NO_CIRCUMVENTION,
        asset_key=key("round"),
        passed=not attempts,
        severity=dg.AssetCheckSeverity.WARN,
        summary=f"{len(attempts)} circumvention attempt(s)",
    )
    verdict = None
    if improver is not None and k > 0:
        verdict = read_optional(search.layout.improver_content(improver.digest), ContentVerdict)
    yield describe.content_check(
        verdict, key("round"), where, "the seed" if k == 0 else f"nothing scored ({record.reason})"
    )


@dg.asset(
    key=key("promotion"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    deps=[dg.AssetDep(key("round"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def promotion(context: dg.AssetExecutionContext) -> dg.Output:
    """The best dev meta-utility among improvers never flagged (a tie keeps the earlier)."""
    search, _ = experiment_algorithm(context)
    with refusing_out_of_turn():
        chosen = search.promote()  # type: ignore[attr-defined]
    return dg.Output(chosen.model_dump(mode="json"), metadata={"round": chosen.round})


@dg.asset(
    key=key("sealed_test_score"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    kinds={"sealed"},
    deps=[promotion],
    required_resource_keys=RESOURCES,
    check_specs=[
        dg.AssetCheckSpec(
            "evaluated_once_after_promotion",
            asset=key("sealed_test_score"),
            description="One sealed-test record, of the promoted improver, after the promotion.",
        ),
        dg.AssetCheckSpec(
            "splits_disjoint",
            asset=key("sealed_test_score"),
            description=describe.host.DESCRIPTIONS[describe.host.SPLITS],
        ),
    ],
)
def sealed_test_score(context: dg.AssetExecutionContext) -> Iterator:
    """The promoted improver's returned solutions on the sealed test split, once."""
    search, name = experiment_algorithm(context)
    with refusing_out_of_turn():
        result = search.sealed_test()  # type: ignore[attr-defined]
    state = search.read_state()
    yield dg.Output(
        result.model_dump(mode="json"),
        metadata=describe.figures(test_meta_utility=result.test_score),
    )
    yield describe.check_result(
        name,
        {"promoted": state.promotion.snapshot_id},
        check_name="evaluated_once_after_promotion",
        asset_key=key("sealed_test_score"),
        passed=result.snapshot_id == state.promotion.snapshot_id
        and result.created >= state.promotion.created,
    )
    yield describe.splits_check(search, key("sealed_test_score"), name)


ASSETS = [round_, promotion, sealed_test_score]
ROUND_ASSETS = [round_]
FINAL_ASSETS = [promotion, sealed_test_score]
