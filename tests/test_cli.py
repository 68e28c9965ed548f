"""The `flashrsi` command line as a user runs it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import openai

FLASHRSI = str(Path(sys.executable).parent / "flashrsi")


def test_offline_model_serves_until_stopped():
    server = subprocess.Popen([FLASHRSI, "offline-model"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        assert line.startswith("offline model simulator listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[-1]
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=10)
        reply = client.chat.completions.create(
            model="simulator/echo", messages=[{"role": "user", "content": "ping"}]
        )
        assert reply.choices[0].message.content == "ping"
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
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
