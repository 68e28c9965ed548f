"""`flashrsi run` and `flashrsi resume` killed at random moments, for every algorithm.

Run:  .venv/bin/python bench/kill_bench.py [--trials 3] [--seed 22] [--kills 2]
                                           [--algorithms meta_harness,modular_rsi,evolver]

For each algorithm (the small settings of `tests/deployment/test_kill_resume.py`), one uninterrupted
`flashrsi run` is the reference; then each trial, in a fresh home, SIGKILLs `flashrsi run` (its
process, not its group: what it started must die with it) at a moment drawn uniformly over the
reference's duration, then `flashrsi resume`, which is itself killed the same way with a
chance (a kill/resume chain of up to `--kills` kills), until a resume ends on its own. Per trial:

- same: the outcome (summary and ledger decisions, `test_kill_resume._outcome`) equals the
  reference's; `records.verify()` passes;
- debris: temp files of atomic writes left behind (counted apart);
- lost / duplicated: record lines (every `records/**/*.jsonl`, the ledger by decision) and
  record files fewer / more than the reference's, plus steps whose run succeeded more often
  than in the reference (Dagster's runs by run key): a step done twice;
- alive_s: after each kill, seconds until no process of the killed command is left (its
  session, its code server, whatever carries its identity); `left_2s`: what was there 2 s on;
- resumes: how many it took, and whether one failed (exit not 0) or hung (no end within
  `600 + 10 x` the reference's time); a last resume must have nothing left to do.

The kill moment, the line printed just before it and each resume's output are in the JSON
report (`bench/out/kill.json`), so that a failure can be replayed as a test. A report, not a
test: it always exits 0; on a shared machine the moments move with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

import dagster as dg
from report import save

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.instance import instance_dir
from tests.deployment.test_kill_resume import (
    EXAMPLES,
    FLASHRSI,
    PROGRESS,
    SMALL,
    WHEN,
    _args,
    _left_alive,
    _outcome,
)

ALIVE_LIMIT = 2.0
"""Seconds a killed command's processes may outlive it (issue 22)."""
BASIS = re.compile(r":[0-9a-f]{8,}$")
"""A run key's basis (`algorithm_defs.run_key`): a digest of records, which hold times."""
TEMP = re.compile(r"\..+\..+tmp")
"""An atomic write's temp file (`records.chain`: `.<name>.*tmp`)."""
RESUME_CHANCE = 0.6
"""The chance that a resume after a kill is killed too (while the chain has kills left)."""


class Command:
    """`flashrsi <args>` in a session of its own, its lines kept with the time they came."""

    def __init__(self, args: list[str]) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [FLASHRSI, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((round(time.monotonic() - self.started, 1), line.rstrip("\n")))

    def wait(self, timeout: float | None) -> int | None:
        """Its exit code, or None if it still runs after `timeout` seconds."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join()
        return code

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def last_line(self) -> str:
        return self.lines[-1][1] if self.lines else ""


def kill(command: Command, home: Path) -> dict:
    """SIGKILL of the command's process alone; then how long what it started lived on."""
    at, last = command.seconds, command.last_line()
    progress = [(t, line) for t, line in command.lines if line.startswith(PROGRESS)]
    since = at - progress[-1][0] if progress else at
    os.kill(command.proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    command.wait(None)
    left_2s: list[str] = []
    while (left := _left_alive(command.proc.pid, home)) and time.monotonic() - killed < 180:
        if not left_2s and time.monotonic() - killed >= ALIVE_LIMIT:
            left_2s = left
        time.sleep(0.05)
    alive = time.monotonic() - killed
    if left:  # still there after 3 minutes: end them, so the trial can go on
        for line in left:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    return {
        "at_s": round(at, 1),
        "after_line": last,
        "after_lines": len(progress),  # the moment as the test draws it: after so many
        "delay_s": round(since, 1),  # lines of progress, so many seconds later
        "alive_s": round(alive, 2),
        "left_2s": left_2s,
    }


def reference(algorithm: str, folder: Path) -> dict:
    home = folder / "home"
    command = Command(["run", *_args(algorithm, home)])
    code = command.wait(None)
    assert code == 0, "\n".join(line for _, line in command.lines)
    return {
        "seconds": round(command.seconds, 1),
        "home": home,
        "lines": command.lines,
        **_counts(home),
    }


def trial(algorithm: str, folder: Path, ref: dict, rng: random.Random, kills: int) -> dict:
    home = folder / "home"
    name = load_config(EXAMPLES / f"{algorithm}.yaml").experiment.name
    resume = ["resume", "--experiment", name, "--home", str(home)]
    limit = 600 + 10 * ref["seconds"]
    run = ["run", *_args(algorithm, home)]
    chain: list[dict] = []
    command = Command(run)
    kill_at = rng.uniform(0, ref["seconds"])
    while True:
        code = command.wait(kill_at)
        if code is None and kill_at < limit:
            chain.append({"command": command.proc.args[1], **kill(command, home)})
            # killed before the experiment was recorded: it is started again, as resume says
            command = Command(resume if (home / name / "run_meta.json").exists() else run)
            more = len(chain) < kills and rng.random() < RESUME_CHANCE
            kill_at = rng.uniform(0, ref["seconds"]) if more else limit
            continue
        if code is None:  # a hang: the limit passed without an end
            chain.append({"command": command.proc.args[1], "hung": True, **kill(command, home)})
        else:
            chain.append(
                {
                    "command": command.proc.args[1],
                    "exit": code,
                    "seconds": round(command.seconds, 1),
                    "output": [line for _, line in command.lines][-40:],
                }
            )
        break
    return _judge(home, resume, ref, chain, limit)


def _judge(home: Path, resume: list[str], ref: dict, chain: list[dict], limit: float) -> dict:
    last = chain[-1]
    result = {"chain": chain, "kills": sum("alive_s" in c for c in chain)}
    result["alive_s"] = max((c["alive_s"] for c in chain if "alive_s" in c), default=0.0)
    result["ended"] = last.get("exit") == 0
    if not result["ended"]:
        return {**result, "same": False, "lost": None, "duplicated": None}
    again = Command(resume)
    code = again.wait(limit)
    rerun = [line for _, line in again.lines if line.startswith("== ")]
    result["again"] = {"exit": code, "steps": rerun}
    try:
        result["same"] = _outcome(home) == _outcome(ref["home"])
    except Exception as exc:
        result["same"], result["error"] = False, f"{type(exc).__name__}: {exc}"
    counts = _counts(home)
    result["lost"], result["duplicated"], result["differences"] = _compare(ref, counts)
    return result


def _counts(home: Path) -> dict:
    """Lines of each record file, the ledger's entries, and successful runs by run key."""
    (root,) = [p for p in home.iterdir() if p.is_dir() and not p.name.startswith(".")]
    lines = Counter()
    for path in sorted((root / "records").rglob("*")) + sorted((root / "dagster").rglob("*")):
        if path.is_file() and path.name not in ("chain.jsonl", "chain.head"):
            name = str(path.relative_to(root))
            if TEMP.fullmatch(path.name):  # an atomic write's temp file, left by a kill
                lines["debris"] += 1
                continue
            lines[name] = len(path.read_text().splitlines()) if path.suffix == ".jsonl" else 1
    ledger = (root / "records" / "ledger.jsonl").read_text().splitlines()
    decisions = Counter(
        f"ledger {WHEN.sub('@<time>', e['id'])} {e.get('decision')}"
        for e in map(json.loads, ledger)
    )
    os.environ["DAGSTER_HOME"] = str(instance_dir(home))  # its storage's base folder
    instance = dg.DagsterInstance.get()
    try:
        runs = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]))
        steps = Counter(f"run {BASIS.sub('', r.tags['dagster/run_key'])}" for r in runs)
    finally:
        instance.dispose()
        del os.environ["DAGSTER_HOME"]
    return {"lines": lines, "decisions": decisions, "steps": steps}


