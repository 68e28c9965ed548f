"""run_meta.json: an experiment refuses a changed config unless forced, and remembers forcing."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.cli import main
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import ConfigChangedError, open_experiment
from flashrsi_dagster.experiment.identity import config_changes, fingerprint, normalised


def test_first_open_writes_run_meta_with_fingerprint_and_versions(config_dir):
    config = load_config(config_dir / "exp.yaml")

    experiment = open_experiment(config)

    meta = json.loads(experiment.paths.run_meta.read_text())
    assert meta["kind"] == "run_meta" and meta["schema_version"] == 1
    assert meta["fingerprint"] == fingerprint(normalised(config))
    assert meta["config"]["algorithm"]["max_steps"] == 4
    assert meta["packages"]["dagster"] == "1.13.27"
    assert meta["packages"]["python"].startswith("3.12")
    assert experiment.meta.sealed_valid


def test_reopening_with_the_same_config_is_fine(config_dir):
    config = load_config(config_dir / "exp.yaml")
    first = open_experiment(config)

    again = open_experiment(load_config(config_dir / "exp.yaml"))

    assert again.meta == first.meta


def test_a_changed_config_is_refused_listing_what_changed(config_dir):
    open_experiment(load_config(config_dir / "exp.yaml"))
    changed = load_config(
        config_dir / "exp.yaml", ["--algorithm.max_steps", "9", "--benchmark.limit", "3"]
    )

    with pytest.raises(ConfigChangedError) as info:
        open_experiment(changed)

    assert info.value.changes == [
        "algorithm.max_steps: 4 -> 9",
        "benchmark.limit: null -> 3",
    ]
    assert "--force" in str(info.value)


def test_force_reopens_and_marks_the_experiment_not_validly_sealed_for_good(config_dir):
    open_experiment(load_config(config_dir / "exp.yaml"))
    changed = load_config(config_dir / "exp.yaml", ["--algorithm.max_steps", "9"])

    forced = open_experiment(changed, force=True)
    # Going back to the original config does not make it valid again.
    back = open_experiment(load_config(config_dir / "exp.yaml"), force=True)

    assert not forced.meta.sealed_valid
    assert "NOT A VALID SEALED EXPERIMENT" in back.meta.validity_note()
    assert len(back.meta.forced) == 2
    stored = json.loads(back.paths.run_meta.read_text())
    assert stored["forced"][0]["changes"] == ["algorithm.max_steps: 4 -> 9"]


def test_moving_the_home_folder_does_not_change_identity(config_dir):
    config = load_config(config_dir / "exp.yaml")
    moved = load_config(config_dir / "exp.yaml", ["--experiment.home", "elsewhere"])

    assert fingerprint(normalised(config)) == fingerprint(normalised(moved))
    assert config_changes(normalised(config), normalised(moved)) == []


def test_cli_init_refuses_a_change_and_force_shows_the_note(config_dir, capsys):
    path = str(config_dir / "exp.yaml")
    assert main(["init", "--config", path]) == 0

    assert main(["init", "--config", path, "--algorithm.max_steps", "2"]) == 2
    assert "algorithm.max_steps: 4 -> 2" in capsys.readouterr().err

    assert main(["init", "--config", path, "--algorithm.max_steps", "2", "--force"]) == 0
    assert main(["init", "--config", path, "--algorithm.max_steps", "2"]) == 0
    assert capsys.readouterr().out.count("NOT A VALID SEALED EXPERIMENT") == 2
