"""Forks: an experiment whose seed is a candidate of another experiment of the same home.

`experiment.fork` names the origin and the candidate (`r002.c0`, a snapshot id, `baseline`
or `seed`); `pinned` resolves it to the candidate's snapshot id when the fork is created, so
the fork's identity (`run_meta.json`) holds the commit it starts from. The fork's seed is a
new root commit of its own snapshot store holding exactly the candidate's tree, its metadata
naming the origin experiment, candidate and commit (`forked_from`): the lineage across
experiments. The origin's evaluation-set versions are inherited (`evaluator.EvalSets`), and
`split_problems` refuses a fork whose train or dev would hold a task of the origin's sealed
test, or whose test a task the origin searched on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flashrsi_dagster.benchmarks.base import Benchmark
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.benchmarks.splits import Splits
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import ForkSection
from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.experiment.identity import stored_config
from flashrsi_dagster.experiment.keys import candidate_key, parse_candidate_key
from flashrsi_dagster.experiment.paths import ExperimentPaths
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot, SnapshotError, SnapshotStore

FORKED_FROM = "forked_from"
"""The key of a fork's seed metadata that names its origin."""
KEYWORDS = ("baseline", "seed")
_SHOWN = 12
"""Candidates listed in an error, at most."""


class ForkError(ValueError):
    """A fork that cannot be made: one line naming the key and what was expected."""


def origin_folder(home: Path, name: str) -> Path:
    """The origin experiment's folder; `ForkError` (listing the home's experiments) if none."""
    folder = Path(home) / name
    if not ExperimentPaths(folder).run_meta.is_file():
        known = sorted(p.parent.name for p in Path(home).glob("*/run_meta.json"))
        raise ForkError(
            f"experiment.fork.experiment: no experiment {name!r} under {home} (experiments "
            f"there: {', '.join(known) or 'none'})"
        )
    return folder


def _store(folder: Path) -> SnapshotStore:
    paths = ExperimentPaths(folder)
    if not SnapshotStore.made_at(paths.snapshots):
        raise ForkError(f"experiment.fork.experiment: {folder.name!r} has no snapshot yet")
    return SnapshotStore(paths.snapshots)


def candidates(folder: Path) -> dict[str, str]:
    """The origin's candidates by key (`r002.c0`), from its decision ledger (every algorithm
    writes it alike), with its seed as `r000.<slot>` where the ledger names none."""
    found: dict[str, str] = {}
    for entry in Ledger(folder).entries():
        for ref in (entry.baseline, entry.candidate):
            if ref.snapshot_id and ref.round is not None and ref.slot:
                found.setdefault(candidate_key(ref.round, ref.slot), ref.snapshot_id)
    return found


def _seed(store: SnapshotStore) -> Snapshot:
    roots = [s for s in store.history() if s.parent_id is None]
    if not roots:
        raise ForkError("experiment.fork.candidate: the origin has no seed snapshot yet")
    return roots[0]


def resolve(home: Path, fork: ForkSection) -> str:
    """The snapshot id `fork.candidate` names in the origin (`ForkError` saying why not)."""
    folder = origin_folder(home, fork.experiment)
    store, wanted = _store(folder), fork.candidate
    if wanted == "baseline":  # as `flashrsi eval --snapshot baseline`: the seed until one
        entry = Ledger(folder).baseline()
        found = entry.candidate.snapshot_id if entry else None
        return found or _seed(store).id
    if wanted == "seed":
        return _seed(store).id
    try:
        round_, _ = parse_candidate_key(wanted)
    except ValueError:
        return _by_id(store, fork)
    known = candidates(folder)
    if wanted in known:
        return known[wanted]
    if round_ == 0:
        return _seed(store).id
    shown = ", ".join(sorted(known)[:_SHOWN]) or "none"
    raise ForkError(
        f"experiment.fork.candidate: experiment {fork.experiment!r} has no candidate {wanted!r} "
        f"with a snapshot (its candidates: {shown}; or a snapshot id, `baseline`, `seed`)"
    )


def _by_id(store: SnapshotStore, fork: ForkSection) -> str:
    try:
        return store.get(fork.candidate).id
    except SnapshotError:
        raise ForkError(
            f"experiment.fork.candidate: {fork.candidate!r} is neither a candidate key "
            f"(r<NNN>.<slot>, e.g. r002.c0), `baseline`, `seed`, nor a snapshot of experiment "
            f"{fork.experiment!r}"
        ) from None


def fork_overrides(origin: str, candidate: str = "baseline", eval_sets: str = "same") -> list[str]:
    """The dotted overrides that make a config a fork (`flashrsi fork`, the start job, the
    nightly schedule)."""
    return [
        *("--experiment.fork.experiment", origin, "--experiment.fork.candidate", candidate),
        *("--experiment.fork.eval_sets", eval_sets),
    ]


