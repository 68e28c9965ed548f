"""An experiment to fork, made cheaply but for real: its run_meta from the example config,
its seed and one edited child as commits of its snapshot store (git), and its decision
ledger naming the child as round 1's candidate, adopted (or not) as the baseline."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import EXPERIMENT, Decision, Ledger, Ref
from flashrsi_dagster.experiment import Experiment, open_experiment
from flashrsi_dagster.snapshots import Snapshot

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
EDITED = "prompts/system.md"


def config_at(home: Path, name: str, *overrides: str):
    args = ["--experiment.home", str(home), "--experiment.name", name, "--benchmark.limit", "4"]
    return load_config(EXAMPLE, [*args, "--algorithm.max_steps", "1", *overrides])


def origin(
    home: Path, name: str, *overrides: str, adopt: bool = True
) -> tuple[Experiment, Snapshot, Snapshot]:
    """Experiment `name` under `home` with its seed and a child of it, `r001.c0`."""
    experiment = open_experiment(config_at(home, name, *overrides))
    algorithm = open_algorithm(experiment, log=lambda _: None)
    try:
        seed = algorithm.seed()
    finally:
        algorithm.close()
    store = experiment.snapshots
    checkout = store.check_out(seed, home.parent / f"{name}-checkout")
    edited = next(p for p in sorted(checkout.rglob("*.md")) if p.is_file())
    edited.write_text(edited.read_text() + f"\nRead the text twice ({name}).\n")
    child = store.commit_child(seed, checkout, message="round 1").snapshot
    assert child is not None
    store.forget_checkout(checkout)
    decision = "adopt" if adopt else "reject"
    Ledger.of(experiment).append(
        Decision(
            id=f"{name}-r001",
            decision=decision,
            algorithm="meta_harness",
            scope=EXPERIMENT if adopt else "search",
            candidate=Ref(snapshot_id=child.id, round=1, slot="c0"),
            baseline=Ref(snapshot_id=seed.id, round=0, slot="c0"),
            reason=f"{decision}ed by hand",
            eval_set=None,
        )
    )
    return experiment, seed, child
