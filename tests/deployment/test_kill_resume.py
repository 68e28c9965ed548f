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
from tests.conftest import PATIENCE
from tests.run_wide import made_once

EXAMPLES = Path(__file__).parents[2] / "examples"
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
SMALL = {  # the example's small settings (a round of several candidates in each)
    "meta_harness": "--benchmark.limit 3 --algorithm.max_steps 1"
    " --algorithm.candidates_per_round 2",
    "modular_rsi": "--algorithm.edit_budget 1 --algorithm.num_rollouts 1"
    " --benchmark.split_counts.train 3 --benchmark.split_counts.test 3",
    "evolver": "--algorithm.max_rounds 1 --algorithm.max_why_per_round 1"
    " --algorithm.candidates_per_why 2 --algorithm.recombinations_per_round 0"
    " --algorithm.k 1 --benchmark.split_counts.train 9 --benchmark.split_counts.test 6",
}
SEED = int(os.environ.get("FLASHRSI_KILL_SEED", "22"))
"""Draws the kill moments. Set it to replay a moment `bench/kill_bench.py` reported, or to try
others: the assertions hold at any moment."""
PROGRESS = ("== ", "   ")
"""How the lines a run prints as it goes begin (a step begun or queued, a step's result, a run
waited for): the anchors a kill is drawn from."""
HEX = re.compile(r"\b[0-9a-f]{12,40}\b")
WHEN = re.compile(r"@[0-9T:.+-]+")  # a ledger id's time (a promotion's)


def _args(algorithm: str, home: Path) -> list[str]:
    config = EXAMPLES / f"{algorithm}.yaml"
    return ["--config", str(config), "--experiment.home", str(home), *SMALL[algorithm].split()]


def _outcome(home: Path, name: str | None = None) -> tuple[list[str], list[tuple]]:
    """What must not differ: the summary (scores, promotions, decisions, the sealed test),
    snapshot ids masked (their commits differ in time); and the ledger's decisions. Of
    experiment `name`, or of the home's only one."""
    if name is None:
        (root,) = [p for p in home.iterdir() if p.is_dir() and not p.name.startswith(".")]
        name = root.name
    experiment = open_experiment(stored_config(home, name))
    experiment.records.verify()
    opened = open_algorithm(experiment, log=lambda _: None)
    lines = sorted(HEX.sub("<id>", line) for line in opened.summary(opened.read_state()))
    lines_of = (experiment.paths.records / "ledger.jsonl").read_text().splitlines()
    ledger = [json.loads(line) for line in lines_of]
    return lines, sorted((WHEN.sub("@<time>", e["id"]), e.get("decision")) for e in ledger)


def _progress(output: str) -> list[str]:
    """The lines of `output` that say how the run goes, up to its summary."""
    lines = output.partition("\nexperiment ")[0].splitlines()
    return [line for line in lines if line.startswith(PROGRESS)]


