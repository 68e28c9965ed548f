"""Sabotage, second red-team pass: what is new since the first (the command bridge, Claude Code
in a jail, the harness runtime folder) and what was still untested (the gateway's HTTP edges,
resource exhaustion from inside a jail), one test per attack, all through the real parts — a
bubblewrap jail made by `Confinement.run`, the model gateway served inside it, the command
bridge, MiniAgent's fork server, the bundled Claude Code CLI and the offline simulator.

Attack code runs as a jailed agent would: a process that joined the run's jail as the jail
user (`inside`), a scripted target's shell, or a harness the Worker rewrote (`rewritten`).
Each attack that once succeeded was an `xfail(strict=True)` naming the hole; all are closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from flashrsi_dagster import scratch
from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.bridge import CLIENT
from flashrsi_dagster.environments.confinement import (
    JAIL_GATEWAY_PORT,
    AgentRun,
    Confinement,
)
from flashrsi_dagster.environments.runtime import python_runtime, site_packages
from flashrsi_dagster.gateway import Caps, Gateway
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from tests.conftest import needs_jails, wait_until
from tests.environments.local_chroot.conftest import TASK_TOML, needs_local_env, write_task
from tests.sabotage.helpers import alive, say, script_model, sleep_args, unique

pytestmark = needs_jails

PYTHON = os.path.realpath(sys.executable)
"""The interpreter as the jail shows it (the runtime mounts the real installation)."""


# -- a jailed agent, without an agent around it ------------------------------------------------


def _role(model: str = "simulator/echo", base_url: str = "offline", **fields) -> RoleConfig:
    llm = {"model": model, "base_url": base_url, "timeout": 30, "max_retries": 0}
    return RoleConfig.model_validate({"type": "miniagent", "timeout": 60, "llm": llm, **fields})


@contextlib.contextmanager
def jailed_run(
    tmp_path: Path,
    *,
    gateway: Gateway | None = None,
    caps: dict[str, Caps] | None = None,
    bridge: Sequence[str] | None = None,
    role: RoleConfig | None = None,
) -> Iterator[tuple[AgentRun, Path]]:
    """One target run's confinement, as an agent adapter makes it: a token, a jail with the
    run folder writable and the harness runtime read-only, the gateway (and the bridge) in it."""
    work = tmp_path / "run"
    work.mkdir(parents=True)
    confinement = Confinement(
        jailed=True, experiment=unique("round2"), gateway=gateway, caps=caps or {}
    )
    with confinement.run(
        "target",
        (role or _role()).llm,
        writable=(work,),
        runtime=python_runtime(),
        bridge=bridge,
    ) as run:
        yield run, work


def inside(run: AgentRun, work: Path, code: str, timeout: float = 60) -> str:
    """Python `code` run in the jail as the jail user, with the run's environment and token
    (`TOKEN`): its stdout, and its stderr after a line `-- stderr`."""
    env = {**run.env, "TOKEN": run.token, "PORT": str(JAIL_GATEWAY_PORT)}
    argv = run.jail.enter_argv([PYTHON, "-I", "-c", textwrap.dedent(code)], env, work)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return done.stdout + ("\n-- stderr\n" + done.stderr if done.stderr else "")


def rewritten(tmp_path: Path, *code: str) -> Path:
    """The built-in harness with `code` appended to `runtime/agent.py`: what a Worker's edit
    makes every later target run execute in its own process."""
    harness = tmp_path / "harness"
    shutil.copytree(HARNESS, harness)
    with (harness / "runtime" / "agent.py").open("a") as handle:
        handle.writelines(textwrap.dedent(part) for part in code)
    return harness


def run_target(tmp_path: Path, harness: Path, replies: list[dict] | None = None):
    model = script_model(unique("round2-target"), replies or [say()])
    work = tmp_path / "task"
    work.mkdir(exist_ok=True)
    with target_agent(_role(model), harness) as agent:
        return agent.run(work, "attack", task_id="t")


def reported(trajectory, label: str) -> str:
    """What code appended to the harness reported under `== <label>`."""
    for message in trajectory.messages:
        content = message.get("content")
        if isinstance(content, str) and content.startswith(f"== {label}\n"):
            return content.split("\n", 1)[1]
    raise AssertionError(f"no `== {label}` report: {trajectory.status} {trajectory.error}")


REPORT = """

_honest_run = run


def run(params, on_step=None):
    found = _attack(params)
    result = _honest_run(params, on_step)
    result["messages"].append({{"role": "user", "content": "== {label}\\n" + found}})
    return result
