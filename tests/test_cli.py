"""The `flashrsi` command line as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import openai

from flashrsi_dagster.cli import main
from tests.conftest import CANARY_ENV

FLASHRSI = str(Path(sys.executable).parent / "flashrsi")


def test_offline_model_serves_until_stopped():
    server = subprocess.Popen([FLASHRSI, "offline-model"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        assert line.startswith("offline model simulator listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[-1]
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=60)
        reply = client.chat.completions.create(
            model="simulator/echo", messages=[{"role": "user", "content": "ping"}]
        )
        assert reply.choices[0].message.content == "ping"
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 128 + signal.SIGTERM  # as a shell reports it
        server.stdout.close()


def test_help_lists_every_command():
    out = subprocess.run([FLASHRSI, "--help"], capture_output=True, text=True, check=True).stdout

    for command in ("validate", "init", "offline-model"):
        assert command in out


def test_eval_scores_the_seed_harness_on_dev_and_writes_the_record(tmp_path):
    config = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
    args = [
        FLASHRSI,
        "eval",
        "--config",
        str(config),
        "--split",
        "dev",
        "--benchmark.limit",
        "4",
        "--experiment.home",
        str(tmp_path / "home"),
    ]

    result = subprocess.run(args, capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stderr
    assert "[4/4]" in result.stdout
    assert "dev split, snapshot" in result.stdout and "over 4 tasks" in result.stdout
    records = list((tmp_path / "home").rglob("records/eval/dev-*.jsonl"))
    assert len(records) == 1 and records[0].with_suffix(".parquet").exists()
    assert len(records[0].read_text().splitlines()) == 4


def test_eval_refuses_the_sealed_test_split_and_unknown_tasks(tmp_path):
    config = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
    base = [FLASHRSI, "eval", "--config", str(config), "--experiment.home", str(tmp_path)]

    sealed = subprocess.run([*base, "--split", "test"], capture_output=True, text=True)
    unknown = subprocess.run(
        [*base, "--split", "dev", "--tasks", "no-such-task"], capture_output=True, text=True
    )

    assert sealed.returncode == 2 and "invalid choice: 'test'" in sealed.stderr
    assert unknown.returncode == 2 and "not in the dev split: no-such-task" in unknown.stderr


def test_eval_of_every_task_is_refused_in_a_started_experiment(tmp_path):
    config = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
    args = ["--config", str(config), "--experiment.home", str(tmp_path)]
    subprocess.run([FLASHRSI, "init", *args], capture_output=True, text=True, check=True)

    every = subprocess.run(
        [FLASHRSI, "eval", *args, "--split", "all"], capture_output=True, text=True, timeout=300
    )

    assert every.returncode == 2
    assert "--split all runs every task, the test split's too, which experiment" in every.stderr
    assert not list(tmp_path.rglob("records/eval/all-*"))


def test_without_bubblewrap_run_refuses_before_writing_anything(tmp_path):
    """A jailed experiment on a machine that cannot jail: exit 2 with what to do, and no
    experiment folder; `confinement: none` is the explicit way out."""
    config = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
    bare = tmp_path / "bin"  # a PATH with git (GitPython needs it) but without bwrap
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git"))
    home = tmp_path / "home"
    env = {"PATH": str(bare), "HOME": str(tmp_path)}
    args = ["--config", str(config), "--experiment.home", str(home), "--benchmark.limit", "3"]

    for command in ("validate", "run"):
        refused = subprocess.run(
            [FLASHRSI, command, *args], capture_output=True, text=True, env=env
        )
        assert refused.returncode == 2
        assert "experiment.confinement" in refused.stderr and "bubblewrap" in refused.stderr
    assert not home.exists()

    allowed = subprocess.run(
        [FLASHRSI, "validate", *args, "--experiment.confinement", "none"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert allowed.returncode == 0, allowed.stderr


def test_validate_and_run_refuse_what_would_fail_later_before_writing_anything(tmp_path):
    """A Worker without file tools, an unknown adapter and a key referenced but not set:
    exit 2 naming each key path, and no experiment folder."""
    config = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "FLASHRSI_UNSET_KEY"}
    args = [
        *("--config", str(config), "--experiment.home", str(home)),
        *("--algorithm.worker.type", "llm", "--agent.type", "no-such-agent"),
        *("--agent.llm.api_key", "${FLASHRSI_UNSET_KEY}"),
    ]

    for command in ("validate", "run"):
        refused = subprocess.run(
            [FLASHRSI, command, *args], capture_output=True, text=True, env=env
        )
        assert refused.returncode == 2, refused.stderr
        for key in ("algorithm.worker.type", "agent.type", "agent.llm.api_key"):
            assert f"error: {key}:" in refused.stderr
        assert "FLASHRSI_UNSET_KEY" in refused.stderr
    assert not home.exists()


def test_a_config_fixed_before_any_rollout_runs_without_force(tmp_path):
    """An experiment that never ran a rollout takes the fixed config (recorded, still
    sealed-valid); once it ran rollouts a changed config is refused; `resume` finds it under
    `--experiment.home`."""
    config = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
    home = tmp_path / "home"
    base = ["--config", str(config), "--experiment.home", str(home)]
    small = [*base, "--algorithm.max_steps", "1", "--benchmark.limit", "1"]
    broken = [*small, "--agent.llm.api", "anthropic"]

    def flashrsi(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([FLASHRSI, *args], capture_output=True, text=True, timeout=600)

    refused = flashrsi("run", *broken)
    assert refused.returncode == 2 and "agent.llm.api: miniagent" in refused.stderr
    assert not home.exists()
    assert flashrsi("init", *broken).returncode == 0  # init runs no agent: no dry run

    fixed = flashrsi("run", *small)

    assert fixed.returncode == 0, fixed.stderr
    assert (
        'config was replaced (recorded in run_meta.json): agent.llm.api: "anthropic" -> "chat"'
        in fixed.stdout
    )
    assert "NOT A VALID SEALED EXPERIMENT" not in fixed.stdout
    meta = json.loads((home / "meta-harness-demo" / "run_meta.json").read_text())
    assert [r["changes"] for r in meta["replaced"]] == [['agent.llm.api: "anthropic" -> "chat"']]
    assert meta["forced"] == []

    changed = flashrsi("run", *small, "--agent.max_turns", "9")
    assert changed.returncode == 2
    assert (
        "has run rollouts under it" in changed.stderr
        and "agent.max_turns: 8 -> 9" in changed.stderr
    )

    resumed = flashrsi(
        "resume", "--experiment", "meta-harness-demo", "--experiment.home", str(home)
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "sealed test: " in resumed.stdout


def test_resume_says_there_is_no_experiment_only_when_there_is_none(config_dir, capsys):
    home = Path.cwd() / "experiments"
    path = str(config_dir / "exp.yaml")
    assert main(["init", "--config", path, "--experiment.home", str(home)]) == 0
    (home / "eval-only").mkdir()

    missing = main(["resume", "--experiment", "exp-2", "--experiment.home", str(home)])
    assert missing == 2
    assert (
        f"no experiment 'exp-2' under {home} (experiments there: exp-1)" in capsys.readouterr().err
    )

    unstarted = main(["resume", "--experiment", "eval-only", "--experiment.home", str(home)])
    assert unstarted == 2
    assert f"{home / 'eval-only'} has no run_meta.json" in capsys.readouterr().err

    overridden = main(["resume", "--experiment", "exp-1", "--benchmark.limit", "3"])
    assert overridden == 2
    assert "resume takes no overrides: --benchmark.limit 3" in capsys.readouterr().err


def test_resume_finds_the_experiment_under_experiment_home_and_dry_runs_it(
    config_dir, capsys, monkeypatch
):
    """The key set when the experiment was created is gone from this shell: refused before
    anything runs, naming the key — which also shows the experiment was found."""
    home = Path.cwd() / "experiments"
    monkeypatch.setenv(CANARY_ENV, "set-at-init")
    path = str(config_dir / "exp.yaml")
    assert main(["init", "--config", path, "--experiment.home", str(home)]) == 0
    monkeypatch.delenv(CANARY_ENV)
    before = sorted(p for p in home.rglob("*"))

    code = main(["resume", "--experiment", "exp-1", "--experiment.home", str(home)])

    assert code == 2
    assert f"error: agent.llm.api_key: ${{{CANARY_ENV}}} is not set" in capsys.readouterr().err
    assert sorted(p for p in home.rglob("*")) == before


def test_resume_refuses_a_stored_config_that_no_longer_validates_in_one_line(config_dir, capsys):
    """An experiment written before floats had to be finite (`timeout: .inf` stored as
    Infinity) cannot be reopened as it is: one line naming the file and the key."""
    home = Path.cwd() / "experiments"
    assert (
        main(["init", "--config", str(config_dir / "exp.yaml"), "--experiment.home", str(home)])
        == 0
    )
    run_meta = home / "exp-1" / "run_meta.json"
    meta = json.loads(run_meta.read_text())
    meta["config"]["agent"]["timeout"] = float("inf")
    run_meta.write_text(json.dumps(meta))

    code = main(["resume", "--experiment", "exp-1", "--experiment.home", str(home)])

    [line] = capsys.readouterr().err.splitlines()
    assert code == 2
    assert line.startswith(f"error: {run_meta}: its config cannot be reopened: agent.timeout: ")
    assert "finite number" in line


def test_an_experiment_is_taken_by_name_never_by_path(config_dir, capsys):
    """`--experiment ../other-home/exp-1` (or an absolute path) is refused before any home is
    read, by every command that takes a name: nothing is created in either home."""
    other, home = Path.cwd() / "other-home", Path.cwd() / "home"
    assert (
        main(["init", "--config", str(config_dir / "exp.yaml"), "--experiment.home", str(other)])
        == 0
    )
    home.mkdir()
    before = sorted(other.rglob("*"))
    extra = {"rollback": ["--to", "abc"], "archive-node": ["--node", "r001.c1", "--reason", "x"]}

    for command in ("resume", "finalize", "rollback", "archive-node"):
        for path in ("../other-home/exp-1", str(other / "exp-1"), "..", ""):
            code = main(
                [command, "--experiment", path, "--home", str(home), *extra.get(command, [])]
            )
            [line] = capsys.readouterr().err.splitlines()
            assert code == 2
            assert line.startswith("error: --experiment: expected an experiment name")

    assert list(home.iterdir()) == [] and sorted(other.rglob("*")) == before


def test_resume_never_starts_an_experiment(config_dir, capsys):
    """A folder copied under another name records the experiment it came from: resuming it
    would have started that experiment afresh. Refused, and nothing is written."""
    home = Path.cwd() / "home"
    assert (
        main(["init", "--config", str(config_dir / "exp.yaml"), "--experiment.home", str(home)])
        == 0
    )
    shutil.copytree(home / "exp-1", home / "copy")
    shutil.rmtree(home / "exp-1")
    before = sorted(home.rglob("*"))

    code = main(["resume", "--experiment", "copy", "--home", str(home)])

    [line] = capsys.readouterr().err.splitlines()
    assert code == 2
    assert "records experiment 'exp-1', not 'copy'" in line
    assert sorted(home.rglob("*")) == before
    for name in ("exp-1", "nothing-here"):
        assert main(["resume", "--experiment", name, "--home", str(home)]) == 2
        assert f"no experiment {name!r} under {home}" in capsys.readouterr().err
        assert sorted(home.rglob("*")) == before


def test_a_name_never_opens_another_homes_experiment_through_a_link(config_dir, capsys):
    """`home/exp-1` a symbolic link to another home's `exp-1`: the name would have resumed,
    finalized or rolled back that experiment, writing into the other home."""
    home, other = Path.cwd() / "home", Path.cwd() / "other"
    config = str(config_dir / "exp.yaml")
    assert main(["init", "--config", config, "--experiment.home", str(other)]) == 0
    home.mkdir()
    (home / "exp-1").symlink_to(other / "exp-1")
    before = sorted((p, p.stat().st_mtime_ns) for p in other.rglob("*"))

    for command in (["resume"], ["finalize"], ["rollback", "--to", "seed"]):
        code = main([*command, "--experiment", "exp-1", "--home", str(home)])

        [line] = capsys.readouterr().err.splitlines()
        assert code == 2, command
        assert f"{home / 'exp-1'}: a symbolic link" in line
    assert sorted((p, p.stat().st_mtime_ns) for p in other.rglob("*")) == before


def test_a_config_never_opens_another_homes_experiment_through_a_link(config_dir, capsys):
    """`run`, `init` and `eval` take the experiment's folder from the config's home and name:
    a link there would have driven, or written records into, another home's experiment."""
    home, other = Path.cwd() / "home", Path.cwd() / "other"
    config = str(config_dir / "exp.yaml")
    assert main(["init", "--config", config, "--experiment.home", str(other)]) == 0
    home.mkdir()
    (home / "exp-1").symlink_to(other / "exp-1")
    before = sorted((p, p.stat().st_mtime_ns) for p in other.rglob("*"))
    capsys.readouterr()

    for command in (["init"], ["run"], ["eval", "--split", "dev"]):
        code = main([*command, "--config", config, "--experiment.home", str(home)])

        err = capsys.readouterr().err
        assert code == 2, command
        assert f"error: experiment.name: {home / 'exp-1'} is a symbolic link" in err, err
    assert sorted((p, p.stat().st_mtime_ns) for p in other.rglob("*")) == before


