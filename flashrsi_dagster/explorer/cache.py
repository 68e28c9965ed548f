"""The explorer's opened experiments, kept between requests and rebuilt only when a file they
are read from changes, so that a live experiment still updates.

An experiment's tree is a function of its `run_meta.json`, its ledger and its sealed-test
records: the stamp is their paths, modification times and sizes. The snapshot store is kept
across rebuilds, with the snapshots it has read: a snapshot is an immutable commit, so what
was read of it (its parent, its metadata) never goes stale. A 1,000-candidate tree is built
once, then served from memory (`bench/explorer_bench.py`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from flashrsi_dagster.decisions.ledger import LEDGER, Decision, Ledger
from flashrsi_dagster.experiment.paths import ExperimentPaths
from flashrsi_dagster.explorer.candidates import (
    SEALED_RECORDS,
    Node,
    Tree,
    candidate_tree,
    open_store,
)
from flashrsi_dagster.explorer.home import algorithm_of, experiment_paths
from flashrsi_dagster.snapshots import SnapshotStore

Stamp = tuple[tuple[str, int, int], ...]


@dataclass
class Opened:
    """One experiment as the explorer reads it: its tree, ledger entries and store."""

    paths: ExperimentPaths
    algorithm: str
    tree: Tree
    entries: list[Decision]
    store: SnapshotStore | None
    nodes: dict[str, Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.nodes = {n.id: n for n in self.tree.nodes}


def stamp(paths: ExperimentPaths) -> Stamp:
    """What the tree is read from, as (path, mtime, size): it changes with any of them."""
    sealed = [p for pattern in SEALED_RECORDS for p in paths.records.glob(f"*/{pattern}")]
    found = []
    for path in (paths.run_meta, paths.root / LEDGER, *sorted(sealed)):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        found.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(found)


class Experiments:
    """The experiments of a home, each opened once per change of its stamp."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self._opened: dict[str, tuple[Stamp, Opened]] = {}
        self._stores: dict[str, SnapshotStore] = {}
        self._lock = threading.Lock()

    def open(self, name: str) -> Opened:
        """Experiment `name` (`InvalidName`, `NotAnExperiment` as `experiment_paths`)."""
        paths = experiment_paths(self.home, name)
        with self._lock:
            now = stamp(paths)
            kept = self._opened.get(name)
            if kept is not None and kept[0] == now:
                return kept[1]
            opened = self._build(name, paths)
            self._opened[name] = (now, opened)
            return opened

    def _build(self, name: str, paths: ExperimentPaths) -> Opened:
        store = self._stores.get(name) or open_store(paths)
        if store is not None:
            self._stores[name] = store
        entries = Ledger(paths.root).entries()
        algorithm = algorithm_of(paths)
        tree = candidate_tree(paths, algorithm, entries, store)
        return Opened(paths, algorithm, tree, entries, store)
