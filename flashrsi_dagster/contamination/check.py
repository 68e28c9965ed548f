"""The contamination check as the algorithms call it: one `ContentCheck` per opened
experiment, its secret index built once (from the benchmark's whole pool: every split) and
kept with the seeds' scans for the next process (`cache`: each candidate's run worker is one),
and a verdict per candidate written once as a record and read back after a crash or a re-run.

The candidate is judged against its seed (the root of its lineage): what the seed holds is
the user's harness, never a Worker's doing; whatever any Worker added since is judged, so a
table smuggled in over several rounds, a few rows each, adds up. A fork's seed is a Worker's
candidate of another experiment: its candidates are judged against the root its lineage
started from there (`experiment.fork.lineage_root`), kept in its store.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property, partial
from pathlib import Path

from flashrsi_dagster.benchmarks.base import Benchmark, Task, task_secrets
from flashrsi_dagster.contamination import cache
from flashrsi_dagster.contamination.detector import Found, Scan, judge, scan, unread
from flashrsi_dagster.contamination.index import SecretIndex
from flashrsi_dagster.contamination.verdict import ContentVerdict, verdict
from flashrsi_dagster.experiment.fork import root_of
from flashrsi_dagster.records import read_optional
from flashrsi_dagster.snapshots import Snapshot, SnapshotStore

Write = Callable[[Path, ContentVerdict], ContentVerdict]


class ContentCheck:
    def __init__(
        self,
        benchmark: Benchmark,
        pool: Callable[[], Iterable[Task]],
        splits: Mapping[str, str],
        log: Callable[[str], None] = lambda _: None,
        kept: Path | None = None,
    ) -> None:
        """`pool`: every task of the benchmark, whatever its split (the test split too:
        this is host code, and held-out tasks are never named in what it writes); `splits`:
        the split of each train and dev task id; `kept`: a host-only folder where the index
        and the seeds' scans are kept for the next process (`contamination.cache`), or None."""
        self.benchmark, self._pool, self.splits, self.log = benchmark, pool, splits, log
        self.kept = kept
        self._baselines: dict[str, Scan] = {}
        self._key = ""

    @cached_property
    def index(self) -> SecretIndex:
        """The pool's secrets indexed: built once per process, or read from `kept` where a
        process before built it from the same inputs."""
        secrets = getattr(self.benchmark, "secrets", task_secrets)
        unique = {(t.id, t.checksum): t for t in self._pool()}
        found = [(t.id, secrets(t)) for t in unique.values()]
        prompts = {t.id: t.instruction for t in unique.values()}
        if self.kept is not None:
            self._key = cache.key_of(
                [*unique],
                [(task, [(s.kind, s.name, s.text) for s in them]) for task, them in found],
                sorted(self.splits.items()),
                sorted(prompts.items()),
            )
        return self._kept(
            "index",
            self._key,
            lambda: SecretIndex.build(found, self.splits, prompts),
            SecretIndex.data,
            SecretIndex.of_data,
        )

    def _baseline(self, seed: str, files: Mapping[str, bytes]) -> Scan:
        """The seed's scan: made once per process, kept on disk for the next."""
        if seed not in self._baselines:
            index = self.index
            key = cache.key_of(self._key, cache.files_digest(files)) if self.kept else ""
            made = partial(scan, files, index)
            kept = self._kept(f"seed-{seed}", key, made, cache.plain_scan, cache.scan_of)
            self._baselines[seed] = kept
        return self._baselines[seed]

    def _kept(self, name: str, key: str, make: Callable, plain: Callable, of_plain: Callable):
        """What `make` makes, read from the folder `kept` if stored there under `key`, else
        made and stored."""
        if self.kept is None:
            return make()
        path = self.kept / f"{name}.marshal"
        stored = cache.load(path, key)
        if stored is not None:
            with contextlib.suppress(TypeError, ValueError, KeyError):  # not what was meant
                return of_plain(stored)
        made = make()
        with contextlib.suppress(TypeError, ValueError):  # not plain data: kept in memory only
            cache.save(path, key, plain(made))
        return made

    def judge(self, store: SnapshotStore, candidate: Snapshot) -> ContentVerdict:
        """The verdict on `candidate` (computed now; `verdict_of` reads one back first)."""
        started = time.perf_counter()
        seed = store.lineage(candidate)[-1]
        root = root_of(store.get(seed))  # a fork's: Worker edits before the fork count too
        baseline = store.root_files(root) if root else store.files(seed)
        changed = {
            path: data
            for path, data in store.files(candidate).items()
            if baseline.get(path) != data
        }
        found: list[Found] = []
        rules = unread(changed)  # a search of 100 MB of digits would take half an hour
        if not rules:
            seen = self._baseline(seed, baseline)
            found, rules = judge(scan(changed, self.index), seen, self.index)
        made = verdict(candidate.id, seed, found, rules, self.index, len(changed))
        seconds = time.perf_counter() - started
        self.log(
            f"content check of {candidate.short_id}: "
            f"{'CONTAMINATED' if made.contaminated else 'clean'} ({len(changed)} changed "
            f"file(s), {made.hit_count} hit(s), {seconds:.2f} s)"
        )
        return made

    def verdict_of(
        self, store: SnapshotStore, candidate: Snapshot, path: Path, write: Write
    ) -> ContentVerdict:
        """The candidate's verdict at `path`: read back if made for this snapshot, else
        judged now and written there."""
        done = read_optional(path, ContentVerdict)
        if done is not None and done.snapshot_id == candidate.id:
            return done
        return write(path, self.judge(store, candidate))
