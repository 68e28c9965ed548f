"""Sabotage, nineteenth red-team pass (issue 22), on the kinds other than the content check and
the endpoint: limits held outside evolvable code and the jail around a joined CLI, experiments
that always recover, names and homes, PostgreSQL, and the smaller items.

Aimed at: a jailed CLI (Claude Code's, started by its SDK in the caller's session through
`environments/joining.py`) and the terminal `flashrsi run` was typed in; the web permission, a
protected limit the gateway holds, asked past through request fields rather than tools;
`--experiment.home` / `--home` paths no file can have, for `validate` and every command that
reads a stored experiment; YAML anchor bombs of breadth (aliases of a long string); `flashrsi
rollback` on a home whose PostgreSQL database is gone, and killed at random moments; `eval
--snapshot` given git revisions that are no snapshot.

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 47 cases, 19 got
through on main (5 holes, all closed): (1) a command of a joined CLI read what the user typed
at the host's terminal through `/dev/tty` and switched off its echo (2): `joining.py` gives the
program no controlling terminal and no terminal among its streams; (2) a home path with a part
past NAME_MAX or past PATH_MAX ended `validate` and the five stored-experiment commands in a
traceback (7): refused in one line; (3) nine thousand aliases of a 100 KB string, a 137 KB
config, held `validate` for ten minutes and gigabytes (1): `bounded_yaml.MAX_ALIAS_CHARS`;
(4) `flashrsi rollback` with its database gone ended in a traceback (1): one line, as `run`
and `resume`; (5) OpenAI chat's `web_search_options`, xAI's `search_parameters` and
OpenRouter's `web` plugin were relayed, the provider searching past the jail and the role's
web, and were valid in `llm.extra_body` (8): hosted network tools, refused by the gateway and
at validate. Held: fourteen calls at the jail's limits not probed before; a roll-back under
PostgreSQL sessions ended every 0.1 s; one killed at four random moments and asked again (done
once, the chain whole, nothing alive); eight git revisions given as a snapshot; an honest
plugin.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import subprocess
import sys
import termios
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.bounded_yaml import MAX_ALIAS_CHARS
from flashrsi_dagster.cli import main
from flashrsi_dagster.deployment.postgres import URL_ENV
from flashrsi_dagster.environments.jail import Jail, Mount
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime
from flashrsi_dagster.gateway import Gateway
from tests.conftest import PATIENCE, VALID, needs_jails
from tests.dagster_instances import plain_url
from tests.deployment.test_kill_resume import SEED, _kill_after, _outcome, _wait_until_gone
from tests.deployment.test_parallel_candidates import EXAMPLE
from tests.environments.test_jail import ENV
from tests.postgres import drop, fresh_database, needs_postgres, terminate
from tests.sabotage.test_agent_adapters import _grant, _post

# -- a joined CLI and the terminal it was started from ----------------------------------------

TYPED = b"typed-by-the-user\n"
READ_THE_TERMINAL = """
import json, os, termios
found = {}
def tried(name, fd):
    try:
        os.set_blocking(fd, False)
        found[name] = os.read(fd, 100).decode()
    except OSError as exc:
        found[name] = f"errno {exc.errno}"
    try:  # the user's echo switched off: it stays off after the run
        attrs = termios.tcgetattr(fd)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        found[name + " echo"] = "switched off"
    except termios.error as exc:
        found[name + " echo"] = f"errno {exc.args[0]}"
try:
    tried("/dev/tty", os.open("/dev/tty", os.O_RDWR))
except OSError as exc:
    found["/dev/tty"] = f"errno {exc.errno}"
