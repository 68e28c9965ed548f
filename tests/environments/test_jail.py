"""The jail, attacked from inside: what a process that joined it can and cannot do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flashrsi_dagster.environments.jail import Jail, JailError, JailSpec, Mount
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime, site_packages
from tests.conftest import PATIENCE, needs_jails, wait_until

pytestmark = needs_jails

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def sh(
    jail: Jail, script: str, cwd: Path, timeout: float = PATIENCE
) -> subprocess.CompletedProcess:
    argv = jail.enter_argv(["/bin/sh", "-c", script], ENV, cwd)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def python(jail: Jail, code: str, cwd: Path) -> subprocess.CompletedProcess:
    return sh(jail, f"{sys.base_prefix}/bin/python3 -I -c {_quote(code)}", cwd)


def _quote(code: str) -> str:
    return "'" + textwrap.dedent(code).replace("'", "'\"'\"'") + "'"


def test_a_joined_process_is_nobody_without_capabilities(jail: Jail, work: Path):
    result = sh(jail, "id -u; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status", work)

    lines = result.stdout.split()
    assert lines[0] == str(JAIL_UID)
    assert "CapEff:" in lines and lines[lines.index("CapEff:") + 1] == "0" * 16
    assert lines[lines.index("NoNewPrivs:") + 1] == "1"


def test_only_the_run_folder_is_writable(jail: Jail, work: Path, tmp_path: Path):
    result = sh(
        jail,
        "echo ok > inside.txt && echo private > /tmp/scratch && cat /tmp/scratch; "
        "for p in /usr/x /etc/x /x " + str(tmp_path / "outside.txt") + "; do "
        "(echo no > $p) 2>/dev/null && echo WROTE $p; done",
        work,
    )

    assert (work / "inside.txt").read_text() == "ok\n"
    assert "private" in result.stdout
    assert "WROTE" not in result.stdout
    assert not (tmp_path / "outside.txt").exists()


def test_the_host_is_out_of_sight(jail: Jail, work: Path):
    framework = Path(__file__).resolve().parents[2] / "flashrsi_dagster"
    result = sh(
        jail,
        f"ls -A /root; ls {framework} 2>&1; ls -A {framework.parent} 2>&1; "
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done",
        work,
    )

    lines = result.stdout.splitlines()
    assert lines[0] == ".pyenv"  # only the interpreter's folder, not /root's files
    assert "No such file" in lines[1]  # not the framework,
    assert lines[2] == ".venv"  # only the harness's part of site-packages
    processes = [line for line in lines[3:] if line.strip()]
    # bwrap's init, the shim and this script: no process of the host's
    assert {line.split()[0] for line in processes} <= {"bwrap", "/bin/sh", "tr"}, processes


def test_the_harness_imports_its_sdk_but_not_the_framework_or_the_labels(jail: Jail, work: Path):
    result = python(
        jail,
        f"""
        import sys
        sys.path.append({str(site_packages())!r})
        import openai, yaml
        for name in ("flashrsi_dagster", "bastioncorpus", "dagster"):
            try:
                __import__(name)
                print("IMPORTED", name)
            except ImportError:
                print("refused", name)
        """,
        work,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split().count("refused") == 3


def test_no_loopback_port_answers_but_the_one_served(jail: Jail, work: Path):
    listener = jail.listen(8086)
    listener.settimeout(PATIENCE)
    code = """
    import socket
    s = socket.create_connection(("127.0.0.1", 8086), timeout=5)
    s.sendall(b"ping")
    print(s.recv(10).decode())
    for port in (22, 5432, 6379, 8080):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2)
            print("OPEN", port)
        except OSError:
            print("closed", port)
    """
    process = subprocess.Popen(
        jail.enter_argv(
            ["/bin/sh", "-c", f"{sys.base_prefix}/bin/python3 -I -c {_quote(code)}"], ENV, work
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    connection, _ = listener.accept()
    assert connection.recv(10) == b"ping"
    connection.sendall(b"pong")
    out, _ = process.communicate(timeout=PATIENCE)
    listener.close()

    assert out.split()[0] == "pong"
    assert out.split()[1::2] == ["closed"] * 4


def test_closing_the_jail_kills_what_escaped_with_nohup_setsid_and_double_fork(work: Path):
    jail = Jail(python_runtime().with_mounts(Mount(work, writable=True)))
    sh(
        jail,
        "nohup sleep 901 >/dev/null 2>&1 & setsid sleep 902 >/dev/null 2>&1 & "
        "(sh -c 'sleep 903 &' &) >/dev/null 2>&1; sleep 0.2",
        work,
    )
    wait_until(lambda: _sleepers() == {"901", "902", "903"}, "the three sleepers started")

    jail.close()

    wait_until(lambda: _sleepers() == set(), "the sleepers killed", timeout=60)


FRAMEWORK = """
import json, subprocess, sys, threading, time
from pathlib import Path
from flashrsi_dagster.environments.jail import Jail, Mount
from flashrsi_dagster.environments.runtime import python_runtime
work = Path(sys.argv[1])
started = {}

