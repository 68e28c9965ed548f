"""Partitions of the Meta-Harness assets: a dense grid of round x candidate slot.

The round dimension is dynamic and its key carries the experiment (`<experiment>.r003`), so
several experiments coexist; the candidate dimension holds fixed slot names (Meta-Harness has
one candidate per round, `c0`), the real snapshot id going into metadata. Unique ids per round
would turn the cross product into phantom partitions. Experiment-level assets (promotion, sealed
test) are partitioned by experiment.
"""

from __future__ import annotations

import re

import dagster as dg

ROUND_DIMENSION, CANDIDATE_DIMENSION = "round", "candidate"
SLOT = "c0"

rounds = dg.DynamicPartitionsDefinition(name="meta_harness_round")
round_candidates = dg.MultiPartitionsDefinition(
    {ROUND_DIMENSION: rounds, CANDIDATE_DIMENSION: dg.StaticPartitionsDefinition([SLOT])}
)
experiments = dg.DynamicPartitionsDefinition(name="meta_harness_experiment")

_ROUND_KEY = re.compile(r"(?P<experiment>[A-Za-z0-9][A-Za-z0-9_.-]{0,79})\.r(?P<round>\d{3,})")


def round_key(experiment: str, k: int) -> str:
    key = f"{experiment}.r{k:03d}"
    parse_round_key(key)  # refuse anything Dagster would silently drop
    return key


def parse_round_key(key: str) -> tuple[str, int]:
    match = _ROUND_KEY.fullmatch(key)
    if match is None:
        raise ValueError(f"not a Meta-Harness round key: {key!r} (expected <experiment>.r<NNN>)")
    return match["experiment"], int(match["round"])


def partition(experiment: str, k: int) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey(
        {ROUND_DIMENSION: round_key(experiment, k), CANDIDATE_DIMENSION: SLOT}
    )


def register(instance: dg.DagsterInstance, name: str, max_steps: int) -> None:
    """Every partition the experiment will use, known up front: the UI shows the whole grid."""
    keys = [round_key(name, k) for k in range(max_steps + 1)]
    instance.add_dynamic_partitions(rounds.name, keys)
    instance.add_dynamic_partitions(experiments.name, [name])
