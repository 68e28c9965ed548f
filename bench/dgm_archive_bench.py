"""DGM's parent selection and archive bookkeeping, per iteration, at archives of 10 and
1,000 agents: one generation's draw of 2 parents, then one child admitted (its parent's
children count bumped). The archive's Fenwick index makes both O(log n).

    .venv/bin/python bench/dgm_archive_bench.py

Prints the median time per iteration at each size and their ratio (target: <= 2)."""

from __future__ import annotations

import gc
import random
import statistics
import time

from flashrsi_dagster.algorithms.dgm.config import ParentSelection
from flashrsi_dagster.algorithms.dgm.selection import Archive


def grown(n: int, rng: random.Random) -> Archive:
    archive = Archive(ParentSelection())
    archive.add("m0", 1.0, None)  # the same top weight at every size: only n differs
    for i in range(1, n):
        archive.add(f"m{i}", rng.random(), f"m{rng.randrange(i)}")
    return archive


def per_iteration(n: int, iterations: int = 5, repeats: int = 300) -> float:
    """Median seconds of one iteration (2 parents drawn, 1 child admitted) at size n: a
    few iterations on each freshly grown archive, so that it stays about n."""
    runs = []
    for r in range(repeats):
        rng = random.Random(r)
        archive = grown(n, rng)
        gc.disable()  # as timeit does: a collection of the grown archive is not an iteration's
        start = time.perf_counter()
        for i in range(iterations):
            parents = archive.choose(2, rng)
            archive.add(f"c{r}-{i}", rng.random(), parents[0].snapshot_id)
        runs.append((time.perf_counter() - start) / iterations)
        gc.enable()
    return statistics.median(runs)


if __name__ == "__main__":
    small, large = per_iteration(10), per_iteration(1_000)
    print(f"10 agents: {small * 1e6:.1f} us/iteration")
    print(f"1000 agents: {large * 1e6:.1f} us/iteration")
    print(f"ratio: {large / small:.2f} (target <= 2)")
