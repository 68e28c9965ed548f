"""The sealed test's two duties in the Evolver: at start, prove no test task can reach the
search (train, the anchors drawn from it); at the end, `unseal_retention` — the baseline and
each round's delivered version scored on test, once, and how much of the train lift held.

    train_lift = train(v) - train(vanilla)     test_lift = test(v) - test(vanilla)
    retained   = test_lift / train_lift        (None when train_lift <= 0: nothing to retain)
"""

from __future__ import annotations

from collections.abc import Collection, Container, Sequence
from dataclasses import dataclass


class LeakedTestTask(RuntimeError):
    """A test task where the search could see it."""


def assert_no_test_leak(test: Container[str], **searched: Collection[str]) -> None:
    """Refuse, naming the set, any id of a set the search reads that is `in test` (the test
    split's `SealedIds`: asked, never listed)."""
    for name, ids in searched.items():
        leaked = sorted(i for i in set(ids) if i in test)
        if leaked:
            raise LeakedTestTask(
                f"{len(leaked)} test task(s) in {name}: {', '.join(leaked[:5])}; the test "
                "split must stay out of everything the search reads"
            )


@dataclass(frozen=True)
class Delivered:
    label: str  # "vanilla", "round 3", …
    snapshot_id: str
    train: float
    test: float


@dataclass(frozen=True)
class RetentionRow:
    delivered: Delivered
    train_lift: float
    test_lift: float
    retained: float | None


def retention(rows: Sequence[Delivered]) -> list[RetentionRow]:
    """Each delivered version against the first (vanilla): its lifts and the share retained."""
    if not rows:
        return []
    vanilla = rows[0]
    out = []
    for row in rows:
        train_lift, test_lift = row.train - vanilla.train, row.test - vanilla.test
        retained = test_lift / train_lift if train_lift > 0 else None
        out.append(RetentionRow(row, train_lift, test_lift, retained))
    return out
