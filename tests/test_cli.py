"""The `flashrsi` command line as a user runs it."""

from __future__ import annotations

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