def _kill_after(args: list[str], lines: int, delay: float) -> tuple[int, str, bool]:
    """Start `flashrsi <args>`, wait for its `lines`-th line of progress (0: its start), then
    `delay` seconds, and SIGKILL its process (not its group: what it started must die with
    it). Returns its session id, what it printed, and whether it was killed (not ended)."""
    command = subprocess.Popen(
        [FLASHRSI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert command.stdout is not None
    printed: list[str] = []
    while len(_progress("".join(printed))) < lines and (line := command.stdout.readline()):
        printed.append(line)
    time.sleep(delay)
    killed = command.poll() is None
    if killed:  # not reaped until `wait`, even if it ends now: the pid is never a stranger's
        os.kill(command.pid, signal.SIGKILL)
    command.wait()
    command.stdout.close()
    return command.pid, "".join(printed), killed


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
        code_server = "code_server" in argv and str(home.parent) in argv
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


def _wait_until_gone(session: int, home: Path, seconds: float = PATIENCE) -> list[str]:
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


def uninterrupted(tmp_path_factory, worker_id: str, algorithm: str) -> Path:
    """A folder holding `home`, where `flashrsi run` of `algorithm`'s small settings ran to its
    end uninterrupted, and `printed`, what it printed: made once per test run for the files
    that compare with it (`tests/run_wide.py`); read it, never change it."""

    def make(folder: Path) -> None:
        whole = subprocess.run(
            [FLASHRSI, "run", *_args(algorithm, folder / "home")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert whole.returncode == 0, whole.stdout + whole.stderr
        (folder / "printed").write_text(whole.stdout)

    return made_once(tmp_path_factory, worker_id, f"uninterrupted-{algorithm}", make)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(SMALL))
def test_a_run_and_a_resume_killed_at_random_moments_end_as_an_uninterrupted_run(
    tmp_path, tmp_path_factory, worker_id, algorithm
):
    reference = uninterrupted(tmp_path_factory, worker_id, algorithm)
    progress = _progress((reference / "printed").read_text())

    # The run killed after a line of progress drawn from the uninterrupted run's (some while
    # a round's candidates are queued or starting, some in-process), then the resume after a
    # line drawn from what was left (0: as it starts), each a seeded delay later.
    home, draw = tmp_path / "b" / "home", random.Random(f"{SEED}:{algorithm}")
    name = load_config(EXAMPLES / f"{algorithm}.yaml").experiment.name
    first = draw.randrange(1, len(progress) + 1)
    moments = [
        (first, draw.uniform(0, 3)),
        (draw.randrange(len(progress) - first + 1), draw.uniform(0, 3)),
    ]
    told = f"FLASHRSI_KILL_SEED={SEED}, killed after progress lines / seconds {moments}\n"
    commands = [
        ["run", *_args(algorithm, home)],
        ["resume", "--experiment", name, "--home", str(home)],
    ]
    for command, (lines, delay) in zip(commands, moments, strict=True):
        session, printed, _ = _kill_after(command, lines, delay)
        told += printed
        left = _wait_until_gone(session, home)
        assert left == [], f"{told}alive after the kill: {left}"
    resumed = _resume(home, name)

    assert resumed.returncode == 0, told + resumed.stdout + resumed.stderr
    assert _outcome(home) == _outcome(reference / "home"), told + resumed.stdout
    again = _resume(home, name)  # nothing left: no step runs twice
    assert again.returncode == 0 and "== " not in again.stdout, again.stdout + again.stderr


KILLED_STORING = """
import os, signal, sys
from flashrsi_dagster.orchestration.partitions import candidate_of
from flashrsi_dagster.cli import main
from flashrsi_dagster.orchestration.resources.io import ExperimentIOManager

store = ExperimentIOManager.handle_output

def handle_output(self, context, obj):
    if context.asset_key.path[-1] == sys.argv[1] and candidate_of(context.partition_key)[1] == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    store(self, context, obj)

ExperimentIOManager.handle_output = handle_output
sys.exit(main(sys.argv[2:]))
"""
"""`flashrsi run` (argv[2:]) that SIGKILLs itself as it is about to store the asset named
argv[1] of a round-1 candidate: the step's records are complete, its other assets not."""


@pytest.mark.slow
def test_a_kill_after_a_steps_records_before_its_assets_are_stored_stores_them_on_resume(
    tmp_path,
):
    home = tmp_path / "home"
    args = [*_args("meta_harness", home), "--algorithm.candidates_per_round", "1"]  # in-process
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_STORING, "failure_map", "run", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    root = home / "meta-harness-demo"
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert (root / "records" / "meta_harness" / "round-001.json").exists()  # the step is done
    assert not list(root.glob("dagster/meta_harness-failure_map/round-001-*"))

    resumed = _resume(home, "meta-harness-demo")

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    for asset in ("snapshot", "trajectories", "scores", "failure_map", "paired_stats"):
        assert list(root.glob(f"dagster/meta_harness-{asset}/round-001-*")), asset
    again = _resume(home, "meta-harness-demo")  # the step's run succeeded once: done
    assert again.returncode == 0 and "== " not in again.stdout, again.stdout + again.stderr
