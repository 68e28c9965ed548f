"""Benchmark report for the git-backed snapshot store (`flashrsi_dagster.snapshots.store`).

Run from the project root::

    .venv/bin/python bench/snapshot_bench.py            # 2,000 files, ~50 MB, 5 repeats
    .venv/bin/python bench/snapshot_bench.py --files 500 --mb 10 --repeats 3

It generates a deterministic synthetic harness (text and binary files, a few executables, spread
over runtime/, prompts/, skills/<name>/ and tools/), captures it as a seed snapshot in a fresh
store, then compares against plain git:

* check-out: `SnapshotStore.check_out` vs `git archive <commit> | tar -x -C dest`, each into a
  fresh empty folder, one untimed warm-up each;
* commit of a 10-file change: `SnapshotStore.commit_child` on a checkout vs `git add -A` then
  `git commit -q -m msg` in a plain (non-bare) repository holding the same tree; every repeat
  rewrites 10 files on top of the previous state.

It prints a plain-text report and writes it as JSON to bench/out/snapshot_bench.json. Targets
(ours / baseline median <= 2.0) are marked PASS or MISS; the exit code is 0 unless something
crashed, because this is a report, not a test. The page cache cannot be dropped, so all timings
are warm-cache figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from report import save

from flashrsi_dagster.records import Redactor
from flashrsi_dagster.snapshots import Components, Snapshot, SnapshotStore

TARGET_RATIO = 2.0
CHANGED_FILES = 10
BINARY_SHARE = 0.06
MAX_FILE_BYTES = 4 * 1024 * 1024  # the store refuses files over 10 MB
COMPONENTS = {
    "code": ["runtime/**", "tools/**"],
    "prompt": ["prompts/**"],
    "skill": ["skills/**"],
}
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


@dataclass(frozen=True)
class FileSpec:
    path: str
    binary: bool
    executable: bool
    size: int


# -- harness generation -------------------------------------------------------------------


class ContentMaker:
    """Deterministic file contents: text from a fixed pool of lines, binary from random bytes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        words = [
            "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10)))
            for _ in range(3000)
        ]
        self.lines = [
            " ".join(rng.choices(words, k=rng.randint(3, 14))) + "\n" for _ in range(2000)
        ]

    def make(self, spec: FileSpec) -> bytes:
        if spec.binary:
            return self.rng.randbytes(spec.size)
        head = "#!/bin/sh\n" if spec.executable else ""
        picked = self.rng.choices(self.lines, k=spec.size // 40 + 1)
        text = (head + "".join(picked)).encode()
        while len(text) < spec.size:
            text += "".join(self.rng.choices(self.lines, k=64)).encode()
        return text[: spec.size]


def pick_path(rng: random.Random, index: int, binary: bool) -> tuple[str, bool]:
    """A path for file number `index` and whether it is executable."""
    skill = f"skills/skill_{rng.randrange(40):02d}"
    if binary:
        folder = rng.choice([f"{skill}/assets", f"runtime/data/set_{rng.randrange(8)}"])
        return f"{folder}/blob_{index:05d}.bin", False
    area = rng.choices(["runtime", "prompts", "skill", "tools"], weights=[40, 20, 30, 10])[0]
    if area == "runtime":
        pkg = f"runtime/pkg_{rng.randrange(12):02d}/sub_{rng.randrange(5)}"
        return f"{pkg}/mod_{index:05d}.py", False
    if area == "prompts":
        return f"prompts/group_{rng.randrange(10)}/prompt_{index:05d}.md", False
    if area == "skill":
        leaf = rng.choice(["SKILL.md", "scripts/run.py", "reference/notes.md"])
        stem, dot, ext = leaf.rpartition(".")
        return f"{skill}/{stem}_{index:05d}{dot}{ext}", False
    executable = rng.random() < 0.3
    return f"tools/tool_{index:05d}.{'sh' if executable else 'py'}", executable


def plan_harness(rng: random.Random, count: int, total_bytes: int) -> list[FileSpec]:
    """`count` files whose sizes (log-normal, binaries larger) add up to about `total_bytes`."""
    kinds = [rng.random() < BINARY_SHARE for _ in range(count)]
    weights = [rng.lognormvariate(0, 1) * (8 if binary else 1) for binary in kinds]
    scale = total_bytes / sum(weights)
    cap = min(MAX_FILE_BYTES, max(total_bytes // 4, 1024))
    specs = []
    for index, (binary, weight) in enumerate(zip(kinds, weights, strict=True)):
        path, executable = pick_path(rng, index, binary)
        size = max(64, min(cap, round(weight * scale)))
        specs.append(FileSpec(path, binary, executable, size))
    return specs


def write_harness(folder: Path, specs: list[FileSpec], maker: ContentMaker) -> None:
    for spec in specs:
        target = folder / spec.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(maker.make(spec))
        if spec.executable:
            target.chmod(0o755)


def plan_edits(
    rng: random.Random, specs: list[FileSpec], maker: ContentMaker, repeats: int
) -> list[dict[str, bytes]]:
    """For each repeat, new contents (same size) for 10 distinct existing files."""
    plans = []
    for _ in range(repeats):
        chosen = rng.sample(specs, min(CHANGED_FILES, len(specs)))
        plans.append({spec.path: maker.make(spec) for spec in chosen})
    return plans


def apply_edit(folder: Path, edit: dict[str, bytes]) -> None:
    for path, content in edit.items():
        (folder / path).write_bytes(content)  # rewriting in place keeps the exec bit


# -- timing helpers -----------------------------------------------------------------------


def timed[T](action: Callable[[], T]) -> tuple[float, T]:
    """Milliseconds `action` took, and what it returned.

    Pending writes are flushed first (untimed) so a sample does not pay for the writeback of
    the previous one's files."""
    os.sync()
    start = time.perf_counter()
    result = action()
    return (time.perf_counter() - start) * 1000, result


def run_git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True)


def archive_extract(git_dir: Path, commit: str, dest: Path) -> None:
    """Baseline check-out: `git --git-dir=<store> archive <commit> | tar -x -C dest`."""
    env = {**os.environ, **GIT_ENV}
    archive = subprocess.Popen(
        ["git", f"--git-dir={git_dir}", "archive", commit], stdout=subprocess.PIPE, env=env
    )
    assert archive.stdout is not None
    tar = subprocess.Popen(["tar", "-x", "-C", str(dest)], stdin=archive.stdout)
    archive.stdout.close()
    if tar.wait() != 0 or archive.wait() != 0:
        raise RuntimeError(f"git archive | tar failed for {commit}")


def summarize(ours: list[float], baseline: list[float]) -> dict[str, object]:
    ours_median, base_median = statistics.median(ours), statistics.median(baseline)
    ratio = ours_median / base_median
    return {
        "ours_ms": [round(t, 2) for t in ours],
        "baseline_ms": [round(t, 2) for t in baseline],
        "ours_median_ms": round(ours_median, 2),
        "baseline_median_ms": round(base_median, 2),
        "ratio": round(ratio, 3),
        "target_ratio": TARGET_RATIO,
        "pass": ratio <= TARGET_RATIO,
    }


# -- the two measurements -----------------------------------------------------------------


def bench_checkout(store: SnapshotStore, seed: Snapshot, work: Path, repeats: int) -> dict:
    def ours(dest: Path) -> None:
        store.check_out(seed, dest)

    def baseline(dest: Path) -> None:
        dest.mkdir()
        archive_extract(store.root, seed.id, dest)

    samples: dict[str, list[float]] = {"ours": [], "baseline": []}
    for round_no in range(repeats + 1):  # round 0 is the untimed warm-up
        for name, action in (("ours", ours), ("baseline", baseline)):
            dest = work / f"{name}-{round_no}"
            elapsed, _ = timed(lambda action=action, dest=dest: action(dest))
            if round_no:
                samples[name].append(elapsed)
            store.forget_checkout(dest)
            shutil.rmtree(dest)
    return summarize(samples["ours"], samples["baseline"])


def make_plain_repo(source: Path, repo: Path) -> None:
    """The baseline: a non-bare repository with the whole harness committed."""
    shutil.copytree(source, repo)
    run_git("init", "-q", "-b", "main", cwd=repo)
    run_git("add", "-A", cwd=repo)
    run_git("commit", "-q", "-m", "seed", cwd=repo)


def bench_commit(
    store: SnapshotStore, seed: Snapshot, source: Path, work: Path, edits: list[dict[str, bytes]]
) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    checkout = store.check_out(seed, work / "checkout")
    plain = work / "plain"
    make_plain_repo(source, plain)
    parent = seed
    ours: list[float] = []
    baseline: list[float] = []
    for number, edit in enumerate(edits, start=1):
        apply_edit(checkout, edit)
        elapsed, outcome = timed(
            lambda parent=parent, number=number: store.commit_child(
                parent, checkout, message=f"edit {number}"
            )
        )
        if outcome.status != "committed" or outcome.snapshot is None:
            raise RuntimeError(f"edit {number} was not committed: {outcome}")
        ours.append(elapsed)
        parent = outcome.snapshot
        apply_edit(plain, edit)
        elapsed, _ = timed(lambda number=number: plain_commit(plain, number))
        baseline.append(elapsed)
    return summarize(ours, baseline)


def plain_commit(repo: Path, number: int) -> None:
    run_git("add", "-A", cwd=repo)
    run_git("commit", "-q", "-m", f"edit {number}", cwd=repo)


# -- report -------------------------------------------------------------------------------


def harness_summary(specs: list[FileSpec]) -> dict[str, int]:
    return {
        "files": len(specs),
        "bytes": sum(s.size for s in specs),
        "binary_files": sum(s.binary for s in specs),
        "executable_files": sum(s.executable for s in specs),
        "folders": len({s.path.rsplit("/", 1)[0] for s in specs}),
    }


def git_version() -> str:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def render(report: dict) -> str:
    h = report["harness"]
    lines = [
        f"Snapshot store benchmark (warm page cache; medians of {report['repeats']} repeats)",
        f"harness: {h['files']} files, {h['bytes'] / 1e6:.1f} MB, {h['binary_files']} binary, "
        f"{h['executable_files']} executable, {h['folders']} folders; seed {report['seed']}",
        f"{report['environment']['git']}, Python {report['environment']['python']}",
        "",
        f"{'operation':<26}{'ours ms':>10}{'git ms':>10}{'ratio':>8}{'target':>9}  result",
        "-" * 70,
    ]
    rows = (
        ("checkout", "check-out"),
        ("commit", f"commit {CHANGED_FILES}-file edit"),
        ("commit_guarded", "  same, secret guard on"),
    )
    for key, label in rows:
        row = report[key]
        lines.append(
            f"{label:<26}{row['ours_median_ms']:>10.1f}{row['baseline_median_ms']:>10.1f}"
            f"{row['ratio']:>8.2f}{'<= ' + str(row['target_ratio']):>9}  "
            f"{'PASS' if row['pass'] else 'MISS'}"
        )
    lines += [
        "",
        "baselines: check-out = git archive | tar -x; commit = git add -A && git commit -q",
        f"samples (ms) check-out ours {report['checkout']['ours_ms']}",
        f"             check-out git  {report['checkout']['baseline_ms']}",
        f"             commit ours    {report['commit']['ours_ms']}",
        f"             commit git     {report['commit']['baseline_ms']}",
        f"             guarded ours   {report['commit_guarded']['ours_ms']}",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000, help="number of harness files")
    parser.add_argument("--mb", type=float, default=50, help="total harness size in MB")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per measurement")
    parser.add_argument("--seed", type=int, default=1234, help="random seed for the contents")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, tmp: Path) -> dict:
    rng = random.Random(args.seed)
    maker = ContentMaker(rng)
    specs = plan_harness(rng, args.files, int(args.mb * 1_000_000))
    source = tmp / "harness"
    write_harness(source, specs, maker)
    edits = plan_edits(rng, specs, maker, args.repeats)
    # The store's secret guard costs two git calls per commit when it knows a secret (as in any
    # run with an API key), so the commit is measured both ways.
    store = SnapshotStore(tmp / "store", secret_filter=Redactor(environ={}))
    guarded = SnapshotStore(
        tmp / "guarded", secret_filter=Redactor(["bench-secret-0123456789"], environ={})
    )
    seed = store.create_seed(source, Components.parse(COMPONENTS))
    guarded_seed = guarded.create_seed(source, Components.parse(COMPONENTS))
    return {
        "seed": args.seed,
        "repeats": args.repeats,
        "harness": harness_summary(specs),
        "environment": {
            "git": git_version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "checkout": bench_checkout(store, seed, tmp, args.repeats),
        "commit": bench_commit(store, seed, source, tmp / "plain", edits),
        "commit_guarded": bench_commit(guarded, guarded_seed, source, tmp / "guarded-run", edits),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="snapshot-bench-") as tmp:
        report = run(args, Path(tmp))
    print(render(report))
    save("snapshot_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
