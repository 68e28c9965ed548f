"""Harbor's `docker` environment for Terminal-Bench trials: chosen by config wherever a Docker
engine and the Compose v2 plugin are there, refused before any trial, naming the missing part,
wherever one is not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.harbor import docker_runtime
from flashrsi_dagster.benchmarks.harbor.suite import TASKS_DIR

FLASHRSI = str(Path(sys.executable).parent / "flashrsi")


def _compose() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = ["docker", "compose", "version"]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


def _cli_without_compose(tmp_path: Path) -> str:
    """A PATH whose `docker` is the CLI as a machine without the Compose v2 plugin has it (the
    plugin installed here sits in a system folder the CLI always searches)."""
    wrapper = tmp_path / "bin" / "docker"
    wrapper.parent.mkdir()
    wrapper.write_text(
        '#!/bin/sh\nif [ "$1" = compose ]; then\n'
        "  echo \"docker: 'compose' is not a docker command.\" >&2; exit 1\nfi\n"
        f'exec {shutil.which("docker")} "$@"\n'
    )
    wrapper.chmod(0o755)
    return f"{wrapper.parent}:{os.environ['PATH']}"


def _eval(tmp_path: Path, agent: str, environment: str = "docker") -> subprocess.CompletedProcess:
    tasks = tmp_path / "suite"
    shutil.copytree(TASKS_DIR / "fix-permissions", tasks / "fix-permissions")
    config = tmp_path / "tb.yaml"
    config.write_text(
        "experiment: {name: docker-trials}\n"
        f"agent: {{type: {agent}, llm: {{model: none}}}}\n"
        "algorithm: {name: meta_harness, worker: {llm: {model: simulator/worker}}}\n"
        f"benchmark: {{name: terminal_bench, tasks_dir: {tasks},\n"
        f"  harbor_environment: {environment},\n"
        "  split_counts: {train: 0, dev: 1, test: 0}}\n"
    )
    command = [FLASHRSI, "eval", "--config", str(config), "--split", "dev"]
    command += ["--experiment.home", str(tmp_path / "home")]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_without_an_engine_trials_in_docker_are_refused_naming_it(tmp_path, monkeypatch):
    if shutil.which("docker") is None:
        assert "Docker CLI is not on PATH" in (docker_runtime.missing() or "")
        return
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")

    done = _eval(tmp_path, "harbor-oracle")

    assert done.returncode != 0
    assert "benchmark.harbor_environment: docker cannot run here: no Docker engine" in done.stderr
    assert not list((tmp_path / "home").glob("*/records/eval/*"))  # no trial ran or was kept


def test_with_an_engine_but_no_compose_plugin_trials_are_refused_naming_it(
    tmp_path, docker_engine, monkeypatch
):
    if _compose():
        monkeypatch.setenv("PATH", _cli_without_compose(tmp_path))

    done = _eval(tmp_path, "harbor-oracle")

    assert done.returncode != 0
    assert "the Compose v2 plugin (`docker compose`) is missing" in done.stderr


@pytest.mark.slow
def test_a_terminal_bench_trial_runs_in_harbors_docker_environment(tmp_path, harbor_docker):
    # docker-offline: Harbor's docker environment with no registry or bridge network (here)
    oracle = _eval(tmp_path / "oracle", "harbor-oracle", "docker-offline")
    nop = _eval(tmp_path / "nop", "harbor-nop", "docker-offline")

    assert oracle.returncode == 0, oracle.stderr
    assert "score 1.000 over 1 tasks" in oracle.stdout
    assert nop.returncode == 0, nop.stderr
    assert "score 0.000 over 1 tasks" in nop.stdout
