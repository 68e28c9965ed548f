"""The jail every agent process runs in: a bubblewrap sandbox that agent processes join.

An agent is model-written code (the Worker's edits become the target's harness), so what it
can reach is decided by the kernel, not by a prompt. A jail is one `bwrap` process per run:

* **mount namespace**: the system folders (`/usr`, `/etc`, …) and the agent's runtime (the
  Python installation and the few site-packages its harness needs) read-only; the run's own
  folders writable; a private `/tmp`; nothing else of the host — no experiment home, no
  benchmark data, no framework package, no `/root`;
* **PID namespace** with a fresh `/proc`: the host's processes (and their environments) are
  invisible, and when the jail ends every process in it is killed by the kernel — `nohup`,
  `setsid` and double forks included;
* **network namespace** with loopback only. The framework opens one listening socket inside
  it (`listen`) and serves it from outside: the model gateway. Nothing else answers there;
* `--die-with-parent`: if the framework dies, even by SIGKILL, the jail dies with it.

The sandbox's own first process is a shim that waits on a pipe from the framework. Agent
processes do not start inside bwrap: they *join* the jail's namespaces (`joining.enter` in a
forked child, or `enter_argv()` for a CLI), so a warm fork server can start a run in milliseconds
instead of paying its SDK imports in every jail. Joined processes drop to an unprivileged user
with `no_new_privs` and load the seccomp filter (`seccomp.py`: no new namespaces, no ptrace,
no mounts, no keyrings, no bpf, ...) before any agent code runs; the sandbox's own processes
get the same filter from bubblewrap.

Entering another process's namespaces needs root; bubblewrap itself comes from the
distribution (`apt-get install bubblewrap`), the filter from libseccomp (`libseccomp2`). Where
one is missing, `require_jails()` says so and what to do instead.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flashrsi_dagster.environments import joining, seccomp
from flashrsi_dagster.environments.cgroups import JailGroup, owner
from flashrsi_dagster.environments.joining import JAIL_UID

JAIL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_READ_ONLY = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
START_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0
"""Seconds a closed jail's bubblewrap has to end once its sandbox is killed."""
TMP_BYTES = 512 << 20
_ids = itertools.count()


class JailError(RuntimeError):
    """A jail cannot be built or entered here: the message says why and what to do."""


@dataclass(frozen=True)
class Mount:
    """Host path `source` visible at `target` inside the jail (the same path by default)."""

    source: Path
    target: Path | None = None
    writable: bool = False

    @property
    def inside(self) -> Path:
        return self.target or self.source


@dataclass(frozen=True)
class JailSpec:
    """What one run's jail shows. Everything not listed here does not exist inside."""

    mounts: tuple[Mount, ...] = ()
    hidden: tuple[Path, ...] = field(default=())
    """Folders under a mount replaced by an empty tmpfs (e.g. a Python's own site-packages)."""

    def with_mounts(self, *mounts: Mount) -> JailSpec:
        return JailSpec((*self.mounts, *mounts), self.hidden)


def require_jails() -> None:
    """Raise `JailError` unless jails can run here (bubblewrap installed, running as root)."""
    if shutil.which("bwrap") is None:
        raise JailError(
            "agent confinement needs bubblewrap, which is not installed: `apt-get install "
            "bubblewrap` (the project's `make` set-up does it as root), or set "
            "`experiment.confinement: none` to run agents unconfined (the experiment is then "
            "marked unconfined in every summary)"
        )
    if os.geteuid() != 0:
        raise JailError(
            "agent confinement enters bubblewrap namespaces with setns(), which needs root; "
            "run as root, or set `experiment.confinement: none` (the experiment is then "
            "marked unconfined in every summary)"
        )
    try:
        seccomp.library()
    except seccomp.SeccompUnavailable as exc:
        raise JailError(str(exc)) from None


