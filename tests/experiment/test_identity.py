"""run_meta.json: once an experiment has run a rollout it refuses a changed config unless
forced, and remembers forcing; before that, the new config replaces the old one, recorded."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.cli import main
from flashrsi_dagster.config import ExperimentConfig, load_config
from flashrsi_dagster.experiment import ConfigChangedError, Experiment, open_experiment
from flashrsi_dagster.experiment.identity import config_changes, fingerprint, normalised
from flashrsi_dagster.records import IntegrityError, Status, Trajectory
from flashrsi_dagster.rollouts.record import RolloutRecord


def _run_a_rollout(experiment: Experiment) -> None:
    """What the rollout engine leaves once one rollout finished: a line in a rollout record."""
    record = RolloutRecord(experiment.paths.records / "eval" / "dev.jsonl", experiment.records)
    record.append(Trajectory(task_id="t1", snapshot_id="s", split="dev", status=Status.SUCCESS))


def test_first_open_writes_run_meta_with_fingerprint_and_versions(config_dir):
    config = load_config(config_dir / "exp.yaml")

    experiment = open_experiment(config)

    meta = json.loads(experiment.paths.run_meta.read_text())
    assert meta["kind"] == "run_meta" and meta["schema_version"] == 2
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
    _run_a_rollout(open_experiment(load_config(config_dir / "exp.yaml")))
    changed = load_config(
        config_dir / "exp.yaml", ["--algorithm.max_steps", "9", "--benchmark.limit", "3"]
    )

    with pytest.raises(ConfigChangedError) as info:
        open_experiment(changed)

    assert info.value.changes == [
        "algorithm.max_steps: 4 -> 9",
        "benchmark.limit: null -> 3",
    ]
    assert "has run rollouts under it" in str(info.value) and "--force" in str(info.value)


def test_force_reopens_and_marks_the_experiment_not_validly_sealed_for_good(config_dir):
    _run_a_rollout(open_experiment(load_config(config_dir / "exp.yaml")))
    changed = load_config(config_dir / "exp.yaml", ["--algorithm.max_steps", "9"])

    forced = open_experiment(changed, force=True)
    # Going back to the original config does not make it valid again.
    back = open_experiment(load_config(config_dir / "exp.yaml"), force=True)

    assert not forced.meta.sealed_valid
    assert "NOT A VALID SEALED EXPERIMENT" in back.meta.validity_note()
    assert len(back.meta.forced) == 2
    stored = json.loads(back.paths.run_meta.read_text())
    assert stored["forced"][0]["changes"] == ["algorithm.max_steps: 4 -> 9"]


def test_the_stored_config_reopens_as_the_same_experiment(config_dir):
    """What `resume` does: the config read back from run_meta.json (floats and all) has the
    fingerprint it was stored under."""
    experiment = open_experiment(load_config(config_dir / "exp.yaml", ["--agent.timeout", "1e3"]))

    stored = ExperimentConfig.model_validate(experiment.meta.config)

    assert fingerprint(normalised(stored)) == experiment.meta.fingerprint
    assert stored.agent.timeout == 1000.0


def test_moving_the_home_folder_does_not_change_identity(config_dir):
    config = load_config(config_dir / "exp.yaml")
    moved = load_config(config_dir / "exp.yaml", ["--experiment.home", "elsewhere"])

    assert fingerprint(normalised(config)) == fingerprint(normalised(moved))
    assert config_changes(normalised(config), normalised(moved)) == []


def test_a_key_added_since_an_experiment_started_changes_nothing_at_its_default(config_dir):
    config = normalised(load_config(config_dir / "exp.yaml"))
    older = json.loads(json.dumps(config))
    del older["algorithm"]["candidates_per_round"]  # as stored before the key existed
    two = normalised(
        load_config(config_dir / "exp.yaml", ["--algorithm.candidates_per_round", "2"])
    )

    assert config_changes(older, config) == [] and fingerprint(older) == fingerprint(config)
    assert config_changes(older, two) == ["algorithm.candidates_per_round: <absent> -> 2"]


def test_the_behaviour_section_at_its_default_leaves_an_older_experiment_unchanged(config_dir):
    config = normalised(load_config(config_dir / "exp.yaml"))
    older = json.loads(json.dumps(config))
    del older["behaviour"]  # as stored before the section existed
    stricter = normalised(
        load_config(config_dir / "exp.yaml", ["--behaviour.max_calls_ratio", "0.3"])
    )

    assert config_changes(older, config) == [] and fingerprint(older) == fingerprint(config)
    assert "behaviour.max_calls_ratio: <absent> -> 0.3" in config_changes(config, stricter)


def test_cli_init_refuses_a_change_and_force_shows_the_note(config_dir, capsys):
    path = str(config_dir / "exp.yaml")
    assert main(["init", "--config", path]) == 0
    _run_a_rollout(open_experiment(load_config(config_dir / "exp.yaml")))

    assert main(["init", "--config", path, "--algorithm.max_steps", "2"]) == 2
    assert "algorithm.max_steps: 4 -> 2" in capsys.readouterr().err

    assert main(["init", "--config", path, "--algorithm.max_steps", "2", "--force"]) == 0
    assert main(["init", "--config", path, "--algorithm.max_steps", "2"]) == 0
    assert capsys.readouterr().out.count("NOT A VALID SEALED EXPERIMENT") == 2


def test_before_any_rollout_a_changed_config_replaces_the_old_one_on_record(config_dir):
    first = open_experiment(load_config(config_dir / "exp.yaml"))
    changed = load_config(config_dir / "exp.yaml", ["--algorithm.max_steps", "9"])

    reopened = open_experiment(changed)

    assert reopened.meta.fingerprint == fingerprint(normalised(changed))
    assert reopened.meta.config["algorithm"]["max_steps"] == 9
    assert reopened.meta.sealed_valid and reopened.meta.forced == []
    [replaced] = reopened.meta.replaced
    assert replaced.previous_fingerprint == first.meta.fingerprint
    assert replaced.changes == ["algorithm.max_steps: 4 -> 9"]
    reopened.records.verify()  # adopted through the chained writer
    assert open_experiment(changed).meta == reopened.meta  # the new config is now the one


def test_an_empty_rollout_record_is_no_rollout_but_a_torn_line_is(config_dir):
    experiment = open_experiment(load_config(config_dir / "exp.yaml"))
    record = experiment.paths.records / "meta_harness" / "round-000-dev.jsonl"
    experiment.records.write_bytes(record, b"")
    open_experiment(load_config(config_dir / "exp.yaml", ["--algorithm.max_steps", "5"]))

    experiment.records.append_line(record, b'{"task_id": "t1", "torn')  # killed mid-write

    with pytest.raises(ConfigChangedError, match="has run rollouts"):
        open_experiment(load_config(config_dir / "exp.yaml", ["--algorithm.max_steps", "6"]))


def test_a_rollout_record_removed_behind_the_chain_is_not_taken_for_none(config_dir):
    experiment = open_experiment(load_config(config_dir / "exp.yaml"))
    _run_a_rollout(experiment)
    # Not the chain's last write: rolling that one back is indistinguishable from a crash.
    experiment.records.write_bytes(experiment.paths.records / "eval" / "dev.parquet", b"x")
    (experiment.paths.records / "eval" / "dev.jsonl").unlink()

    with pytest.raises(IntegrityError, match=r"eval/dev\.jsonl: record missing"):
        open_experiment(load_config(config_dir / "exp.yaml", ["--algorithm.max_steps", "9"]))


def test_the_target_harness_cannot_change_under_a_captured_seed(config_dir, make_harness):
    experiment = open_experiment(load_config(config_dir / "exp.yaml"))
    experiment.snapshots.create_seed(make_harness())  # as round 0 does before its rollouts
    other = ["--agent.source_dir", str(make_harness(name="other"))]

    with pytest.raises(ConfigChangedError, match="captured its seed snapshot"):
        open_experiment(load_config(config_dir / "exp.yaml", other))
    reopened = open_experiment(load_config(config_dir / "exp.yaml", ["--agent.max_turns", "9"]))

    assert reopened.meta.replaced[-1].changes == ["agent.max_turns: 50 -> 9"]
