"""Benchmark report for the contamination check's search (`contamination.detector.scan`).

Run from the project root::

    .venv/bin/python bench/contamination_bench.py                  # 10 and 100 files of 1 KB
    .venv/bin/python bench/contamination_bench.py --files 100 1000 --kb 1 --repeats 1

Each case is a candidate's changed files of plain English prose (deterministic words, wrapped
at 72 columns, no secret in them), searched against the built-in corpus's index (every task,
every split), as `ContentCheck.judge` searches a candidate's changed files. It prints files x
size -> seconds (median of the repeats) and MB/s, and writes the report as JSON to
bench/out/contamination_bench.json. A report, not a test: the exit code is 0 unless it crashed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import textwrap
import time

from report import save

from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.contamination.detector import scan
from flashrsi_dagster.contamination.index import SecretIndex

PROSE = (
    "the a of and to in is it that for on with as was at by this be from or have an they which "
    "one you were her all she there would their we him been has when who will more no if out so "
    "said what up its about into than them can only other new some could time these two may "
    "then do first any my now such like our over man me even most made after also did many "
    "before must through back years where much your way well down should because each just "
    "those people how too little state good very make world still own see men work long get "
    "here between both life being under never day same another know while last might us great "
    "old year off come since against go came right used take three harness agent prompt model"
)
WORDS = tuple(PROSE.split())


def prose(size: int, rng: random.Random) -> bytes:
    words, length = [], 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return (textwrap.fill(" ".join(words), 72)[:size] + "\n").encode()


def case(files: int, size: int, repeats: int, index: SecretIndex) -> dict:
    rng = random.Random(f"{files}x{size}")
    changed = {f"notes/n{n:04d}.md": prose(size, rng) for n in range(files)}
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        found = scan(changed, index)
        seconds.append(time.perf_counter() - started)
    total = sum(map(len, changed.values()))
    median = statistics.median(seconds)
    return {
        "files": files,
        "bytes_each": size,
        "seconds": round(median, 3),
        "runs": [round(s, 3) for s in seconds],
        "mb_per_s": round(total / (1 << 20) / median, 4),
        "matches": len(found.matches),
        "cut": found.cut,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--kb", type=float, nargs="+", default=[1.0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    benchmark = TextClassification()
    started = time.perf_counter()
    tasks = {t.id: t for t in benchmark.tasks()}
    index = SecretIndex.build(
        ((t.id, benchmark.secrets(t)) for t in tasks.values()),
        {},
        {t.id: t.instruction for t in tasks.values()},
    )
    indexed = time.perf_counter() - started
    print(f"index of {len(tasks)} tasks: {indexed:.2f} s; load {os.getloadavg()[0]:.1f}")
    print(f"{'files':>6} {'KB each':>8} {'seconds':>9} {'MB/s':>8}")
    rows = []
    for files in args.files:
        for kb in args.kb:
            row = case(files, int(kb * 1024), args.repeats, index)
            rows.append(row)
            print(f"{files:>6} {kb:>8g} {row['seconds']:>9.3f} {row['mb_per_s']:>8.4f}")
    save(
        "contamination_bench",
        {
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "load": os.getloadavg()[0],
            "index_seconds": round(indexed, 3),
            "cases": rows,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
