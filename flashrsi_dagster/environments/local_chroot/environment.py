"""`LocalChrootEnvironment`: Harbor's environment for machines with no container engine.

Select it by import path (it needs root, and Linux namespaces)::

    EnvironmentConfig(import_path=LOCAL_ENV_IMPORT_PATH, kwargs={"work_root": "/scratch"})

`start()` builds a per-trial root (see `rootfs`) from the task's `environment/Dockerfile`
(see `dockerfile` for what it honours and refuses, `base_image` for the `FROM` images it
honours: the host's own system only, and `build`), then starts the trial's
holder (see `sandbox`). Commands run with `bash -c`, as root, with the Dockerfile's `ENV` and
`WORKDIR`, inside the holder, so background services persist between commands as they would in
a container; a task with `network_mode = "no-network"` gets a network namespace with only
loopback. Host folders are shared read-only; everything else in the root is the trial's own.

**Rewards the agent writes never count.** Harbor's shared verifier deletes old reward files,
uploads the tests, runs them and reads `/logs/verifier/reward.*`, all in the agent's container
— where a process the agent left behind can rewrite the reward after the tests wrote theirs,
and files the agent planted in `/tests` sit beside the real tests. Here, uploading into
`/tests` opens a *verification round*: until `/logs/verifier` is downloaded, every command
runs in a mount namespace of its own whose `/logs/verifier` and `/tests` are new, empty host
folders, in the PID namespace *around* the agent's (see `sandbox.beside_argv`): no agent
process can see the verifier's processes or reach its folders. The verifier still shares the
agent's files, network and processes, as in Harbor's Docker environment, so tests can read
`/app`, reach a service the agent started and `pgrep` it.

Known limits: one user (root; `USER` and non-root `exec(user=...)` are refused), no resource
limits, no compose files or prebuilt images, no network allowlists, and only `FROM` images of
the host's own release (`base_image`).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path, PurePosixPath
from typing import override

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.trial.paths import EnvironmentPaths
from pydantic import BaseModel, ConfigDict, Field, field_validator

from flashrsi_dagster.environments.local_chroot import build, rootfs, sandbox, transfer
from flashrsi_dagster.environments.local_chroot.base_image import check_base_image
from flashrsi_dagster.environments.local_chroot.dockerfile import (
    Copy,
    DockerfileError,
    MakeDir,
    Recipe,
    parse_dockerfile,
)
from flashrsi_dagster.environments.local_chroot.sandbox import Bind, Outcome
from flashrsi_dagster.scratch import process_dir

LOCAL_ENV_IMPORT_PATH = f"{__name__}:LocalChrootEnvironment"
ROOT_USERS = (None, "root", 0, "0")
_UNPACK = 'mkdir -p -- "$1" && exec tar -x --no-same-owner -C "$1" -f -'


_NOT_SHARED = frozenset({"proc", "dev", "logs", "tests", "solution"})
"""Where nothing is shared in: the kernel's, the verifier's and the reference solution's."""


def _mountpoint(root: Path, parts: tuple[str, ...]) -> None:
    """Make folder `root/parts...`, refusing symlinks on the way: the root's files are the
    task's, and a link to a host path would put the mount (and the folders) on the host."""
    path = root
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise ValueError(f"cannot share into {path}: a symbolic link")
        path.mkdir(exist_ok=True)


def read_definition(
    environment_dir: Path, task: str, host_dirs: tuple[str, ...] = rootfs.DEFAULT_HOST_DIRS
) -> Recipe:
    """The recipe of a task's `environment/` folder, or the error naming the file and line
    the local environment cannot honour (`task` names the task in a refused FROM)."""
    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        if (environment_dir / name).exists():
            raise DockerfileError(
                environment_dir / name,
                1,
                "compose environments are not supported by the local environment",
            )
    dockerfile = environment_dir / "Dockerfile"
    if not dockerfile.is_file():
        raise FileNotFoundError(f"{dockerfile} not found: the local environment needs one")
    recipe = parse_dockerfile(dockerfile)
    check_base_image(recipe, task)
    for step in recipe.steps:
        if not isinstance(step, Copy | MakeDir):
            continue
        path = step.dest if isinstance(step, Copy) else step.path
        if shared := rootfs.is_read_only(path, host_dirs):
            raise DockerfileError(
                dockerfile,
                step.line,
                f"{path} is inside {shared}, which the local environment shares "
                "read-only from the host",
            )
    return recipe


