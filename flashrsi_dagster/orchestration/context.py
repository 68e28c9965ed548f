"""What every algorithm's assets read from their Dagster context: which experiment, round and
slot a partition names, whether the round driver launched the run, and the experiment's
algorithm (opened once per run by the `experiments_home` resource)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from flashrsi_dagster.algorithms.base import Algorithm, StepOrderError
from flashrsi_dagster.config.names import name_problem
from flashrsi_dagster.environments.attribution import work_for
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.orchestration.partitions import CANDIDATE, candidate_of
from flashrsi_dagster.orchestration.tags import TITLE_TAG, title

DRIVER_TAG = "flashrsi/driver"
"""Set on runs the round driver launches; a run without it (e.g. from the UI) re-runs work."""
EXPERIMENT_TAG = "flashrsi/experiment"
"""Every run of an experiment carries it, however launched: the driver waits for them."""


def candidate(context: dg.AssetExecutionContext) -> tuple[str, int, str]:
    """(experiment, round, slot) of the run's partition; tags the run with the experiment. The
    step's model calls are the candidate's from now on (`environments/attribution.py`)."""
    name, k, slot = candidate_of(context.partition_key)
    _tag(context, name, context.partition_key.keys_by_dimension[CANDIDATE])
    work_for(candidate_key(k, slot))
    return name, k, slot


def experiment_of(context: dg.AssetExecutionContext) -> str:
    """The experiment of an experiment-partitioned asset; tags the run with it. The step's
    model calls are the experiment's own, no candidate's."""
    name = context.partition_key
    _tag(context, name)
    work_for(None)
    return name


def algorithm_of(context: dg.AssetExecutionContext, name: str) -> Algorithm:
    experiments = context.resources.experiments_home
    if name_problem(name) is not None:  # `<name>/../<name>`, added by hand
        raise dg.Failure(
            description=f"partition {name!r} is not an experiment of {experiments.home}: "
            f"{name_problem(name)}; nothing was done",
            allow_retries=False,
        )
    if not experiments.exists(name):
        raise dg.Failure(
            description=f"experiment {name!r} does not exist under {experiments.home}: start "
            "it with the `start_experiment` job (Launchpad) or `flashrsi run`",
            allow_retries=False,
        )
    if experiments.open(name).config.experiment.name != name:  # `<name>/../<name>`, by hand
        raise dg.Failure(
            description=f"partition {name!r} is not an experiment of {experiments.home}: it "
            "reaches another experiment's folder by another path; nothing was done",
            allow_retries=False,
        )
    return experiments.algorithm(name, log=context.log.info)


def experiment_algorithm(context: dg.AssetExecutionContext) -> tuple[Algorithm, str]:
    """The algorithm of an experiment-partitioned asset's experiment, and its name."""
    name = experiment_of(context)
    return algorithm_of(context, name), name


def candidate_algorithm(context: dg.AssetExecutionContext) -> tuple[Algorithm, str, int, str]:
    """The experiment's algorithm, and the experiment, round and slot of the run's partition.
    A partition that is not one of the experiment's candidates fails the run before anything
    is done: anyone can add a key to a dynamic partition in the UI, and `r0000.c0` would read
    as round 0, `r000.c1` as a slot of a round that has only the seed."""
    name, k, slot = candidate(context)
    algorithm = algorithm_of(context, name)
    rounds, slots = algorithm.rounds(), algorithm.slots()
    given = context.partition_key.keys_by_dimension[CANDIDATE]
    if given != candidate_key(k, slot) or (k, slot) not in algorithm.round_slots():
        last = candidate_key(rounds - 1, slots[-1])
        raise dg.Failure(
            description=f"partition {context.partition_key} is not a candidate of experiment "
            f"{name!r} (its candidates are {candidate_key(0, slots[0])} to {last}, slots "
            f"{', '.join(slots)}, each round those its steps use); nothing was done",
            allow_retries=False,
        )
    return algorithm, name, k, slot


def _tag(context: dg.AssetExecutionContext, name: str, where: str | None = None) -> None:
    # A run launched from the UI has no experiment tag; the driver sensor waits for runs by
    # that tag, so the run adds it as soon as it knows its experiment, and a title.
    tags = {EXPERIMENT_TAG: name}
    if TITLE_TAG not in context.run.tags:
        tags[TITLE_TAG] = title(name, "by hand", where)
    if any(context.run.tags.get(k) != v for k, v in tags.items()):
        context.instance.add_run_tags(context.run.run_id, tags)


@contextmanager
def refusing_out_of_turn() -> Iterator[None]:
    """Around an engine step: a step asked for out of turn fails the asset with its reason
    (and no retry: the records say when it may run). A context manager, not a wrapper: no
    frame between the asset and its step."""
    try:
        yield
    except StepOrderError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