tried("fd 0", 0)
tried("fd 2", 2)
print("FOUND", json.dumps(found))
"""


@pytest.fixture(scope="module")
def from_a_terminal(tmp_path_factory) -> tuple[dict[str, str], bool]:
    """A jailed program started through `Jail.enter_argv` (as Claude Code's CLI is) by a
    process whose controlling terminal, standard input and error are a terminal the user has
    typed a line into: what the program read or changed there, and whether the terminal's
    echo is still on after it."""
    work = tmp_path_factory.mktemp("round19-tty")
    os.chown(work, JAIL_UID, JAIL_UID)
    (work / "read.py").write_text(READ_THE_TERMINAL)
    terminal, side = os.openpty()
    try:
        with Jail(python_runtime().with_mounts(Mount(work, writable=True))) as jail:
            argv = jail.enter_argv([f"{sys.base_prefix}/bin/python3", "-I", "read.py"], ENV, work)
            os.write(terminal, TYPED)  # typed ahead, waiting in the terminal's input
            result = subprocess.run(  # `setsid -c`: the terminal controls the new session
                ["setsid", "-c", *argv],
                stdin=side,
                stdout=subprocess.PIPE,
                stderr=side,
                text=True,
                timeout=PATIENCE,
            )
        echo = bool(termios.tcgetattr(side)[3] & termios.ECHO)
    finally:
        os.close(side)
        os.close(terminal)
    assert "FOUND " in result.stdout, result
    return json.loads(result.stdout.split("FOUND ", 1)[1]), echo


@needs_jails
@pytest.mark.parametrize("way", ["/dev/tty", "fd 0", "fd 2"])
def test_a_joined_cli_reads_nothing_the_user_types_at_the_host_s_terminal(from_a_terminal, way):
    """Attack: a command of a jailed CLI (Claude Code's SDK starts the CLI in the caller's
    session, its stderr the caller's) reads the host's terminal through `/dev/tty` or an
    inherited standard stream: what the user types while `flashrsi run` runs (a password
    typed ahead included). Got through on main through `/dev/tty` (the line typed was read:
    the launcher kept the caller's session, and only `TIOCSTI` was filtered). Stops it:
    `joining.py` gives up the program's controlling terminal (`TIOCNOTTY`) and a
    terminal among its standard streams is replaced by `/dev/null`."""
    found, _ = from_a_terminal

    assert TYPED.decode() not in found[way], found


@needs_jails
def test_a_joined_cli_leaves_the_host_s_terminal_as_it_was(from_a_terminal):
    """Attack: the same program switches off the terminal's echo (any `termios` change: raw
    mode, the line discipline), which stays so after the run: the user's next password is
    shown, or the shell unusable. Got through on main (echo off after the run, through
    `/dev/tty`, fd 0 and fd 2). Stops it: the same; the program holds no terminal."""
    found, echo = from_a_terminal

    assert echo, found


# -- the filter and the kernel's limits, on calls not probed before ---------------------------

LIMITS_PROBE = """
import ctypes, errno, json, os, resource
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    if libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args]) >= 0:
        return "ALLOWED"
    return errno.errorcode.get(ctypes.get_errno(), "?")
def raised(limit):
    soft, hard = resource.getrlimit(limit)
    try:
        resource.setrlimit(limit, (hard * 2, hard * 2))
        return "ALLOWED"
    except (ValueError, OSError):
        return "EPERM"
buf = ctypes.addressof(ctypes.create_string_buffer(128))
found = {
    "unshare(CLONE_NEWTIME)": call(272, 0x80),
    "unshare(CLONE_NEWCGROUP)": call(272, 0x02000000),
    "unshare(CLONE_NEWUSER), high bits set": call(272, 0x10000000 | 1 << 32),
    "io_uring_enter": call(426, 0, 0, 0, 0, 0, 0),
    "io_uring_register": call(427, 0, 0, 0, 0),
    "lookup_dcookie": call(212, 0, 0, 0),
    "vhangup": call(153),
    "ioprio_set, the real-time class": call(251, 1, 0, 1 << 13),
    "setpriority -20": call(141, 0, 0, -20 & 0xFFFFFFFF),
    "prlimit64 on the jail's init": call(302, 1, 7, 0, buf),
    "ptrace(PTRACE_TRACEME)": call(101, 0, 0, 0, 0),
    "RLIMIT_FSIZE raised past its 1 GiB": raised(resource.RLIMIT_FSIZE),
    "RLIMIT_NPROC raised": raised(resource.RLIMIT_NPROC),
}
try:
    os.open("/dev/userfaultfd", os.O_RDWR)
    found["/dev/userfaultfd"] = "OPENED"
except OSError as exc:
    found["/dev/userfaultfd"] = errno.errorcode[exc.errno]
