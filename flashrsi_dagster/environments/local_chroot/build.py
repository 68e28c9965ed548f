"""Replay a parsed Dockerfile (`Recipe`) on a fresh root, step by step.

`RUN` lines run with the host's tools inside the root, in namespaces that die with each line,
so a daemon a `RUN` starts does not outlive it (as in a Docker build). A failing step stops the
build with an error naming the Dockerfile line, and saying what went wrong where the output
is one the local environment makes (see `diagnosis`).
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath
from typing import Protocol

from flashrsi_dagster.environments.local_chroot.diagnosis import explain
from flashrsi_dagster.environments.local_chroot.dockerfile import Copy, MakeDir, Recipe, Run, Step
from flashrsi_dagster.environments.local_chroot.sandbox import DEFAULT_PATH, Outcome
from flashrsi_dagster.environments.local_chroot.transfer import pack, repack_archive

TAIL = 2000  # characters of a failed step's output quoted in the error


class BuildError(RuntimeError):
    """A Dockerfile step failed while building the root."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line = path, line


class Root(Protocol):
    """What a build needs from the environment: run a command and unpack a tar inside."""

    async def run_in_root(
        self,
        argv: list[str],
        *,
        cwd: str = "/",
        env: dict[str, str] | None = None,
        stdin: Path | None = None,
    ) -> Outcome: ...

    async def unpack_in_root(self, tar_path: Path, base: str) -> None: ...


def base_env(recipe_env: dict[str, str]) -> dict[str, str]:
    """The environment a container built from this recipe starts with."""
    return {"PATH": DEFAULT_PATH, "HOME": "/root", **recipe_env}


async def build(recipe: Recipe, root: Root, scratch: Path) -> None:
    """Apply every step of `recipe` to `root`; `scratch` is a host folder for tar files."""
    for number, step in enumerate(recipe.steps):
        try:
            await _apply(step, root, scratch / f"step-{number}.tar")
        except Exception as exc:  # a failed command, tar or unpack: name its line
            raise BuildError(recipe.path, step.line, str(exc)) from exc


async def _apply(step: Step, root: Root, tar_path: Path) -> None:
    if isinstance(step, MakeDir):
        _check(await root.run_in_root(["mkdir", "-p", "--", step.path]), step, "mkdir")
    elif isinstance(step, Run):
        env = base_env(step.env)
        outcome = await root.run_in_root(list(step.argv), cwd=step.workdir, env=env)
        _check(outcome, step, "RUN")
    else:
        await _copy(step, root, tar_path)


async def _copy(step: Copy, root: Root, tar_path: Path) -> None:
    for source in step.sources:
        if step.unpack_archives and source.is_file() and tarfile.is_tarfile(source):
            repack_archive(source, tar_path)
            await root.unpack_in_root(tar_path, step.dest)
            continue
        base, name = await _placement(step, source, root)
        pack(tar_path, [(source, name)], mode=step.mode)
        await root.unpack_in_root(tar_path, base)


async def _placement(step: Copy, source: Path, root: Root) -> tuple[str, str]:
    """(folder to unpack in, name inside it) for one source, following COPY's rules."""
    if source.is_dir():
        return step.dest, "."
    if step.dest_is_dir or (await root.run_in_root(["test", "-d", step.dest])).returncode == 0:
        return step.dest, source.name
    dest = PurePosixPath(step.dest)
    return str(dest.parent), dest.name


def _check(outcome: Outcome, step: Step, what: str) -> None:
    if outcome.returncode != 0:
        output = (outcome.stderr.strip() or outcome.stdout.strip())[-TAIL:]
        cause = explain(f"{outcome.stderr}\n{outcome.stdout}")
        said = f"{cause}. Its output: " if cause else ""
        raise RuntimeError(f"{what} exited with code {outcome.returncode}: {said}{output}")
