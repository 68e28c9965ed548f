"""`python -m flashrsi_dagster.offline_model`: serves in the foreground until SIGINT, SIGTERM or
SIGHUP, each sent to it alone as a service manager does, then exits with 128 + its number and
its port free."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx2
import pytest

from flashrsi_dagster.lifecycle import STOP_SIGNALS
from flashrsi_dagster.offline_model.cli import main
from tests.conftest import PATIENCE, port_is_free


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_it_announces_its_url_serves_scripts_and_stops_on_each_stop_signal(tmp_path, signum):
    script = tmp_path / "demo.yaml"
    script.write_text("- text: scripted hello\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flashrsi_dagster.offline_model",
            "--script",
            f"demo={script}",
            "--seed",
            "3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = process.stdout.readline().strip()
        url = line.removeprefix("offline model simulator listening on ")
        reply = httpx2.post(
            f"{url}/chat/completions",
            json={"model": "simulator/script:demo", "messages": [{"role": "user", "content": "x"}]},
            timeout=60,
        )
        process.send_signal(signum)
        code = process.wait(timeout=PATIENCE)
    finally:
        process.kill()

    assert line.startswith("offline model simulator listening on http://127.0.0.1:")
    assert url.endswith("/v1")
    assert reply.json()["choices"][0]["message"]["content"] == "scripted hello"
    assert code == 128 + signum
    assert port_is_free(int(url.rsplit(":", 1)[1].removesuffix("/v1")))
    assert "simulator chat model=simulator/script:demo" in process.stderr.read()


def test_bad_arguments_exit_2_with_the_reason(tmp_path, capsys):
    missing = tmp_path / "missing.yaml"

    assert main(["--script", f"demo={missing}"]) == 2
    assert main(["--script", "no-equals-sign"]) == 2
    assert main(["--failure-rate", "2"]) == 2

    errors = capsys.readouterr().err
    assert f"{missing}: cannot read the script file" in errors
    assert "--script expects NAME=PATH" in errors
    assert "failure_rate" in errors