class LocalEnvironmentUnavailable(RuntimeError):
    """This machine cannot run the local environment (not root, or tools missing)."""


class EnvironmentDied(RuntimeError):
    """The trial's container stopped existing while the trial still needed it."""


class LocalChrootConfig(BaseModel):
    """The local environment's own settings, passed as `EnvironmentConfig.kwargs`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    work_root: Path | None = Field(
        default=None,
        description="Folder holding each trial's root while it runs; default "
        "`harbor/` in the process's scratch folder (see flashrsi_dagster.scratch).",
    )
    host_dirs: tuple[str, ...] = Field(
        default=rootfs.DEFAULT_HOST_DIRS,
        description="Host folders shared read-only into every root (symlinks are mirrored).",
    )

    @field_validator("host_dirs")
    @classmethod
    def _top_level_system_folders(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # A shared folder hides the root's own one: sharing /tmp, /logs or / would expose
        # other trials' files or hide the trial's writable folders.
        for folder in value:
            parts = PurePosixPath(folder).parts
            if len(parts) < 2 or parts[0] != "/" or ".." in parts or parts[1] in rootfs.OWN:
                raise ValueError(f"cannot share {folder!r}: not a host system folder")
        return value


class LocalChrootEnvironment(BaseEnvironment):
    """A Harbor environment: the task's Dockerfile replayed on a per-trial chroot root, run
    in Linux namespaces with the host's own tools (see the module docstring)."""

    def __init__(
        self,
        *args,
        work_root: Path | str | None = None,
        host_dirs: list[str] | None = None,
        **kwargs,
    ) -> None:
        given = {"work_root": work_root, "host_dirs": host_dirs}
        self.settings = LocalChrootConfig(**{k: v for k, v in given.items() if v is not None})
        self.recipe: Recipe | None = None
        self._definition_error: Exception | None = None
        self._dirs: rootfs.EnvDirs | None = None
        self._binds: list[Bind] = []
        self._holder: sandbox.Holder | None = None
        self._round: list[Bind] | None = None
        self._rounds = 0
        super().__init__(*args, **kwargs)

    @staticmethod
    @override
    def type() -> str:
        return "local-chroot"

    @property
    @override
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    @classmethod
    @override
    def preflight(cls) -> None:
        if os.geteuid() != 0:
            raise LocalEnvironmentUnavailable(
                "the local environment needs root (namespaces, bind mounts, chroot)"
            )
        if missing := sandbox.missing_tools():
            raise LocalEnvironmentUnavailable(f"missing host tools: {', '.join(missing)}")

    # -- definition ----------------------------------------------------------------------

    @override
    def _validate_definition(self) -> None:
        # Kept for start(): raised here, in Trial.create, it would cancel every other trial
        # of a Harbor Job; raised in start(), it is this trial's recorded exception.
        try:
            self._read_definition()
        except (DockerfileError, FileNotFoundError, ValueError) as exc:
            self._definition_error = exc

    def _read_definition(self) -> None:
        self._refuse_unsupported_definition()
        self.recipe = read_definition(
            self.environment_dir, self.environment_name, self.settings.host_dirs
        )

    def _refuse_unsupported_definition(self) -> None:
        task_toml = self.environment_dir.parent / "task.toml"
        if self.task_env_config.docker_image:
            raise DockerfileError(
                task_toml,
                1,
                f"[environment].docker_image = {self.task_env_config.docker_image!r} needs a "
                "container engine; the local environment builds from environment/Dockerfile",
            )
        if self._host_mounts:
            raise ValueError("the local environment does not support extra mounts")

    # -- lifecycle -----------------------------------------------------------------------

    @override
    async def start(self, force_build: bool) -> None:
        if self._definition_error is not None:
            raise self._definition_error
        self.preflight()
        assert self.recipe is not None
        work_root = self.settings.work_root or process_dir() / "harbor"
        work_root.mkdir(parents=True, exist_ok=True)
        work = work_root.resolve() / f"{self.session_id}-{uuid.uuid4().hex[:8]}"
        self._dirs = rootfs.EnvDirs(work)
        self._binds = rootfs.make_rootfs(self._dirs, self.settings.host_dirs)
        self.logger.info(
            "%s: FROM %s stands for this host's own system: its %s, read-only, in a "
            "per-trial root at %s",
            self.recipe.path,
            self.recipe.base_image or "(none)",
            ", ".join(self.settings.host_dirs),
            self._dirs.rootfs,
        )
        await build.build(self.recipe, self, self._dirs.io)
        self._holder = sandbox.Holder(
            self._dirs.rootfs,
            self._binds,
            public=not self._network_disabled,
            log_path=self._dirs.holder_log,
        )
        await self._holder.start()

    @override
    async def stop(self, delete: bool) -> None:
        if self._holder is not None:
            await self._holder.stop()
            self._holder = None
        if self._dirs is None:
            return
        if delete:
            rootfs.remove_work(self._dirs)
        else:
            self.logger.info("kept the local environment's root at %s", self._dirs.rootfs)
        self._dirs = None

    # -- commands ------------------------------------------------------------------------

    @override
    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        self._check_user(self._resolve_user(user))
        outcome = await self.run_in_root(
            ["/bin/bash", "-c", command],
            cwd=cwd or self._default_cwd(),
            env=self._merge_env(env),
            timeout_sec=timeout_sec,
        )
        return ExecResult(
            stdout=outcome.stdout or None,
            stderr=outcome.stderr or None,
            return_code=outcome.returncode,
        )

    async def run_in_root(
        self,
        argv: list[str],
        *,
        cwd: str = "/",
        env: dict[str, str] | None = None,
        stdin: Path | None = None,
        stdout: Path | None = None,
        timeout_sec: float | None = None,
    ) -> Outcome:
        """Run `argv` (no shell) inside the root, in the current phase's namespaces, with
        the image's environment plus `env`."""
        if self._dirs is None or self.recipe is None:
            raise RuntimeError("the environment is not running")
        inner = sandbox.inner_argv(
            argv, cwd=cwd, env={**build.base_env(self.recipe.env), **(env or {})}
        )
        return await sandbox.run(
            self._wrap(inner),
            io_dir=self._dirs.io,
            timeout_sec=timeout_sec,
            stdin=stdin,
            stdout=stdout,
        )

    def shell_argv(self, cwd: str | None = None, env: dict[str, str] | None = None) -> list[str]:
        """The argv prefix that runs `bash -c <command>` in the agent's container: append the
        command and run it from any host process (e.g. an agent's shell tool). Kill the
        process group on timeout; valid until `stop()`."""
        if self._holder is None or not self._holder.running or self.recipe is None:
            raise RuntimeError("the environment is not running")
        env = {**build.base_env(self.recipe.env), **(self._merge_env(env) or {})}
        inner = sandbox.inner_argv(["/bin/bash", "-c"], cwd=cwd or self._default_cwd(), env=env)
        assert self._holder.pid is not None
        return sandbox.enter_argv(self._holder.pid, self._holder.root, inner, self._holder.group)

    async def share_read_only(self, folders: dict[Path, str]) -> None:
        """Show host folders (source -> absolute path inside the root) read-only to every
        later command of the agent's container, until `stop()`; the verifier's rounds do not
        see them. For agents run inside the environment: their interpreter and packages."""
        if self._holder is None or not self._holder.running or self._dirs is None:
            raise RuntimeError("the environment is not running")
        binds = []
        for source, target in folders.items():
            parts = PurePosixPath(target).parts
            if len(parts) < 2 or parts[0] != "/" or ".." in parts or parts[1] in _NOT_SHARED:
                raise ValueError(f"cannot share into {target!r}")
            _mountpoint(self._dirs.rootfs, parts[1:])
            binds.append(Bind(Path(source), target))
        assert self._holder.pid is not None
        argv = sandbox.share_argv(self._holder.pid, self._dirs.rootfs, binds)
        outcome = await sandbox.run(argv, io_dir=self._dirs.io, timeout_sec=30)
        if outcome.returncode != 0:
            raise RuntimeError(f"could not share {list(folders)}: {outcome.stderr.strip()}")

    @property
    def network_pid(self) -> int:
        """A host pid in the agent container's network namespace (to open a socket there)."""
        if self._holder is None or self._holder.pid is None:
            raise RuntimeError("the environment is not running")
        return self._holder.pid

    def _wrap(self, inner: list[str]) -> list[str]:
        """Where a command runs: the build's throwaway namespaces, the agent's container, or
        the current verification round's throwaway namespaces."""
        assert self._dirs is not None
        root = self._dirs.rootfs
        if self._holder is None:
            return sandbox.ephemeral_argv(root, self._binds, inner, new_net=self._network_disabled)
        assert self._holder.pid is not None
        if self._round is None:
            return sandbox.enter_argv(self._holder.pid, root, inner, self._holder.group)
        # The verifier shares the trial's network and sees its processes (as in a Docker
        # container), with /tests and /logs/verifier of its own (see `sandbox.beside_argv`).
        return sandbox.beside_argv(self._holder, [*self._binds, *self._round], inner)

    def _default_cwd(self) -> str:
        assert self.recipe is not None
        return self.task_env_config.workdir or self.recipe.workdir

    @staticmethod
    def _check_user(user: str | int | None) -> None:
        if user not in ROOT_USERS:
            raise ValueError(
                f"the local environment runs every command as root; user {user!r} is not supported"
            )

    # -- verification rounds -------------------------------------------------------------

    def _maybe_begin_round(self, target: str) -> None:
        """An upload into /tests is Harbor's verifier starting: give it private folders."""
        tests = EnvironmentPaths.tests_dir
        if self._round is not None or not PurePosixPath(target).is_relative_to(tests):
            return
        if self._holder is None or not self._holder.running:
            # Verifying what is left of a dead container would score the agent for a fault
            # of the machinery: fail the trial instead, as an infrastructure error.
            raise EnvironmentDied(
                "the task environment died before verification (its init process is gone)"
            )
        assert self._dirs is not None
        self._rounds += 1
        folder = self._dirs.round(self._rounds)
        (folder / "verifier").mkdir(parents=True)
        (folder / "verifier").chmod(0o777)
        (folder / "tests").mkdir()
        self._round = [
            Bind(folder / "verifier", str(EnvironmentPaths.verifier_dir), read_only=False),
            Bind(folder / "tests", str(tests), read_only=False),
        ]
        self.logger.info(
            "verification round %d: fresh /tests and /logs/verifier, out of the agent's reach",
            self._rounds,
        )

    def _maybe_end_round(self, source: str) -> None:
        """Downloading /logs/verifier is the verifier's last step."""
        if PurePosixPath(source) == EnvironmentPaths.verifier_dir:
            self._round = None

    # -- transfers -----------------------------------------------------------------------

    async def unpack_in_root(self, tar_path: Path, base: str) -> None:
        """Unpack a host tar into folder `base` inside the root (created if missing)."""
        outcome = await self.run_in_root(["/bin/sh", "-c", _UNPACK, "unpack", base], stdin=tar_path)
        if outcome.returncode != 0:
            raise RuntimeError(f"could not unpack into {base}: {outcome.stderr.strip()}")

    @override
    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        self._maybe_begin_round(target_path)
        target = PurePosixPath(target_path)
        await self._upload([(Path(source_path), target.name)], str(target.parent))

    @override
    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        self._maybe_begin_round(target_dir)
        await self._upload([(Path(source_dir), ".")], target_dir)

    async def _upload(self, entries: list[tuple[Path, str]], base: str) -> None:
        assert self._dirs is not None
        with tempfile.NamedTemporaryFile(dir=self._dirs.io, suffix=".tar") as tar:
            transfer.pack(Path(tar.name), entries)
            await self.unpack_in_root(Path(tar.name), base)

    @override
    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
        try:
            outcome = await self.run_in_root(["cat", "--", source_path], stdout=partial)
            if outcome.returncode != 0:
                raise FileNotFoundError(f"{source_path}: {outcome.stderr.strip()}")
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)

    @override
    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        assert self._dirs is not None
        try:
            with tempfile.NamedTemporaryFile(dir=self._dirs.io, suffix=".tar") as tar:
                argv = ["tar", "-c", "-C", source_dir, "-f", "-", "."]
                outcome = await self.run_in_root(argv, stdout=Path(tar.name))
                # Exit code 1: a file changed while being read (a process still writing its
                # log, say); the archive is complete, so keep it.
                if outcome.returncode not in (0, 1):
                    raise RuntimeError(f"could not pack {source_dir}: {outcome.stderr.strip()}")
                if outcome.returncode == 1:
                    self.logger.warning(
                        "%s changed while downloading: %s", source_dir, outcome.stderr.strip()
                    )
                transfer.unpack(Path(tar.name), Path(target_dir), self.logger)
        finally:
            self._maybe_end_round(source_dir)

    @override
    async def download_dir_filtered(
        self, *, source_dir: str, target_dir: Path | str, **kwargs
    ) -> None:
        try:
            await super().download_dir_filtered(
                source_dir=source_dir, target_dir=target_dir, **kwargs
            )
        finally:
            self._maybe_end_round(source_dir)
