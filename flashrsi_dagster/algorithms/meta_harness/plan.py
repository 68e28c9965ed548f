"""What comes next, as a pure function of the records so far: the CLI loop, the Dagster
sensor and every step's own order check call `next_step`, so they can never disagree."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step
from flashrsi_dagster.algorithms.meta_harness.records import (
    Layout,
    Promotion,
    RoundRecord,
    TestResult,
)
from flashrsi_dagster.evaluator.compare import basis
from flashrsi_dagster.records import read_optional

SLOT = ONLY_SLOT
"""Meta-Harness has one candidate per round."""


@dataclass(frozen=True)
class State:
    rounds: tuple[RoundRecord, ...]
    promotion: Promotion | None
    test: TestResult | None

    def round(self, k: int) -> RoundRecord | None:
        return next((r for r in self.rounds if r.round == k), None)

    def parent_round(self, k: int) -> RoundRecord | None:
        """The evaluated round whose snapshot round k's candidate was made from."""
        this = self.round(k)
        if this is None or this.parent_id is None:
            return None
        return next((r for r in self.rounds if r.snapshot_id == this.parent_id), None)


def read_state(layout: Layout, max_steps: int) -> State:
    """The records so far (the one side effect of planning: reading them)."""
    rounds = [read_optional(layout.round(k), RoundRecord) for k in range(max_steps + 1)]
    return State(
        rounds=tuple(r for r in rounds if r is not None),
        promotion=read_optional(layout.promotion, Promotion),
        test=read_optional(layout.test, TestResult),
    )


def next_step(state: State, max_steps: int) -> Step:
    done = {r.round for r in state.rounds}
    if any(r.status == "worker_failed" for r in state.rounds):
        return Step("aborted")
    if 0 not in done:
        return Step("evaluate_seed", 0, SLOT)
    for k in range(1, max_steps + 1):
        if k not in done:
            return Step("propose", k, SLOT)
    if state.test is None and (state.promotion is None or stale(state)):
        # again whenever a round's score changed before the test
        return Step("promote", basis=promotion_basis(state))
    if state.test is None:
        return Step("sealed_test")
    return Step("done")


def stale(state: State) -> bool:
    """Whether the promotion no longer matches the rounds' ranking (a round re-evaluated)."""
    if state.promotion is None:
        return False
    return [list(r) for r in rank(state.rounds)] != [list(r) for r in state.promotion.ranking]


def still_missing(state: State, max_steps: int, action: str) -> str | None:
    """Why `action` cannot run yet, or None when it is the search's turn (or already done,
    which the step itself reads back)."""
    step = next_step(state, max_steps)
    # A promotion on record is read back (frozen after the test), never re-ranked while a
    # round has no result (one set aside for re-evaluation, say): that ranking would miss it.
    settled = state.promotion is not None and (state.test is not None or step.round is None)
    if action == "promote" and (settled or step.action == "promote"):
        return None
    if action == "sealed_test" and (state.test is not None or step.action == "sealed_test"):
        return None
    if step.action == "aborted":
        return "the search was aborted (a Worker failed); nothing is promoted or tested"
    missing = [k for k in range(max_steps + 1) if state.round(k) is None]
    if missing:
        rounds = ", ".join(str(k) for k in missing)
        return f"the search is not finished: round(s) {rounds} of 0..{max_steps} have no result yet"
    return "the promotion is missing or stale: promote first (it re-ranks the rounds)"


def promotion_basis(state: State) -> str:
    """What a promotion step acts on: the ranking now, and the promotion it replaces. A
    ranking that comes back (a round re-evaluated twice) replaces another promotion, so each
    re-ranking is a step of its own (hosts launch a step once per basis)."""
    basis = ranking_digest(state.rounds)
    if state.promotion is not None:
        replaced = f"{state.promotion.created.isoformat()}{state.promotion.ranking}"
        basis += "-" + hashlib.sha256(replaced.encode()).hexdigest()[:10]
    return basis


def ranking_digest(rounds: tuple[RoundRecord, ...]) -> str:
    """A short name for the ranking the rounds give (for telling promotions apart)."""
    return hashlib.sha256(json.dumps(rank(rounds)).encode()).hexdigest()[:10]


def rank(rounds: tuple[RoundRecord, ...] | list[RoundRecord]) -> list[tuple[int, str, float]]:
    """Evaluated snapshots by dev score, best first; a tie keeps the earlier round first.
    Only rounds on the seed round's evaluation set are ranked: a score on another version of
    dev is no lift over the seed (`evaluator.compare`)."""
    scored = [r for r in rounds if r.status == "evaluated" and r.dev_score is not None]
    scored.sort(key=lambda r: r.round)
    base = scored[0].eval_set if scored else None
    scored = [r for r in scored if basis(r.eval_set, base).comparable]
    ordered = sorted(scored, key=lambda r: (-r.dev_score, r.round))  # type: ignore[operator]
    return [(r.round, r.snapshot_id or "", r.dev_score or 0.0) for r in ordered]
