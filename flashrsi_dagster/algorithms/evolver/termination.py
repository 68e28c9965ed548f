"""When the Evolver stops: `patience` consecutive rounds in which no candidate beats the fixed
vanilla baseline (not the current parent), or `max_rounds` rounds. An errored round (the
round's machinery failed, not its candidates) uses no patience; `max_consecutive_errors`
errored rounds in a row stop the run on their own. Test scores are never an input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

RoundOutcome = Literal["beat_vanilla", "no_gain", "errored"]
StopReason = Literal["patience", "max_rounds", "consecutive_errors"]


@dataclass(frozen=True)
class Termination:
    patience: int = 10
    max_rounds: int = 20
    max_consecutive_errors: int = 3

    def stop(self, outcomes: Sequence[RoundOutcome]) -> StopReason | None:
        """Why the run stops after these rounds (in order), or None to go on."""
        if len(outcomes) >= self.max_rounds:
            return "max_rounds"
        if self.trailing(outcomes, "errored") >= self.max_consecutive_errors:
            return "consecutive_errors"
        if self.idle(outcomes) >= self.patience:
            return "patience"
        return None

    @staticmethod
    def idle(outcomes: Sequence[RoundOutcome]) -> int:
        """Rounds since one last beat vanilla, errored rounds not counted."""
        count = 0
        for outcome in reversed(outcomes):
            if outcome == "beat_vanilla":
                break
            count += outcome == "no_gain"
        return count

    @staticmethod
    def trailing(outcomes: Sequence[RoundOutcome], kind: RoundOutcome) -> int:
        count = 0
        for outcome in reversed(outcomes):
            if outcome != kind:
                break
            count += 1
        return count
