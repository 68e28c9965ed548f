"""Activation beacons: evolved harness code calls `activation_beacon("<mechanism>")` where its
mechanism acts, and the trajectory's `metadata["beacons"]` counts the names that fired. End to
end through real MiniAgent runs (the entry subprocess, jailed and not, the offline simulator)
on harness copies with beacons inserted; the name rules in-process."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import tokenize
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import BEACON_NAME, HARNESS, MAX_BEACONS
from flashrsi_dagster.agents.miniagent.launcher import ENTRY
from flashrsi_dagster.agents.roles import harness_components
from flashrsi_dagster.algorithms.evolver.beacon import beacon_calls
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status
from tests.conftest import CANARY_ENV, PATIENCE, wait_until

AGENT, SHELL = "runtime/agent.py", "tools/shell.py"
IMPORT = "from runtime.beacon import activation_beacon\n"
ANSWERED = (AGENT, "    return reply.text\n", "    activation_beacon('answered')\n")
"""On the answer's path in `final_answer`: taken once per completed run."""
UNKNOWN_TOOL = (
    AGENT,
    '        output = error_text(f"unknown tool',
    "        activation_beacon('unknown_tool')\n",
)
"""On `use_tool`'s unknown-tool branch: never taken by a script that calls known tools."""
SHELL_AND_THREAD = (
    SHELL,
    '        command = string_arg(arguments, "command")\n',
    "        activation_beacon('shell')\n"
    "        worker = threading.Thread(target=activation_beacon, args=('thread',))\n"
    "        worker.start()\n"
    "        worker.join()\n",
)
"""At the start of the shell tool's run, once in the tool and once from a thread of its own."""


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


