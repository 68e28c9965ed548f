"""The step lock: sequential steps one at a time, candidates of a round side by side."""

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flashrsi_dagster.experiment.lock import StepLock
from tests.conftest import PATIENCE

HOLD = """
import sys, time
from pathlib import Path
from flashrsi_dagster.experiment.lock import StepLock
from tests.conftest import PATIENCE
with StepLock(Path(sys.argv[1])).held(shared=sys.argv[2] == "shared"):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
    Path(sys.argv[1] + ".slept").touch()  # still holding it
"""


def _holder(path: Path, mode: str, seconds: float) -> subprocess.Popen:
    """A process holding the lock for `seconds`, then touching `<path>.slept` before it lets
    go."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), mode, str(seconds)], stdout=subprocess.PIPE
    )
    assert process.stdout is not None and process.stdout.readline() == b"held\n"
    return process


def _acquired_within(lock: StepLock, seconds: float, *, shared: bool) -> bool:
    got = threading.Event()

    def take() -> None:
        with lock.held(shared=shared):
            got.set()

    threading.Thread(target=take, daemon=True).start()
    return got.wait(seconds)


def test_shared_holders_in_other_processes_do_not_wait_for_each_other(tmp_path):
    path = tmp_path / "step.lock"
    other = _holder(path, "shared", 2 * PATIENCE)
    try:
        assert _acquired_within(StepLock(path), PATIENCE, shared=True)
    finally:
        other.kill()


def test_an_exclusive_holder_waits_for_every_shared_one_and_keeps_them_out(tmp_path):
    path = tmp_path / "step.lock"
    other = _holder(path, "shared", 1.5)
    with StepLock(path).held():
        assert path.with_name("step.lock.slept").exists()  # the shared holder had to end first
        assert not _acquired_within(StepLock(path), 0.5, shared=True)
    other.wait()


def test_threads_of_one_process_hold_it_each_on_their_own(tmp_path):
    lock = StepLock(tmp_path / "step.lock")
    with lock.held():
        assert not _acquired_within(lock, 0.5, shared=False)  # another thread: it waits
    with lock.held(shared=True):
        assert _acquired_within(lock, PATIENCE, shared=True)


def test_it_is_reentrant_but_a_shared_hold_cannot_become_exclusive(tmp_path):
    lock = StepLock(tmp_path / "step.lock")
    with lock.held(), lock.held(shared=True), lock.held():
        pass  # a step made of steps
    with lock.held(shared=True), pytest.raises(RuntimeError, match="held shared"), lock.held():
        pass
    assert _acquired_within(lock, PATIENCE, shared=False)  # released after all that
