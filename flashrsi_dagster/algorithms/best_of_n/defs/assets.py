"""Best-of-N as assets, keyed `best_of_n/<name>`: per candidate (round x slot), `sample` (the
seed at round 0, else one Worker edit of the seed and its dev score, with its contamination
and score checks); per experiment, `promotion` (depending on every sample) ->
`sealed_test_score`. The bodies open the experiment the partition names, call one engine step
and describe its result; the records stay the truth."""

from collections.abc import Iterator

import dagster as dg

from flashrsi_dagster.algorithms.best_of_n.plan import candidate_name
from flashrsi_dagster.algorithms.best_of_n.run import BestOfN
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

PREFIX = "best_of_n"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
RESOURCES = {"experiments_home"}


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


@dg.asset(
    key=key("sample"),
    partitions_def=PARTITIONS.grid,
    group_name=PREFIX,
    required_resource_keys=RESOURCES,
    check_specs=[
        describe.check_spec(describe.host.SCORE_RANGE, key("sample")),
        describe.content_check_spec(key("sample")),
    ],
)
def sample(context: dg.AssetExecutionContext) -> Iterator:
    """The candidate's snapshot (the seed, or one Worker edit of it) and its dev evaluation,
    with what its Worker spent."""
    search, name, k, slot = candidate_algorithm(context)
    assert isinstance(search, BestOfN)
    with refusing_out_of_turn():
        record = search.evaluate_round(k, slot)
    frame = scores_frame(search.round_rollouts(k, slot))
    tasks, attempts = len(search.splits.dev), search.settings.attempts
    table = summary(frame, tasks, attempts) if len(frame) else {}
    metadata = {
        "candidate": candidate_name(k, slot, search.width),
        "status": record.status,
        "snapshot_id": record.snapshot_id or "-",
        "parent_id": record.parent_id or "-",
        "worker_model_calls": record.spend.model_calls,
        "worker_tokens": record.spend.tokens,
        "changed_lines": record.changed_lines,
        **table,
        **describe.explorer_link(name, record.snapshot_id, k, slot),
    }
    if k > 0:
        metadata.update(describe.worker(search.layout.worker(k, slot)))
    yield dg.Output(record.model_dump(mode="json"), metadata=metadata)
    where = str(context.partition_key)
    yield describe.score_check(table, tasks * attempts, key("sample"), where)
    verdict = read_optional(search.layout.content(k, slot), ContentVerdict)
    unchecked = "the seed" if k == 0 else f"no snapshot to check ({record.reason})"
    yield describe.content_check(verdict, key("sample"), where, unchecked)


@dg.asset(
    key=key("promotion"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    deps=[dg.AssetDep(key("sample"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def promotion(context: dg.AssetExecutionContext) -> dg.Output:
    """The best dev score over the seed and every sample (a tie keeps fewer changed lines,
    then the earlier sample), with the budget spent against the one given or matched."""
    search, _ = experiment_algorithm(context)
    assert isinstance(search, BestOfN)
    with refusing_out_of_turn():
        chosen = search.promote()
    state = search.read_state()
    spent = state.spent
    metadata = {
        "candidate": candidate_name(chosen.round, chosen.slot, search.width),
        "snapshot_id": chosen.snapshot_id,
        **describe.figures(dev_score=chosen.dev_score),
        "samples": len(state.samples),
        "worker_model_calls": spent.model_calls,
        "worker_tokens": spent.tokens,
        "budget": dg.MetadataValue.md("\n".join(f"- {line}" for line in search.summary(state))),
    }
    if state.budget is not None and state.budget.matches:
        metadata["matches"] = state.budget.matches
    return dg.Output(chosen.model_dump(mode="json"), metadata=metadata)


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
    search, name = experiment_algorithm(context)
    read_back = search.read_state().test is not None
    with refusing_out_of_turn():
        result = search.sealed_test()  # type: ignore[attr-defined]
    state = search.read_state()
    yield dg.Output(
        result.model_dump(mode="json"), metadata=describe.sealed_test(state, read_back=read_back)
    )
    threshold = context.resources.experiments_home.dev_test_gap_warning
    yield from describe.sealed_checks(search, state, threshold, key("sealed_test_score"), name)


ASSETS = [sample, promotion, sealed_test_score]
ROUND_ASSETS = [sample]
FINAL_ASSETS = [promotion, sealed_test_score]