def rollout():  # as the rollouts do: in a thread of their own, which lives on
    jail = Jail(python_runtime().with_mounts(Mount(work, writable=True)))
    agent = subprocess.Popen(jail.enter_argv(
        ["/bin/sh", "-c", "setsid nohup sleep 904 >/dev/null 2>&1 & exec sleep 905"],
        {"PATH": "/usr/bin:/bin"}, work))
    started.update(bwrap=jail._process.pid, first=jail.pid, agent=agent.pid)
    time.sleep(300)

threading.Thread(target=rollout, daemon=True).start()
while len(started) < 3:
    time.sleep(0.05)
print(json.dumps(started), flush=True)
time.sleep(300)
"""
"""A framework process running a jailed agent that sleeps (in the foreground and, escaped
with `setsid nohup`, in the background), its jail made in a rollout's thread; it prints the
host pids of bubblewrap, the sandbox's first process and the agent's launcher."""


def test_the_jail_dies_with_the_framework_even_by_sigkill(work: Path):
    framework = subprocess.Popen(
        [sys.executable, "-c", FRAMEWORK, str(work)], stdout=subprocess.PIPE, text=True
    )
    assert framework.stdout is not None
    pids = json.loads(framework.stdout.readline())
    namespace = os.readlink(f"/proc/{pids['first']}/ns/pid")
    wait_until(lambda: _sleepers() == {"904", "905"}, "the sleepers started")
    started = {pid: _start_time(pid) for pid in pids.values()}

    framework.send_signal(signal.SIGKILL)
    framework.wait()

    def jail_left() -> list[int]:  # bubblewrap, the launcher, anything in the namespace
        outside = [pid for pid, start in started.items() if _alive(pid, start)]
        return outside + [pid for pid in _in_namespace(namespace) if _alive(pid)]

    wait_until(lambda: not jail_left(), "every process of the jail ended", timeout=60)
    assert _sleepers() == set()


def test_a_closed_jail_leaves_no_orphan_for_pid_1_to_reap(work: Path):
    """Its first process is reaped by bubblewrap, not left a zombie for PID 1, which in a
    container running Dagster's code server or a `flashrsi worker` reaps nothing. A parent
    that is a subreaper adopts what would go to PID 1, so it sees such an orphan."""
    code = f"""
    import ctypes, os, subprocess
    from pathlib import Path
    from flashrsi_dagster.environments.jail import Jail, Mount
    from flashrsi_dagster.environments.runtime import python_runtime
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    work = Path({str(work)!r})
    jail = Jail(python_runtime().with_mounts(Mount(work, writable=True)))
    argv = jail.enter_argv(["/bin/sh", "-c", "echo up; exec sleep 906"], {{"PATH": "/bin"}}, work)
    agent = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert agent.stdout.readline().strip() == "up"  # in the jail, sleeping
    jail.close()
    agent.wait()
    try:
        os.waitpid(jail.pid, 0)
        print("adopted")
    except ChildProcessError:
        print("reaped by bubblewrap")
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True
    )

    assert done.stdout.strip() == "reaped by bubblewrap", done.stderr


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, start: str | None = None) -> bool:
    """Whether `pid` runs (a zombie has ended), and is the one started at `start`."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in ("Z", "X") and start in (None, fields[19])


def _in_namespace(namespace: str) -> list[int]:
    """The host pids of the processes in PID namespace `namespace` (`pid:[inode]`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == namespace:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_bad_mount_is_a_clear_error(tmp_path: Path):
    with pytest.raises(JailError, match="bubblewrap could not start the jail"):
        Jail(JailSpec((Mount(tmp_path / "missing"),)))


def _sleepers() -> set[str]:
    out = subprocess.run(["pgrep", "-a", "sleep"], capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("90")}


def test_the_harness_runtime_is_complete_when_many_runs_ask_for_it_at_once(tmp_path: Path):
    """Rollouts start concurrently, and each asks for the runtime folder: whoever asks while
    it is being assembled waits for a complete one (a half-made folder broke every run)."""
    from concurrent.futures import ThreadPoolExecutor

    from flashrsi_dagster.environments.runtime import _closure, _ensure, _top_level_paths

    source = site_packages().parent.parent / "site-packages"
    tops = sorted(_top_level_paths(_closure(("openai", "pyyaml"))))
    target = tmp_path / "runtime"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: _ensure(source, tops, target), range(8)))

    assert sorted(p.name for p in target.iterdir()) == tops
    assert (target / "openai" / "__init__.py").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no partial left


def test_the_launcher_ends_as_its_program_did(jail: Jail, work: Path):
    """`enter_argv`'s first process (the framework's `joining.py`) stays on the host's side:
    its exit code, or its death by a signal, is the program's."""
    codes = [sh(jail, script, work).returncode for script in ("exit 3", "kill -9 $$")]
    missing = subprocess.run(jail.enter_argv(["/nonexistent"], ENV, work), capture_output=True)

    assert codes == [3, -signal.SIGKILL]
    assert missing.returncode == 127 and b"cannot run /nonexistent" in missing.stderr
