"""The Pareto frontier of dev accuracy x context tokens (the paper's two objectives).

A candidate is on the frontier when no other evaluated candidate has a dev score at least as
high with at most as many context tokens per task (the target's input tokens over its final dev
rollouts, divided by the dev tasks), and is better on one of the two. Computed from the round
records only, so dev only: the sealed test never enters it (it is shown to the Worker).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from flashrsi_dagster.algorithms.meta_harness.plan import candidate_name, rank
from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord


@dataclass(frozen=True)
class Point:
    round: int
    slot: str
    snapshot_id: str
    dev_score: float
    context_tokens_per_task: float

    @property
    def name(self) -> str:
        return candidate_name(self.round, self.slot)

    def as_json(self) -> dict:
        return asdict(self)

    def dominates(self, other: Point) -> bool:
        at_least = (
            self.dev_score >= other.dev_score
            and self.context_tokens_per_task <= other.context_tokens_per_task
        )
        better = (
            self.dev_score > other.dev_score
            or self.context_tokens_per_task < other.context_tokens_per_task
        )
        return at_least and better


def points(rounds: tuple[RoundRecord, ...] | list[RoundRecord]) -> list[Point]:
    """The candidates with both objectives known, on the seed round's evaluation set (those
    `rank` ranks), best dev score first."""
    ranked = {sid for _, sid, _ in rank(rounds)}
    by_id = {r.snapshot_id: r for r in rounds if r.snapshot_id in ranked}
    return [
        Point(
            r.round,
            r.slot,
            sid,
            r.dev_score or 0.0,
            (r.dev_input_tokens or 0) / max(r.dev_tasks, 1),
        )
        for _, sid, _ in rank(rounds)
        if (r := by_id[sid]).dev_input_tokens is not None
    ]


def frontier(rounds: tuple[RoundRecord, ...] | list[RoundRecord]) -> list[Point]:
    """The non-dominated candidates, best dev score first (ties: earlier round, lower slot);
    two candidates equal on both objectives are both kept."""
    candidates = points(rounds)
    return [p for p in candidates if not any(q.dominates(p) for q in candidates)]
