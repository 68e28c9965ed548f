"""A Docker engine for the tests: a `dockerd` of their own (root, Debian's `docker.io`:
`make docker`), with its data root in a fixed folder so that the images it holds, the
debootstrap base above all, outlive the session and are made once per machine. The bridge
is off (containers use the host's network or none) and so is its iptables set-up.

An engine already answering on the socket is used as it is and left running; one this
fixture starts is stopped when the session ends. Where none can start, the tests that need
one are skipped with the reason."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("FLASHRSI_TEST_DOCKER_ROOT", "/var/lib/flashrsi-test-docker"))
RUN = Path("/run/flashrsi-test-docker")  # the socket's path must stay short
HOST = f"unix://{RUN / 'docker.sock'}"


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


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """`DOCKER_HOST` of a running engine, set for the session (the CLI and dagster-docker's
    client both read it)."""
    reason = why_no_engine()
    if reason:
        pytest.skip(reason)
    # one session at a time on the engine (another pytest-xdist worker, another checkout's
    # suite): the session that starts it stops it at its end, so none may still be using it
    ROOT.mkdir(parents=True, exist_ok=True)
    lock = os.open(ROOT / "session.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        yield from _engine()
    finally:
        os.close(lock)


def _engine() -> Iterator[str]:
    started = None
    if not _answers():
        ROOT.mkdir(parents=True, exist_ok=True)
        started = _start(ROOT / "dockerd.log")
        deadline = time.monotonic() + 60
        while not _answers():
            if started.poll() is not None or time.monotonic() > deadline:
                tail = (ROOT / "dockerd.log").read_text(errors="replace")[-1500:]
                started.kill()
                pytest.skip(f"no Docker engine: dockerd did not start: {tail}")
            time.sleep(0.5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", HOST)
        yield HOST
    if started is not None:
        started.terminate()
        try:
            started.wait(30)
        except subprocess.TimeoutExpired:
            started.kill()


TEST_IMAGE = "flashrsi-dagster:test"


@pytest.fixture(scope="session")
def code_image(docker_engine: str) -> str:
    """The code location's image, built from this checkout (as `python -m
    flashrsi_dagster.images` does) on the debootstrap base; the engine's cache keeps the
    layers of an unchanged lock, so a session rebuilds only the package's own layer."""
    from flashrsi_dagster.images.base import ensure_base_image
    from flashrsi_dagster.images.build import build_image

    if shutil.which("debootstrap") is None:
        pytest.skip("no base image can be made: debootstrap is not installed (make docker)")
    return build_image(TEST_IMAGE, base=ensure_base_image())