print("FOUND", json.dumps(found))
"""
LIMITS_REFUSED = {
    "unshare(CLONE_NEWTIME)": ("EPERM",),
    "unshare(CLONE_NEWCGROUP)": ("EPERM",),
    "unshare(CLONE_NEWUSER), high bits set": ("EPERM",),
    "io_uring_enter": ("EPERM",),
    "io_uring_register": ("EPERM",),
    "lookup_dcookie": ("EPERM", "ENOSYS"),
    "vhangup": ("EPERM",),
    "ioprio_set, the real-time class": ("EPERM",),
    "setpriority -20": ("EACCES", "EPERM"),
    "prlimit64 on the jail's init": ("EPERM",),
    "ptrace(PTRACE_TRACEME)": ("EPERM",),
    "RLIMIT_FSIZE raised past its 1 GiB": ("EPERM",),
    "RLIMIT_NPROC raised": ("EPERM",),
    "/dev/userfaultfd": ("ENOENT", "EACCES", "EPERM"),
}


@pytest.fixture(scope="module")
def limits_probed(tmp_path_factory) -> dict[str, str]:
    """The probe run once by a program joined to a real jail (as a CLI is), as the jail user."""
    work = tmp_path_factory.mktemp("round19-limits")
    os.chown(work, JAIL_UID, JAIL_UID)
    (work / "probe.py").write_text(LIMITS_PROBE)
    with Jail(python_runtime().with_mounts(Mount(work, writable=True))) as jail:
        argv = jail.enter_argv([f"{sys.base_prefix}/bin/python3", "-I", "probe.py"], ENV, work)
        result = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
    assert "FOUND " in result.stdout, result
    return json.loads(result.stdout.split("FOUND ", 1)[1])


@needs_jails
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe's numbers are x86_64's")
@pytest.mark.parametrize("attempt", LIMITS_REFUSED)
def test_a_jailed_process_gets_none_of_the_limits_calls_not_probed_before(limits_probed, attempt):
    """Attack: a hostile evolved harness reaches for what rounds 9-13 did not call: the
    namespaces of time and of cgroups, a user namespace with high bits set, io_uring by its
    other two calls, the `/dev/userfaultfd` device (a path the filter cannot see),
    `lookup_dcookie`, `vhangup`, real-time I/O priority, a negative nice value, its jail's
    init's limits, `PTRACE_TRACEME`, and its own hard limits raised (the 1 GiB file size the
    launcher sets, the process count). Held on main: each is refused by the filter, the
    kernel, or the jail's `/dev`."""
    assert limits_probed[attempt] in LIMITS_REFUSED[attempt], limits_probed


# -- a home that can name no folder ------------------------------------------------------------

LONG_PARTS = {
    "a part past NAME_MAX (255 bytes)": "a" * 300,
    "a path past PATH_MAX (4096 bytes)": "a/" * 2100,
}


@pytest.mark.parametrize("shape", LONG_PARTS)
def test_a_config_s_home_that_names_no_folder_is_refused_at_validate(
    shape, tmp_path, monkeypatch, capsys
):
    """Attack: `--experiment.home` with a part longer than a file name may be, or a path
    longer than a path may be (as `/proc/x` before it: a home that cannot be one). Got
    through on main: `validate` (and `run`, `init`, `eval`) ended in a traceback
    (`OSError: [Errno 36] File name too long`, from the dry run's own `is_symlink`). Stops
    it: `validation.home_problems` reads a failing stat as the home's problem, one line."""
    _config_folder(tmp_path, monkeypatch)
    home = str(tmp_path / LONG_PARTS[shape])

    code = main(["validate", "--config", "exp.yaml", "--experiment.home", home])

    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: experiment.home: "), err
    assert len(err.splitlines()) == 1 and "File name too long" in err, err


STORED = {
    "resume": ["resume", "--experiment", "x"],
    "finalize": ["finalize", "--experiment", "x"],
    "rollback": ["rollback", "--experiment", "x", "--to", "abc"],
    "archive-node": ["archive-node", "--experiment", "x", "--node", "r001.w1c1", "--reason", "r"],
    "compare": ["compare", "--experiment", "x"],
}