"""


# -- the model gateway, from inside a jail ---------------------------------------------------


def test_a_negative_chunk_size_does_not_lift_the_body_limit(tmp_path: Path):
    """Attack: a chunked request whose first chunk size is `-1`, followed by 64 MB, against a
    gateway whose body limit is 64 KiB: every byte sent is a byte of the framework's memory.
    Stops it: the gateway refuses the request at the bad chunk size and reads no
    further, so the client can push no more than its socket buffers hold."""
    limit, push = 64 << 10, 64 << 20
    attack = f"""
        import os, socket
        s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: g\\r\\n"
                  b"Transfer-Encoding: chunked\\r\\n\\r\\n-1\\r\\n")
        s.settimeout(3)
        sent, block = 0, b"x" * (1 << 20)
        try:
            while sent < {push}:
                s.sendall(block)
                sent += len(block)
        except OSError:
            pass
        print(sent)
    """
    with (
        Gateway(max_body_bytes=limit) as gateway,
        jailed_run(tmp_path, gateway=gateway) as (
            run,
            work,
        ),
    ):
        out = inside(run, work, attack)

    sent = int(out.split()[0])
    assert sent < 16 << 20, f"the gateway took {sent >> 20} MB past its {limit >> 10} KiB limit"


def test_parallel_calls_cannot_overshoot_a_spending_cap(tmp_path: Path):
    """Attack: the role's cap is 1 token, so one call may be made; the jailed run makes 12 at
    once against a model that takes 1.5 s to answer. Stops it: a call in flight holds its
    worst case against the cap (`Ledger.admit`); one is answered, the others refused (402)."""
    attack = """
        import http.client, json, os, threading
        statuses = []
        def call():
            c = http.client.HTTPConnection("127.0.0.1", int(os.environ["PORT"]), timeout=30)
            body = {"model": "simulator/echo", "messages": [{"role": "user", "content": "hi"}]}
            c.request("POST", "/v1/chat/completions", json.dumps(body),
                      {"Authorization": "Bearer " + os.environ["TOKEN"],
                       "Content-Type": "application/json"})
            statuses.append(c.getresponse().status)
        threads = [threading.Thread(target=call) for _ in range(12)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(json.dumps(sorted(statuses)))
    """
    with OfflineModelServer(ServerConfig(latency_ms=1500)) as server:
        role = _role(base_url=server.url)
        with (
            Gateway() as gateway,
            jailed_run(tmp_path, gateway=gateway, caps={"target": Caps(max_tokens=1)}, role=role)
            as (run, work),
        ):  # fmt: skip
            statuses = json.loads(inside(run, work, attack).splitlines()[0])

    assert statuses.count(200) == 1, f"{statuses.count(200)} calls answered past a 1-token cap"
    assert statuses.count(402) == 11


def test_a_token_taken_from_another_run_is_refused_in_this_jail(tmp_path: Path):
    """Attack: two runs at once; the second jail's code presents the first run's token (read
    off a shared file, a log, a process memory) to its own gateway. Stops it: a jail's
    listener accepts its own run's token only."""
    attack = """
        import http.client, os
        c = http.client.HTTPConnection("127.0.0.1", int(os.environ["PORT"]), timeout=30)
        c.request("GET", "/v1/models", headers={"Authorization": "Bearer " + os.environ["OTHER"]})
        r = c.getresponse()
        print(r.status, r.read().decode())
    """
    with (
        jailed_run(tmp_path / "a") as (first, _),
        jailed_run(tmp_path / "b") as (second, work),
    ):  # fmt: skip
        env = {**second.env, "OTHER": first.token, "PORT": str(JAIL_GATEWAY_PORT)}
        argv = second.jail.enter_argv([PYTHON, "-I", "-c", textwrap.dedent(attack)], env, work)
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout

    assert out.startswith("401 ") and "not valid on this listener" in out


# -- the command bridge (Harbor) --------------------------------------------------------------

BRIDGE = ["bash", "-c"]
"""The task environment's way in, as in tests/environments/test_bridge.py: here the host's
bash stands for the trial's `nsenter … bash -c` (what is attacked is the bridge itself)."""
CLIENT_PREFIX = (PYTHON, "-I", "-S", str(CLIENT))
"""The bridge client's argv as a jailed run's shell gets it (`AgentRun.shell_prefix`)."""

CLIENT_CODE = """
    import json, os, socket, struct
    PORT = int(os.environ["FLASHRSI_BRIDGE_PORT"])
    def connect():
        return socket.create_connection(("127.0.0.1", PORT), timeout=10)
    def send(raw):
        s = connect()
        s.sendall(raw)
        return s
    def output(s):
        # the output up to the exit frame, or to the end of the connection
        data = b""
        with s, s.makefile("rb") as stream:
            while len(header := stream.read(4)) == 4:
                (length,) = struct.unpack(">I", header)
                if length == 0xFFFFFFFF:
                    break
                data += stream.read(length)
        return data
"""


def test_odd_requests_do_not_break_the_bridge(tmp_path: Path):
    """Attack: requests the bridge does not expect — not JSON, a JSON list, a number for a
    command, no command, a NUL, a command over the kernel's argument limit, 2 MB without an
    end of line — then an honest command. Holds: each odd request only ends its own
    connection; the bridge still runs the next command."""
    attack = (
        CLIENT_CODE
        + """
    odd = [b"not json\\n", b"[1]\\n", b'{"command": 5}\\n', b"{}\\n",
           json.dumps({"command": "echo a\\u0000b"}).encode() + b"\\n",
           json.dumps({"command": "echo " + "y" * 200000}).encode() + b"\\n",
           b"z" * (2 << 20)]
    answers = []
    for raw in odd:
        try:
            answers.append(len(output(send(raw))))
        except OSError as exc:
            answers.append(type(exc).__name__)
    honest = output(send(json.dumps({"command": "echo still-serving"}).encode() + b"\\n"))
    print(json.dumps({"odd": answers, "honest": honest.decode(errors="replace")}))
    """
    )
    with jailed_run(tmp_path, bridge=BRIDGE) as (run, work):
        found = json.loads(inside(run, work, attack).splitlines()[0])

    # each closed without output (or reset, the request left unread)
    assert set(found["odd"]) <= {0, "ConnectionResetError", "BrokenPipeError"}, found
    assert "still-serving" in found["honest"]


def test_the_bridge_bounds_the_commands_a_jail_runs_at_once(tmp_path: Path):
    """Attack: the jailed run opens 80 connections, each a command that sleeps. What should
    stop it: the bridge runs a bounded number at once (at most the gateway's 64)."""
    (nap,) = sleep_args(1)
    attack = (
        CLIENT_CODE
        + f"""
    import time
    held = [send(json.dumps({{"command": "echo up; exec sleep {nap}"}}).encode() + b"\\n")
            for _ in range(80)]
    running, deadline = 0, time.monotonic() + 8
    for s in held:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            running += b"up" in s.recv(64)
        except OSError:
            pass
    print(running)
    """
    )
    try:
        with jailed_run(tmp_path, bridge=BRIDGE) as (run, work):
            running = int(inside(run, work, attack).split()[0])
    finally:
        _wait_gone(nap)

    assert running <= 64, f"{running} commands ran at once for one jail"


def test_a_bridged_command_dies_when_its_run_ends(tmp_path: Path):
    """Attack: the jailed run starts a long command through the bridge in the background
    (its client detached with `setsid`, output ignored) and ends. Holds: the run's end kills
    the jail, the client's connection ends, and the bridge kills the command."""
    (nap,) = sleep_args(1)
    attack = f"""
        import os, subprocess
        client = [*{json.dumps(list(CLIENT_PREFIX))}, "sleep {nap}"]
        subprocess.Popen(["setsid", *client], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
        print("left it running")
    """
    with jailed_run(tmp_path, bridge=BRIDGE) as (run, work):
        assert run.shell_prefix == list(CLIENT_PREFIX)
        out = inside(run, work, attack)
        assert "left it running" in out
        wait_until(lambda: alive(nap), "the bridged command started")

    assert _wait_gone(nap) == []


def _wait_gone(tag: str, seconds: float = 60) -> list[str]:
    """Host processes holding `tag`, after waiting up to `seconds` for them to go; those
    still there are killed (by pid, only ours)."""
    deadline = time.monotonic() + seconds
    while (left := alive(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), 9)
    return left


# -- resources -------------------------------------------------------------------------------


def test_a_jail_cannot_start_unbounded_processes(tmp_path: Path):
    """Attack: the fork bomb's first second — the jailed run starts 800 sleeping processes.
    Stops it: a per-jail process limit well under that; forks fail (EAGAIN)."""
    (nap,) = sleep_args(1)
    attack = f"""
        import subprocess
        started = 0
        try:
            for _ in range(800):
                subprocess.Popen(["sleep", "{nap}"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
                started += 1
        except OSError as exc:
            print("refused:", exc)
        print(started)
    """
    try:
        with jailed_run(tmp_path) as (run, work):
            out = inside(run, work, attack)
    finally:
        _wait_gone(nap)

    started = int(out.split("-- stderr")[0].split()[-1])
    assert started < 800, "800 processes started in one jail"


def test_a_jail_s_tmp_cannot_hold_the_machine_s_memory(tmp_path: Path):
    """Attack: /tmp inside the jail is RAM; a run that fills it holds that RAM until its jail
    ends. Stops it: a size limit on the jail's /tmp (checked, not filled, here:
    the kernel's own statvfs of that tmpfs)."""
    with jailed_run(tmp_path) as (run, work):
        out = inside(run, work, "import os; s = os.statvfs('/tmp'); print(s.f_blocks * s.f_frsize)")

    size = int(out.split()[0])
    assert size <= 1 << 30, f"the jail's /tmp can hold {size / 2**30:.1f} GiB of RAM"


def test_a_harness_s_stderr_is_not_read_whole_by_the_framework(tmp_path: Path):
    """Attack: the Worker's code in the target writes 256 MB to its stderr, then answers.
    Stops it: the framework keeps a tail of the run's stderr and never holds the
    whole of it (measured: the peak of the framework's Python allocations during the run)."""
    harness = rewritten(
        tmp_path,
        """

        import os as _os
        _honest_run = run


        def run(params, on_step=None):
            block = b"E" * (1 << 20)
            for _ in range(256):
                _os.write(2, block)
            return _honest_run(params, on_step)
        """,
    )
    tracemalloc.start()
    try:
        trajectory = run_target(tmp_path, harness)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert trajectory.status == "success", trajectory.error
    assert trajectory.metadata["stderr_tail"].endswith("EEEE")
    assert peak < 64 << 20, f"the framework held {peak >> 20} MB for a 4000-character tail"


# -- the harness runtime and the run's process -----------------------------------------------


def test_the_runtime_s_hard_links_cannot_be_written_through(tmp_path: Path):
    """Attack: the harness runtime is hard links into the framework's virtual environment
    (same inodes as its `openai` package): the jailed run writes to one in place, chmods it,
    hard-links it into its run folder to write it there, and renames the folder. Holds: the
    runtime is a read-only bind of root-owned files, and a hard link cannot cross mounts."""
    runtime = site_packages()
    target = runtime / "openai" / "__init__.py"
    before = target.read_bytes()
    attack = f"""
        import os
        target = {str(target)!r}
        for name, act in [
            ("append", lambda: open(target, "a").write("pwned = True\\n")),
            ("chmod", lambda: os.chmod(target, 0o666)),
            ("link", lambda: os.link(target, "linked.py")),
            ("rename", lambda: os.rename(os.path.dirname(target), "/tmp/openai")),
            ("utime", lambda: os.utime(target, (0, 0))),
        ]:
            try:
                act()
                print(name, "done")
            except OSError as exc:
                print(name, "refused", exc.strerror)
    """
    with jailed_run(tmp_path) as (run, work):
        out = inside(run, work, attack)

    assert "done" not in out, out
    assert target.read_bytes() == before
    assert not (work / "linked.py").exists()


def test_a_run_s_process_holds_no_descriptor_of_the_framework(tmp_path: Path):
    """Attack: the Worker's code in the target lists its own open descriptors (inherited from
    the fork server) and the modules it imported, looking for a way back to the fork
    server's pipes, the framework's files or its package. Holds: the run's descriptors are
    /dev/null and its own stderr file; nothing imported comes from the framework but the
    fork server's entry script, whose folder the jail does not show."""
    harness = rewritten(
        tmp_path,
        """

        import os as _os
        import sys as _sys


        def _attack(params):
            lines = []
            for fd in sorted(_os.listdir("/proc/self/fd"), key=int):
                try:
                    lines.append(f"fd {fd} {_os.readlink(f'/proc/self/fd/{fd}')}")
                except OSError:
                    pass
            for module in list(_sys.modules.values()):
                path = str(getattr(module, "__file__", None) or "")
                if "flashrsi_dagster" in path or "bastioncorpus" in path:
                    seen = _os.path.exists(_os.path.dirname(path))
                    lines.append(f"module {path} folder-visible={seen}")
            return "\\n".join(lines)
        """,
        REPORT.format(label="fds"),
    )
    trajectory = run_target(tmp_path, harness)
    lines = reported(trajectory, "fds").splitlines()

    fds = {line.split()[2] for line in lines if line.startswith("fd ")}
    # /dev/null, its own stderr file, and the listing's own descriptor (/proc/<pid>/fd)
    others = [p for p in fds if p != "/dev/null" and not p.endswith("/stderr.log")]
    assert all(p.startswith("/proc/") and p.endswith("/fd") for p in others), fds
    modules = [line for line in lines if line.startswith("module ")]
    assert all(line.endswith("folder-visible=False") for line in modules), modules


# -- Claude Code -----------------------------------------------------------------------------


@pytest.fixture
def cli_server() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig()) as running:
        yield running