def _harness(folder: Path, *edits: tuple[str, str, str]) -> Path:
    """A copy of the built-in harness; each edit (path, anchor, code) puts `code` before the
    one line starting with `anchor`, the file importing `activation_beacon`."""
    shutil.copytree(HARNESS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    future = "from __future__ import annotations\n"
    for path, anchor, code in edits:
        source = (folder / path).read_text()
        assert source.count(anchor) == 1, anchor
        if IMPORT not in source:
            source = source.replace(future, future + IMPORT)
        (folder / path).write_text(source.replace(anchor, code + anchor))
    return folder


def _role(server, script: str, **fields) -> RoleConfig:
    llm = {"model": f"simulator/script:{script}", "base_url": server.url, "max_retries": 0}
    return RoleConfig.model_validate({"type": "miniagent", "llm": llm, **fields})


def _shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def _run(server, harness: Path, work: Path, script: list, confinement=None, role=None):
    server.add_script(harness.name, script)
    role = role or _role(server, harness.name)
    with target_agent(role, harness, confinement=confinement) as agent:
        return agent.run(work, "do it", task_id="t")


@pytest.mark.parametrize("jailed", [True, False], ids=["jailed", "unjailed"])
def test_beacons_on_paths_taken_are_counted_in_first_fired_order(server, tmp_path, jailed):
    harness = _harness(tmp_path / f"taken-{jailed}", ANSWERED, UNKNOWN_TOOL, SHELL_AND_THREAD)
    confinement = None if jailed else Confinement(jailed=False)

    trajectory = _run(
        server, harness, tmp_path, [_shell("echo one"), _shell("echo two"), "done"], confinement
    )

    assert trajectory.status == Status.SUCCESS, trajectory.error
    beacons = trajectory.metadata["beacons"]
    assert beacons == {"shell": 2, "thread": 2, "answered": 1}  # a tool's thread counts too
    assert list(beacons) == ["shell", "thread", "answered"]
    assert "unknown_tool" not in beacons


def test_a_beacon_on_a_path_not_taken_records_nothing(server, tmp_path):
    harness = _harness(tmp_path / "not-taken", UNKNOWN_TOOL)

    trajectory = _run(server, harness, tmp_path, [_shell("echo one"), "done"])

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert "beacons" not in trajectory.metadata  # absent: no beacon fired in this run


def test_an_invalid_beacon_name_fails_the_run_with_a_value_error(server, tmp_path):
    bad = (AGENT, ANSWERED[1], "    activation_beacon('two words')\n")
    harness = _harness(tmp_path / "bad-name", bad)

    trajectory = _run(server, harness, tmp_path, ["done"])

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "ValueError"
    assert "'two words' is not a beacon name" in trajectory.error.message


def test_a_beacon_named_like_a_secret_is_dropped_not_recorded(server, tmp_path, canary):
    names = ["ok", canary, "sk-" + "a" * 24]  # a known secret, and a key shape
    fire = "".join(f"    activation_beacon({name!r})\n" for name in names)
    harness = _harness(tmp_path / "secret", (AGENT, ANSWERED[1], fire))
    role = _role(server, harness.name)
    role.llm.api_key = "${" + CANARY_ENV + "}"

    trajectory = _run(server, harness, tmp_path, ["done"], role=role)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.metadata["beacons"] == {"ok": 1}
    assert canary not in trajectory.model_dump_json()


def test_the_adapter_keeps_only_well_formed_beacons_whatever_the_harness_reports(server, tmp_path):
    reported = (
        '{"ok": 2, "two words": 1, "negative": -1, "flag": True, "half": 1.5, '
        '**{f"n{i}": 1 for i in range(100)}}'
    )
    hostile = (AGENT, "        if llm is not None:\n", f"        result['beacons'] = {reported}\n")
    harness = _harness(tmp_path / "hostile", hostile)

    trajectory = _run(server, harness, tmp_path, ["done"])

    beacons = trajectory.metadata["beacons"]
    assert len(beacons) == MAX_BEACONS
    assert list(beacons)[:3] == ["ok", "n0", "n1"] and beacons["ok"] == 2


def test_beacons_of_finished_turns_survive_a_kill(server, tmp_path):
    harness = _harness(tmp_path / "killed", SHELL_AND_THREAD)
    work, output = tmp_path / "work", tmp_path / "result.json"
    work.mkdir()
    server.add_script(
        "killed", [_shell("echo one"), _shell("echo $$ > pgid; touch running; sleep 300")]
    )
    payload = {
        "output": str(output),
        "files_dir": str(harness),
        "working_dir": str(work),
        "instruction": "wait",
        "llm": {"model": "simulator/script:killed", "base_url": server.url, "api_key": "x"},
    }
    entry = subprocess.Popen(
        [sys.executable, str(ENTRY)], stdin=subprocess.PIPE, start_new_session=True
    )
    entry.stdin.write(json.dumps(payload).encode())
    entry.stdin.close()
    try:
        wait_until((work / "running").exists, "the second turn's command started")
        os.killpg(entry.pid, signal.SIGKILL)  # no chance to save: only the turns' saves remain
        entry.wait(timeout=PATIENCE)
    finally:
        pgid = work / "pgid"  # the command's own group, which the kill above did not reach
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.killpg(int(pgid.read_text()), signal.SIGKILL)

    result = json.loads(output.read_text())
    assert result["status"] == "running"
    assert result["beacons"] == {"shell": 1, "thread": 1}  # the second turn's firing is lost


def test_the_seed_snapshot_carries_the_beacon_module_as_protected_code(server, store, tmp_path):
    components = harness_components(_role(server, "unused"))
    seed = store.create_seed(HARNESS, components)
    assert components.role_of("runtime/beacon.py") == "code"
    assert b"def activation_beacon" in store.read_file_at(seed, "runtime/beacon.py")

    checkout = store.check_out(seed, tmp_path / "child")
    module = checkout / "runtime/beacon.py"
    module.write_text(module.read_text() + "# the instrument Gate-b reads\n")
    outcome = store.commit_child(seed, checkout, message="beacon")
    assert outcome.status == "refused" and "evaluator-protected" in (outcome.reason or "")


# -- the name rules, in-process ----------------------------------------------------------


@pytest.fixture
def beacon(harness, monkeypatch):
    """The harness's `runtime.beacon` with an empty registry of its own."""
    module = importlib.import_module("runtime.beacon")
    monkeypatch.setattr(module, "_counts", {})
    return module


@pytest.mark.parametrize("name", ["", "two words", "a/b", "x" * 65, 'q"', 5, None])
def test_a_name_outside_the_alphabet_or_too_long_raises(beacon, name):
    with pytest.raises(ValueError, match="not a beacon name"):
        beacon.activation_beacon(name)
    assert beacon.fired() == {}


@pytest.mark.parametrize(
    "name", ["x", "retry_on_empty", "tool:shell.v2-b", "x" * 64, "x" * 65, "two words"]
)
def test_the_guard_the_harness_and_the_adapter_agree_on_names(beacon, name):
    accepted = bool(beacon.NAME.fullmatch(name))
    call = f'activation_beacon("{name}")\n'
    tokens = list(tokenize.generate_tokens(io.StringIO(call).readline))
    assert bool(beacon_calls(tokens)) is accepted
    assert bool(BEACON_NAME.fullmatch(name)) is accepted
    assert beacon.MAX_NAMES == MAX_BEACONS


def test_past_the_cap_new_names_are_ignored_and_known_ones_still_count(beacon):
    for i in range(beacon.MAX_NAMES + 10):
        beacon.activation_beacon(f"n{i}")
    beacon.activation_beacon("n0")

    fired = beacon.fired()
    assert len(fired) == beacon.MAX_NAMES and fired["n0"] == 2
    assert f"n{beacon.MAX_NAMES}" not in fired


def test_firing_from_many_threads_loses_no_count(beacon):
    def fire() -> None:
        for _ in range(1000):
            beacon.activation_beacon("busy")

    threads = [threading.Thread(target=fire) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert beacon.fired() == {"busy": 8000}
