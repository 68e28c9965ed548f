"""An algorithm's Dagster definitions, and the one mapping from its steps to runs.

Every algorithm declares its assets, its round job (one run per round x slot partition) and
its finalize job (per experiment: what the search leaves, the promotion if the algorithm has
one, then the sealed test). `request()` turns the
algorithm's next step into a `RunRequest`; the sensor, the nightly schedule and the CLI's
in-process driver all use it, so a step is launched the same way wherever it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from flashrsi_dagster.algorithms import registry
from flashrsi_dagster.algorithms.base import FINALIZE_ACTIONS, ONLY_SLOT, Algorithm, Step
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.explorer.links import WHERE_EXPERIMENTS_ARE
from flashrsi_dagster.orchestration.context import DRIVER_TAG, EXPERIMENT_TAG
from flashrsi_dagster.orchestration.executors import flashrsi_executor
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.orchestration.tags import CANDIDATE_TAG, ROUND_TAG, TITLE_TAG, title


@dataclass(frozen=True)
class AlgorithmDefs:
    algorithm: type[Algorithm]
    partitions: AlgorithmPartitions
    assets: Sequence[Any]
    round_job: dg.UnresolvedAssetJobDefinition
    finalize_job: dg.UnresolvedAssetJobDefinition
    sealed_test: dg.AssetKey
    """The finalize job's last asset."""
    promotes: bool = True
    """Whether the algorithm has a `promote` step. Its run is the whole finalize job, so the
    `sealed_test` step after it runs `sealed_test` alone; without one (the Evolver), the
    `sealed_test` step's run is the whole finalize job."""

    @property
    def name(self) -> str:
        return self.algorithm.name

    @property
    def jobs(self) -> list[dg.UnresolvedAssetJobDefinition]:
        return [self.round_job, self.finalize_job]

    @classmethod
    def of(
        cls,
        algorithm: type[Algorithm],
        assets: Any,
        *,
        round: str,
        finalize: str,
        promotes: bool = True,
    ):
        """An algorithm's definitions from its assets module (`PARTITIONS`, `ASSETS`,
        `ROUND_ASSETS`, `FINAL_ASSETS`, `key`): the round job named after the algorithm, the
        finalize job `<name>_finalize`; `round` and `finalize` describe them; `promotes`:
        see the field."""

        def job(name: str, selected: Sequence[Any], description: str):
            return dg.define_asset_job(
                name,
                selection=dg.AssetSelection.assets(*selected),
                executor_def=flashrsi_executor,
                description=f"{description}\n\n{WHERE_EXPERIMENTS_ARE}",
            )

        return cls(
            algorithm=algorithm,
            partitions=assets.PARTITIONS,
            assets=assets.ASSETS,
            round_job=job(algorithm.name, assets.ROUND_ASSETS, round),
            finalize_job=job(f"{algorithm.name}_finalize", assets.FINAL_ASSETS, finalize),
            sealed_test=assets.key("sealed_test_score"),
            promotes=promotes,
        )

    def register(self, instance: dg.DagsterInstance, name: str, opened: Algorithm) -> None:
        """The experiment's partitions, all of them up front (`opened`: its algorithm)."""
        self.partitions.register(instance, name, opened.round_slots())

    def unregistered(
        self, instance: dg.DagsterInstance, name: str, opened: Algorithm
    ) -> list[dg.AddDynamicPartitionsRequest]:
        """The experiment's partitions `instance` does not know yet, as requests."""
        return self.partitions.missing(instance, name, opened.round_slots())

    def request(
        self, name: str, step: Step, tags: Mapping[str, str] | None = None
    ) -> dg.RunRequest | None:
        """The run that does `step` of experiment `name`; None once it is finished. It is
        tagged with the experiment, a round step's candidate and `tags` (its endpoints, see
        `orchestration/tags.py`): the run queue's limits count them; and with a title the
        Runs list shows (experiment, candidate, action)."""
        tags = {**(tags or {}), DRIVER_TAG: "1", EXPERIMENT_TAG: name}
        key = run_key(name, step)
        if step.round is not None:
            slot = step.slot or ONLY_SLOT
            where = title(name, step.action, candidate_key(step.round, slot))
            return dg.RunRequest(
                run_key=key,
                job_name=self.round_job.name,
                partition_key=self.partitions.key(name, step.round, slot),
                tags={**tags, ROUND_TAG: str(step.round), CANDIDATE_TAG: slot, TITLE_TAG: where},
            )
        if step.action in FINALIZE_ACTIONS:
            alone = step.action == "sealed_test" and self.promotes
            return dg.RunRequest(
                run_key=key,
                job_name=self.finalize_job.name,
                partition_key=name,
                tags={**tags, TITLE_TAG: title(name, step.action)},
                asset_selection=[self.sealed_test] if alone else None,
            )
        return None


def run_key(name: str, step: Step) -> str:
    """Idempotent per step: the sensor never launches the same step twice. A step that can
    come again on new evidence (a promotion re-ranking after a re-evaluated round) names what
    it acts on in `basis`, so the new one gets a key of its own."""
    where = "" if step.round is None else f":r{step.round:03d}.{step.slot}"
    basis = f":{step.basis}" if step.basis else ""
    return f"{name}:{step.action}{where}{basis}"


def defs_for(algorithm: str) -> AlgorithmDefs:
    """The Dagster definitions the registered algorithm's folder declares (`.defs:DEFS`)."""
    defs = registry.entry(algorithm).load("definitions")
    if not isinstance(defs, AlgorithmDefs):
        raise TypeError(f"algorithm {algorithm!r}: its definitions are not an AlgorithmDefs")
    return defs


def all_defs() -> dict[str, AlgorithmDefs]:
    """Every registered algorithm's definitions, by name."""
    return {name: defs_for(name) for name in registry.names()}


def step_of(name: str, key: str) -> Step | None:
    """The step whose run key (`run_key`) is `key`; None for a key of no step of `name`."""
    head = f"{name}:"
    match = _RUN_KEY.fullmatch(key.removeprefix(head)) if key.startswith(head) else None
    if match is None:
        return None
    action, k, slot, basis = match.groups()
    return Step(action, None if k is None else int(k), slot, basis)


_RUN_KEY = re.compile(r"([a-z_]+)(?::r(\d{3,})\.([A-Za-z0-9_-]+))?(?::(.+))?")
