"""Sabotage, twenty-first red-team pass (issue 22, items 2, 3, 4, 6, 7): limits held by the host
and the kernel, and recovery, aimed at the last stop's changes — the jailed CLI launcher
giving up its terminal with `TIOCNOTTY` (it stays in its caller's process group) instead of
leaving the session, and the sweep that kills what a dead framework process's jail left — and
at ground not probed before: processes that leave the launcher's group or re-acquire a
terminal, the sweep judging another process's live jail, a jail filling its `/tmp` or the
machine's tables, two drivers of one experiment at once, and a command of megabytes.

Each attack is one test; one that got through on main was written here first, failing, then
closed by the smallest fix (see each docstring). Of 21 attacks (and 2 checks that an
adapter's cancel still reaches a jailed program), 4 got through on main: 3 holes, closed —
(1) a jailed CLI's command signalled its caller's process group, `kill(0, …)`, and so every
other jail's program started in it (`joining.py`: a group of the program's own, signals
relayed); (2) the sweep judged a dead owner by its pid alone, so a reused pid kept a stranded
jail alive (`cgroups.owner`: pid and start time); (3) on cgroup v1 the sweep killed the pids
it had read, so a pid reused meanwhile named a stranger it killed (`cgroups._kill_member`) —
and 1 declared: one jail can take the machine's file table. Held: escapes from the
launcher's group or its cgroups, a terminal of the jail's own, `kill(-1)`, another live jail
through the sweep, `/tmp` filled with inodes, two drivers of one experiment at once, a
command of megabytes killed by the watchdog.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.cli import EXIT_FAILED
from flashrsi_dagster.environments import cgroups
from flashrsi_dagster.environments.cgroups import MAX_PIDS
from flashrsi_dagster.environments.jail import Jail
from flashrsi_dagster.environments.joining import JAIL_UID, MAX_OPEN_FILES
from flashrsi_dagster.environments.runtime import python_runtime
from flashrsi_dagster.environments.watchdog import ShellWatchdog
from flashrsi_dagster.orchestration.tags import TITLE_TAG
from flashrsi_dagster.scratch import start_time
from tests.conftest import PATIENCE, needs_jails, wait_until
from tests.deployment.test_kill_resume import (
    EXAMPLES,
    FLASHRSI,
    PROGRESS,
    SMALL,
    _outcome,
    _wait_until_gone,
)
from tests.deployment.test_sensors import _tick
from tests.environments.test_cgroups import stranded_by_a_dead_owner
from tests.environments.test_jail import ENV

PYTHON = f"{sys.base_prefix}/bin/python3"

# -- the launcher's process group ------------------------------------------------------------

WATCHES_SIGTERM = """
import os, signal, sys
signal.signal(signal.SIGTERM, lambda *_: os.write(1, b"TERM\\n"))  # print may be writing
print("READY", flush=True)
sys.stdin.read()  # until the test closes it: a signal sent before is handled before this ends
print("END", flush=True)
"""
SIGNALS_ITS_GROUP = """
import os, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.kill(0, signal.SIGTERM)
print("SENT", flush=True)
"""


def _watching(jail: Jail, **popen) -> subprocess.Popen[bytes]:
    """`WATCHES_SIGTERM` joined to `jail` as `Jail.enter_argv` starts a CLI, once it is ready."""
    argv = jail.enter_argv([PYTHON, "-I", "-c", WATCHES_SIGTERM], ENV, Path("/"))
    started = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, **popen
    )
    assert _printed(started, "READY\n") == "READY\n"
    return started


def _printed(started: subprocess.Popen[bytes], until: str) -> str:
    """What the program printed until `until` (or its end), waited for at most `PATIENCE`."""
    assert started.stdout is not None
    fd, out, deadline = started.stdout.fileno(), b"", time.monotonic() + PATIENCE
    while until.encode() not in out and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            if not (chunk := os.read(fd, 4096)):
                break
            out += chunk
    return out.decode()


def _said(started: subprocess.Popen[bytes]) -> str:
    """What a `WATCHES_SIGTERM` program printed, once its input is closed and it has ended."""
    out, _ = started.communicate(b"", timeout=PATIENCE)
    return out.decode()


@needs_jails
def test_a_joined_program_cannot_signal_another_jail_s_program_through_the_caller_s_group():
    """Attack: a command of a jailed Claude Code CLI (its SDK starts the launcher in the
    framework's process group, as `swe_bench` tests and STOP's improver are started) sends a
    signal to its process group, `kill(0, SIGTERM)` (or SIGSTOP, SIGKILL): the kernel delivers
    it to every process of the group it may signal, whatever their PID namespace — the jailed
    programs of every other run of the framework process, all `nobody`: a hostile candidate
    ends or freezes its sibling candidates' runs, charged to them. Got through on main (the
    other jail's program got the SIGTERM: since the last stop the launcher keeps the caller's
    group, giving up only its terminal). Stops it: `joining.py` puts the program in a process
    group of its own (holding only its jail's processes) and relays the signals the launcher
    gets to it, so an adapter's cancel still reaches it."""
    said = _signalled_from_another_jail(SIGNALS_ITS_GROUP)

    assert said == "END\n", said


SIGNALS_EVERY_PROCESS = SIGNALS_ITS_GROUP.replace("os.kill(0,", "os.kill(-1,")


@needs_jails
def test_a_joined_program_s_signal_to_every_process_reaches_its_own_jail_only():
    """Attack: the same command sends its signal to every process it may (`kill(-1,
    SIGTERM)`), looking for another jail's program or a host process of the jail user. Held
    on main: the kernel signals only the processes the sender's PID namespace shows, its own
    jail's."""
    said = _signalled_from_another_jail(SIGNALS_EVERY_PROCESS)

    assert said == "END\n", said


def _signalled_from_another_jail(attack: str) -> str:
    """What a `WATCHES_SIGTERM` program printed while `attack` ran in another jail, both
    started in this process's group (as Claude Code's SDK starts its CLI)."""
    with Jail(python_runtime()) as one, Jail(python_runtime()) as other:
        victim = _watching(one)
        try:
            argv = other.enter_argv([PYTHON, "-I", "-c", attack], ENV, Path("/"))
            attacker = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
            assert "SENT" in attacker.stdout, attacker
        finally:
            said = _said(victim)
    return said


@needs_jails
def test_a_cancel_sent_to_the_launcher_s_group_still_reaches_the_program():
    """Not an attack: the Codex adapter's cancel, SIGTERM to the group of the launcher it
    started in a session of its own, reaches the jailed program (so the core ends its session
    and writes its last events). Held on main (the program was in that group); now relayed
    by the launcher to the program's own group."""
    with Jail(python_runtime()) as jail:
        started = _watching(jail, start_new_session=True)
        os.killpg(started.pid, signal.SIGTERM)
        heard = _printed(started, "TERM\n")
        said = _said(started)

    assert heard == "TERM\n" and said == "END\n", (heard, said)


@needs_jails
def test_a_sigkill_to_the_launcher_s_group_still_ends_the_program():
    """Not an attack: the Codex adapter's last resort, SIGKILL to the launcher's group once
    its grace has passed, ends the jailed program then, not at the jail's close. Held on main
    (the program was in that group); now the program dies with its launcher
    (`PR_SET_PDEATHSIG`, set after the change of user, which clears it)."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv(["/bin/sh", "-c", "echo READY; exec sleep 3600"], ENV, Path("/"))
        started = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert started.stdout is not None and started.stdout.readline() == "READY\n"
        assert _jail_users(jail), "the program is not in the jail's group"
        os.killpg(started.pid, signal.SIGKILL)
        started.wait()

        wait_until(lambda: not _jail_users(jail), "the program ended with its launcher")


def _jail_users(jail: Jail) -> list[int]:
    """The processes of `jail`'s group running as the jail user (the joined ones)."""
    assert jail.group is not None
    found = []
    for pid in jail.group.members.read_text().split():
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            if f"Uid:\t{JAIL_UID}\t" in status and "State:\tZ" not in status:
                found.append(int(pid))
    return found


# -- processes that leave the launcher's group -----------------------------------------------

ESCAPES = {
    "a daemon: a double fork and a new session": """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3600)
    os._exit(0)
""",
    "a process group of its own, deaf to SIGTERM and SIGHUP": """
import os, signal, time
if os.fork() == 0:
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    time.sleep(3600)
""",
    "a stopped process": """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(3600)
""",
}


@needs_jails
@pytest.mark.parametrize("escape", ESCAPES)
def test_a_process_that_left_the_launcher_s_group_ends_with_the_jail(escape):
    """Attack: a command leaves every group an adapter signals (a daemon's double fork and
    new session, a group of its own deaf to SIGTERM and SIGHUP, a stopped process) and its
    program exits, the launcher with it: a cancel or a timeout signals nothing it is in, and
    it works on after the run. Held on main: it runs on only while the jail lives; the
    jail's close (every run's end, cancelled or timed out) kills the sandbox's first process
    and the kernel every process of its PID namespace: none of them is alive after."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv([PYTHON, "-I", "-c", ESCAPES[escape]], ENV, Path("/"))
        # its output not waited for to its end: the escaped process holds it open
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert done.returncode == 0, done
        wait_until(lambda: _jail_users(jail), "the escaped process runs in the jail")
        left = {pid: start_time(pid) for pid in _jail_users(jail)}

    wait_until(lambda: not any(start_time(pid) == at for pid, at in left.items()), "all ended")


# -- a terminal of the jail's own ------------------------------------------------------------

TAKES_A_TERMINAL = """
import ctypes, errno, fcntl, json, os, termios
found = {}
def tried(name, call):
    try:
        call()
        found[name] = "ALLOWED"
    except OSError as exc:
        found[name] = errno.errorcode.get(exc.errno, str(exc.errno))
if os.fork():  # the program leads its own group: a child may start a session
    os.wait()
    raise SystemExit
os.setsid()  # a session leader without a terminal, which may take one
master, slave = os.openpty()  # the jail's own /dev/ptmx
tried("TIOCSCTTY", lambda: fcntl.ioctl(slave, termios.TIOCSCTTY, 0))
tried("TIOCSTI on the terminal it controls", lambda: fcntl.ioctl(slave, termios.TIOCSTI, b"x"))
tried("TIOCSTI through /dev/tty", lambda: fcntl.ioctl(os.open("/dev/tty", os.O_RDWR),
      termios.TIOCSTI, b"x"))
tried("TIOCSTI through a duplicate", lambda: fcntl.ioctl(os.dup(slave), termios.TIOCSTI, b"x"))
tried("TIOCSTI on the master side", lambda: fcntl.ioctl(master, termios.TIOCSTI, b"x"))
libc = ctypes.CDLL(None, use_errno=True)
def high_bits():
    char = ctypes.c_char(b"x")
    if libc.ioctl(slave, ctypes.c_ulong(termios.TIOCSTI | 1 << 32), ctypes.byref(char)) < 0:
        raise OSError(ctypes.get_errno(), "ioctl")
tried("TIOCSTI with high bits set", high_bits)
tried("TIOCLINUX", lambda: fcntl.ioctl(slave, 0x541C, b"\\x0b"))
found["terminals"] = sorted(os.listdir("/dev/pts"))
print("FOUND", json.dumps(found))
"""
REFUSED_ON_A_TERMINAL = (
    "TIOCSTI on the terminal it controls",
    "TIOCSTI through /dev/tty",
    "TIOCSTI through a duplicate",
    "TIOCSTI on the master side",
    "TIOCSTI with high bits set",
    "TIOCLINUX",
)


@pytest.fixture(scope="module")
def own_terminal() -> dict:
    """`TAKES_A_TERMINAL` run once in a jail, joined as a CLI is, its streams no terminal."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv([PYTHON, "-I", "-c", TAKES_A_TERMINAL], ENV, Path("/"))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
    assert "FOUND " in done.stdout, done
    return json.loads(done.stdout.split("FOUND ", 1)[1])


@needs_jails
@pytest.mark.parametrize("attempt", REFUSED_ON_A_TERMINAL)
def test_a_terminal_the_jail_opens_types_nothing(own_terminal, attempt):
    """Attack: a command re-acquires a controlling terminal (a new session, the jail's own
    `/dev/ptmx`, `TIOCSCTTY`: allowed, a terminal of the jail's) and types into it with
    `TIOCSTI` (on it, through `/dev/tty`, a duplicate descriptor, the master side, the
    request with high bits set) or `TIOCLINUX`, looking for a way to the terminal
    `flashrsi run` was typed in. Held on main: each is refused by the filter (EPERM)."""
    assert own_terminal[attempt] == "EPERM", own_terminal


@needs_jails
def test_the_jail_shows_none_of_the_host_s_terminals(own_terminal):
    """Attack: the same command looks in `/dev/pts` for the host's terminals (the user's
    shell, another run's), to open one by its path. Held on main: the jail's `/dev` holds a
    devpts of its own, showing only the terminal it opened."""
    assert own_terminal["TIOCSCTTY"] == "ALLOWED", own_terminal
    assert set(own_terminal["terminals"]) <= {"ptmx", "0"}, own_terminal


# -- one driver per experiment ---------------------------------------------------------------


@pytest.mark.slow
def test_two_resumes_and_the_sensor_beside_a_run_and_after_its_kill_drive_it_once(
    tmp_path, monkeypatch
):
    """Attack: two `flashrsi resume`s of a ModularRSI experiment started at the same moment,
    with a tick of the round driver sensor, first while its `flashrsi run` drives it, then
    again (the resumes) once that run is killed (SIGKILL, mid-round): two drivers of one
    round would launch each candidate twice (round 19's sensor beside `run` made 18 runs of
    13). Held on main: beside the run both resumes are refused in one line (exit 1: the
    driver lock, waited for 5 s) and the sensor requests nothing (the lock is held); after
    the kill one resume drives it to its end and the other is refused or finds nothing left;
    every step's run succeeded once, the records verify, and nothing of the killed run is
    alive after."""
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home / ".dagster"))  # the home's instance, read here
    args = ["--config", str(EXAMPLES / "modular_rsi.yaml"), "--experiment.home", str(home)]
    run = subprocess.Popen(
        [FLASHRSI, "run", *args, *SMALL["modular_rsi"].split()],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        printed = _until_progress(run)
        name = next(p.name for p in home.iterdir() if p.is_dir() and not p.name.startswith("."))
        with _home_instance(home) as instance:
            ticked = _tick(instance, home)
        beside = _resumes_at_once(home, name)
        os.kill(run.pid, signal.SIGKILL)  # mid-round: its candidates' runs left active
    finally:
        run.kill()
        run.communicate()
    assert ticked == [], ticked
    assert [r.returncode for r in beside] == [EXIT_FAILED] * 2, [r.stderr[-2000:] for r in beside]
    assert all(_refused_one_line(r) for r in beside), [r.stderr[-2000:] for r in beside]
    assert _wait_until_gone(run.pid, home) == [], printed

    after = _resumes_at_once(home, name)

    codes = sorted(r.returncode for r in after)
    assert codes in ([0, 0], [0, EXIT_FAILED]), [r.stdout[-2000:] + r.stderr[-2000:] for r in after]
    assert all(r.returncode == 0 or _refused_one_line(r) for r in after), after
    _outcome(home, name)  # the records' chain verifies, the experiment reads back
    with _home_instance(home) as instance:
        succeeded = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]))
    steps = Counter(
        (r.job_name, r.tags.get("dagster/partition"), r.tags.get(TITLE_TAG)) for r in succeeded
    )
    assert [step for step, n in steps.items() if n > 1] == [], steps


