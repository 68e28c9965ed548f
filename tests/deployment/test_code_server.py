"""The code server `flashrsi run` (for queued steps) and `flashrsi ui` start: Dagster's own,
its run workers forked from one process that imported the code location, not each a cold
Python importing it again; and `flashrsi ui` serves the UI from it, leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import dagster as dg
import pytest

from flashrsi_dagster.deployment.code_server import LOCATION
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.instance import landing, persistent_instance
from flashrsi_dagster.deployment.queued import QueuedRuns
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.dagster_internals import DagsterEventType
from tests.conftest import PATIENCE, free_port, session_processes, wait_until

COUNTED = """
import os, sys
with open("/proc/self/cmdline", "rb") as cmdline:
    argv = cmdline.read()
kind = "forkserver" if b"multiprocessing.forkserver" in argv else (
    "spawned" if b"--multiprocessing-fork" in argv else None)
if kind:
    open(os.path.join(os.environ["STARTS_IN"], f"{kind}-{os.getpid()}"), "w").close()
"""
"""A `sitecustomize` that leaves a file for every Python started to become (or to fork) a run
worker: a worker Dagster's own server spawns, or the fork server ours forks them from."""


def test_run_workers_are_forked_from_one_warm_process_not_started_cold(tmp_path, monkeypatch):
    (site := tmp_path / "site").mkdir()
    (site / "sitecustomize.py").write_text(COUNTED)
    (starts := tmp_path / "starts").mkdir()
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("STARTS_IN", str(starts))
    home = tmp_path / ".flashrsi"
    instance = persistent_instance(home)
    defs = defs_for("meta_harness")
    instance.add_dynamic_partitions(defs.partitions.experiments.name, ["exp"])
    queue = QueuedRuns(instance, home, build_definitions(str(home)))
    run_ids = []
    try:
        for _ in range(3):  # each run fails in its step (no experiment 'exp'), once started
            request = dg.RunRequest(
                job_name=defs.finalize_job.name, partition_key="exp", tags={EXPERIMENT_TAG: "exp"}
            )
            run_ids.append(run_id := queue.submit(request))
            wait_until(lambda: instance.get_run_by_id(run_id).is_finished, f"run {run_id}")
    finally:
        queue.close()

    for run_id in run_ids:
        events = {r.dagster_event.event_type for r in instance.all_logs(run_id) if r.dagster_event}
        assert DagsterEventType.RUN_START in events, run_id  # its worker started, and ran it
    assert sorted(p.name.split("-")[0] for p in starts.iterdir()) == ["forkserver"]


@pytest.mark.slow
def test_a_run_worker_starts_quietly_under_a_temp_folder_too_long_for_a_socket(
    tmp_path, monkeypatch, capfd
):
    """The fork server's socket lives in multiprocessing's temporary folder, made under
    TMPDIR: past AF_UNIX's 107 bytes its bind failed and the code server died. And each
    forked worker ran the server's module again, warning that it was already imported."""
    long_tmp = tmp_path / ("x" * 100)
    long_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(long_tmp))
    home = tmp_path / ".flashrsi"
    instance = persistent_instance(home)
    defs = defs_for("meta_harness")
    instance.add_dynamic_partitions(defs.partitions.experiments.name, ["exp"])
    queue = QueuedRuns(instance, home, build_definitions(str(home)))
    try:  # the run fails in its step (no experiment 'exp'), once its worker has started
        request = dg.RunRequest(
            job_name=defs.finalize_job.name, partition_key="exp", tags={EXPERIMENT_TAG: "exp"}
        )
        run_id = queue.submit(request)
        wait_until(lambda: instance.get_run_by_id(run_id).is_finished, f"run {run_id}")
    finally:
        queue.close()

    events = {r.dagster_event.event_type for r in instance.all_logs(run_id) if r.dagster_event}
    assert DagsterEventType.RUN_START in events
    printed = capfd.readouterr().err
    assert "AF_UNIX path too long" not in printed
    assert "found in sys.modules" not in printed


def _graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


JOB = """{ pipelineOrError(params: {pipelineName: "meta_harness", repositoryName: "%s",
  repositoryLocationName: "%s"}) { ... on Pipeline { description } } }"""


def _location(url: str) -> dict | None:
    """The UI's one code location, once it answers; None before."""
    query = (
        "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { "
        "__typename ... on RepositoryLocation { repositories { name } } } } } } }"
    )
    try:
        (entry,) = _graphql(url, query)["workspaceOrError"]["locationEntries"]
    except OSError:
        return None
    return entry if entry["locationOrLoadError"] else None


STOPS = {  # how a terminal and a service manager stop it
    "ctrl-c": lambda pid: os.killpg(pid, signal.SIGINT),
    "sigterm-to-the-leader": lambda pid: os.kill(pid, signal.SIGTERM),
}


@pytest.mark.slow
@pytest.mark.parametrize("stop", STOPS)
def test_flashrsi_ui_serves_the_code_location_from_its_code_server_and_stops_it(tmp_path, stop):
    home = tmp_path / ".flashrsi"
    port, explorer = free_port(), free_port()
    command = [sys.executable, "-m", "flashrsi_dagster.cli", "ui", "--home", str(home)]
    command += ["--port", str(port), "--explorer-port", str(explorer)]
    with open(tmp_path / "ui.log", "wb") as log:
        # SIGINT ignored, as a test runner's or a shell's background child inherits it
        ignored = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
        ui = subprocess.Popen(
            command, stdout=log, stderr=log, start_new_session=True, preexec_fn=ignored
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: ui.poll() is not None or _location(url), "the Dagster UI")
        assert ui.poll() is None, (tmp_path / "ui.log").read_text()[-3000:]
        entry = _location(url)
        assert entry["name"] == LOCATION
        assert entry["locationOrLoadError"]["__typename"] == "RepositoryLocation", entry
        workspace = (home / ".dagster" / "workspace.yaml").read_text()
        assert "grpc_server" in workspace
        assert any("deployment.code_server" in argv for argv in session_processes(ui.pid))
        # the newcomer is pointed at the experiments: last on the terminal, and on each job
        printed = lambda: landing(port, explorer) in (tmp_path / "ui.log").read_text()  # noqa: E731
        wait_until(printed, "the lines saying where the experiments are")
        assert f"== Your experiments: http://127.0.0.1:{explorer}" in landing(port, explorer)
        repository = entry["locationOrLoadError"]["repositories"][0]["name"]
        job = _graphql(url, JOB % (repository, LOCATION))
        assert "**Your experiments**" in job["pipelineOrError"]["description"]
    finally:
        STOPS[stop](ui.pid)
        try:
            ui.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            left = "\n".join(session_processes(ui.pid))
            log = (tmp_path / "ui.log").read_text()[-3000:]
            raise AssertionError(f"`flashrsi ui` still running:\n{left}\n{log}") from None
    wait_until(lambda: not session_processes(ui.pid), "every process of `flashrsi ui` gone")
