"""`flashrsi ui` for a benchmark: `dagster dev` (webserver, daemon) on a home's instance and its
code server (`deployment/code_server.py`), with runs launched as the UI's Materialize button
launches them — GraphQL `launchPipelineExecution` — so each goes through the instance's run
queue, the daemon that dequeues it, and the run launcher that starts a run worker, forked from
a process that loaded the code location (`flashrsi_dagster.definitions`) once, which executes
the job in-process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg

UI = [sys.executable, "-m", "flashrsi_dagster.cli", "ui"]
"""`flashrsi ui` itself (`deployment/instance.py`)."""
LAUNCH = """
mutation($params: ExecutionParams!) {
  launchPipelineExecution(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
LOCATION = """{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError {
  __typename ... on RepositoryLocation { repositories { name } } } } } } }"""
START_SENSOR = """
mutation($s: SensorSelector!) {
  startSensor(sensorSelector: $s) { __typename ... on PythonError { message } }
}"""
DAEMONS = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"


class DagsterUI:
    """`flashrsi ui` on `home` (loopback, free ports); a context manager."""

    def __init__(self, home: Path, log: Path, timeout: float = 300.0) -> None:
        self.home, self.log, self.timeout = Path(home), Path(log), timeout
        self.port = _free_port()
        self._process: subprocess.Popen | None = None
        self._log = None

    def __enter__(self) -> DagsterUI:
        started = time.monotonic()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log.open("wb")
        command = [*UI, "--home", str(self.home), "--port", str(self.port)]
        self._process = subprocess.Popen(
            [*command, "--explorer-port", str(_free_port())],
            cwd=self.home.resolve().parent,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.location, self.repository = self._until(self._repository, "the code location")
        self._until(self._daemons_healthy, "the daemon")
        self.startup_s = time.monotonic() - started
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            os.killpg(
                self._process.pid, signal.SIGINT
            )  # Ctrl-C: `flashrsi ui` stops all it started
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        if self._log is not None:
            self._log.close()

    def launch_job(self, job: str, run_config: dict) -> str:
        """Launch `job` with `run_config`, as the Launchpad's button does; its run id."""
        return self._launch(job, run_config, {})

    def launch(self, request: dg.RunRequest, partition_dimensions: dict[str, str]) -> str:
        """Launch the run of `request` as the UI launches it; its run id."""
        tags = {
            **request.tags,
            "dagster/partition": str(request.partition_key),
            **{f"dagster/partition/{d}": key for d, key in partition_dimensions.items()},
        }
        if request.run_key:
            tags["dagster/run_key"] = request.run_key
        assert request.job_name is not None
        return self._launch(request.job_name, {}, tags)

    def _launch(self, job: str, run_config: dict, tags: dict[str, str]) -> str:
        params = {
            "selector": {
                "repositoryName": self.repository,
                "repositoryLocationName": self.location,
                "pipelineName": job,
            },
            "runConfigData": run_config,
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        launched = self._graphql(LAUNCH, {"params": params})["launchPipelineExecution"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"launch refused: {launched}")
        return launched["run"]["runId"]

    def start_sensor(self, sensor: str) -> None:
        """Turn a sensor on, as its toggle in the UI does; the daemon ticks it from then."""
        selector = {
            "repositoryName": self.repository,
            "repositoryLocationName": self.location,
            "sensorName": sensor,
        }
        started = self._graphql(START_SENSOR, {"s": selector})["startSensor"]
        if started["__typename"] != "Sensor":
            raise RuntimeError(f"{sensor} not started: {started}")

    def _repository(self) -> tuple[str, str] | None:
        entries = self._graphql(LOCATION, {})["workspaceOrError"]["locationEntries"]
        loaded = entries[0]["locationOrLoadError"] if entries else None
        if not loaded or loaded["__typename"] != "RepositoryLocation":
            return None
        return entries[0]["name"], loaded["repositories"][0]["name"]

    def _daemons_healthy(self) -> bool:
        health = self._graphql(DAEMONS, {})["instance"]["daemonHealth"]["allDaemonStatuses"]
        return any(d["daemonType"] == "QUEUED_RUN_COORDINATOR" and d["healthy"] for d in health)

    def _until(self, probe, what: str):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"dagster dev exited; see {self.log}")
            try:
                found = probe()
            except OSError:
                found = None
            if found:
                return found
            time.sleep(0.25)
        raise TimeoutError(f"{what} did not come up in {self.timeout:.0f} s")

    def _graphql(self, query: str, variables: dict) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/graphql",
            data=json.dumps({"query": query, "variables": variables}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            body = json.loads(response.read())
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]


def wait_for_tagged_run(
    instance: dg.DagsterInstance, tags: dict[str, str], timeout: float = 300.0
) -> str:
    """The id of the first run carrying `tags`, once one exists (a sensor launched it)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = instance.get_runs(filters=dg.RunsFilter(tags=tags), limit=1)
        if runs:
            return runs[0].run_id
        time.sleep(0.1)
    raise TimeoutError(f"no run tagged {tags} in {timeout:.0f} s")


def wait_for_run(instance: dg.DagsterInstance, run_id: str, timeout: float = 900.0) -> dict:
    """Poll until the run has finished; its status and the instance's timestamps (seconds
    since the epoch): created, launched (dequeued to a worker), started (the worker has
    loaded the code and begun), ended, and when this poll saw it end."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        record = instance.get_run_record_by_id(run_id)
        if record is not None and record.dagster_run.is_finished:
            seen = time.time()
            stats = instance.get_run_stats(run_id)
            return {
                "status": record.dagster_run.status.value,
                "created": record.create_timestamp.timestamp(),
                "launched": stats.launch_time,
                "started": stats.start_time,
                "ended": stats.end_time,
                "seen": seen,
            }
        time.sleep(0.1)
    raise TimeoutError(f"run {run_id} did not finish in {timeout:.0f} s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
