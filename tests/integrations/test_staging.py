"""The interpreter an agent runs inside a task environment starts there whatever the image
holds: it comes with the shared libraries it and its modules need, the C library and its
loader included, and runs on those alone; MiniAgent completes a scripted rollout in bare
Debian and Ubuntu images, which have neither `libssl.so.3` nor `libsqlite3.so.0`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS, MiniAgent
from flashrsi_dagster.benchmarks.harbor.benchmark import TerminalBench
from flashrsi_dagster.integrations.staging import distributions_for, staged
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status
from tests.environments.local_chroot.conftest import TASK_TOML, write_task
from tests.integrations.test_harbor import _role, _rollout
from tests.sabotage.helpers import say, shell

pytestmark = pytest.mark.filterwarnings(
    "ignore:Task.checksum will be deprecated:DeprecationWarning"
)

MAPPED = """
import sqlite3, ssl
with open("/proc/self/maps") as maps:
    print("\\n".join(sorted({l.split()[-1] for l in maps if ".so" in l.split()[-1]})))
"""
"""Prints every shared object the process has mapped, after the modules that failed to load
in minimal images."""


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


def test_the_staged_interpreter_runs_on_the_staged_libraries_alone():
    ready = staged(distributions_for(MiniAgent))
    names = {path.name for path in ready.libraries.iterdir()}
    assert {ready.loader, "libc.so.6", "libssl.so.3", "libsqlite3.so.0"} <= names
    # On the host, at the staged folder's host path: the same command as inside
    loader, _, _, python = ready.interpreter
    argv = [str(ready.libraries / Path(loader).name), "--library-path", str(ready.libraries)]

    mapped = subprocess.run(
        [*argv, python, "-I", "-S", "-c", MAPPED], capture_output=True, text=True, check=True
    ).stdout.split()

    outside = [path for path in mapped if not path.startswith(str(ready.prefix))]
    assert outside and all(path.startswith(f"{ready.libraries}/") for path in outside), mapped
    assert f"{ready.libraries}/libc.so.6" in outside  # the host's glibc, never the image's


@pytest.mark.slow
@pytest.mark.parametrize(
    ("image", "system"), [("debian:bookworm-slim", "debian"), ("ubuntu:24.04", "ubuntu")]
)
def test_miniagent_completes_a_rollout_in_a_bare_image(
    image, system, server, tmp_path, harbor_docker
):
    check = '[ "$(cat /app/system)" = "$ID" ] && echo 1 || echo 0'
    write_task(
        tmp_path / "tasks" / f"bare-{system}",
        dockerfile=f"FROM {image}\nWORKDIR /app\n",
        test_sh=f"#!/bin/bash\n. /etc/os-release\n({check}) > /logs/verifier/reward.txt\n",
        task_toml=TASK_TOML.replace("timeout_sec = 60.0", "timeout_sec = 120.0"),
    )
    script = f"bare-{system}-{tmp_path.name}"
    # The agent's shell is the image's own: its tools on its libraries, not the staged ones
    server.add_script(script, [shell(". /etc/os-release; echo $ID | tee /app/system"), say("done")])
    bench = TerminalBench(tmp_path / "tasks", environment="docker-offline")
    with target_agent(_role(server, script), HARNESS) as agent:
        trajectory = _rollout(bench, agent, {f"bare-{system}"}, tmp_path)[0]

    assert (trajectory.status, trajectory.score) == (Status.SUCCESS, 1.0), trajectory.metadata
    assert trajectory.metadata["inside_exit_code"] == 0
    tool = next(m["content"] for m in trajectory.messages if m["role"] == "tool")
    assert system in tool
