"""`flashrsi run` killed with SIGKILL at a random moment (a seeded delay after a chosen
point, some while a round's candidates are queued or starting as runs of their own), then
`flashrsi resume` until done: the final state equals an uninterrupted run's, no step is lost
or done twice, and no process of the killed command outlives it (its code server and run
workers die with it)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.identity import stored_config
from flashrsi_dagster.orchestration.owner import DRIVER_ENV

EXAMPLES = Path(__file__).parents[2] / "examples"
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
SMALL = {  # the example's small settings (a round of several candidates in each)
    "meta_harness": "--benchmark.limit 3 --algorithm.max_steps 1"
    " --algorithm.candidates_per_round 2",
    "modular_rsi": "--algorithm.edit_budget 1 --algorithm.num_rollouts 1"
    " --benchmark.split_counts.train 3 --benchmark.split_counts.test 3",
    "evolver": "--algorithm.max_rounds 1 --algorithm.max_why_per_round 1"
    " --algorithm.candidates_per_why 2 --algorithm.recombinations_per_round 0"
    " --benchmark.split_counts.train 9 --benchmark.split_counts.test 6",
}
QUEUED = "(queued)"
"""The line `flashrsi run` prints as it submits a candidate's run: the kill comes after it."""
HEX = re.compile(r"\b[0-9a-f]{12,40}\b")
WHEN = re.compile(r"@[0-9T:.+-]+")  # a ledger id's time (a promotion's)


def _args(algorithm: str, home: Path) -> list[str]:
    config = EXAMPLES / f"{algorithm}.yaml"
    return ["--config", str(config), "--experiment.home", str(home), *SMALL[algorithm].split()]


def _outcome(home: Path) -> tuple[list[str], list[tuple]]:
    """What must not differ: the summary (scores, promotions, decisions, the sealed test),
    snapshot ids masked (their commits differ in time); and the ledger's decisions."""
    (root,) = [p for p in home.iterdir() if p.is_dir() and not p.name.startswith(".")]
    experiment = open_experiment(stored_config(home, root.name))
    experiment.records.verify()
    opened = open_algorithm(experiment, log=lambda _: None)
    lines = sorted(HEX.sub("<id>", line) for line in opened.summary(opened.read_state()))
    lines_of = (experiment.paths.records / "ledger.jsonl").read_text().splitlines()
    ledger = [json.loads(line) for line in lines_of]
    return lines, sorted((WHEN.sub("@<time>", e["id"]), e.get("decision")) for e in ledger)


def _kill_at_random(args: list[str], after: str, seed: int) -> tuple[int, str]:
    """Start `flashrsi run`, wait for the line `after`, then a seeded delay, and SIGKILL its
    process (not its group: what it started must die with it). Returns its session id and
    what it printed."""
    run = subprocess.Popen(
        [FLASHRSI, "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    printed = []
    assert run.stdout is not None
    for line in run.stdout:
        printed.append(line)
        if after in line:
            break
    time.sleep(random.Random(seed).uniform(0, 8))
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    run.stdout.close()
    return run.pid, "".join(printed)


def _left_alive(session: int, home: Path) -> list[str]:
    """Processes of the killed command's session, code servers of its home's folder, and any
    process, in whatever session, that its code server started (it carries the driver's
    identity in its environment)."""
    left = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        code_server = "api grpc" in argv and str(home.parent) in argv
        driven = any(_driver_of(v) == session for v in env)
        if int(fields[3]) == session or code_server or driven:
            left.append(f"{proc.name}: {argv}")
    return left


def _driver_of(variable: bytes) -> int | None:
    """The driver's pid in `FLASHRSI_DRIVER=<space>:<pid>:<start time>`, else None."""
    name, _, value = variable.decode(errors="replace").partition("=")
    if name != DRIVER_ENV:
        return None
    pid = value.partition(":")[2].partition(":")[0]
    return int(pid) if pid.isdigit() else None


def _wait_until_gone(session: int, home: Path, seconds: float = 120) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := _left_alive(session, home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _resume(home: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [FLASHRSI, "resume", "--experiment", name, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(SMALL))
def test_a_kill_while_candidates_are_queued_resumes_to_the_uninterrupted_result(
    tmp_path, algorithm
):
    whole = subprocess.run(
        [FLASHRSI, "run", *_args(algorithm, tmp_path / "a" / "home")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr

    home = tmp_path / "b" / "home"
    session, printed = _kill_at_random(_args(algorithm, home), QUEUED, seed=22)
    left = _wait_until_gone(session, home)
    assert left == [], f"alive after the kill: {left}"
    name = load_config(EXAMPLES / f"{algorithm}.yaml").experiment.name
    resumed = _resume(home, name)

    assert resumed.returncode == 0, printed + resumed.stdout + resumed.stderr
    assert _outcome(home) == _outcome(tmp_path / "a" / "home")
    again = _resume(home, name)  # nothing left: no step runs twice
    assert again.returncode == 0 and "== " not in again.stdout, again.stdout + again.stderr
