"""Score by round as markdown: what a researcher wants at a glance in the UI's metadata panel
(the UI's own plots chart the numeric `dev_score` across partitions).

The chart reads plain rows, so any algorithm can draw it from its own records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Protocol

from flashrsi_dagster.views.figures import score_text
from flashrsi_dagster.views.markup import code, table_cell

WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"
PROMOTED = "← promoted"


class ChartRow(Protocol):
    """One candidate of one round, as the chart reads it (a dataclass or a pydantic model
    with these fields will do)."""

    @property
    def experiment(self) -> str: ...
    @property
    def round(self) -> int: ...
    @property
    def slot(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def dev_score(self) -> float | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def promoted(self) -> bool: ...


@dataclass(frozen=True)
class RoundRow:
    experiment: str
    round: int
    slot: str
    status: str
    dev_score: float | None = None
    """None when the candidate was not evaluated (rejected, or its Worker failed)."""
    reason: str | None = None
    """Why the candidate was rejected or failed; None otherwise."""
    promoted: bool = False


def bar(value: float, width: int = WIDTH) -> str:
    """A horizontal bar of `value` in [0, 1], to an eighth of a character."""
    eighths = round(max(0.0, min(1.0, value)) * width * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


def experiment_chart(rows: Iterable[ChartRow]) -> str:
    """One table per experiment (by name), its rows by round then slot: the dev score as a
    number and a bar, the best score so far (over every slot of this round and the rounds
    before), the reason of a rejected or failed candidate, and the promoted one marked.
    Experiments never share a table: their rounds are not comparable."""
    ordered = sorted(rows, key=lambda r: (r.experiment, r.round, r.slot))
    if not ordered:
        return "_No rounds yet._\n"
    tables = [
        _experiment_table(name, list(group))
        for name, group in groupby(ordered, key=lambda r: r.experiment)
    ]
    return "\n".join(tables)


def _experiment_table(name: str, rows: Sequence[ChartRow]) -> str:
    lines = [
        "| round | slot | status | dev score | | best so far | note |",
        "|---:|---|---|---:|---|---:|---|",
        *("| " + " | ".join(cells) + " |" for cells in _table_rows(rows)),
    ]
    return f"**{code(name)}**: {_summary(rows)}\n\n" + "\n".join(lines) + "\n"


def _table_rows(rows: Sequence[ChartRow]) -> list[list[str]]:
    best_by_round: dict[int, float] = {}
    best: float | None = None
    for r in rows:  # rows come by round, so a running maximum is the best so far
        if r.dev_score is not None:
            best = r.dev_score if best is None else max(best, r.dev_score)
        if best is not None:
            best_by_round[r.round] = best
    out = []
    for r in rows:
        chart = "" if r.dev_score is None else f"`{bar(r.dev_score):<{WIDTH}}`"
        note = PROMOTED if r.promoted else ""
        if r.reason:
            note = f"{note}; {table_cell(r.reason)}" if note else table_cell(r.reason)
        best_so_far = score_text(best_by_round.get(r.round))
        out.append(
            [
                str(r.round),
                table_cell(r.slot),
                table_cell(r.status),
                score_text(r.dev_score),
                chart,
                best_so_far,
                note,
            ]
        )
    return out


def _summary(rows: Sequence[ChartRow]) -> str:
    rounds = len({r.round for r in rows})
    scored = [r for r in rows if r.dev_score is not None]
    unscored = len(rows) - len(scored)
    parts = [f"{rounds} round{'s' * (rounds != 1)}"]
    if unscored:
        parts.append(f"{unscored} candidate{'s' * (unscored != 1)} not evaluated")
    if scored:
        top = max(scored, key=lambda r: r.dev_score or 0.0)  # the first of equals: earliest
        parts.append(f"best {score_text(top.dev_score)} at round {top.round}")
    promoted = [r for r in rows if r.promoted]
    parts.append(f"promoted: round {promoted[0].round}" if promoted else "nothing promoted yet")
    return ", ".join(parts)
