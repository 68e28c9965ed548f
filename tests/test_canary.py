"""A canary secret referenced by the config never lands in any file under the experiment home."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from flashrsi_dagster.cli import main
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.records import Status, Trajectory
from tests.conftest import CANARY_ENV
from tests.dagster_instances import instance_on


def _every_byte_under(root: Path) -> bytes:
    """All file contents, with git objects decompressed (they are zlib-packed on disk)."""
    blobs = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    for repo in {p.parent for p in root.rglob("HEAD")}:
        if (repo / "objects").is_dir():
            blobs.append(
                subprocess.run(
                    ["git", f"--git-dir={repo}", "cat-file", "--batch-all-objects", "--batch"],
                    capture_output=True,
                    check=True,
                ).stdout
            )
    return b"\n".join(blobs)


def test_canary_never_reaches_the_experiment_home(config_dir, make_harness, canary, capsys):
    harness = make_harness()
    path = str(config_dir / "exp.yaml")
    args = ["--agent.source_dir", str(harness), "--experiment.home", "home"]
    assert main(["validate", "--config", path, *args]) == 0
    assert main(["init", "--config", path, *args]) == 0
    experiment = open_experiment(load_config(path, args))
    assert experiment.config.agent.llm.api_key.env_var == CANARY_ENV

    # An agent that echoes its key everywhere it can.
    logger = logging.getLogger("flashrsi.test.canary")
    logger.addHandler(handler := experiment.log_handler())
    logger.warning("calling the model with key %s", canary)
    logger.removeHandler(handler)
    handler.close()
    seed = experiment.snapshots.create_seed(harness, metadata={"note": f"key {canary}"})
    trajectory = Trajectory(
        task_id="t1",
        split="dev",
        snapshot_id=seed.id,
        status=Status.ERROR,
        messages=[{"role": "assistant", "content": f"my key is {canary}"}],
        error={"type": "AuthError", "message": f"401 for {canary}"},
        metadata={"env": {CANARY_ENV: canary}},
    )
    experiment.records.write(experiment.paths.records / "t1.json", trajectory)
    work = experiment.snapshots.check_out(seed, config_dir / "work")
    (work / "prompts/system.md").write_text(f"remember {canary}\n")
    refused = experiment.snapshots.commit_child(seed, work, message="leak the key")

    assert refused.status == "refused"
    home = experiment.config.experiment.home
    assert (home / "exp-1" / "records" / "t1.json").exists()
    assert (home / "exp-1" / "logs" / "flashrsi.log").stat().st_size > 0
    assert canary.encode() not in _every_byte_under(home)
    captured = capsys.readouterr()
    assert canary not in captured.out + captured.err


def test_canary_never_reaches_a_dagster_event_a_record_or_a_snapshot(tmp_path, canary, storage):
    """A whole experiment through Dagster whose target model answers with the key (as an
    endpoint's error text might): the key reaches no Dagster event, asset value, record, log or
    snapshot, in any simple encoding, and the jailed agents never held it."""
    from dagster._serdes import serialize_value

    from flashrsi_dagster.deployment.cli_driver import drive_on
    from flashrsi_dagster.llm.endpoints import offline_server

    offline_server().add_script("says-the-key", [{"text": f"benign; my key is {canary}"}] * 200)
    example = Path(__file__).parent.parent / "examples" / "meta_harness.yaml"
    config = load_config(
        example,
        [
            "--experiment.home", str(tmp_path / "home"),
            "--experiment.name", "canary-dagster",
            "--benchmark.limit", "3",
            "--algorithm.max_steps", "1",
            "--agent.llm.model", "simulator/script:says-the-key",
            "--agent.llm.api_key", "${" + CANARY_ENV + "}",
        ],
    )  # fmt: skip
    (tmp_path / "dagster").mkdir()
    with instance_on(storage, temp_dir=str(tmp_path / "dagster")) as instance:
        state = drive_on(instance, open_experiment(config), say=lambda _: None)
        events = [e for r in instance.get_runs() for e in instance.all_logs(r.run_id)]
        stored = "".join(serialize_value(e) for e in events).encode()  # PostgreSQL's too

    assert state.test is not None  # the experiment ran to its sealed test
    assert len(events) > 50
    everything = _every_byte_under(tmp_path) + stored
    assert b"my key is [REDACTED]" in everything  # the key did flow, and was caught
    for form in _encodings(canary):
        assert form not in everything, form


def _encodings(secret: str) -> list[bytes]:
    import base64

    raw = secret.encode()
    return [raw, base64.b64encode(raw)[:-4], raw.hex().encode(), raw[::-1]]
