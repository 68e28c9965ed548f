"""What comes next, as a pure function of the records and the config: the CLI, the Dagster
hosts and every step's own order check call `next_step`, so they never disagree."""

from __future__ import annotations

import random
from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step
from flashrsi_dagster.records import read_optional
from tests.algorithms.random_search.records import Layout, Promotion, RoundRecord, TestResult


@dataclass(frozen=True)
class State:
    rounds: tuple[RoundRecord, ...]
    """The rounds with a result, in order (round 0 is the seed's evaluation)."""
    promotion: Promotion | None
    test: TestResult | None

    def round(self, k: int, slot: str = ONLY_SLOT) -> RoundRecord | None:
        return next((r for r in self.rounds if r.round == k), None)


def read_state(layout: Layout, rounds: int) -> State:
    found = (read_optional(layout.round(k), RoundRecord) for k in range(rounds + 1))
    return State(
        rounds=tuple(r for r in found if r is not None),
        promotion=read_optional(layout.promotion, Promotion),
        test=read_optional(layout.test, TestResult),
    )


def drawn(seed: int, k: int, edits: int) -> int:
    """The edit round k applies: the same seed draws the same edit, whatever ran before."""
    return random.Random(f"{seed}:{k}").randrange(edits)


def next_step(state: State, rounds: int) -> Step:
    done = {r.round for r in state.rounds}
    for k in range(rounds + 1):
        if k not in done:
            return Step("evaluate", k, ONLY_SLOT)
    if state.promotion is None:
        return Step("promote")
    if state.test is None:
        return Step("sealed_test")
    return Step("done")


def still_missing(state: State, rounds: int, action: str) -> str | None:
    """Why `action` may not run now; None when it may (or it is done, and read back)."""
    step = next_step(state, rounds)
    order = ["evaluate", "promote", "sealed_test", "done"]
    if order.index(step.action) >= order.index(action):
        return None
    return f"{step.describe()} comes first"


def rank(rounds: tuple[RoundRecord, ...]) -> list[tuple[int, str, float]]:
    """Evaluated rounds by dev score, best first; a tie keeps the earlier round."""
    scored = [r for r in rounds if r.status == "evaluated" and r.dev_score is not None]
    ordered = sorted(scored, key=lambda r: (-(r.dev_score or 0.0), r.round))
    return [(r.round, r.snapshot_id or "", r.dev_score or 0.0) for r in ordered]
