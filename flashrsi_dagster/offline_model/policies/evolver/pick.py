"""The WHY pick: the round's failure classes, by the weight the instruction's table implies.

Rows `- <why>: <n> failing task(s); earlier candidates lost <f>, never fired <i>` and the
limit after `at most` (1 when it cannot be read). A WHY's weight is

    n x 0.55^f x 0.85^i

(a class whose candidates lost is tried less, one whose mechanisms never fired a bit less);
the heaviest WHYs with n > 0 are picked, ties by name, at most the limit. A simulated model
reading the table, so it does its own arithmetic rather than calling the Evolver's formula.
"""

from __future__ import annotations

import re

from flashrsi_dagster.offline_model.conversation import Reply
from flashrsi_dagster.offline_model.policies.evolver.instruction import Instruction, json_reply

FAIL_DECAY = 0.55
INERT_DECAY = 0.85
_ROW = re.compile(
    r"^- (?P<why>[a-z][a-z0-9_]*): (?P<count>\d+) failing task\(s\); earlier candidates lost "
    r"(?P<failed>\d+), never fired (?P<inert>\d+)",
    re.MULTILINE,
)
_LIMIT = re.compile(r"\bat most\s+(?P<limit>\d+)")


def weights(text: str) -> list[tuple[str, int, float]]:
    """(why, failing tasks, weight) of every row with failing tasks, heaviest first."""
    rows = [
        (m["why"], int(m["count"]), int(m["failed"]), int(m["inert"])) for m in _ROW.finditer(text)
    ]
    weighed = [(why, n, n * FAIL_DECAY**f * INERT_DECAY**i) for why, n, f, i in rows if n > 0]
    return sorted(weighed, key=lambda row: (-row[2], row[0]))


def pick(instruction: Instruction) -> Reply:
    limit = int(match["limit"]) if (match := _LIMIT.search(instruction.text)) else 1
    chosen = weights(instruction.text)[:limit]
    reason = (
        "the heaviest by failing tasks x 0.55^lost x 0.85^never fired: "
        + "; ".join(f"{why} ({n} failing, weight {weight:.2f})" for why, n, weight in chosen)
        if chosen
        else "no WHY explains a failing task"
    )
    return json_reply(
        f"Simulator Evolver: picked {len(chosen)} WHY(s) of at most {limit}.",
        {"whys": [why for why, _, _ in chosen], "reason": reason},
    )
