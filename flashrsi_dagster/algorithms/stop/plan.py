"""What comes next, as a pure function of the records and the config: the CLI, the Dagster
hosts and every step's own order check call `next_step`, so they never disagree."""

from __future__ import annotations

from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step
from flashrsi_dagster.algorithms.stop.records import Layout, Promotion, RoundRecord, StopTest
from flashrsi_dagster.records import read_optional


@dataclass(frozen=True)
class State:
    rounds: tuple[RoundRecord, ...]
    """The rounds with a result, in order (round 0 scores the seed improver)."""
    promotion: Promotion | None
    test: StopTest | None

    def round(self, k: int, slot: str = ONLY_SLOT) -> RoundRecord | None:
        return next((r for r in self.rounds if r.round == k), None)

    def flagged(self) -> int:
        return sum(r.flagged for r in self.rounds)


def read_state(layout: Layout, rounds: int) -> State:
    found = (read_optional(layout.round(k), RoundRecord) for k in range(rounds + 1))
    return State(
        rounds=tuple(r for r in found if r is not None),
        promotion=read_optional(layout.promotion, Promotion),
        test=read_optional(layout.test, StopTest),
    )


def next_step(state: State, rounds: int) -> Step:
    done = {r.round for r in state.rounds}
    for k in range(rounds + 1):
        if k not in done:
            return Step("evaluate_seed" if k == 0 else "improve", k, ONLY_SLOT)
    if state.promotion is None:
        return Step("promote")
    if state.test is None:
        return Step("sealed_test")
    return Step("done")


ORDER = ("evaluate_seed", "improve", "promote", "sealed_test", "done")


def still_missing(state: State, rounds: int, action: str) -> str | None:
    """Why `action` may not run now; None when it may (or it is done, and read back)."""
    step = next_step(state, rounds)
    if ORDER.index(step.action) >= ORDER.index(action):
        return None
    return f"{step.describe()} comes first"


def eligible(rounds: tuple[RoundRecord, ...]) -> list[RoundRecord]:
    """Rounds whose improver may be kept or promoted: scored, and never flagged (the seed,
    the user's own program, always)."""
    return [r for r in rounds if r.status == "evaluated" and (not r.flagged or r.round == 0)]


def current(state: State, k: int) -> RoundRecord:
    """The improver round k applies to its own code: the best train meta-utility of the
    eligible rounds before k (a tie keeps the earlier round; the seed is always eligible)."""
    before = [r for r in eligible(state.rounds) if r.round < k]
    return max(before, key=lambda r: (r.train_meta_utility or 0.0, -r.round))


def rank(rounds: tuple[RoundRecord, ...]) -> list[tuple[int, str, float]]:
    """Eligible rounds by dev meta-utility, best first; a tie keeps the earlier round."""
    ordered = sorted(eligible(rounds), key=lambda r: (-(r.dev_score or 0.0), r.round))
    return [(r.round, r.snapshot_id or "", r.dev_score or 0.0) for r in ordered]