@pytest.mark.parametrize("command", STORED)
def test_a_stored_experiment_s_home_that_names_no_folder_is_refused(command, tmp_path, capsys):
    """Attack: the same home given to the commands that read a stored experiment by name.
    Got through on main: each ended in a traceback (`OSError: [Errno 36]`). Stops it: the
    CLI checks `--home` once, as it checks `--experiment`, before any command reads it."""
    home = str(tmp_path / LONG_PARTS["a part past NAME_MAX (255 bytes)"])

    code = main([*STORED[command], "--home", home])

    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --home: "), err
    assert len(err.splitlines()) == 1 and "File name too long" in err, err


def _config_folder(tmp_path: Path, monkeypatch, config: str = VALID) -> None:
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    shutil.copytree(HARNESS, tmp_path / "harness")
    (tmp_path / "exp.yaml").write_text(config)
    monkeypatch.chdir(tmp_path)


# -- YAML aliases of long scalars --------------------------------------------------------------


def _aliased(text: str, times: int) -> str:
    """`VALID` with `agent.llm.extra_body` holding `times` aliases of one anchored `text`."""
    aliases = ", ".join(["*s"] * times)
    body = f'    extra_body:\n      metadata:\n        s: &s "{text}"\n        l: [{aliases}]\n'
    return VALID.replace("    base_url: offline\n", "    base_url: offline\n" + body, 1)


def test_aliases_of_a_long_string_are_refused_at_validate(tmp_path, monkeypatch, capsys):
    """Attack: an anchor bomb of breadth, not depth: nine thousand aliases of one 100 KB
    string (a 137 KB config), within the bound on the nodes aliases add. Got through on
    main: `validate` ran past two minutes and two gigabytes, writing 900 MB out (and `run`
    would store it in `run_meta.json` and send it with every model call). Stops it:
    `bounded_yaml` bounds the characters aliases add (`MAX_ALIAS_CHARS`) as it bounds their
    nodes: refused at its line, one error."""
    _config_folder(tmp_path, monkeypatch, _aliased("x" * 100_000, 9_000))

    code = main(["validate", "--config", "exp.yaml"])

    err = capsys.readouterr().err
    assert code == 2 and "anchor bomb" in err and f"{MAX_ALIAS_CHARS}" in err, err[-2000:]


def test_a_few_aliases_of_a_long_string_still_load(tmp_path, monkeypatch, capsys):
    """Not an attack: a long text anchored once and repeated a few times (a prompt shared by
    roles) loads as before."""
    _config_folder(tmp_path, monkeypatch, _aliased("y" * 20_000, 5))

    code = main(["validate", "--config", "exp.yaml"])

    assert code == 0, capsys.readouterr().err[-2000:]


# -- PostgreSQL: a roll-back on a home whose database is gone ---------------------------------


@pytest.mark.slow
@needs_postgres
def test_a_rollback_whose_database_is_gone_says_so_in_one_line(tmp_path):
    """Attack: the home's PostgreSQL database lost for good (dropped, a failover to a server
    without it) between an experiment's run and an operator's `flashrsi rollback`. Got
    through on main: a Python traceback ending in `StorageSettingError` (exit 1), where
    `run`, `resume` and `finalize` say the same cause in one `error:` line. Stops it:
    `_rollback` reports it as they do (exit 2, nothing restored)."""
    home = tmp_path / "home"
    with fresh_database("flashrsi_r19") as url:
        environment = {**os.environ, URL_ENV: plain_url(url)}
        seed = _small_run(environment, home)
        database = make_url(url).database
        drop(url)
        to = ["--experiment", "meta-harness-demo", "--to", seed]
        back = _flashrsi(environment, "rollback", *to, "--home", str(home))

    assert back.returncode == 2 and "Traceback" not in back.stderr, back.stderr[-3000:]
    last = back.stderr.splitlines()[-1]
    assert last.startswith("error: the Dagster instance's database ") and database in last, last


