"""The Docker CLI, on whichever engine `DOCKER_HOST` names (the default socket without it)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence


class ImageError(RuntimeError):
    """An image could not be made; the message names the command and its output."""


def docker(*args: str, stdin=None, timeout: float = 1800) -> str:
    """`docker ARGS`, its output; `ImageError` naming the command where it fails."""
    if shutil.which("docker") is None:
        raise ImageError("docker: no Docker CLI on PATH (Debian: apt-get install docker.io)")
    return run(["docker", *args], stdin=stdin, timeout=timeout)


def run(command: Sequence[str], *, stdin=None, timeout: float = 1800) -> str:
    done = subprocess.run(
        command, stdin=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise ImageError(f"{' '.join(command[:4])} ... failed ({done.returncode}): {tail}")
    return done.stdout


def has_image(tag: str) -> bool:
    try:
        docker("image", "inspect", "--format", "{{.Id}}", tag, timeout=60)
    except ImageError:
        return False
    return True
