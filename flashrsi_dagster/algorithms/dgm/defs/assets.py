"""DGM as assets, keyed `dgm/<name>`: per (generation, slot), `candidate` (the child, its
archive edges, its admission and its scores, with checks for admission, contamination and
the score range); per experiment, `promotion` (depending on every candidate) ->
`sealed_test_score`. The bodies open the experiment the partition names, call one engine
step and describe its result; the records stay the truth."""

from collections.abc import Iterator

import dagster as dg

from flashrsi_dagster.algorithms.dgm.report import short, stepping_stones
from flashrsi_dagster.algorithms.dgm.run import Dgm
from flashrsi_dagster.algorithms.editing_check.check import EditingVerdict
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.orchestration.context import (
    candidate_algorithm,
    experiment_algorithm,
    refusing_out_of_turn,
)
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.records import read_optional

PREFIX = "dgm"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
RESOURCES = {"experiments_home"}
ADMISSION = "admitted_loads_and_edits"


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


@dg.asset(
    key=key("candidate"),
    partitions_def=PARTITIONS.grid,
    group_name=PREFIX,
    required_resource_keys=RESOURCES,
    check_specs=[
        dg.AssetCheckSpec(
            ADMISSION,
            asset=key("candidate"),
            description="The child loads (Python byte-compiles, YAML and JSON parse) and its own "
            "harness passes the editing check; warns with the reasons when it was refused "
            "(a refusal is the algorithm working, not a fault). Never judged on score.",
        ),
        dg.AssetCheckSpec(
            "score_in_unit_interval",
            asset=key("candidate"),
            description="Every stage's train score lies in [0, 1].",
        ),
        describe.content_check_spec(key("candidate")),
    ],
)
def candidate(context: dg.AssetExecutionContext) -> Iterator:
    """A generation's child (the seed at generation 0): parent, produced_by, entry, admission
    and the score of each train stage."""
    dgm, name, g, slot = candidate_algorithm(context)
    assert isinstance(dgm, Dgm)
    with refusing_out_of_turn():
        record = dgm.candidate(g, slot)
    metadata = {
        "status": record.status,
        "snapshot_id": record.snapshot_id or "-",
        "parent_id": record.parent_id or "-",
        "produced_by": record.produced_by or ("-" if g == 0 else "the Worker (fixed)"),
        "entry": record.entry or "-",
        "reasons": "; ".join(record.reasons) or "-",
        "stage_scores": ", ".join(
            f"{s:.3f}/{n}" for s, n in zip(record.stage_scores, record.stage_tasks, strict=True)
        )
        or "-",
        **describe.figures(score=record.score),
        **describe.explorer_link(name, record.snapshot_id, g, slot),
    }
    yield dg.Output(record.model_dump(mode="json"), metadata=metadata)
    where = str(context.partition_key)
    editing = read_optional(dgm.layout.editing(g, slot), EditingVerdict)
    yield describe.check_result(
        where,
        {
            "reasons": "; ".join(record.reasons) or "-",
            "editing_check": editing.reason if editing else "not run",
        },
        check_name=ADMISSION,
        passed=record.admitted,
        severity=dg.AssetCheckSeverity.WARN,
        summary="admitted" if record.admitted else f"refused: {'; '.join(record.reasons) or '-'}",
    )
    yield describe.check_result(
        where,
        {"stages": len(record.stage_scores)},
        check_name="score_in_unit_interval",
        passed=all(0.0 <= s <= 1.0 for s in record.stage_scores),
    )
    verdict = read_optional(dgm.layout.content(g, slot), ContentVerdict)
    unchecked = (
        "the seed"
        if g == 0
        else f"no child to check ({'; '.join(record.reasons) or record.status})"
    )
    yield describe.content_check(verdict, key("candidate"), where, unchecked)


@dg.asset(
    key=key("promotion"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    deps=[dg.AssetDep(key("candidate"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def promotion(context: dg.AssetExecutionContext) -> dg.Output:
    """Admitted members on dev; the best by dev (a tie keeps the earlier admission)."""
    dgm, _ = experiment_algorithm(context)
    with refusing_out_of_turn():
        chosen = dgm.promote()  # type: ignore[attr-defined]
    state = dgm.read_state()
    ranking = "\n".join(f"| {g} | {s} | {short(i)} | {d:.3f} |" for g, s, i, d in chosen.ranking)
    return dg.Output(
        chosen.model_dump(mode="json"),
        metadata={
            "generation": chosen.generation,
            "slot": chosen.slot,
            "snapshot_id": chosen.snapshot_id,
            "archive": dg.MetadataValue.md("\n".join(dgm.summary(state))),
            "ranking": dg.MetadataValue.md(
                "| gen | slot | snapshot | dev |\n|---|---|---|---|\n" + ranking
            ),
            "stepping_stones": len(stepping_stones(state)),
        },
    )


@dg.asset(
    key=key("sealed_test_score"),
    partitions_def=PARTITIONS.experiments,
    group_name=PREFIX,
    kinds={"sealed"},
    deps=[promotion],
    required_resource_keys=RESOURCES,
    check_specs=describe.sealed_check_specs(key("sealed_test_score"), gap=False),
)
def sealed_test_score(context: dg.AssetExecutionContext) -> Iterator:
    """The best by dev on the sealed test (then the next, up to `test_top_k`), each once."""
    dgm, name = experiment_algorithm(context)
    with refusing_out_of_turn():
        results = dgm.sealed_test()  # type: ignore[attr-defined]
    state = dgm.read_state()
    yield dg.Output(
        [r.model_dump(mode="json") for r in results],
        metadata={
            f"test_{i}": f"{short(r.snapshot_id)} {r.test_score:.3f}"
            for i, r in enumerate(results, 1)
        },
    )
    yield _once_check(dgm, state, name)
    yield describe.splits_check(dgm, key("sealed_test_score"), name)


def _once_check(dgm, state, where: str) -> dg.AssetCheckResult:
    """Each test record of the member ranked there by dev, written after the promotion, with
    exactly tasks x attempts rollouts."""
    chosen, problems = state.promotion, []
    for i, test in enumerate(state.tests, start=1):
        expected = test.test_tasks * dgm.settings.attempts
        rollouts = len(dgm._final(dgm.layout.test_rollouts(i)))
        if test.snapshot_id != chosen.ranking[i - 1][2] or test.created < chosen.created:
            problems.append(f"test {i} is not of the member ranked {i} after the promotion")
        if rollouts != expected:
            problems.append(f"test {i} has {rollouts} rollouts, not {expected}")
    return describe.check_result(
        where,
        {"tests": len(state.tests), "problems": "; ".join(problems) or "-"},
        check_name=describe.ONCE_AFTER_PROMOTION,
        asset_key=key("sealed_test_score"),
        passed=not problems,
    )


ASSETS = [candidate, promotion, sealed_test_score]
ROUND_ASSETS = [candidate]
FINAL_ASSETS = [promotion, sealed_test_score]