@pytest.mark.slow
@needs_postgres
def test_a_rollback_whose_connections_are_ended_again_and_again_is_done(tmp_path):
    """Attack: the home's PostgreSQL sessions ended (`pg_terminate_backend`) every 0.1 s
    while `flashrsi rollback` reads the experiment's runs and restores the seed, as a restart
    or an idle timeout ends them. Held on main: the storage reconnects; the roll-back is done
    and recorded once."""
    home = tmp_path / "home"
    with fresh_database("flashrsi_r19") as url:
        environment = {**os.environ, URL_ENV: plain_url(url)}
        seed = _small_run(environment, home)
        stop = threading.Event()
        ender = threading.Thread(target=lambda: _ending(url, stop), daemon=True)
        ender.start()
        try:
            to = ["--experiment", "meta-harness-demo", "--to", seed]
            back = _flashrsi(environment, "rollback", *to, "--home", str(home))
        finally:
            stop.set()
            ender.join()

    assert back.returncode == 0, back.stdout + back.stderr[-3000:]
    entries = [e for e in _ledger(home / "meta-harness-demo") if e["decision"] == "rollback"]
    assert [e["candidate"]["snapshot_id"] for e in entries] == [seed]


def _small_run(environment: dict[str, str], home: Path) -> str:
    """A small Meta-Harness experiment run to its end in `home`: its seed's snapshot id."""
    small = ["--benchmark.limit", "2", "--algorithm.max_steps", "1"]
    run = _flashrsi(
        environment, "run", "--config", str(EXAMPLE), "--experiment.home", str(home), *small
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return _ledger(home / "meta-harness-demo")[-1]["baseline"]["snapshot_id"]


def _ending(url: str, stop: threading.Event) -> None:
    while not stop.wait(0.1):
        terminate(url)


def _flashrsi(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    flashrsi = str(Path(sys.executable).parent / "flashrsi")
    return subprocess.run(
        [flashrsi, *args], env=environment, capture_output=True, text=True, timeout=900
    )


def _ledger(folder: Path) -> list[dict]:
    lines = (folder / "records" / "ledger.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


# -- the provider's web search asked for by a request field, not a tool -----------------------

SEARCH_FIELDS = {
    "OpenAI chat's `web_search_options`": {"web_search_options": {}},
    "OpenAI chat's `web_search_options` with a context size": {
        "web_search_options": {"search_context_size": "high"}
    },
    "OpenRouter's web plugin": {"plugins": [{"id": "web", "max_results": 5}]},
    "xAI's live search": {"search_parameters": {"mode": "on"}},
}


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway() as running:
        yield running


@pytest.mark.parametrize("field", SEARCH_FIELDS)
def test_a_provider_search_asked_by_a_request_field_is_refused(gateway, field):
    """Attack: the harness (evolvable code) asks the provider to search the web for it
    through a request field rather than a tool: OpenAI chat's `web_search_options`,
    OpenRouter's `plugins: [{id: web}]`, xAI's `search_parameters`. The provider reaches the
    network past the jail and the role's web (`web.enabled` off): the benchmark's answers
    are a search away. Got through on main: the gateway refused hosted tools only by a
    tool's `type` and `mcp_servers`, and forwarded these. Stops it: the gateway refuses them
    as hosted network tools (403, `denied`), and `llm.extra_body` may not set them."""
    token = _grant(gateway, api="chat")
    body = {"model": "simulator/echo", "messages": [{"role": "user", "content": "hi"}]}

    answer = _post(gateway, token, "chat/completions", {**body, **SEARCH_FIELDS[field]})

    assert answer.status_code == 403, answer.text
    assert _post(gateway, token, "chat/completions", body).is_success
    assert len(gateway.revoke(token).denied) == 1


def test_honest_plugins_still_pass(gateway):
    """Not an attack: an OpenRouter plugin that reaches no network (its PDF parser) is
    relayed as before."""
    token = _grant(gateway, api="chat")
    body = {"model": "simulator/echo", "messages": [{"role": "user", "content": "hi"}]}

    answer = _post(gateway, token, "chat/completions", {**body, "plugins": [{"id": "file-parser"}]})

    assert answer.is_success, answer.text


@pytest.mark.parametrize("field", SEARCH_FIELDS)
def test_a_provider_search_in_extra_body_is_refused_at_validate(
    field, tmp_path, monkeypatch, capsys
):
    """Attack: the same fields in the role's `llm.extra_body`, merged into every request:
    the gateway now refuses every call, every task an error. Got through on main (valid,
    and every call relayed to the provider's search). Stops it: `request_fields` refuses
    them at validate, one line naming the key."""
    _config_folder(tmp_path, monkeypatch)
    given = json.dumps(SEARCH_FIELDS[field])

    code = main(["validate", "--config", "exp.yaml", "--agent.llm.extra_body", given])

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "agent.llm.extra_body" in line]
    assert code == 2 and len(lines) == 1 and "hosted network tool" in lines[0], err


# -- a roll-back killed at random moments ------------------------------------------------------

ROLLBACK_KILLS = 4
"""Moments a roll-back is killed at, each on a fresh copy of the finished experiment."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A home where a small Meta-Harness experiment ran to its end (its promotion adopted a
    candidate, the seed the baseline before it); copy it, never change it."""
    home = tmp_path_factory.mktemp("round19-finished") / "home"
    small = ["--benchmark.limit", "2", "--algorithm.max_steps", "1"]
    _flashrsi_ok("run", "--config", str(EXAMPLE), "--experiment.home", str(home), *small)
    return home


@pytest.mark.slow
def test_a_rollback_killed_at_random_moments_is_done_once_when_asked_again(finished, tmp_path):
    """Attack: `flashrsi rollback` (to the seed of a finished Meta-Harness experiment) killed
    with SIGKILL at a seeded random moment of its run (reading the ledger, verifying the
    snapshots, appending its entry), then asked again. Held on main: nothing of it is alive
    2 s later, the records' chain verifies, and the roll-back asked again ends with exactly
    one `rollback` entry (or refuses, the seed being the baseline already, when the killed
    one had written it): none lost, none twice."""
    seed = _ledger(finished / "meta-harness-demo")[-1]["baseline"]["snapshot_id"]
    draw = random.Random(f"{SEED}:rollback")
    for moment in range(ROLLBACK_KILLS):
        home = tmp_path / f"killed-{moment}"
        shutil.copytree(finished, home, symlinks=True)
        asked = ["rollback", "--experiment", "meta-harness-demo", "--to", seed, "--home", str(home)]
        delay = draw.uniform(0, 4)
        session, printed, _ = _kill_after(asked, 0, delay)
        told = f"FLASHRSI_KILL_SEED={SEED}, killed after {delay:.2f} s\n{printed}"
        assert _wait_until_gone(session, home) == [], told
        again = _flashrsi_ok(*asked, allowed=(0, 2))
        assert again.returncode == 0 or "the baseline already" in again.stderr, told + again.stderr
        _outcome(home)  # the records' chain verifies, the experiment reads back
        entries = [e for e in _ledger(home / "meta-harness-demo") if e["decision"] == "rollback"]
        assert [e["candidate"]["snapshot_id"] for e in entries] == [seed], told


GIT_REVISIONS = ["HEAD", "{snapshot}^", "{snapshot}~1", ":/seed", "@", "refs/snapshots/{full}",
                 "{tree}", "{blob}"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("revision", GIT_REVISIONS)
def test_eval_of_a_git_revision_that_is_no_snapshot_is_refused_leaving_nothing(
    finished, tmp_path, revision
):
    """Attack: `eval --snapshot` given what git's `rev-parse` reads but no snapshot id is (a
    ref, a parent, a message search, a tree or a blob of a snapshot): evaluated, it would be
    some other tree, or crash midway leaving records. Held on main: refused in one line
    (exit 2), no file added to the home."""
    home = tmp_path / "home"
    shutil.copytree(finished, home, symlinks=True)
    store = home / "meta-harness-demo" / "snapshots"
    full = _ledger(home / "meta-harness-demo")[-1]["candidate"]["snapshot_id"]
    tree = _git(store, "rev-parse", f"{full}^{{tree}}")
    blob = _git(store, "ls-tree", "-r", full).split()[2]
    given = revision.format(snapshot=full[:12], full=full, tree=tree, blob=blob)
    before = sorted(p for p in home.rglob("*") if p.is_file())

    asked = ["--config", str(EXAMPLE), "--experiment.home", str(home), "--split", "dev"]
    done = _flashrsi(
        dict(os.environ), "eval", *asked, "--benchmark.limit", "2", "--snapshot", given
    )

    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert sorted(p for p in home.rglob("*") if p.is_file()) == before


def _git(store: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(store), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _flashrsi_ok(*args: str, allowed: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    done = _flashrsi(dict(os.environ), *args)
    assert done.returncode in allowed, done.stdout + done.stderr
    return done
