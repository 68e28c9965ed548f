"""Which WHYs a round works on, and how many candidates: 1-2 WHYs x 2-3 candidates, within
`Budget(max_why_per_round x candidates_per_why)`, enforced here whatever the model asked for.

The model picks the WHYs (`pick`); when it cannot (no answer, an unknown WHY), the formula
does, and its ranking is also kept beside every model pick as a shadow log. The formula: a
WHY's weight is the tasks it explains in the failure map, decayed by its history,

    weight = failing_tasks x 0.55^n_fail x 0.85^n_inert

where n_fail counts its earlier candidates that were tried and lost, n_inert those that never
fired (pruned_inert): a dead end is tried less, a mechanism that never triggered a bit less.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

FAIL_DECAY = 0.55
INERT_DECAY = 0.85


@dataclass(frozen=True)
class Budget:
    max_why_per_round: int = 2
    candidates_per_why: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.max_why_per_round <= 2:
            raise ValueError("max_why_per_round: the SOP works on 1-2 WHYs per round")
        if not 2 <= self.candidates_per_why <= 3:
            raise ValueError("candidates_per_why: the SOP designs 2-3 candidates per WHY")

    @property
    def candidates(self) -> int:
        return self.max_why_per_round * self.candidates_per_why

    def slots(self) -> tuple[str, ...]:
        """The candidate slots of a round: `w<i>c<j>` (WHY i, candidate j), 1-based."""
        return tuple(
            f"w{i}c{j}"
            for i in range(1, self.max_why_per_round + 1)
            for j in range(1, self.candidates_per_why + 1)
        )


@dataclass(frozen=True)
class WhyHistory:
    failed: int = 0
    inert: int = 0


def decay(history: WhyHistory) -> float:
    return FAIL_DECAY**history.failed * INERT_DECAY**history.inert


def formula_ranking(
    failing: Mapping[str, int], history: Mapping[str, WhyHistory]
) -> list[tuple[str, float]]:
    """WHYs by weight, best first (ties by name); WHYs that explain no failure are left out."""
    weights = [
        (why, count * decay(history.get(why, WhyHistory())))
        for why, count in failing.items()
        if count > 0
    ]
    return sorted(weights, key=lambda w: (-w[1], w[0]))


@dataclass(frozen=True)
class Choice:
    whys: tuple[str, ...]
    source: str  # "model" or "formula"
    shadow: tuple[tuple[str, float], ...] = field(default=())
    """The formula's ranking, logged beside every choice."""
    note: str = ""


def choose_whys(
    picked: Sequence[str] | None,
    failing: Mapping[str, int],
    history: Mapping[str, WhyHistory],
    budget: Budget,
) -> Choice:
    """The model's pick when it is usable (known WHYs that explain failures, cut to the budget),
    else the formula's top WHYs."""
    ranking = formula_ranking(failing, history)
    known = {why for why, _ in ranking}
    usable = list(dict.fromkeys(w for w in (picked or ()) if w in known))
    if usable:
        dropped = [w for w in (picked or ()) if w not in known]
        note = f"ignored: {', '.join(dropped)}" if dropped else ""
        if len(usable) > budget.max_why_per_round:
            note = (note + "; " if note else "") + f"cut to {budget.max_why_per_round} WHY(s)"
        chosen = tuple(usable[: budget.max_why_per_round])
        return Choice(chosen, "model", tuple(ranking), note)
    chosen = tuple(why for why, _ in ranking[: budget.max_why_per_round])
    reason = "the model picked no usable WHY" if picked is not None else "no model pick"
    return Choice(chosen, "formula", tuple(ranking), reason)
