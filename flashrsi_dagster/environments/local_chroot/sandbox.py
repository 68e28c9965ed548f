"""Namespaces and chroot on a machine without a container engine: the local environment's
process plumbing, with no Harbor in it.

A trial's root is a host folder (see `rootfs`). Commands never run in the host's own mount
namespace, so no mount made here is ever visible to (or left behind on) the host:

* the **holder** is the trial's "container": `unshare` makes new mount, PID, UTS and IPC
  namespaces and a network namespace of its own (only loopback when the task has no
  internet; with internet, slirp4netns's user-mode NAT, which keeps host loopback out),
  bind-mounts the host's read-only folders into the root, mounts a fresh `/proc`, chroots,
  and waits as PID 1. `enter_argv` runs a command inside it with `nsenter`, so background
  services an agent starts survive its command and are still there for later ones;
* the verifier's commands run **beside** the agent's (`beside_argv`): in a PID namespace
  that holds the agent's as a child (so `pgrep` in a test finds a service the agent started,
  as in a Docker container) with a mount namespace of their own, so their processes and
  folders are invisible to, and unreachable from, anything the agent left running;
* an **ephemeral** command (`ephemeral_argv`) gets namespaces of its own, built the same way,
  which die with it: Dockerfile `RUN` lines.

Every command drops the capabilities a root process could use to leave the root (remount the
read-only folders, chroot out, trace or load modules): the bounding set keeps Docker's
defaults minus `SYS_CHROOT` and `MKNOD`. Each command leads its own process group, killed
whole on timeout or cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shlex
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.environments.cgroups import JailGroup, owner

# Docker's default capability set, minus the two that would let root leave or extend the root.
CAPABILITIES = (
    "-all,+chown,+dac_override,+fowner,+fsetid,+kill,+setgid,+setuid,+setpcap,"
    "+net_bind_service,+net_raw,+audit_write,+setfcap"
)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
REQUIRED_TOOLS = ("unshare", "nsenter", "setpriv", "chroot", "mount", "ip", "tar")
# /proc entries a root process could use to reach the host kernel; Docker masks them too.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
HOLDER_START_SEC = 30.0
OUTPUT_LIMIT = 16 * 1024 * 1024  # bytes of stdout/stderr kept per command


class SandboxError(RuntimeError):
    """The namespaces could not be created or entered."""


class CommandTimeout(RuntimeError):
    """A command outlived its timeout; its whole process group was killed."""


@dataclass(frozen=True)
class Bind:
    """Host path `source` mounted at `target` (absolute, inside the root)."""

    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def missing_tools() -> list[str]:
    """The host tools this plumbing needs and cannot find."""
    path = os.environ.get("PATH", DEFAULT_PATH) + ":" + DEFAULT_PATH
    return [
        tool
        for tool in REQUIRED_TOOLS
        if not any(Path(folder, tool).exists() for folder in path.split(":") if folder)
    ]


def inner_argv(argv: list[str], *, cwd: str, env: dict[str, str]) -> list[str]:
    """`argv` as run inside the root: clean environment, working directory, fewer caps."""
    assignments = [f"{name}={value}" for name, value in env.items()]
    return [
        "/usr/bin/env",
        "-i",
        "-C",
        cwd,
        *assignments,
        "/usr/bin/setpriv",
        "--bounding-set",
        CAPABILITIES,
        "--",
        *argv,
    ]


def _setup_script(root: Path, binds: list[Bind], *, loopback: bool) -> str:
    """Shell lines that mount `binds` and a fresh /proc under `root` (run as the new PID 1)."""
    lines = ["set -e"]
    for bind in binds:
        target = shlex.quote(f"{root}{bind.target}")
        lines.append(f"mount --bind {shlex.quote(str(bind.source))} {target}")
        if bind.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    lines.append(_proc_lines(f"{root}/proc"))
    if loopback:
        lines.append("ip link set lo up")
    return "\n".join(lines)


def _proc_lines(proc: str) -> str:
    """Mount a `/proc` for the current PID namespace at `proc`, its host-reaching entries
    read-only."""
    lines = [f"mount -t proc -o nosuid,nodev,noexec proc {shlex.quote(proc)}"]
    for entry in PROC_READ_ONLY:
        path = shlex.quote(f"{proc}/{entry}")
        lines.append(
            f"if [ -e {path} ]; then mount --bind {path} {path}; "
            f"mount -o remount,bind,ro {path}; fi"
        )
    return "\n".join(lines)


def _unshare(*, new_net: bool, new_pid: bool = True) -> list[str]:
    return [
        "unshare",
        "--mount",
        *(["--pid", "--kill-child"] if new_pid else []),
        "--fork",
        *(["--uts", "--ipc"] if new_pid else []),
        "--propagation",
        "private",
        *(["--net"] if new_net else []),
    ]


def _guarded(
    pid: int,
    root: Path,
    nsenter_flags: list[str],
    argv: list[str],
    group: JailGroup | None = None,
) -> list[str]:
    """`nsenter` into `pid`'s namespaces, after checking `pid` is still our holder: a PID
    reused by an unrelated process would otherwise run the command on the host. `group`: the
    trial's cgroups, which the command joins first."""
    guard = (
        '[ "$(readlink /proc/$1/root)" = "$2" ] || '
        '{ echo "sandbox $2 is not running" >&2; exit 125; }; '
        'p=$1; shift 2; exec nsenter -t "$p" ' + " ".join(nsenter_flags) + ' -- "$@"'
    )
    argv = ["/bin/sh", "-c", guard, "enter", str(pid), str(root), *argv]
    return group.argv(argv) if group is not None else argv


