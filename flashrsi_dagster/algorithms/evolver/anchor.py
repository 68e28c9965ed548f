"""The screen's anchor set, drawn from train only: a majority of affinity tasks (the failures
the round's WHY explains), icebreakers (tasks vanilla never solves, outside the affinity set:
can the mechanism break new ground?) and sentinels (tasks vanilla always solves: does it break
what works?). Drawn with a seeded generator, so a resumed round draws the same anchor."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Anchor:
    affinity: tuple[str, ...]
    icebreakers: tuple[str, ...]
    sentinels: tuple[str, ...]

    @property
    def tasks(self) -> tuple[str, ...]:
        return (*self.affinity, *self.icebreakers, *self.sentinels)


def select_anchor(
    rates: Mapping[str, float],
    affinity: Collection[str],
    train: Collection[str],
    *,
    size: int,
    seed: str,
) -> Anchor:
    """`rates`: vanilla's per-task rate from the stability ledger; `affinity`: the WHY's
    failing tasks. About two thirds affinity, the rest split between icebreakers and
    sentinels; a short kind leaves its room to the others. Every task is in train."""
    outside = sorted(set(affinity) - set(train))
    if outside:
        raise ValueError(f"anchor: affinity tasks outside train: {outside[:5]}")
    rng = random.Random(seed)
    pool = {
        "affinity": sorted(set(affinity)),
        "icebreakers": sorted(t for t in train if rates.get(t) == 0.0 and t not in affinity),
        "sentinels": sorted(t for t in train if rates.get(t) == 1.0 and t not in affinity),
    }
    for tasks in pool.values():
        rng.shuffle(tasks)
    want = {"affinity": -(-2 * size // 3)}
    rest = size - want["affinity"]
    want["icebreakers"], want["sentinels"] = rest - rest // 2, rest // 2
    taken = {kind: pool[kind][: want[kind]] for kind in pool}
    short = size - sum(len(t) for t in taken.values())
    for kind in ("affinity", "sentinels", "icebreakers"):  # fill what a short kind left
        extra = pool[kind][len(taken[kind]) : len(taken[kind]) + short]
        taken[kind] += extra
        short -= len(extra)
    return Anchor(
        *(tuple(sorted(taken[kind])) for kind in ("affinity", "icebreakers", "sentinels"))
    )