class Jail:
    """One running sandbox. `close()` (or the framework's death) ends everything in it."""

    def __init__(self, spec: JailSpec) -> None:
        self.spec = spec
        self.group = JailGroup.create(f"jail-{owner()}-{next(_ids)}")
        info_r, info_w = os.pipe()
        rules = _filter_file()
        try:
            self._process = subprocess.Popen(
                self._in_group(_bwrap_argv(spec, info_w, rules)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(info_w, rules),
                env={"PATH": JAIL_PATH},
                start_new_session=True,
            )
        finally:
            os.close(info_w)
            os.close(rules)
        self.pid: int | None = None
        self._first: int | None = None
        try:
            self.pid = self._wait_ready(info_r)
            self._first = _pidfd(self.pid)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(info_r)

    def _in_group(self, argv: list[str]) -> list[str]:
        """`argv` started inside the jail's groups (so is everything it starts)."""
        return argv if self.group is None else self.group.argv(argv)

    def _wait_ready(self, info_r: int) -> int:
        """The sandbox's first process's host pid, once its mounts are in place (the shim
        prints a line only after bubblewrap has set everything up)."""
        assert self._process.stdout is not None
        ready = threading.Timer(START_TIMEOUT, self._process.kill)
        ready.start()
        try:
            line = self._process.stdout.readline()
        finally:
            ready.cancel()
        if not line:
            self._process.wait()
            error = (self._process.stderr.read() if self._process.stderr else b"").decode()
            raise JailError(f"bubblewrap could not start the jail: {error.strip() or 'no output'}")
        return int(json.loads(os.read(info_r, 4096))["child-pid"])

    def listen(self, port: int) -> socket.socket:
        """A TCP socket listening on 127.0.0.1:`port` inside the jail's network namespace,
        for the framework to serve from outside."""
        try:
            return listen_in(self.pid, port)
        except OSError as exc:
            raise JailError(f"cannot listen inside the jail: {exc}") from exc

    def enter_argv(self, argv: Sequence[str], env: dict[str, str], cwd: Path) -> list[str]:
        """`argv` run inside the jail, as the jail user, under the seccomp filter, with exactly
        `env`: for agents that are a program of their own (a CLI) rather than a fork of ours.
        The first process (`joining.py`, the framework's) stays on the host's side and exits
        with the program's code."""
        python = os.path.realpath(sys.executable)
        group = ":".join(map(str, self.group.procs)) if self.group is not None else "-"
        return [
            python, "-I", "-S", joining.__file__, str(self.pid), group, str(cwd),
            *(f"{k}={v}" for k, v in env.items()), "--", *argv,
        ]  # fmt: skip

    def close(self) -> None:
        """End the jail: SIGKILL to the sandbox's first process, and the kernel ends every
        process of its PID namespace with it; bubblewrap reaps it and exits. Killed first,
        bubblewrap would leave that process an orphan whose zombie waits for PID 1 to reap
        it: never, where PID 1 reaps nothing (a container's `dagster api grpc` or `flashrsi
        worker`). bubblewrap itself is killed if it has not ended after `CLOSE_TIMEOUT`.
        Idempotent."""
        process = self._process
        if process.poll() is None:
            self._kill_first()
            try:
                process.wait(timeout=CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._first is not None:
            os.close(self._first)
            self._first = None
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.group is not None:
            self.group.remove()

    def _kill_first(self) -> None:
        """SIGKILL to the sandbox's first process, by its pidfd (its pid could be another
        process's once it is reaped), or by pid while bubblewrap, its parent, lives."""
        with contextlib.suppress(ProcessLookupError):
            if self._first is not None:
                signal.pidfd_send_signal(self._first, signal.SIGKILL)
            elif self.pid is not None:
                os.kill(self.pid, signal.SIGKILL)

    def __enter__(self) -> Jail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pidfd(pid: int) -> int | None:
    """A descriptor of process `pid` (None without pidfds: a kernel before 5.3)."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def read_from_jail(path: Path, limit: int) -> bytes | None:
    """A file a jailed agent could have written, read as data and nothing else: not through a
    symlink (it could point at any host file), not from a FIFO or device (it could block the
    framework forever), and only when at most `limit` bytes. None otherwise (missing, not a
    plain file, too large)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return handle.read(info.st_size)  # not read(limit): that allocates `limit` bytes


def give_to_jail_user(paths: Iterable[Path]) -> None:
    """Make the run's writable folders the jail user's (it has no other rights on them)."""
    for root in paths:
        os.lchown(root, JAIL_UID, JAIL_UID)
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                os.lchown(os.path.join(folder, name), JAIL_UID, JAIL_UID)


def listen_in(pid: int, port: int = 0) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:`port` (0: any free port) inside the network
    namespace of process `pid`. Made in a short-lived thread of its own, because a network
    namespace is entered per thread; the socket stays in the namespace it was made in."""
    made: list[socket.socket | BaseException] = []

    def make() -> None:
        try:
            with _open_ns(pid, "net") as fd:
                os.setns(fd, os.CLONE_NEWNET)
            made.append(socket.create_server(("127.0.0.1", port), backlog=64))
        except BaseException as exc:
            made.append(exc)

    thread = threading.Thread(target=make, name="netns-listen")
    thread.start()
    thread.join()
    if isinstance(made[0], BaseException):
        raise OSError(f"cannot listen in the network namespace of {pid}: {made[0]}")
    return made[0]


@contextlib.contextmanager
def _open_ns(pid: int, name: str):
    fd = os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _filter_file() -> int:
    """The seccomp filter as a BPF program in an anonymous file, read by bubblewrap."""
    fd = os.memfd_create("flashrsi-seccomp", os.MFD_CLOEXEC)
    try:
        seccomp.export(fd)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _bwrap_argv(spec: JailSpec, info_fd: int, seccomp_fd: int) -> list[str]:
    argv = [
        # Every namespace but the user one: joined processes stay in the host's user
        # namespace as an unprivileged user, and files they create keep real owners.
        "bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
        "--unshare-cgroup", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--clearenv", "--setenv", "PATH", JAIL_PATH,
        "--proc", "/proc", "--dev", "/dev",
        # The private /tmp is RAM: bounded, so that jails cannot exhaust the machine.
        "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
    ]  # fmt: skip
    for folder in SYSTEM_READ_ONLY:
        argv += ["--ro-bind", folder, folder]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    made: set[Path] = {Path("/"), Path("/tmp")}
    for mount in spec.mounts:
        argv += _parents(mount.inside, made)
        flag = "--bind" if mount.writable else "--ro-bind"
        argv += [flag, str(mount.source), str(mount.inside)]
    for folder in spec.hidden:
        argv += ["--tmpfs", str(folder), "--remount-ro", str(folder)]
    # The shim: says it is ready once bubblewrap has built everything, then waits for the
    # framework to close its stdin (or die).
    # The sandbox's own processes are under the filter too (joined ones load it themselves).
    argv += ["--seccomp", str(seccomp_fd), "--info-fd", str(info_fd)]
    return [*argv, "--", "/bin/sh", "-c", "echo; read _"]


def _parents(path: Path, made: set[Path]) -> list[str]:
    """bubblewrap creates missing parent folders as 0700, which the jail user could not
    cross: create them 0755 first."""
    argv: list[str] = []
    for parent in reversed(path.parents):
        if parent not in made:
            made.add(parent)
            argv += ["--perms", "0755", "--dir", str(parent)]
    return argv