def enter_argv(
    holder_pid: int, root: Path, inner: list[str], group: JailGroup | None = None
) -> list[str]:
    """Run `inner` inside the holder: its namespaces, its root, its background processes,
    its cgroups (`Holder.group`)."""
    flags = ["--pid", "--mount", "--net", "--uts", "--ipc", "--root", "--wd"]
    return _guarded(holder_pid, root, flags, inner, group)


def share_argv(holder_pid: int, root: Path, binds: list[Bind]) -> list[str]:
    """Mount `binds` into the running holder's mount namespace (not the host's: it is
    private), under `root`: later commands entering the holder see them."""
    lines = ["set -e"]
    for bind in binds:
        target = shlex.quote(f"{root}{bind.target}")
        lines.append(f"mount --bind {shlex.quote(str(bind.source))} {target}")
        if bind.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    return _guarded(holder_pid, root, ["--mount"], ["/bin/sh", "-c", "\n".join(lines)])


def ephemeral_argv(root: Path, binds: list[Bind], inner: list[str], *, new_net: bool) -> list[str]:
    """Run `inner` in namespaces of its own that die with it (a Dockerfile `RUN` line);
    `new_net` gives it a network of its own with only loopback."""
    script = _setup_script(root, binds, loopback=new_net)
    script += f'\nexec chroot {shlex.quote(str(root))} "$@"'
    return [*_unshare(new_net=new_net), "/bin/sh", "-c", script, "ephemeral", *inner]


def beside_argv(holder: Holder, binds: list[Bind], inner: list[str]) -> list[str]:
    """Run `inner` in the holder's container but with mounts of its own (`binds` on top of
    the root's): in the outer PID namespace, so it sees the agent's processes (`pgrep`) and
    shares its network, while no agent process can see it or reach its mounts (the
    verifier's rounds)."""
    assert holder.outer_pid is not None
    script = _setup_script(holder.root, binds, loopback=False)
    script += f'\nexec chroot {shlex.quote(str(holder.root))} "$@"'
    argv = [*_unshare(new_net=False, new_pid=False), "/bin/sh", "-c", script, "beside", *inner]
    flags = ["--net", "--pid", "--uts", "--ipc"]
    return _guarded(holder.outer_pid, holder.root, flags, argv, holder.group)


_trials = itertools.count()


class Holder:
    """A chrooted PID 1 keeping one set of namespaces alive: the trial's container."""

    def __init__(self, root: Path, binds: list[Bind], *, public: bool, log_path: Path) -> None:
        """`public`: the trial may reach the internet. Its network namespace is its own
        either way (the agent's commands run there as root: the host's loopback services,
        the framework's own included, must be out of reach); a public one is connected to
        the outside through slirp4netns's user-mode NAT, which keeps host loopback out."""
        self.root, self.binds, self.public, self.log_path = root, binds, public, log_path
        self._proc: asyncio.subprocess.Process | None = None
        self._nat: asyncio.subprocess.Process | None = None
        self.pid: int | None = None
        """The agent's container: host pid of its PID 1."""
        self.outer_pid: int | None = None
        """The PID namespace around it, where the verifier runs (`beside_argv`)."""
        self.group: JailGroup | None = None
        """Its cgroups, a jail's bounds (processes, memory, CPU share): everything in the
        container and beside it runs in them, the agent's commands as root of the chroot."""

    async def start(self) -> None:
        script = _setup_script(self.root, self.binds, loopback=True)
        # Two PID namespaces: the outer one's init is `unshare`, which makes the inner one,
        # the agent's, and dies with it. The verifier runs in the outer one (`beside_argv`),
        # where it sees the agent's processes as in a Docker container, while the agent's
        # processes cannot see it. Ready only once chrooted: a command entering earlier
        # would see the host's root. The inner PID 1 is bash, which reaps the orphans of
        # background commands (sleep would not, and `ps` would fill with zombies).
        agents = _proc_lines("/proc") + (
            "\nexec /bin/bash -c 'echo ready; while :; do sleep 3600 & wait $!; done'"
        )
        # Its own PID and mount namespaces (for its /proc; the outer mounts are private
        # already, and "/" in a chroot is no mount point); network, UTS and IPC are shared.
        unshare = ["unshare", "--mount", "--pid", "--fork", "--kill-child"]
        inner = shlex.join([*unshare, "--propagation", "unchanged", "/bin/sh", "-c", agents])
        script += f"\nexec chroot {shlex.quote(str(self.root))} {inner}"
        # pdeathsig: if this Python process dies, unshare dies, and --kill-child takes the
        # whole PID namespace with it; nothing outlives the run.
        argv = [
            "setpriv",
            "--pdeathsig",
            "KILL",
            *_unshare(new_net=True),
            "/bin/sh",
            "-c",
            script,
        ]
        self.group = JailGroup.create(f"jail-{owner()}-trial-{next(_trials)}")
        argv = self.group.argv(argv) if self.group is not None else argv
        with self.log_path.open("wb") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), HOLDER_START_SEC)
        except BaseException:
            await self.stop()
            raise
        if line.strip() != b"ready":
            await self.stop()
            raise SandboxError(f"could not start the sandbox: {self.log_path.read_text()[-2000:]}")
        self.outer_pid = _only_child(self._proc.pid)
        self.pid = _only_child(self.outer_pid)
        if self.public:
            try:
                self._nat = await _connect_outside(self.pid, self.log_path)
            except BaseException:
                await self.stop()
                raise

    async def stop(self) -> None:
        """Kill PID 1, which takes every process of the namespace with it."""
        if self._nat is not None:
            kill_group(self._nat.pid)
            await self._nat.wait()
            self._nat = None
        if self._proc is None:
            return
        kill_group(self._proc.pid)
        await self._proc.wait()
        self._proc, self.pid, self.outer_pid = None, None, None
        if self.group is not None:
            self.group.remove()
            self.group = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None and self.pid is not None


