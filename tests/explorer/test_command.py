"""The explorer as `flashrsi ui` starts it beside `dagster dev`: its own process on loopback,
on the home, its links pointing at the Dagster UI's port."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

from flashrsi_dagster.deployment.instance import explorer_command
from tests.conftest import PATIENCE, free_port


def _get(url: str, deadline: float, process: subprocess.Popen):
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.loads(response.read())
        except OSError:
            assert process.poll() is None, "the explorer exited"
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.3)


def test_the_command_ui_starts_serves_the_home_on_loopback(demo_home):
    port = free_port()
    process = subprocess.Popen(explorer_command(demo_home, port, 3456))
    try:
        base = f"http://127.0.0.1:{port}/api/experiments"
        experiments = _get(base, time.monotonic() + PATIENCE, process)
        assert [e["name"] for e in experiments] == sorted(e["name"] for e in experiments)
        assert {"name": "dgm-demo", "algorithm": "dgm"} in experiments
        tree = _get(f"{base}/meta-harness-demo/tree", time.monotonic() + PATIENCE, process)
        assert tree["dagster"] == "http://127.0.0.1:3456"
        listening = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
        ).stdout.split()
        assert f"127.0.0.1:{port}" in listening  # loopback only
    finally:
        process.terminate()
        process.wait(timeout=30)
