"""Another experiment of a home, opened to be read: its config from its `run_meta.json`,
nothing created or changed. A missing or unreadable one is an error naming the key that
named it (`algorithm.matches`, `experiment.control`)."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.experiment import Experiment, open_experiment
from flashrsi_dagster.experiment.identity import stored_config


class NoStoredExperiment(ValueError):
    """The experiment a key names is not there, or cannot be reopened."""


def open_stored(home: Path, name: str, key: str) -> Experiment:
    folder = home / name
    if not (folder / "run_meta.json").is_file():
        known = sorted(p.parent.name for p in home.glob("*/run_meta.json")) if home.is_dir() else []
        raise NoStoredExperiment(
            f"{key}: no experiment {name!r} under {home} (experiments there: "
            f"{', '.join(known) or 'none'})"
        )
    try:
        return open_experiment(stored_config(home, name), create=False)
    except ValueError as exc:
        raise NoStoredExperiment(f"{key}: experiment {name!r} cannot be reopened: {exc}") from exc
