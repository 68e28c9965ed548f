"""Atomic writes: a SIGKILL at any moment leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from flashrsi_dagster.records import write_text_atomic

# Writes two large, distinguishable documents to the same path, forever.
_WRITER = """
import json, sys
from pathlib import Path
from flashrsi_dagster.records import write_text_atomic
path = Path(sys.argv[1])
docs = [json.dumps({"version": v, "payload": [v] * 400_000}) for v in ("old", "new")]
print("ready", flush=True)
i = 0
while True:
    write_text_atomic(path, docs[i % 2])
    i += 1
"""


def test_sigkill_during_writes_never_leaves_a_torn_file(tmp_path):
    target = tmp_path / "record.json"
    rng = random.Random(0)
    kills_mid_write = 0
    # 12 kills; more while none landed mid-write or after a whole write (a slow machine)
    for kill in range(120):
        if kill >= 12 and kills_mid_write and target.exists():
            break
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.25))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()

        if target.exists():
            document = json.loads(target.read_text())
            assert document["version"] in ("old", "new")
            assert len(document["payload"]) == 400_000
        kills_mid_write += any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
        for leftover in tmp_path.glob(".record.json.*.tmp"):
            leftover.unlink()

    assert target.exists()
    assert kills_mid_write > 0, "no kill landed mid-write; the test proved nothing"


def test_write_replaces_content_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "sub" / "r.json"

    write_text_atomic(target, "one")
    write_text_atomic(target, "two")

    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    write_text_atomic(target, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(target, "new")

    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
