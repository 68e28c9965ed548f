"""Benchmark report for the work the content check's decoder does again for nothing new
(`decode.Budget.rework`): bytes inflated and hashed, CPU seconds, and the verdict (searched,
unsearched, or opaque by the coverage rule and the seconds it took, `contamination/coverage.py`)
on hostile files and honest ones, for this tree's `decode.py` and another's.

Run from the project root::

    .venv/bin/python bench/decode_rework_bench.py                        # this tree's decode.py
    git show main:flashrsi_dagster/contamination/decode.py > /tmp/main_decode.py
    .venv/bin/python bench/decode_rework_bench.py --decode /tmp/main_decode.py --name main

Each case is the decoding alone, as `detector.scan` drives it (every file's `decode.views` in
one `Budget`, then the files joined when there are several), no search, in a fresh process.
Work is counted by wrapping `zlib.decompressobj` (bytes inflated) and the module's `_digest`
(bytes hashed). A report, not a test: the exit code is 0 unless it crashed.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

from report import save

ROOT = Path(__file__).resolve().parent.parent
DECODE = ROOT / "flashrsi_dagster/contamination/decode.py"


def _zip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members:  # a fixed date: the same bytes in every run
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, method)
    return buffer.getvalue()


def _notes(size: int, seed: int = 0) -> bytes:
    """Log-like text: numbered lines with some randomness (compresses about 4:1)."""
    rng = random.Random(seed)
    lines, total = [], 0
    while total < size:
        line = b"%06d step %d loss %.6f tok %x\n" % (
            len(lines),
            rng.randrange(10**6),
            rng.random(),
            rng.getrandbits(32),
        )
        lines.append(line)
        total += len(line)
    return b"".join(lines)[:size]


def _git_pack(objects: int) -> bytes:
    """A real git packfile of `objects` small text files committed one a commit."""
    with tempfile.TemporaryDirectory() as temp:
        git = ["git", "-C", temp, "-c", "user.name=b", "-c", "user.email=b@b"]
        subprocess.run([*git, "init", "-q"], check=True)
        rng = random.Random(objects)
        for n in range(objects // 3):
            (Path(temp) / f"f{n % 40}.txt").write_bytes(_notes(2000, rng.randrange(1 << 30)))
            subprocess.run([*git, "add", "-A"], check=True)
            subprocess.run([*git, "commit", "-qm", f"c{n}"], check=True)
        subprocess.run([*git, "gc", "-q"], check=True)
        pack = next((Path(temp) / ".git/objects/pack").glob("*.pack"))
        return pack.read_bytes()


def _png(width: int, height: int) -> bytes:
    """A PNG of one colour, its pixels one zlib stream (round 19's screenshot, smaller)."""
    rows = (b"\0" + b"\x30\x60\x90" * width) * height
    return b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" + b"\0" * 17 + b"IDAT" + zlib.compress(rows)


CASES = {
    # hostile: work that gives nothing new
    "zip of 1,024 identical members (1.5 MB of zeros each)": lambda: {
        "a.zip": _zip([(f"m{n}", bytes(3 << 19)) for n in range(1024)])
    },
    "1,000 gzip members in front of 4 MB of random bytes": lambda: {
        "a.gz": b"".join(gzip.compress(b"%d" % n, mtime=0) for n in range(1000))
        + random.Random(1).randbytes(4 << 20)
    },
    "1,024 gzip members of 3.5 KB of random bytes each": lambda: {
        "a.gz": b"".join(
            gzip.compress(random.Random(n).randbytes(3500), mtime=0) for n in range(1024)
        )
    },
    # honest
    "npz 3 MB (192 stored arrays of 16 KB)": lambda: {
        "w.npz": _zip(
            [(f"arr_{n}.npy", random.Random(n).randbytes(16 << 10)) for n in range(192)],
            zipfile.ZIP_STORED,
        )
    },
    "zip 3 MB (64 deflated random members)": lambda: {
        "a.zip": _zip([(f"a{n}.bin", random.Random(n).randbytes(48 << 10)) for n in range(64)])
    },
    "bgzip-like, 46 members of 16 KB of text": lambda: {
        "s.vcf.gz": b"".join(
            gzip.compress(block, mtime=0)
            for block in (lambda t: [t[a : a + (16 << 10)] for a in range(0, len(t), 16 << 10)])(
                b"".join(b"- sample %d: depth %d\n" % (i, i % 50) for i in range(22000))
            )
        )
    },
    "gzip'd log, 60 members of 64 KB of text (1 MB)": lambda: {
        "l.gz": b"".join(gzip.compress(_notes(64 << 10, n), mtime=0) for n in range(60))
    },
    "gzip'd log, 1,000 members of 1 KB of text": lambda: {
        "l.gz": b"".join(gzip.compress(_notes(1000, n), mtime=0) for n in range(1000))
    },
    "gzip'd log, 1,000 members of 3.5 KB of text": lambda: {
        "l.gz": b"".join(gzip.compress(_notes(3500, n), mtime=0) for n in range(1000))
    },
    "git packfile (~600 objects)": lambda: {"p.pack": _git_pack(200)},
    "PNG 800x600 of one colour, and 3 text files": lambda: {
        "i.png": _png(800, 600),
        "a.md": b"notes\n" * 100,
        "b.md": b"more\n" * 100,
        "c.py": b"x = 1\n",
    },
}


def _load(path: Path):
    spec = importlib.util.spec_from_file_location("bench_decode", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class _Engine:
    """A zlib decompressor counting the bytes it gives."""

    def __init__(self, engine, counts: dict) -> None:
        self.engine, self.counts = engine, counts

    def decompress(self, data, *args):
        out = self.engine.decompress(data, *args)
        self.counts["inflated"] += len(out)
        return out

    def __getattr__(self, name):
        return getattr(self.engine, name)


def run_case(name: str, decode_path: Path) -> dict:
    """One case, in this process: every file's views in one budget, then the files joined."""
    counts = {"inflated": 0, "hashed": 0}
    inflater = zlib.decompressobj
    # before the module is loaded: it keeps `zlib.decompressobj` itself in a table
    zlib.decompressobj = lambda *args, **kwargs: _Engine(inflater(*args, **kwargs), counts)
    decode = _load(decode_path)
    digest = decode._digest

    def counted(data, unpacking):
        counts["hashed"] += len(data)
        return digest(data, unpacking)

    decode._digest = counted
    files = CASES[name]()
    budget = decode.Budget()
    started, blobs = time.process_time(), {}
    for path in sorted(files):
        decoded = len(getattr(budget, "decoded", ()))
        for _ in decode.views(path, files[path], budget):
            pass
        blobs[path] = [files[path], *getattr(budget, "decoded", [])[decoded:]]
    if len(files) > 1:
        for _ in decode.views("(joined)", b"".join(files[p] for p in sorted(files)), budget):
            pass
    seconds = time.process_time() - started
    opaque, measured = _opaque(blobs, budget)
    limit = getattr(decode, "MAX_REWORK_BYTES", None)
    return {
        "case": name,
        "bytes": sum(map(len, files.values())),
        "cpu_s": round(seconds, 2),
        "inflated_mb": round(counts["inflated"] / (1 << 20), 1),
        "hashed_mb": round(counts["hashed"] / (1 << 20), 1),
        "rework_mb": None if limit is None else round((limit - budget.rework) / (1 << 20), 1),
        "unsearched": budget.cut,
        "opaque": opaque,
        "coverage_s": measured,
    }


def _opaque(blobs: dict[str, list[bytes]], budget) -> tuple[bool | None, float | None]:
    """Whether the coverage rule finds an opaque stretch (None for a decode.py without it),
    and its CPU seconds."""
    if not hasattr(budget, "consumed"):
        return None, None
    from flashrsi_dagster.contamination import coverage

    started = time.process_time()
    reasons = coverage.unaccounted(blobs, budget.consumed)
    return bool(reasons), round(time.process_time() - started, 2)


def _verdict(row: dict) -> str:
    return "UNSEARCHED" if row["unsearched"] else "OPAQUE" if row["opaque"] else "searched"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decode", type=Path, default=DECODE, help="the decode.py to measure")
    parser.add_argument("--name", default="tree", help="what to call it in the report")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_case(args.one, args.decode)))
        return 0
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{args.name} ({args.decode}); load {' '.join(load)}")
    print(
        f"{'cpu s':>7} {'inflated MB':>11} {'hashed MB':>10} {'rework MB':>9} "
        f"{'cover s':>7}  verdict  case"
    )
    rows = []
    for name in CASES:
        command = [sys.executable, __file__, "--decode", str(args.decode), "--one", name]
        out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['cpu_s']:>7.2f} {row['inflated_mb']:>11.1f} {row['hashed_mb']:>10.1f} "
            f"{row['rework_mb'] if row['rework_mb'] is not None else '-':>9} "
            f"{row['coverage_s'] if row['coverage_s'] is not None else '-':>7}  "
            f"{_verdict(row):<10} {row['case']}"
        )
    end = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load at the end {' '.join(end)}")
    save(f"decode_rework_bench_{args.name}", {"load": [load, end], "cases": rows})
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
