"""Score by round as a markdown chart: what a researcher wants at a glance in the UI's
metadata panel (the UI's own plots chart the numeric `dev_score` across partitions)."""

from __future__ import annotations

from collections.abc import Sequence

from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord

WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, width: int = WIDTH) -> str:
    """A horizontal bar of `value` in [0, 1], to an eighth of a character."""
    eighths = round(max(0.0, min(1.0, value)) * width * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


def score_by_round(rounds: Sequence[RoundRecord], promoted: int | None = None) -> str:
    lines = ["| round | status | dev score | |", "|---:|---|---:|---|"]
    for r in rounds:
        score = "-" if r.dev_score is None else f"{r.dev_score:.3f}"
        chart = "" if r.dev_score is None else f"`{bar(r.dev_score):<{WIDTH}}`"
        mark = " ← promoted" if r.round == promoted else ""
        lines.append(f"| {r.round} | {r.status} | {score} | {chart}{mark} |")
    return "\n".join(lines)
