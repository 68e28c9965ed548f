"""A process that imports `flashrsi_dagster` ends without the interpreter walking its heap
(`flashrsi_dagster/__init__.py`): its heap is frozen once every other exit handler has run,
and what a process leaves for its end still happens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import atexit, gc, sys
at_start = gc.get_freeze_count()  # some interpreters start with a few objects frozen
# registered before the package's own handler, so called after it (exit handlers run last in,
# first out)
atexit.register(lambda: print("frozen at the end:", gc.get_freeze_count() > at_start, flush=True))
import flashrsi_dagster
atexit.register(lambda: print("a later exit handler ran", flush=True))
unclosed = open(sys.argv[1], "w")
unclosed.write("written, never closed")
"""


def test_a_process_importing_the_package_ends_with_its_heap_frozen(tmp_path: Path):
    left = tmp_path / "left.txt"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(left)], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == ["a later exit handler ran", "frozen at the end: True"]
    assert left.read_text() == "written, never closed"  # buffered writes still reach the file
