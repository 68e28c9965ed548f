"""Train / dev / test: drawn from one pool deterministically, or given; never overlapping.

The test split is sealed: `Splits` hands it out only through `unseal_test()`, which only the
finalize steps reach (`Searching.unseal_test`, on the sealed test's turn; held by
`tests/test_layers.py`); nothing else (the Worker, selection) has a path to test ids. What
else needs the test split counts it (`test_size`), asks whether an id it holds is a test id
(`test_ids`), or has it compared here (`check_disjoint`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from flashrsi_dagster.benchmarks.base import BenchmarkError, Task
from flashrsi_dagster.config.models import SplitCounts

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Splits:
    train: tuple[Task, ...]
    dev: tuple[Task, ...]
    _test: tuple[Task, ...] | None = field(repr=False)
    """None once dropped for the search (`without_test`)."""

    def unseal_test(self) -> tuple[Task, ...]:
        """The sealed test split, for the one evaluation after promotion: called by
        `Searching.unseal_test` alone, which hands it to the finalize steps only."""
        return self._sealed()

    @property
    def test_ids(self) -> SealedIds:
        """The test ids, as digests: `task_id in splits.test_ids` answers for an id the
        caller holds already; none can be listed."""
        return SealedIds(frozenset(_id_digest(t.id) for t in self._sealed()))

    def check_disjoint(self) -> None:
        """Refuse (BenchmarkError, naming each clash) a task train, dev and test share by id,
        or the same task under two ids (instruction, verifier data and environment folder all
        equal: the held-out task itself would be trained or selected on). Tasks that only
        share a question text or an environment folder are different tasks of one dataset,
        which seed 001 keeps. The test tasks are compared here, never handed out."""
        held_out = [*self.dev, *self._sealed()]
        refuse_overlap(self.train, held_out, "train", "dev/test", keys=SAME_TASK)
        refuse_overlap(self.dev, self._sealed(), "dev", "test", keys=SAME_TASK)

    def check_apart(self, origin: Splits, name: str) -> None:
        """Refuse (BenchmarkError) splits that would leak those of `origin`, the experiment a
        fork starts from: a task of its sealed test in this train or dev (the search would
        see it), or a task it searched on in this test (the fork's seed was chosen on it).
        Compared here; the message counts the tasks, never names a test task."""
        leaked = _shared([*self.train, *self.dev], origin._sealed())
        if leaked:
            raise BenchmarkError(
                f"{leaked} task(s) of the train/dev splits are in the sealed test of experiment "
                f"{name!r}, which this one forks: its sealed test would reach this search; "
                "draw the splits as it did (same benchmark data, seed and counts)"
            )
        chosen_on = _shared(self._sealed(), [*origin.train, *origin.dev])
        if chosen_on:
            raise BenchmarkError(
                f"{chosen_on} task(s) of the test split were in the train/dev splits of "
                f"experiment {name!r}, which this one forks (its candidate was chosen on them): "
                "the sealed test would not be held out; draw the splits as it did"
            )

    @property
    def test_size(self) -> int:
        """Counted, not handed out: `unseal_test()` stays the final evaluation's call."""
        return len(self._sealed())

    def test_digest(self, digest_of: Callable[[Task], str]) -> str:
        """One digest of the test split's (id, `digest_of(task)`) pairs: recorded at the
        start so the sealed test can show its tasks unchanged, naming none of them."""
        pairs = sorted((t.id, digest_of(t)) for t in self._sealed())
        return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()

    def _sealed(self) -> tuple[Task, ...]:
        if self._test is None:
            raise RuntimeError(
                "the test split is not loaded during the search; the final step loads it"
            )
        return self._test

    def without_test(self) -> Splits:
        """These splits with the test tasks dropped from memory: what a search holds."""
        return Splits(self.train, self.dev, None)

    def require(self, split: str) -> tuple[Task, ...]:
        tasks = {"train": self.train, "dev": self.dev}[split]
        if not tasks:
            raise BenchmarkError(
                f"the {split} split is empty, but this algorithm needs one; "
                f"set benchmark.split_counts.{split}"
            )
        return tasks


def make_splits(
    pool: list[Task],
    counts: SplitCounts | None,
    *,
    seed: int,
    limit: int | None = None,
    source: str = "benchmark",
) -> Splits:
    """Explicit splits when tasks carry `metadata["split"]`, else a seeded draw by `counts`."""
    refuse_duplicates(pool, source)
    if any("split" in t.metadata for t in pool):
        parts = _given(pool, source)
    else:
        if counts is None:
            raise BenchmarkError(f"{source}: no split_counts and the tasks carry no split")
        parts = _drawn(pool, counts, seed, source)
    if limit is not None:
        parts = {name: tasks[:limit] for name, tasks in parts.items()}
    splits = Splits(tuple(parts["train"]), tuple(parts["dev"]), tuple(parts["test"]))
    splits.check_disjoint()
    return splits


def replace_train(splits: Splits, evolution: list[Task], *, limit: int | None, source: str):
    """External evolution data replaces train; it must not overlap the loaded dev/test tasks
    by id, instruction, checksum or environment image."""
    refuse_duplicates(evolution, source)
    # The sealed tasks are compared here, never handed out (see the module's docstring).
    sealed = splits._sealed()
    refuse_overlap(evolution, [*splits.dev, *sealed], source, "dev/test", keys=SEPARATE_SOURCE)
    refuse_shared_images(evolution, [*splits.dev, *sealed], source, "dev/test")
    train = tuple(evolution[:limit] if limit is not None else evolution)
    return Splits(train, splits.dev, sealed)


@dataclass(frozen=True)
class SealedIds:
    """The test split's ids as digests: it answers `task_id in sealed`, and lists nothing."""

    _digests: frozenset[str] = field(repr=False)

    def __contains__(self, task_id: object) -> bool:
        return isinstance(task_id, str) and _id_digest(task_id) in self._digests


def _id_digest(task_id: str) -> str:
    return hashlib.sha256(task_id.encode()).hexdigest()


def refuse_duplicates(tasks: Iterable[Task], source: str) -> None:
    counts = Counter(t.id for t in tasks)
    duplicates = sorted(task_id for task_id, n in counts.items() if n > 1)
    if duplicates:
        raise BenchmarkError(f"{source}: duplicate task ids: {', '.join(duplicates)}")


def _content(task: Task) -> tuple[str, str | None]:
    """The whole task: its checksum (instruction and verifier data) and its environment
    folder (a Harbor task's tests live there, not in its verifier data)."""
    return task.checksum, str(task.environment) if task.environment else None


SAME_TASK: dict[str, Callable[[Task], object]] = {"id": lambda t: t.id, "content": _content}
"""The default splits: one task under one id, in one split."""

SEPARATE_SOURCE: dict[str, Callable[[Task], object]] = {
    "id": lambda t: t.id,
    "instruction": lambda t: t.instruction,
    "checksum": lambda t: t.checksum,
}
"""External evolution data (`replace_train`): a separate source shares not even a question
text or a checksum with the held-out tasks (seed 001's explicit external mode)."""


def _shared(first: Iterable[Task], second: Iterable[Task]) -> int:
    """How many tasks of `first` are in `second`, by id or whole content (`SAME_TASK`)."""
    seen = {kind: {key(t) for t in second} for kind, key in SAME_TASK.items()}
    return sum(any(key(t) in seen[kind] for kind, key in SAME_TASK.items()) for t in first)


def refuse_overlap(
    first: Iterable[Task],
    second: Iterable[Task],
    a: str,
    b: str,
    *,
    keys: dict[str, Callable[[Task], object]],
) -> None:
    second = list(second)
    seen = {kind: {key(t) for t in second} for kind, key in keys.items()}
    clashes = sorted(
        f"{t.id} (same {kind})" for t in first for kind, key in keys.items() if key(t) in seen[kind]
    )
    if clashes:
        raise BenchmarkError(f"{a} overlaps {b}: {', '.join(dict.fromkeys(clashes))}")


def refuse_shared_images(first: Iterable[Task], second: Iterable[Task], a: str, b: str) -> None:
    """External evolution data must not run in a held-out task's environment image
    (`metadata["image"]`, e.g. SWE-bench's prebuilt instance image)."""
    held_out = {t.metadata.get("image") for t in second} - {None}
    clashes = [f"{t.id} (same image)" for t in first if t.metadata.get("image") in held_out]
    if clashes:
        raise BenchmarkError(f"{a} overlaps {b}: {', '.join(sorted(clashes))}")


def _given(pool: list[Task], source: str) -> dict[str, list[Task]]:
    unknown = sorted({str(t.metadata.get("split")) for t in pool} - set(SPLITS))
    if unknown:
        raise BenchmarkError(
            f"{source}: unknown split name(s) {', '.join(unknown)}; expected {', '.join(SPLITS)}"
        )
    return {name: [t for t in pool if t.metadata.get("split") == name] for name in SPLITS}


def _drawn(pool: list[Task], counts: SplitCounts, seed: int, source: str):
    wanted = counts.train + counts.dev + counts.test
    if wanted > len(pool):
        raise BenchmarkError(
            f"{source}: split_counts ask for {wanted} tasks "
            f"(train {counts.train} + dev {counts.dev} + test {counts.test}); the pool has "
            f"{len(pool)}"
        )
    order = sorted(pool, key=lambda t: t.id)
    random.Random(seed).shuffle(order)
    dev_end = counts.dev
    test_end = dev_end + counts.test
    # Dev and test are drawn first so that growing train never reshuffles the held-out tasks.
    return {
        "dev": order[:dev_end],
        "test": order[dev_end:test_end],
        "train": order[test_end : test_end + counts.train],
    }
