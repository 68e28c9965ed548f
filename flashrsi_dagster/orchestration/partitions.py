"""Partitions of an algorithm's assets: experiment x candidate, the (round, slot)s steps use.

Both dimensions are dynamic and belong to one algorithm (`meta_harness_experiment`,
`meta_harness_candidate`). A candidate key names a round and a slot (`r003.c0`), the real
snapshot id going into metadata: unique ids per round would turn the cross product into
phantom partitions. The experiment dimension is what experiment-level assets (promotion, the
sealed test, the summary) are partitioned by, so they depend on every candidate of *their*
experiment and on no other (`MultiToSingleDimensionPartitionMapping`). Keys read round first
(`r003.c0|demo`): Dagster joins dimension values in the order of the dimension names.

An experiment registers only the (round, slot)s a step of it may run in (Meta-Harness's
seed round has `r000.c0` alone, the Evolver's `vanilla` is round 0's only). Experiments with
fewer rounds or other slots than another of the same algorithm show the difference as
never-materialized partitions; nothing requests them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg

from flashrsi_dagster.experiment.keys import candidate_key, parse_candidate_key

CANDIDATE, EXPERIMENT = "candidate", "experiment"
Candidates = Iterable[tuple[int, str]]
"""An experiment's (round, slot)s (`Partitioned.round_slots`)."""


@dataclass(frozen=True)
class AlgorithmPartitions:
    """The partitions of one algorithm's assets."""

    experiments: dg.DynamicPartitionsDefinition
    candidates: dg.DynamicPartitionsDefinition
    grid: dg.MultiPartitionsDefinition

    @classmethod
    def of(cls, algorithm: str) -> AlgorithmPartitions:
        experiments = dg.DynamicPartitionsDefinition(name=f"{algorithm}_{EXPERIMENT}")
        candidates = dg.DynamicPartitionsDefinition(name=f"{algorithm}_{CANDIDATE}")
        grid = dg.MultiPartitionsDefinition({CANDIDATE: candidates, EXPERIMENT: experiments})
        return cls(experiments, candidates, grid)

    def key(self, experiment: str, k: int, slot: str) -> dg.MultiPartitionKey:
        return dg.MultiPartitionKey({CANDIDATE: candidate_key(k, slot), EXPERIMENT: experiment})

    def experiment_dependency(self) -> dg.MultiToSingleDimensionPartitionMapping:
        """From an experiment-level asset to every candidate of its experiment."""
        with warnings.catch_warnings():  # beta since 1.x; the one built-in mapping that fits
            warnings.simplefilter("ignore", dg.BetaWarning)
            return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=EXPERIMENT)

    def register(self, instance: dg.DagsterInstance, name: str, candidates: Candidates) -> None:
        """Every partition the experiment will use, known up front: the UI shows the grid.
        `candidates`: its (round, slot)s, those a step may run in and no other."""
        for request in self.additions(name, candidates):
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)

    def additions(self, name: str, candidates: Candidates) -> list[dg.AddDynamicPartitionsRequest]:
        """What `register` adds, as requests (a sensor's result carries them)."""
        keys = [candidate_key(k, slot) for k, slot in candidates]
        return [
            dg.AddDynamicPartitionsRequest(self.candidates.name, keys),
            dg.AddDynamicPartitionsRequest(self.experiments.name, [name]),
        ]

    def missing(
        self, instance: dg.DagsterInstance, name: str, candidates: Candidates
    ) -> list[dg.AddDynamicPartitionsRequest]:
        """The additions `instance` still lacks (none for an experiment started through it;
        all for a home restored beside a fresh instance)."""
        requests = self.additions(name, candidates)
        return [
            r
            for r in requests
            if not set(r.partition_keys)
            <= set(instance.get_dynamic_partitions(r.partitions_def_name))
        ]

    def is_registered(self, instance: dg.DagsterInstance, name: str) -> bool:
        return instance.has_dynamic_partition(self.experiments.name, name)


def candidate_of(key: str | dg.MultiPartitionKey) -> tuple[str, int, str]:
    """(experiment, round, slot) of a grid partition key."""
    if not isinstance(key, dg.MultiPartitionKey):
        raise ValueError(f"not a candidate partition: {key!r} (expected r<NNN>.<slot>|<name>)")
    k, slot = parse_candidate_key(key.keys_by_dimension[CANDIDATE])
    return key.keys_by_dimension[EXPERIMENT], k, slot
