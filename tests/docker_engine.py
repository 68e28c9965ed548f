"""A Docker engine for the tests: a `dockerd` of their own (root, Debian's `docker.io`:
`make docker`), with its data root in a fixed folder so that the images it holds, the
debootstrap base above all, outlive the session and are made once per machine. The bridge
is off (containers use the host's network or none) and so is its iptables set-up.

Sessions share the engine (both pytest-xdist workers, another checkout's suite): each holds a
shared lock on it while it runs, so that none waits for another to end. An engine already
answering on the socket when the first session came is used as it is and left running; one a
session started is stopped by the last session to leave it. Where none can start, the tests
that need one are skipped with the reason."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("FLASHRSI_TEST_DOCKER_ROOT", "/var/lib/flashrsi-test-docker"))
RUN = Path("/run/flashrsi-test-docker")  # the socket's path must stay short
HOST = f"unix://{RUN / 'docker.sock'}"
STARTED = ROOT / "started-by-tests"
"""Present while an engine a session started runs: the last session out stops it."""
_children: list[subprocess.Popen] = []
"""The engine this session started, if it did: waited for once stopped (no zombie left)."""


def _answers() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = ["docker", "--host", HOST, "version", "--format", "{{.Server.Version}}"]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


def why_no_engine() -> str | None:
    """Why no engine of ours can start here; None where one can (or already runs)."""
    if shutil.which("docker") is None or shutil.which("dockerd") is None:
        return "no Docker engine: docker.io is not installed (make docker, as root)"
    if os.geteuid() != 0 and not _answers():
        return "no Docker engine: dockerd must be started as root"
    return None


def _start(log: Path) -> subprocess.Popen:
    RUN.mkdir(parents=True, exist_ok=True)
    command = [
        "dockerd", "--host", HOST, "--data-root", str(ROOT / "data"),
        "--exec-root", str(RUN / "exec"), "--pidfile", str(RUN / "dockerd.pid"),
        "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
    ]  # fmt: skip
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)


@contextlib.contextmanager
def _locked(name: str, how: int = fcntl.LOCK_EX) -> Iterator[int]:
    """`flock` on `ROOT/name` for the block; yields the descriptor."""
    ROOT.mkdir(parents=True, exist_ok=True)
    fd = os.open(ROOT / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, how)
        yield fd
    finally:
        os.close(fd)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """`DOCKER_HOST` of a running engine, set for the session (the CLI and dagster-docker's
    client both read it)."""
    reason = why_no_engine()
    if reason:
        pytest.skip(reason)
    with _locked("session.lock", fcntl.LOCK_SH) as in_use:
        with _locked("start.lock"):  # one session starts it; the others find it answering
            _ensure_running()
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DOCKER_HOST", HOST)
            yield HOST
        # the last session out: no other holds the shared lock (conversion drops ours first)
        try:
            fcntl.flock(in_use, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another session still uses it; the last one stops it
        _stop_if_ours()


def _ensure_running() -> None:
    if _answers():
        return
    STARTED.unlink(missing_ok=True)  # a started engine that is gone is no longer ours to stop
    started = _start(ROOT / "dockerd.log")
    deadline = time.monotonic() + 60
    while not _answers():
        if started.poll() is not None or time.monotonic() > deadline:
            tail = (ROOT / "dockerd.log").read_text(errors="replace")[-1500:]
            started.kill()
            pytest.skip(f"no Docker engine: dockerd did not start: {tail}")
        time.sleep(0.5)
    _children.append(started)
    STARTED.write_text(str(started.pid))


def _stop_if_ours() -> None:
    """Stop the engine a session started (it may be another session's child: its pid is in
    `STARTED`); an engine that was answering before the tests came is left running."""
    try:
        pid = int(STARTED.read_text())
    except (FileNotFoundError, ValueError):
        return
    STARTED.unlink()
    if _command(pid) != "dockerd":  # gone, and its pid given to another process
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    for child in _children:
        child.wait(30)


def _command(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


TEST_IMAGE = (
    "flashrsi-dagster:test-"
    + hashlib.sha256(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:12]
)
"""A tag per checkout: sessions of two checkouts share the engine, and under one tag the later
build would replace the image the other's tests were running (an older package in the step
containers: "the evaluator changed")."""


@pytest.fixture(scope="session")
def code_image(docker_engine: str) -> str:
    """The code location's image, built from this checkout (as `python -m
    flashrsi_dagster.images` does) on the debootstrap base; the engine's cache keeps the
    layers of an unchanged lock, so a session rebuilds only the package's own layer. One
    session builds at a time: the next finds the base made and every layer cached."""
    from flashrsi_dagster.images.base import ensure_base_image
    from flashrsi_dagster.images.build import build_image

    if shutil.which("debootstrap") is None:
        pytest.skip("no base image can be made: debootstrap is not installed (make docker)")
    with _locked("build.lock"):
        return build_image(TEST_IMAGE, base=ensure_base_image())


@pytest.fixture(scope="session")
def harbor_docker(docker_engine: str) -> str:
    """Harbor's docker environment runnable here: the engine, the Compose v2 plugin (`make
    docker`) and the base images the task suites name in `FROM`, made here from Debian's and
    Ubuntu's archives (`images/task_bases.py`; kept by the engine, so made once per machine).
    Returns `DOCKER_HOST`. Task images are Harbor's own, tagged by content: built once, then
    found by every later trial and session."""
    from flashrsi_dagster.benchmarks.harbor import docker_runtime
    from flashrsi_dagster.images.engine import ImageError
    from flashrsi_dagster.images.task_bases import ensure_task_base_images

    if lack := docker_runtime.missing():
        pytest.skip(f"Harbor's docker environment cannot run here: {lack}")
    with _locked("build.lock"):
        try:
            ensure_task_base_images()
        except ImageError as exc:
            pytest.skip(f"no base images for the task suites can be made here: {exc}")
    return docker_engine
