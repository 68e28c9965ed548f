"""Benchmark report for the whole contamination check (`ContentCheck.judge`) on candidates that
add one kind of file each: honest, and the same carrying the built-in corpus's table.

Run from the project root::

    .venv/bin/python bench/content_check_bench.py                 # every case, 3 MB each
    .venv/bin/python bench/content_check_bench.py --mb 16 --cases random code

Kinds (each candidate a child of the built-in MiniAgent seed, in a real snapshot store):

- `random`: one file of random bytes (an image, a model's weights);
- `code`: a tree of Python files (dagster's own sources from the venv, sorted by path), a
  vendored library;
- `zip`: a zip of random members (incompressible: it inflates to about its size);
- `npz`: a stored zip of random members of 16 KB each, as `numpy.savez` writes a small
  model's weights;
- `wheel`: a zip (deflated) of the code tree's files, `--mb` of archive (it inflates to about
  four times that);
- `magics`: random bytes with 600 compressor magics laid at random places (more than random
  bytes hold; `MAX_MAGIC_OFFSETS` is 1,024 per reading), as round 18's honest binary, larger.

Each kind is also run `+table`: the table (`{text: label}` of every task, JSON) added the way
that kind carries it (gzip'd in the middle of the random bytes, as a `.py` file in the tree, a
member of the zip, in the middle of one array of the npz, gzip'd behind the magics). Each
case runs in a fresh process (the seed's own scan done first, untimed), which reports the
judge's seconds, its peak resident memory (`ru_maxrss`) and what it added to the process's
peak. It prints a table and writes the report as JSON to bench/out/content_check_bench.json.
A report, not a test: the exit code is 0 unless it crashed.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

from report import save

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("random", "code", "zip", "npz", "wheel", "magics")
MAGICS = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"PK\x03\x04", b"\x78\x9c", b"\x78\xda")


def _table() -> bytes:
    from flashrsi_dagster.benchmarks.text_classification import TextClassification

    benchmark = TextClassification()
    rows = {benchmark.secrets(t)[0].text: t.verifier["label"] for t in benchmark.tasks()}
    return json.dumps(rows).encode()


def _code_files(size: int) -> dict[str, bytes]:
    """Python sources of the installed dagster package, in path order, `size` bytes at most."""
    import dagster

    source = Path(dagster.__file__).parent
    files, total = {}, 0
    for path in sorted(source.rglob("*.py")):
        data = path.read_bytes()
        if total + len(data) > size:
            break
        files[f"runtime/vendor/dagster/{path.relative_to(source)}"] = data
        total += len(data)
    return files


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _wheel(size: int) -> bytes:
    """A deflated zip of the code tree, cut to about `size` bytes of archive."""
    members, total = {}, 0
    for name, data in _code_files(size * 6).items():
        total += len(zlib.compress(data)) + 2 * len(name) + 76  # its body and two headers
        if total > size:
            break
        members[name] = data
    return _zip(members)


def _magics(size: int, rng: random.Random) -> bytearray:
    data = bytearray(rng.randbytes(size))
    for _ in range(600):
        magic = rng.choice(MAGICS)
        at = rng.randrange(size - len(magic))
        data[at : at + len(magic)] = magic
    return data


def files_of(kind: str, size: int, table: bytes | None) -> dict[str, bytes]:
    """The changed files of one case."""
    rng = random.Random(f"{kind}:{size}")
    if kind in ("random", "magics"):
        data = rng.randbytes(size) if kind == "random" else _magics(size, rng)
        if table is not None:
            middle = size // 2
            data = data[:middle] + gzip.compress(table) + data[middle:]
        return {"skills/weights.bin": bytes(data)}
    if kind == "code":
        files = _code_files(size)
        if table is not None:
            files["runtime/vendor/dagster/_answers.py"] = b"ANSWERS = " + table + b"\n"
        return files
    if kind == "zip":
        members = {f"assets/a{n:03d}.bin": rng.randbytes(size // 64) for n in range(64)}
        if table is not None:
            members["assets/t.json"] = table
        return {"skills/assets.zip": _zip(members)}
    if kind == "npz":
        arrays = [rng.randbytes(16 << 10) for _ in range(max(size // (16 << 10), 8))]
        if table is not None:
            arrays[7] = arrays[7][: 8 << 10] + table + arrays[7][8 << 10 :]
        return {
            "skills/weights.npz": _zip(
                {f"arr_{n}.npy": array for n, array in enumerate(arrays)}, zipfile.ZIP_STORED
            )
        }
    wheel = _wheel(size)
    if table is not None:
        wheel = _zip({"answers.json": table, "lib.zip": wheel})
    return {"runtime/vendor/lib.whl": wheel}


def run_case(kind: str, size: int, contaminated: bool) -> dict:
    """One case, in this process: the seed scanned first (untimed), then the candidate judged."""
    from flashrsi_dagster.agents.miniagent.adapter import HARNESS
    from flashrsi_dagster.benchmarks.text_classification import TextClassification
    from flashrsi_dagster.contamination import ContentCheck
    from flashrsi_dagster.snapshots import SnapshotStore

    benchmark = TextClassification()
    tasks = benchmark.tasks()
    changed = files_of(kind, size, _table() if contaminated else None)
    with tempfile.TemporaryDirectory() as temp:
        store = SnapshotStore(Path(temp) / "store", max_file_bytes=64 << 20)
        seed = store.create_seed(HARNESS)
        check = ContentCheck(benchmark, lambda: tasks, {})

        def child(files: dict[str, bytes], name: str):
            folder = store.check_out(seed, Path(temp) / name)
            for path, data in files.items():
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                (folder / path).write_bytes(data)
            outcome = store.commit_child(seed, folder, message=name)
            assert outcome.snapshot is not None, outcome.reason
            return outcome.snapshot

        check.judge(store, child({"skills/notes.md": b"a note\n"}, "warm"))  # the seed's own scan
        candidate = child(changed, "case")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        verdict = check.judge(store, candidate)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "case": kind + ("+table" if contaminated else ""),
        "bytes": sum(map(len, changed.values())),
        "files": len(changed),
        "seconds": round(seconds, 2),
        "peak_mb": round(peak / 1024, 1),
        "added_mb": round((peak - before) / 1024, 1),
        "contaminated": verdict.contaminated,
        "rules": verdict.rules,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=3.0, help="size of each case's files")
    parser.add_argument("--cases", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--honest-only", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = int(args.mb * (1 << 20))
    if args.one:
        print(json.dumps(run_case(args.one[0], size, args.one[1] == "1")))
        return 0
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load {' '.join(load)}; {args.mb:g} MB per case")
    print(f"{'case':<14} {'MB':>6} {'files':>5} {'s':>7} {'peak MB':>8} {'+MB':>6}  verdict")
    rows = []
    for kind in args.cases:
        for contaminated in (False,) if args.honest_only else (False, True):
            command = [sys.executable, __file__, "--mb", str(args.mb)]
            command += ["--one", kind, "1" if contaminated else "0"]
            out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            said = "CONTAMINATED" if row["contaminated"] else "clean"
            rules = "; ".join(rule.split(":")[0] for rule in row["rules"])
            print(
                f"{row['case']:<14} {row['bytes'] / (1 << 20):>6.2f} {row['files']:>5} "
                f"{row['seconds']:>7.2f} {row['peak_mb']:>8.1f} {row['added_mb']:>6.1f}  "
                f"{said} {rules}"
            )
    end = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load at the end {' '.join(end)}")
    save(
        "content_check_bench",
        {"python": sys.version.split()[0], "load": [load, end], "mb": args.mb, "cases": rows},
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