def _until_progress(command: subprocess.Popen[str]) -> str:
    """What `command` printed up to its first line of progress (a step begun: it drives)."""
    assert command.stdout is not None
    printed = ""
    while not any(line.startswith(PROGRESS) for line in printed.splitlines()):
        line = command.stdout.readline()
        assert line, printed
        printed += line
    return printed


def _resumes_at_once(home: Path, name: str) -> list[subprocess.CompletedProcess]:
    asked = [FLASHRSI, "resume", "--experiment", name, "--home", str(home)]
    started = [
        subprocess.Popen(asked, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    done = []
    for process in started:
        out, err = process.communicate(timeout=900)
        done.append(subprocess.CompletedProcess(asked, process.returncode, out, err))
    return done


def _refused_one_line(done: subprocess.CompletedProcess) -> bool:
    last = done.stderr.strip().splitlines()[-1:] or [""]
    return last[0].startswith("error: ") and "drives this experiment" in last[0]


@contextlib.contextmanager
def _home_instance(home: Path) -> Iterator[dg.DagsterInstance]:
    instance = dg.DagsterInstance.from_config(str(home / ".dagster"))
    try:
        yield instance
    finally:
        instance.dispose()


# -- the sweep of dead framework processes' cgroups -----------------------------------------

ANOTHER_FRAMEWORK = """
import subprocess, sys
from pathlib import Path
from flashrsi_dagster.cli import EXIT_FAILED
from flashrsi_dagster.environments import cgroups
from flashrsi_dagster.environments.cgroups import MAX_PIDS, JailGroup
from flashrsi_dagster.environments.jail import Jail
from flashrsi_dagster.environments.runtime import python_runtime
from flashrsi_dagster.environments.watchdog import ShellWatchdog
with Jail(python_runtime()) as jail:
    argv = jail.enter_argv(["/bin/sleep", "3600"], {"PATH": "/usr/bin:/bin"}, Path("/"))
    program = subprocess.Popen(argv)
    print("READY", flush=True)
    sys.stdin.readline()
    print("ALIVE" if program.poll() is None else f"ENDED {program.returncode}", flush=True)
    program.kill()
"""


ELSEWHERE = {
    "beside this one": [],
    "in a PID namespace of its own": ["unshare", "--pid", "--fork", "--mount-proc"],
}


@needs_jails
@pytest.mark.parametrize("where", ELSEWHERE)
def test_another_framework_process_s_live_jail_survives_this_one_s_sweep(where):
    """Attack: two framework processes on one machine (two homes, a `flashrsi run` beside a
    code server's run worker), each with a live jail: the sweep this one runs as it makes a
    jail kills what is left in the groups of jails whose framework process is gone; judged
    wrong, it would kill a live run of the other. Held on main: the owner's pid is alive in
    this process space, so its groups are left alone (its program still runs after two
    sweeps); one in a PID namespace of its own (a container sharing the cgroupfs), whose pid
    means another process here, is of another process space, which this one never judges."""
    other = subprocess.Popen(
        [*ELSEWHERE[where], sys.executable, "-c", ANOTHER_FRAMEWORK],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert other.stdout is not None and other.stdout.readline() == "READY\n"
        for _ in range(2):
            Jail(python_runtime()).close()
        said, _ = other.communicate("\n", timeout=PATIENCE)
    finally:
        other.kill()
        other.wait()

    assert said == "ALIVE\n", said


@needs_jails
def test_a_stranded_jail_whose_owner_s_pid_was_reused_is_swept(tmp_path):
    """Attack: a framework process killed while its jail was being built strands the
    sandbox's first process in the jail's groups (nothing else ends it), and the kernel
    gives that framework's pid to another process (a long-lived daemon): the sweep judged
    the owner by its pid alone, found it alive, and left the stranded process (and its
    groups) for as long as the stranger lived; a new framework process given that pid
    would even have shared those groups' limits with it (`mkdir(exist_ok=True)`). Got
    through on main (the stranded process outlived the sweep). Stops it: a jail's groups
    carry their owner's start time beside its pid, and the sweep judges both, as the
    scratch folders do."""
    stranger = subprocess.Popen(["sleep", "3600"])  # holds the dead owner's pid now
    dead, stranded = stranded_by_a_dead_owner(reused_by=stranger)  # owner started at tick 1
    try:
        Jail(python_runtime()).close()  # a new jail: the sweep

        wait_until(lambda: stranded.poll() is not None, "the stranded process was killed")
    finally:
        for process in (stranger, stranded):
            process.kill()
            process.wait()
        dead.remove()


# -- the machine's tables ----------------------------------------------------------------------

EMPTY_FILES = 50_000
MAKES_EMPTY_FILES = f"""
import os, sys
os.mkdir("/tmp/many")
for i in range({EMPTY_FILES}):
    os.close(os.open(f"/tmp/many/{{i}}", os.O_CREAT | os.O_WRONLY))
print("MADE", flush=True)
sys.stdin.readline()
"""


@needs_jails
def test_a_jail_s_tmp_filled_with_empty_files_is_charged_to_its_memory():
    """Attack: a run fills its `/tmp` with empty files rather than bytes: the 512 MiB bound
    counts no bytes, and the tmpfs allows millions of inodes (3 million on a 24 GiB
    machine), each a kilobyte of the kernel's memory. Held on main: the kernel charges
    those inodes and entries to the jail's memory group (its 4 GiB), so they are bounded
    with the rest of its memory, past which the kernel kills inside the jail only."""
    with Jail(python_runtime()) as jail:
        assert jail.group is not None and "memory" in jail.group.folders, "no memory group"
        used = jail.group.folders["memory"] / "memory.usage_in_bytes"
        if not used.exists():  # cgroup v2
            used = jail.group.folders["memory"] / "memory.current"
        before = int(used.read_text())
        argv = jail.enter_argv([PYTHON, "-I", "-c", MAKES_EMPTY_FILES], ENV, Path("/"))
        making = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert making.stdout is not None and making.stdout.readline() == "MADE\n"
        after = int(used.read_text())
        making.communicate("\n", timeout=PATIENCE)

    assert after - before >= EMPTY_FILES * 256, (before, after)


def _whole_file_table() -> bool:
    """Whether one jail's processes may open more files together than a quarter of the
    machine's file table: `MAX_PIDS` processes, each up to `MAX_OPEN_FILES`."""
    table = int(Path("/proc/sys/fs/file-max").read_text())
    return table // 4 < MAX_PIDS * MAX_OPEN_FILES


@needs_jails
@pytest.mark.xfail(
    _whole_file_table(),
    strict=True,
    reason="declared limit (docs/confinement.md, 'Limits per jail'): on a machine this small, "
    "one jail's processes together may hold a quarter of the file table",
)
def test_one_jail_cannot_take_the_machine_s_file_table():
    """Attack: a run's 512 processes each open files up to their hard limit, inherited from
    the framework (20000 here, a million on many hosts): 10 million together, against a
    machine's table of 2.5 million (`fs.file-max`); each costs the jail's memory group a
    few hundred bytes only. Past the table, every process of the machine without
    `CAP_SYS_ADMIN` gets ENFILE: sibling candidates' runs fail, and the host's unprivileged
    services. Got through on main (10.2 million within reach). Stopped by the host: every
    process that joins a jail has its hard limit lowered to `MAX_OPEN_FILES` (1024) before
    it becomes the jail user, which cannot raise it. Not tried for real here (it would take
    the table from everything on the machine): the test compares one jail's reach with a
    quarter of the table. Several hostile jails side by side can still reach it together
    (declared: the kernel counts open files per process and per machine, never per
    cgroup)."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv(
            [PYTHON, "-I", "-c", "import resource; print(resource.getrlimit(7))"],
            ENV,
            Path("/"),
        )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
    table = int(Path("/proc/sys/fs/file-max").read_text())
    soft, hard = ast.literal_eval(done.stdout)

    assert soft <= hard <= MAX_OPEN_FILES, done.stdout
    assert MAX_PIDS * hard <= table // 4, (done.stdout, table)


# -- a huge command line ---------------------------------------------------------------------

LONG_COMMAND = """
import subprocess, sys
args = ["x" * 100_000] * 20  # 2 MB of arguments (the kernel's bound with an 8 MiB stack)
done = subprocess.run([sys.executable, "-c", "import time; time.sleep(3600)", *args])
print("KILLED BY", -done.returncode, flush=True)
"""


@needs_jails
def test_a_command_with_a_huge_command_line_is_killed_and_recorded_cut():
    """Attack: a command past the shell timeout carries megabytes of arguments: the host's
    watchdog reads each command line it kills for the trajectory's record (a huge one read
    every look, or recorded whole, would cost the framework's memory and the records). Held
    on main: the watchdog kills it (SIGKILL) and records its command cut to 200 characters,
    reading it once, at the kill."""
    with Jail(python_runtime()) as jail:
        watchdog = ShellWatchdog(jail, limit=0.5)
        argv = jail.enter_argv([PYTHON, "-I", "-c", LONG_COMMAND], ENV, Path("/"))
        main = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
        kills = watchdog.close()

    assert main.stdout == f"KILLED BY {signal.SIGKILL}\n", main.stderr[-2000:]
    assert [len(k.command) for k in kills] == [200], [k.command[:80] for k in kills]
    assert "time.sleep(3600) xxx" in kills[0].command, kills[0].command


@needs_jails
def test_the_sweep_kills_no_process_that_left_a_dead_jail_s_group(monkeypatch):
    """Attack: the sweep of a dead framework process's group (cgroup v1: no `cgroup.kill`)
    reads the pids in it, then kills each: a process that ended between the two has its pid
    given to another, which the sweep killed — any process of the machine, the framework's
    own included (simulated: the group's listing names a process outside it, as a stale
    read would). Got through on main (that process was SIGKILLed). Stops it: the sweep pins
    each listed process (a pidfd) and kills it only if it is still in the group."""
    stranger = subprocess.Popen(["sleep", "3600"])  # outside every jail's group
    dead, stranded = stranded_by_a_dead_owner()  # named as main names it
    try:
        listed = cgroups._read

        def stale(path: Path) -> str:
            read = listed(path)
            return read + f"{stranger.pid}\n" if path.name == "cgroup.procs" else read

        monkeypatch.setattr(cgroups, "_read", stale)
        monkeypatch.setattr(Path, "exists", _no_cgroup_kill(Path.exists))
        Jail(python_runtime()).close()  # a new jail: the sweep

        wait_until(lambda: stranded.poll() is not None, "the stranded process was killed")
        assert stranger.poll() is None, "a process outside the group was killed"
    finally:
        for process in (stranger, stranded):
            process.kill()
            process.wait()
        dead.remove()


def _no_cgroup_kill(exists):
    """`Path.exists` as on cgroup v1, where a group has no `cgroup.kill`."""
    return lambda path: path.name != "cgroup.kill" and exists(path)


LEAVES_ITS_GROUP = """
import errno, json, os
found = {}
for path in ("/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/cgroup.procs",
             "/sys/fs/cgroup/unified/cgroup.procs"):
    try:
        with open(path, "w") as procs:
            procs.write("0")
        found[path] = "MOVED"
    except OSError as exc:
        found[path] = errno.errorcode.get(exc.errno, str(exc.errno))
print("FOUND", json.dumps(found))
"""


@needs_jails
def test_a_jailed_process_cannot_leave_its_jail_s_cgroups():
    """Attack: a command moves itself out of its jail's groups (writing its pid to a root
    group's `cgroup.procs`), to escape the process and memory limits, the watchdog's
    listing and the sweep's kill. Held on main: the jail shows no cgroup file system (no
    `/sys`), and mounting one is refused by the filter."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv([PYTHON, "-I", "-c", LEAVES_ITS_GROUP], ENV, Path("/"))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
    assert "FOUND " in done.stdout, done
    found = json.loads(done.stdout.split("FOUND ", 1)[1])

    assert "MOVED" not in found.values(), found