def _compare(ref: dict, counts: dict) -> tuple[int, int, list[str]]:
    """Lost and duplicated record lines, files and steps, and what differs."""
    lost = duplicated = 0
    differences = []
    for kind in ("lines", "decisions", "steps"):
        theirs, ours = ref[kind], counts[kind]
        for key in sorted(set(theirs) | set(ours)):
            delta = ours[key] - theirs[key]
            if delta:
                differences.append(f"{key}: {theirs[key]} -> {ours[key]}")
            if delta < 0 and kind != "steps":  # a step whose records survived its run's end
                lost -= delta
            if delta > 0 and key != "debris":
                duplicated += delta
    return lost, duplicated, differences


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=4, help="per algorithm")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--kills", type=int, default=2, help="most kills in one chain")
    parser.add_argument("--algorithms", default=",".join(sorted(SMALL)))
    args = parser.parse_args()
    report = {
        "seed": args.seed,
        "trials": args.trials,
        "kills": args.kills,
        "load": os.getloadavg()[0],
        "algorithms": {},
    }
    rows = []
    for algorithm in args.algorithms.split(","):
        folder = Path(tempfile.mkdtemp(prefix=f"flashrsi-kill-{algorithm}-"))
        try:
            ref = reference(algorithm, folder / "ref")
            entry = report["algorithms"][algorithm] = {"reference_s": ref["seconds"], "trials": []}
            print(f"{algorithm}: reference {ref['seconds']:.0f} s (load {os.getloadavg()[0]:.1f})")
            for number in range(args.trials):
                rng = random.Random(f"{args.seed}:{algorithm}:{number}")
                result = trial(algorithm, folder / f"t{number}", ref, rng, args.kills)
                entry["trials"].append(result)
                rows.append((algorithm, number, result))
                print(_row(algorithm, number, result), flush=True)
                save("kill", report)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    _table(rows, report)


def _row(algorithm: str, number: int, r: dict) -> str:
    moments = ", ".join(f"{c['command']}@{c['at_s']:.0f}s" for c in r["chain"] if "at_s" in c)
    return (
        f"{algorithm:13} {number:>2}  {moments or '-':34} {r['same']!s:5} "
        f"{r['lost']!s:>4} {r['duplicated']!s:>4} {r['alive_s']:7.2f}  "
        f"{'ok' if r['ended'] else 'FAILED'}"
    )


def _table(rows: list, report: dict) -> None:
    print(
        f"\n{'algorithm':13} {'#':>2}  {'kills (command@moment)':34} {'same':5} "
        f"{'lost':>4} {'dup':>4} {'alive_s':>7}  resume"
    )
    for algorithm, number, result in rows:
        print(_row(algorithm, number, result))
    results = [r for _, _, r in rows]
    kills = sum(r["kills"] for r in results)
    report["totals"] = {
        "trials": len(results),
        "kills": kills,
        "same": sum(bool(r["same"]) for r in results),
        "lost": sum(r["lost"] or 0 for r in results),
        "duplicated": sum(r["duplicated"] or 0 for r in results),
        "alive_over_2s": sum(
            c.get("alive_s", 0) > ALIVE_LIMIT for r in results for c in r["chain"]
        ),
        "max_alive_s": max((r["alive_s"] for r in results), default=0.0),
        "resume_failed": sum(not r["ended"] for r in results),
        "load_end": os.getloadavg()[0],
    }
    print(f"\n{json.dumps(report['totals'])}")
    save("kill", report)


if __name__ == "__main__":
    main()