async def _connect_outside(pid: int, log_path: Path) -> asyncio.subprocess.Process:
    """slirp4netns on `pid`'s network namespace: a tap device with NAT to the outside, DNS,
    and no way to the host's loopback; dies with the framework (pdeathsig)."""
    if shutil.which("slirp4netns") is None:
        raise SandboxError(
            "a task with network access needs slirp4netns for its own network namespace "
            "(`apt-get install slirp4netns`; the project's `make` set-up installs it as root)"
        )
    ready_r, ready_w = os.pipe()
    try:
        with log_path.open("ab") as log:
            nat = await asyncio.create_subprocess_exec(
                "setpriv", "--pdeathsig", "KILL", "slirp4netns", "--configure",
                "--mtu=65520", "--disable-host-loopback", f"--ready-fd={ready_w}",
                str(pid), "tap0",
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(ready_w,), start_new_session=True,
            )  # fmt: skip
        os.close(ready_w)
        ready = await asyncio.wait_for(asyncio.to_thread(os.read, ready_r, 1), HOLDER_START_SEC)
    finally:
        with contextlib.suppress(OSError):
            os.close(ready_w)
        os.close(ready_r)
    if ready != b"1":
        kill_group(nat.pid)
        raise SandboxError(
            f"slirp4netns could not connect the trial: {log_path.read_text()[-2000:]}"
        )
    return nat


def _only_child(pid: int) -> int:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) != 1:
        raise SandboxError(f"expected one child of unshare {pid}, found {children}")
    return int(children[0])


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def run(
    argv: list[str],
    *,
    io_dir: Path,
    timeout_sec: float | None = None,
    stdin: Path | None = None,
    stdout: Path | None = None,
) -> Outcome:
    """Run `argv` as the leader of a new process group and wait for it (not for its
    background children). Output goes to files, not pipes, so a background service holding
    the descriptor cannot keep us waiting; `stdout` sends it to that file instead."""
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(_output_file(stdout, io_dir))
        err = stack.enter_context(tempfile.TemporaryFile(dir=io_dir))
        source = stack.enter_context(stdin.open("rb")) if stdin else asyncio.subprocess.DEVNULL
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=source, stdout=out, stderr=err, start_new_session=True
        )
        returncode = await _wait(proc, timeout_sec)
        return Outcome(returncode, "" if stdout else _read(out), _read(err))


def _output_file(path: Path | None, io_dir: Path):
    return path.open("wb") if path else tempfile.TemporaryFile(dir=io_dir)


async def _wait(proc: asyncio.subprocess.Process, timeout_sec: float | None) -> int:
    try:
        async with asyncio.timeout(timeout_sec):
            return await proc.wait()
    except TimeoutError:
        kill_group(proc.pid)
        await proc.wait()
        raise CommandTimeout(f"Command timed out after {timeout_sec} seconds") from None
    except BaseException:  # cancelled (an agent or build timeout upstream): leave nothing
        kill_group(proc.pid)
        raise


def _read(handle) -> str:
    handle.seek(0)
    data = handle.read(OUTPUT_LIMIT + 1)
    text = data[:OUTPUT_LIMIT].decode(errors="replace")
    return text + ("\n[output truncated]" if len(data) > OUTPUT_LIMIT else "")