def test_a_config_names_its_experiment_never_a_path(config_dir):
    home = Path.cwd() / "home"
    for name in ("../escape", "/tmp/abs", "a..b", ".hidden", "a|b", "a,b"):
        result = subprocess.run(
            [
                *(FLASHRSI, "eval", "--config", str(config_dir / "exp.yaml"), "--split", "dev"),
                *("--experiment.home", str(home), "--experiment.name", name),
            ],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 2
        assert "experiment.name (set by --experiment.name): expected an experiment name" in (
            result.stderr
        )
    assert not home.exists()


def test_eval_of_an_unknown_snapshot_writes_nothing(tmp_path, capsys):
    """Before the experiment has a snapshot, and after: an unknown id is refused in one line
    and leaves no file behind."""
    from flashrsi_dagster.snapshots import SnapshotStore

    config, home = Path(__file__).parents[1] / "examples" / "meta_harness.yaml", tmp_path / "home"
    args = ["eval", "--config", str(config), "--split", "dev", "--experiment.home", str(home)]
    args += ["--experiment.confinement", "none", "--snapshot", "deadbeef"]

    assert main(args) == 2
    assert "no snapshot with id 'deadbeef'" in capsys.readouterr().err
    assert not home.exists()

    SnapshotStore(home / "meta-harness-demo" / "snapshots")  # a store without this snapshot
    before = sorted(home.rglob("*"))
    assert main(args) == 2
    assert "no snapshot with id 'deadbeef'" in capsys.readouterr().err
    assert sorted(home.rglob("*")) == before


def test_dagsters_client_waits_past_its_60_s_default_for_a_loaded_code_server():
    # Dagster reads DAGSTER_GRPC_TIMEOUT_SECONDS once, when its client module is imported:
    # set after the home's instance was checked (which imports it), it never applied, and
    # a queued run whose worker took over 60 s to start failed its experiment.
    script = (
        "import sys; from flashrsi_dagster.cli import main;"
        "main(['validate', '--config', 'examples/meta_harness.yaml']);"
        "import dagster._grpc.client as client; print(client.DEFAULT_GRPC_TIMEOUT)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_GRPC_TIMEOUT_SECONDS"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "300"