def test_claude_code_s_shell_cannot_reach_its_launcher_plugin_or_another_run(
    tmp_path: Path, cli_server: OfflineModelServer
):
    """Attack: the jailed CLI's Bash tool goes for what its run folder holds outside the
    jail's writable mounts — the launcher `claude-in-jail` (run as root: rewriting it would
    be root on the host), the plugin (the snapshot's hooks) — and for another run's folder
    with its token, beside it in the framework's scratch folder. Holds: the launcher and
    other runs are not in the jail; the plugin is a read-only mount."""
    pytest.importorskip("claude_agent_sdk")
    neighbour = scratch.mkdtemp("claude-")
    (neighbour / "config").mkdir()
    (neighbour / "config" / "api-key").write_text("frsi-gw-neighbour-token")
    probe = "\n".join(
        [
            'R=$(dirname "$CLAUDE_CONFIG_DIR")',
            'echo "== launcher"; cat "$R/claude-in-jail" 2>&1; echo "#x" >> "$R/claude-in-jail"',
            'echo "== plugin"; touch "$R/plugin/x" 2>&1',
            'echo "== scratch"; ls "$(dirname "$R")"',
            f'echo "== neighbour"; cat {neighbour}/config/api-key 2>&1',
        ]
    )
    cli_server.add_script(
        "cc-probe",
        [
            {"tool_calls": [{"name": "Bash", "arguments": {"command": probe}}]},
            {"text": "done"},
        ],
    )
    role = RoleConfig.model_validate(
        {
            "type": "claude-code",
            "llm": {
                "model": "simulator/script:cc-probe",
                "base_url": cli_server.root_url,
                "api": "anthropic",
                "max_retries": 0,
            },
        }
    )
    work = tmp_path / "work"
    work.mkdir()
    try:
        with target_agent(role) as agent:
            trajectory = agent.run(work, "probe", task_id="t")
    finally:
        shutil.rmtree(neighbour)
    results = [
        block
        for message in trajectory.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    text = json.dumps(results)

    assert trajectory.status == "success", trajectory.error
    assert "== neighbour" in text
    assert "nsenter" not in text and "setpriv" not in text  # the launcher was never read
    assert "neighbour-token" not in text
    assert "Read-only file system" in text
    assert neighbour.name not in text.split("== scratch", 1)[1].split("== neighbour")[0]


# -- a Harbor trial with internet ------------------------------------------------------------


@needs_local_env
def test_a_jailed_harbor_target_cannot_reach_host_loopback_through_a_public_trial(
    tmp_path: Path,
):
    """Attack: the target of a task with internet (`network_mode = public`) sends, through
    the command bridge, a command that connects to a service on the host's loopback (here a
    listener the test opens, standing for Dagster or the run database) and prints what it
    says. Stops it: the trial's network is not the host's."""
    import asyncio

    from harbor.models.task.config import EnvironmentConfig, NetworkPolicy
    from harbor.models.trial.paths import TrialPaths

    from flashrsi_dagster.environments.local_chroot.environment import LocalChrootEnvironment

    banner = unique("host-loopback-only")
    service = socket.create_server(("127.0.0.1", 0))
    port = service.getsockname()[1]

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = service.accept()
                with connection:
                    connection.sendall(banner.encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    task = write_task(tmp_path / "task", task_toml=TASK_TOML.replace("no-network", "public"))
    trial = TrialPaths(tmp_path / "trial")
    trial.mkdir()
    env = LocalChrootEnvironment(
        environment_dir=task / "environment",
        environment_name="task",
        session_id="round2__public__env",
        trial_paths=trial,
        task_env_config=EnvironmentConfig(network_mode="public"),
        network_policy=NetworkPolicy(network_mode="public"),
        work_root=tmp_path / "work",
    )
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -c 200 <&3"
    attack = f"""
        import subprocess
        done = subprocess.run([*{json.dumps(list(CLIENT_PREFIX))}, {probe!r}],
                              capture_output=True, text=True, timeout=20)
        print(done.returncode, done.stdout, done.stderr)
    """

    async def scenario() -> str:
        await env.start(force_build=False)
        try:
            with jailed_run(tmp_path, bridge=env.shell_argv()) as (run, work):
                return inside(run, work, attack)
        finally:
            await env.stop(delete=True)

    try:
        out = asyncio.run(scenario())
    finally:
        service.close()

    assert banner not in out, f"the jailed target read a host loopback service: {out}"
