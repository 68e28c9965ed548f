"""Shared fixtures: real harness folders on disk, a real snapshot store, a planted canary."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from flashrsi_dagster.environments.jail import JailError, require_jails
from flashrsi_dagster.snapshots import SnapshotStore
from tests.docker_engine import code_image, docker_engine, harbor_docker  # noqa: F401 (session)

pytest_plugins = ["tests.dagster_instances"]
"""`dagster_instance`, `home_storage`: every Dagster-instance test on SQLite and PostgreSQL."""


def pytest_configure(config: pytest.Config) -> None:
    """Under `--dist loadfile`, files go to the workers in collection order (not xdist's
    default, most tests first): see `pytest_collection_modifyitems`."""
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False


LONGEST = (
    "deployment/test_algorithms_in_containers.py",  # five examples, a container per step
    "deployment/test_containers.py",  # two rounds in containers, launcher and executor
    "deployment/test_ui.py",  # four experiments, a webserver, a browser
    "deployment/test_parallel_candidates.py",
    "images/test_build.py",  # the image the container tests share: built early
    "deployment/test_workers.py",
    "deployment/test_kill_resume.py",
    "deployment/test_reconnect.py",
    "algorithms/test_unconfined.py",  # every example twice, unconfined and jailed
    "explorer/test_page.py",  # five experiments and a browser
)
"""The test files that take longest (`bench/RESULTS.md`, "test suite wall time"), longest
first; a test file's path relative to `tests/`."""


def _rank(path: Path, slow: set[Path]) -> int:
    """Where a file goes in the workers' queue: the longest first, then the other files
    holding `slow` tests, then the rest."""
    relative = path.relative_to(Path(__file__).parent).as_posix()
    if relative in LONGEST:
        return LONGEST.index(relative)
    return len(LONGEST) + (path not in slow)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a pytest-xdist worker, the longest files first: a long file handed out last would
    run alone at the end while the other worker idles (the longest first, the short ones
    filling in after). A serial run keeps the files' order."""
    if not hasattr(config, "workerinput"):
        return
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _rank(item.path, slow))  # stable: a file's tests stay in order


def _why_no_jails() -> str | None:
    try:
        require_jails()
    except JailError as exc:
        return f"jails cannot run here: {exc}"
    return None


_NO_JAILS = _why_no_jails()
needs_jails = pytest.mark.skipif(_NO_JAILS is not None, reason=_NO_JAILS or "")
"""For tests of the jail itself (bubblewrap and root; `make test` and CI have both)."""

PATIENCE = 300.0
"""How long a test waits for something that takes well under a second on an idle machine: only
a failing test ever waits this long, and a loaded 2-core machine can be 10-30x slower."""


def wait_until(condition: Callable[[], object], what: str, timeout: float = PATIENCE) -> None:
    """Wait for `condition()` to hold; fail naming `what` if it never does."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.05)


def free_port() -> int:
    """A loopback port no one listens on now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Whether a server could listen on `port` now (as servers do, despite connections it
    closed lingering in TIME_WAIT)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def session_processes(session: int) -> list[str]:
    """The command lines of the live processes in `session` (a command started in a session
    of its own: its whole tree, but for what left the session on purpose)."""
    left = []
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[3]) == session:
                left.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, IndexError, ValueError):
            continue
    return left


CANARY_ENV = "FLASHRSI_TEST_CANARY_API_KEY"
CANARY = "canary-7f3b9e21c4d5a6b8-do-not-leak"

VALID = """\
experiment:
  name: exp-1
  seed: 7
agent:
  type: miniagent
  source_dir: harness
  llm:
    model: simulator/target
    base_url: offline
    api_key: ${FLASHRSI_TEST_CANARY_API_KEY}
algorithm:
  name: meta_harness
  max_steps: 4
  worker:
    llm:
      model: simulator/worker
      base_url: offline
benchmark:
  name: text_classification
  split_counts: {train: 10, dev: 5, test: 20}
"""


def anchor_bomb(levels: int, width: int = 9) -> str:
    """A YAML flow mapping whose last key, expanded, holds `width ** levels` items."""
    keys = ["a0: &a0 [x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels + 1)
    ]
    return "{" + ", ".join(keys) + "}"


HARNESS_COMPONENTS = {"code": ["runtime/**"], "prompt": ["prompts/**"], "skill": ["skills/**"]}


def write_harness(
    root: Path, files: dict[str, str | bytes], components: dict | None = None
) -> Path:
    """A harness folder: `components.yaml` plus `files` (str = text, bytes = binary)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "components.yaml").write_text(yaml.safe_dump(components or HARNESS_COMPONENTS))
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


@pytest.fixture
def make_harness(tmp_path: Path) -> Callable[..., Path]:
    def make(files: dict[str, str | bytes] | None = None, name: str = "harness", **kw) -> Path:
        default = {
            "prompts/system.md": "You are a careful classifier.\n",
            "runtime/agent.py": "print('hello')\n",
            "runtime/run.sh": "#!/bin/sh\necho run\n",
            "skills/labels/SKILL.md": "---\ndescription: labels\n---\nUse the labels.\n",
            "README.md": "not declared, never captured\n",
        }
        root = write_harness(tmp_path / name, default if files is None else files, **kw)
        if files is None:
            os.chmod(root / "runtime/run.sh", 0o755)
        return root

    return make


@pytest.fixture
def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store")


@pytest.fixture
def canary(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(CANARY_ENV, CANARY)
    return CANARY


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a valid config and its harness; the working directory elsewhere."""
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return folder


MODULAR_RSI = """\
experiment:
  name: modular-1
agent:
  type: miniagent
  source_dir: harness
  llm: {model: simulator/target, base_url: offline}
algorithm:
  name: modular_rsi
  modules:
    agent_loop: [runtime/agent.py]
    tool_use: [runtime/agent.py, tools/shell.py]
    observation_management: [runtime/agent.py, runtime/tool_result.py]
    context_management: [runtime/agent.py]
    task_completion_detection: [runtime/agent.py]
  worker:
    type: miniagent
    llm: {model: simulator/worker, base_url: offline}
benchmark:
  name: text_classification
  split_counts: {train: 6, dev: 2, test: 4}
"""
"""A valid ModularRSI config: five runtime modules sharing `runtime/agent.py`, over the
harness `modular_harness` writes beside it."""

MODULAR_HARNESS_FILES = {
    "runtime/agent.py": "def run():\n    pass\n",
    "runtime/tool_result.py": "def observe(result):\n    return result\n",
    "tools/shell.py": "def shell(command):\n    return command\n",
    "prompts/system.md": "Classify the text.\n",
    "notes.md": "not declared by the components, so not in the seed snapshot\n",
}


@pytest.fixture
def modular_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a valid ModularRSI config (`modular.yaml`) and its target harness;
    the working directory elsewhere."""
    folder = tmp_path / "configs"
    write_harness(
        folder / "harness",
        MODULAR_HARNESS_FILES,
        {"code": ["runtime/**", "tools/**"], "prompt": ["prompts/**"]},
    )
    (folder / "modular.yaml").write_text(MODULAR_RSI)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return folder
