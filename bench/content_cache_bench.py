"""Benchmark report for the contamination check's disk cache (`contamination/cache.py`): a fresh
process's first `ContentCheck.judge` of a candidate (the built-in text classification's 180
tasks, a clean and a contaminated child of the built-in MiniAgent seed), with the cache folder
empty (cold: the index built, the seed scanned, both written) and then filled (warm: both read
back), as each candidate's Dagster run worker judges one.

Run from the project root::

    .venv/bin/python bench/content_cache_bench.py --repeat 3

Each run is a fresh process; it prints the judge's seconds per case and the load average.
A report, not a test: the exit code is 0 unless it crashed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys, time
from pathlib import Path
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.contamination import ContentCheck
from flashrsi_dagster.snapshots import SnapshotStore

root, kind = Path(sys.argv[1]), sys.argv[2]
benchmark = TextClassification()
tasks = benchmark.tasks()
splits = {t.id: "train" for t in tasks[:9]} | {t.id: "dev" for t in tasks[9:18]}
store = SnapshotStore(root / "store")
known = root / "seed"
seed = store.get(known.read_text()) if known.exists() else store.create_seed(HARNESS)
known.write_text(seed.id)
folder = store.check_out(seed, root / f"edit-{time.monotonic_ns()}")
table = {benchmark.secrets(t)[0].text: t.verifier["label"] for t in tasks}
line = f"ANSWERS = {table!r}" if kind == "contaminated" else f"# honest {time.time_ns()}"
with (folder / "runtime/agent.py").open("a") as handle:
    handle.write("\\n" + line + "\\n")
candidate = store.commit_child(seed, folder, message="edit").snapshot
check = ContentCheck(benchmark, lambda: tasks, splits, kept=root / "cache")
started = time.perf_counter()
made = check.judge(store, candidate)
print(f"{time.perf_counter() - started:.2f} {made.contaminated}")
"""


def run(root: Path, kind: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), kind],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    print(f"load at start: {os.getloadavg()}")
    for kind in ("clean", "contaminated"):
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as folder:
                cold, warm = run(Path(folder), kind), run(Path(folder), kind)
                print(f"{kind}: cold {cold}  warm {warm}")
    print(f"load at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
