"""The confirm's three gates, in the SOP's order: Gate-f -> Gate-b -> Gate2.

- Gate-f (contamination) reports the tasks whose rollouts ended in an infrastructure failure
  after the reruns; they stay in the denominator at 0, so the reported score never shrinks it.
- Gate-b (beacon) asks whether the candidate's mechanism fired at all: with beacon data, a
  candidate whose beacon fired on no task is inert; without beacon data it passes (an honest
  candidate that carries no beacon is not punished; promotion still needs the full-set win).
- Gate2 (navigation) promotes on the K-run mean over the whole train set against the fixed
  vanilla's; the paired 2-sigma credit is computed beside it as a label, never a condition.

Scores are always over the full task set with a fixed denominator: tasks x K.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.stats.small_n import difference_tests

GateName = Literal["gate_f", "gate_b", "gate_2"]


@dataclass(frozen=True)
class GateVerdict:
    name: GateName
    passed: bool
    reason: str


@dataclass(frozen=True)
class Confirmed:
    """One version's confirm: every train task's K scores (infra failures scored 0)."""

    scores: Mapping[str, Sequence[float]]
    infra: Collection[str] = ()
    """Tasks with at least one attempt that ended as an infrastructure failure."""

    def rates(self) -> dict[str, float]:
        return {task: math.fsum(s) / len(s) for task, s in self.scores.items()}

    def mean(self, tasks: Collection[str], k: int) -> float:
        """The score over `tasks` x `k` attempts: the fixed denominator. Summed exactly
        (`fsum`): two versions with the same scores tie exactly, whatever the order of
        `tasks` or of the runs, and the tie is broken by `next_parent.rank_key`."""
        total = math.fsum(s for task in tasks for s in self.scores.get(task, ()))
        return total / (len(tasks) * k)


def confirmed(final: Sequence[Trajectory]) -> Confirmed:
    """A version's final rollouts as its confirm: per task its scores over the runs (an
    unscored run is 0), and the tasks an infrastructure failure reached."""
    scores: dict[str, list[float]] = {}
    infra = set()
    for t in sorted(final, key=lambda t: (t.task_id, t.attempt)):
        scores.setdefault(t.task_id, []).append(float(t.score or 0.0))
        if t.status == Status.INFRA_ERROR:
            infra.add(t.task_id)
    return Confirmed(scores=scores, infra=frozenset(infra))


def run_gates(
    candidate: Confirmed,
    vanilla: Confirmed,
    tasks: Collection[str],
    k: int,
    fired: Collection[str] | None,
) -> list[GateVerdict]:
    """The verdicts in order, stopping at the first that fails (Gate-f never fails)."""
    missing = [t for t in tasks if len(candidate.scores.get(t, ())) != k]
    if missing:
        raise ValueError(f"confirm incomplete: {len(missing)} task(s) without {k} scores")
    verdicts = [_gate_f(candidate, tasks, k)]
    verdicts.append(_gate_b(fired, tasks))
    if verdicts[-1].passed:
        verdicts.append(_gate_2(candidate, vanilla, tasks, k))
    return verdicts


def _gate_f(candidate: Confirmed, tasks: Collection[str], k: int) -> GateVerdict:
    contaminated = sorted(set(candidate.infra) & set(tasks))
    detail = f"{len(contaminated)} task(s) with infrastructure failures, scored 0 in place"
    listing = f": {', '.join(contaminated)}" if contaminated else ""
    return GateVerdict("gate_f", True, f"{detail}{listing}; denominator {len(tasks)} x {k}")


def _gate_b(fired: Collection[str] | None, tasks: Collection[str]) -> GateVerdict:
    if fired is None:
        return GateVerdict("gate_b", True, "no beacon data: passed (the full-set win decides)")
    hits = sorted(set(fired) & set(tasks))
    if not hits:
        return GateVerdict("gate_b", False, "inert: the candidate's beacon fired on no task")
    return GateVerdict("gate_b", True, f"the beacon fired on {len(hits)} task(s)")


def _gate_2(candidate: Confirmed, vanilla: Confirmed, tasks: Collection[str], k: int):
    mine, theirs = candidate.mean(tasks, k), vanilla.mean(tasks, k)
    verdict = "beats" if mine > theirs else "does not beat"
    return GateVerdict(
        "gate_2", mine > theirs, f"K={k} mean {mine:.4f} {verdict} vanilla's {theirs:.4f}"
    )


@dataclass(frozen=True)
class Credit:
    """The second verdict, kept apart from navigation: a label, never a condition.

    d_i = rate_c,i - rate_v,i over the train tasks (rates over K runs), se = stdev(d)/sqrt(n),
    z = mean(d)/se; credited at z >= 2 (the paired 2-sigma of the SOP), beside the small-n
    verdict of `stats.small_n` (exact tests: right when n is small)."""

    n: int
    lift: float | None
    z: float | None
    credited_2sigma: bool
    small_n: str
    """credited / regressed / indecisive."""


def credit(
    candidate: Confirmed, vanilla: Confirmed, tasks: Collection[str], sigma: float = 2.0
) -> Credit:
    mine, theirs = candidate.rates(), vanilla.rates()
    d = [mine[t] - theirs[t] for t in sorted(tasks)]
    tests = difference_tests(d)
    z = tests.t.statistic
    return Credit(
        n=len(d),
        lift=tests.t.mean,
        z=z,
        credited_2sigma=z is not None and z >= sigma,
        small_n=tests.verdict,
    )