def pinned(config: ExperimentConfig) -> ExperimentConfig:
    """`config` with its fork's snapshot resolved (unchanged when it forks nothing, or the
    snapshot is pinned and exists). `ForkError` when the origin or candidate is unknown."""
    fork = config.experiment.fork
    if fork is None:
        return config
    if fork.experiment == config.experiment.name:
        raise ForkError(
            "experiment.fork.experiment: an experiment cannot fork itself; name the fork "
            "(--experiment.name NEW)"
        )
    home = Path(config.experiment.home or ".flashrsi")
    if fork.snapshot is not None and seeded(config):
        return config
    if fork.snapshot is not None:
        store = _store(origin_folder(home, fork.experiment))
        _by_id(store, fork.model_copy(update={"candidate": fork.snapshot}))
        return config
    resolved = fork.model_copy(update={"snapshot": resolve(home, fork)})
    section = config.experiment.model_copy(update={"fork": resolved})
    return config.model_copy(update={"experiment": section})


def lineage(fork: ForkSection) -> dict[str, Any]:
    """What a fork's seed records of its origin."""
    return {"experiment": fork.experiment, "candidate": fork.candidate, "snapshot": fork.snapshot}


def made_seed(store: SnapshotStore, fork: ForkSection) -> Snapshot | None:
    """The fork's seed if it was made already (a root naming the pinned snapshot)."""
    for known in store.history():
        if (
            known.parent_id is None
            and (known.metadata.get(FORKED_FROM) or {}).get("snapshot") == fork.snapshot
        ):
            return known
    return None


def seeded(config: ExperimentConfig) -> bool:
    """Whether the fork's seed exists: from then on the fork no longer needs its origin
    (a resume after the origin was deleted is not refused), nothing is read from it."""
    fork, folder = config.experiment.fork, ExperimentPaths(config.experiment.dir).snapshots
    if fork is None or fork.snapshot is None or not SnapshotStore.made_at(folder):
        return False
    return made_seed(SnapshotStore(folder), fork) is not None


def fork_seed(store: SnapshotStore, config: ExperimentConfig) -> Snapshot:
    """The fork's seed: made once as a root commit holding the origin candidate's tree (its
    bytes and modes exact), named by `forked_from`; later calls find it without the origin."""
    fork = config.experiment.fork
    assert fork is not None and fork.snapshot is not None, "a fork pinned when created"
    made = made_seed(store, fork)
    if made is not None:
        return made
    home = Path(config.experiment.home or ".flashrsi")
    origin = _store(origin_folder(home, fork.experiment))
    chosen = origin.get(fork.snapshot)
    root = lineage_root(origin, chosen)
    store.keep_root(origin, root)  # what the fork's candidates are judged against
    with scratch_dir("fork-") as folder:
        tree = origin.check_out(chosen, folder / "tree")
        try:
            seed = store.create_seed(
                tree,
                chosen.components,
                message=f"fork of {fork.experiment} {fork.candidate}",
                metadata={
                    "round": 0,
                    FORKED_FROM: {**lineage(fork), "tree": chosen.tree, "root": root},
                },
            )
        finally:
            origin.forget_checkout(tree)
    if seed.tree != chosen.tree:  # what the fork evolves must be what was chosen
        raise SnapshotError(
            f"the fork's seed {seed.short_id} does not hold the tree of {chosen.short_id}"
        )
    return seed


def fork_evaluator(config: ExperimentConfig) -> tuple[Path, str, bool] | None:
    """What a fork's evaluator inherits its evaluation-set versions from (`Evaluator`'s
    `inherits`): the origin's `records/evaluator`, its name, and whether tasks unchanged stay
    on the inherited version (`eval_sets: same`) or open the next (`next`)."""
    fork = config.experiment.fork
    if fork is None:
        return None
    folder = ExperimentPaths(Path(config.experiment.home or ".flashrsi") / fork.experiment)
    return folder.records / "evaluator", fork.experiment, fork.eval_sets == "same"


def lineage_root(store: SnapshotStore, snapshot: Snapshot) -> str:
    """The commit a snapshot's lineage started from, across forks: its seed, or where that
    seed is a fork's, the root that fork recorded (the user's harness, never a Worker's)."""
    seed = store.get(store.lineage(snapshot)[-1])
    return root_of(seed) or seed.id


def root_of(seed: Snapshot) -> str | None:
    """The lineage root a fork's seed recorded; None for a seed captured from a harness."""
    return (seed.metadata.get(FORKED_FROM) or {}).get("root")


def split_problems(config: ExperimentConfig, splits: Splits) -> list[str]:
    """Why the fork's splits would leak its origin's sealed test (or test on what the origin
    searched on): one line, naming the key; empty when apart or not a fork."""
    fork = config.experiment.fork
    if fork is None or seeded(config):  # checked when it was created; its identity is pinned
        return []
    home = Path(config.experiment.home or ".flashrsi")
    try:
        origin = stored_config(home, origin_folder(home, fork.experiment).name)
        benchmark: Benchmark = load_benchmark(origin.benchmark)
        splits.check_apart(load_splits(origin.benchmark, benchmark), fork.experiment)
    except ForkError as exc:
        return [str(exc)]
    except Exception as exc:  # the origin's data unreadable in any way: refused, said so
        return [f"experiment.fork: {exc}"]
    return []
