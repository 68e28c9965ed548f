"""The algorithm seam: what every algorithm is to the host (the CLI, the Dagster layer).

An algorithm reads its state from its records, says what comes next as a pure function of
that state, does one step, and closes what it opened. Steps are the unit the host schedules,
a run each, several at once where `ready_steps` allows: a *round step* (`round` set) runs in
the algorithm's round job for one (round, slot) partition; `promote` and `sealed_test` run in
its finalize job; `done` and `aborted` end it. The search's order is the algorithm's to
enforce: a step asked for out of turn raises `StepOrderError` before it changes anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from flashrsi_dagster.experiment.keys import candidate_key

ONLY_SLOT = "c0"
"""The slot of an algorithm with one candidate per round."""
FINALIZE_ACTIONS = ("promote", "sealed_test")
END_ACTIONS = ("done", "aborted")

Log = Callable[[str], None]


@dataclass(frozen=True)
class Step:
    """One unit of work: an action, and for a round step its round and candidate slot."""

    action: str
    round: int | None = None
    slot: str | None = None
    basis: str | None = None
    """What the step acts on, when the same step can come again on new evidence (a
    promotion after a round was re-evaluated): hosts tell the two apart by it."""

    @property
    def finished(self) -> bool:
        return self.action in END_ACTIONS

    @property
    def candidate(self) -> str | None:
        """The candidate key of a round step (`r001.c0`, its partition); None for a step of
        the whole experiment."""
        return None if self.round is None else candidate_key(self.round, self.slot or ONLY_SLOT)

    def describe(self) -> str:
        if self.round is None:
            return self.action
        slot = f", {self.slot}" if self.slot not in (None, ONLY_SLOT) else ""
        return f"{self.action} (round {self.round}{slot})"


class StepOrderError(RuntimeError):
    """A step asked for before the search allows it (promotion or the sealed test mid-search,
    a round whose parent is not evaluated yet); the message says what is still missing."""


class Partitioned(Protocol):
    """The algorithm's shape: the (round, slot) partitions its round steps run in."""

    def slots(self) -> tuple[str, ...]:
        """The candidate slots of a round (partition keys: letters, digits, `_`, `-`)."""
        ...

    def rounds(self) -> int:
        """How many rounds the experiment can have (the seed's included). It may read the
        experiment (ModularRSI's rounds are its batches, so they follow the train split)."""
        ...

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        """Every (round, slot) a round step may run in: the partitions registered for the
        experiment, so the UI's grid has no slot that no step uses (Meta-Harness's seed
        round has one slot, the Evolver's rounds past the cold start no vanilla)."""
        ...


class Planning(Protocol):
    """Reading: the state from the records, and what comes next. Nothing is started."""

    def read_state(self) -> Any:
        """The state so far, read from the records (nothing is started to read it)."""
        ...

    def next_step(self, state: Any) -> Step:
        """What comes next: a pure function of `state` and the config."""
        ...

    def ready_steps(self, state: Any) -> tuple[Step, ...]:
        """Every step that may run now, side by side, as separate runs: `next_step(state)`
        first, then the other candidates of its round that are ready too (each of them a
        `turns.side_by_side` step, whose order check accepts any of these). An algorithm
        whose steps run one at a time has just `(next_step(state),)`."""
        ...


class Stepping(Protocol):
    """Doing: one step at a time, then closing what the steps opened."""

    def do(self, step: Step) -> None:
        """Do one step (refusing it, unchanged, if it is not the search's turn)."""
        ...

    def close(self) -> None: ...


class Reporting(Protocol):
    """Telling: a line per step, the experiment in a few lines, its decision-ledger entries."""

    def step_line(self, state: Any, step: Step) -> str:
        """One line on what `step` did (the CLI prints it after the step)."""
        ...

    def summary(self, state: Any) -> list[str]:
        """The experiment in a few lines: each step's outcome, the promotion, the test."""
        ...

    def decisions(self, state: Any) -> list[Any]:
        """The decision-ledger entries (`decisions.Decision`) the records imply, each with a
        stable id; its steps append those missing (`Ledger.sync`) as they write, and a
        roll-back first does the same."""
        ...


class Algorithm(Partitioned, Planning, Stepping, Reporting, Protocol):
    """An algorithm opened on one experiment: its shape, its planning, its steps, its
    reports (a host needing one role may ask for that one alone)."""

    name: ClassVar[str]
