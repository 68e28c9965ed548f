"""The experiments of a home folder, reached by name only (never by a path a request gives)."""

from __future__ import annotations

import json
from pathlib import Path

from flashrsi_dagster.config.names import checked_name
from flashrsi_dagster.experiment.paths import ExperimentPaths


class NotAnExperiment(LookupError):
    """A valid name with no experiment under the home."""


def experiment_names(home: Path) -> list[str]:
    """The experiments started under `home` (a folder holding `run_meta.json`), by name."""
    if not Path(home).is_dir():
        return []
    return sorted(
        p.name for p in Path(home).iterdir() if (p / "run_meta.json").is_file() and p.is_dir()
    )


def experiment_paths(home: Path, name: str) -> ExperimentPaths:
    """The folder of experiment `name` under `home`: `InvalidName` for what is not a name,
    `NotAnExperiment` for a name with no experiment."""
    folder = Path(home) / checked_name(name)
    if not (folder / "run_meta.json").is_file():
        raise NotAnExperiment(f"no experiment {name!r} under {home}")
    return ExperimentPaths(folder)


def algorithm_of(paths: ExperimentPaths) -> str:
    """The algorithm the experiment runs, from its `run_meta.json`."""
    meta = json.loads(paths.run_meta.read_text(encoding="utf-8"))
    return str(meta["config"]["algorithm"]["name"])


def forked_from(paths: ExperimentPaths) -> dict[str, str] | None:
    """Where a fork started (`experiment.fork` of its `run_meta.json`: origin, candidate,
    snapshot id), None for an experiment seeded from a harness folder."""
    meta = json.loads(paths.run_meta.read_text(encoding="utf-8"))
    fork = meta["config"]["experiment"].get("fork")
    if not fork or not fork.get("snapshot"):
        return None
    return {key: str(fork[key]) for key in ("experiment", "candidate", "snapshot", "eval_sets")}
