"""The Dagster instance of a home folder, and the UI on it."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import yaml

from flashrsi_dagster.bounded_yaml import safe_load
from flashrsi_dagster.deployment import postgres
from flashrsi_dagster.deployment.code_server import CodeServer
from flashrsi_dagster.deployment.postgres import StorageSettingError
from flashrsi_dagster.deployment.reaper import Group
from flashrsi_dagster.deployment.run_queue import STARTUP_TIMEOUT, RunLimits, run_queue
from flashrsi_dagster.deployment.storage import CONFIG as STORAGE
from flashrsi_dagster.explorer.links import EXPLORER_URL_ENV
from flashrsi_dagster.lifecycle import Record, Stoppable, say, supervise
from flashrsi_dagster.llm.endpoints import direct_opener
from flashrsi_dagster.orchestration.owner import fail_dead_runs

TELEMETRY_OFF = "telemetry:\n  enabled: false\n"
UNLIMITED_QUEUE = """run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""
"""The run queue homes were given before it had limits (such a file gets them)."""
RUN_QUEUE = run_queue(RunLimits())
"""Dagster's run queue with the default limits (`run_queue.py`)."""
SETTINGS = TELEMETRY_OFF + STORAGE + RUN_QUEUE
"""A new home's file on the default storage."""
GENERATED_BEFORE = (TELEMETRY_OFF, TELEMETRY_OFF + STORAGE + UNLIMITED_QUEUE)
"""What earlier versions wrote: a file that holds exactly one of these is brought up to date
(on the storage it had: SQLite for the second)."""
_QUEUE_TAIL = "  config:\n    dequeue_interval_seconds: 1\n    dequeue_use_threads: true\n"
QUEUE_BEFORE_TAGGING = (
    "run_coordinator:\n  module: dagster._core.run_coordinator\n  class: QueuedRunCoordinator\n"
    + _QUEUE_TAIL
)
"""How the limited run queue began before it tagged what the UI launches (`run_queue.RunQueue`):
a file holding it gets the new class, its limits (edited or not) kept."""
QUEUE_NOW = (
    "run_coordinator:\n  module: flashrsi_dagster.deployment.run_queue\n  class: RunQueue\n"
    + _QUEUE_TAIL
)
MOVED = ("module: flashrsi_dagster.jobs.", "module: flashrsi_dagster.deployment.")
"""This project's storage and queue classes before `jobs/` became `deployment/`: a file naming
the old modules is pointed at the new ones, everything else in it kept."""
WORKSPACE = "workspace.yaml"
"""Where `flashrsi ui` points Dagster at its code server, in the instance's folder (rewritten
at each start: the server's port changes)."""
COMMANDS = "commands"
"""Where, in the instance's folder, each long-running command notes what it started
(`lifecycle.Record`)."""
STORAGES = {"sqlite": STORAGE, "postgres": postgres.CONFIG}
"""The storage sections this module writes, by name."""


def chosen_storage() -> str:
    """`postgres` where `FLASHRSI_POSTGRES_URL` is set, else `sqlite` (the default)."""
    return "postgres" if os.environ.get(postgres.URL_ENV, "").strip() else "sqlite"


def instance_dir(home: Path, limits: RunLimits | None = None) -> Path:
    """The Dagster instance of a home folder (`DAGSTER_HOME`), created on first use with
    telemetry off (nothing leaves the machine), the chosen storage — SQLite with open
    connections (`storage.py`), or PostgreSQL (`postgres.py`) — and a run queue looked at every
    second, with `limits` (default `RunLimits()`). A file an earlier version made
    (`GENERATED_BEFORE`) is given the rest, its storage kept. One made here on the other
    storage is refused (`StorageSettingError`): its run history is not left behind silently.
    A user's own `dagster.yaml` is kept as is."""
    folder = Path(home) / ".dagster"
    settings = folder / "dagster.yaml"
    queue = RUN_QUEUE if limits is None else run_queue(limits)
    made = settings.read_text() if settings.exists() else TELEMETRY_OFF
    if MOVED[0] in made:
        made = made.replace(*MOVED)
        settings.write_text(made)
    if made == TELEMETRY_OFF:
        folder.mkdir(parents=True, exist_ok=True)
        settings.write_text(TELEMETRY_OFF + STORAGES[chosen_storage()] + queue)
        return folder
    _check_storage(settings)
    if made in GENERATED_BEFORE:
        settings.write_text(TELEMETRY_OFF + STORAGE + queue)
    elif QUEUE_BEFORE_TAGGING in made:
        settings.write_text(made.replace(QUEUE_BEFORE_TAGGING, QUEUE_NOW))
    return folder


def _check_storage(settings: Path) -> None:
    try:
        storage = (safe_load(settings.read_text()) or {}).get("storage")
    except (yaml.YAMLError, AttributeError):
        return  # not one of ours: Dagster says what is wrong with it
    made = [k for k, v in STORAGES.items() if storage == yaml.safe_load(v)["storage"]]
    if made and made[0] != chosen_storage():
        raise StorageSettingError(_switch_refused(settings.parent, made[0]))


_SWITCH = {  # what the instance holds, the setting's state, how to stay
    "sqlite": ("in SQLite files under it", "is set", "unset it"),
    "postgres": ("in the PostgreSQL database it names", "is not set", "set it to that URL"),
}


def _switch_refused(folder: Path, made: str) -> str:
    where, state, keep = _SWITCH[made]
    return (
        f"{folder / 'dagster.yaml'}: this home's Dagster instance keeps its runs {where}, but "
        f"{postgres.URL_ENV} {state}; nothing was changed. To stay on {made}, {keep}. To "
        f"switch, move the instance folder aside (`mv {folder} {folder}.{made}`) and run again: "
        f"a new instance is made on the other storage and the experiments carry on from their "
        f"records; the old run history stays readable with DAGSTER_HOME={folder}.{made}"
    )


def persistent_instance(home: Path) -> dg.DagsterInstance:
    """The home's instance, made on first use under an exclusive lock: two commands started
    at once on a new home would otherwise both create and stamp its SQLite storage, and both
    fail (alembic: "more than one head")."""
    (Path(home) / ".dagster").mkdir(parents=True, exist_ok=True)
    with open(Path(home) / ".dagster" / "instance.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        folder = instance_dir(home)
        os.environ["DAGSTER_HOME"] = str(folder)  # the CLI's own process: the instance's home
        return dg.DagsterInstance.get()


def check_instance(home: Path) -> None:
    """Open the home's instance once and let it go: a storage setting that cannot be used
    raises `StorageSettingError` here, before a command writes anything."""
    persistent_instance(home).dispose()


def ui(home: Path, port: int, explorer_port: int | None = None) -> int:
    """`dagster dev` on the experiments' instance, from the folder holding the home, its code
    location served by our code server (run workers forked warm, `code_server.py`), and the
    experiment explorer beside it on `explorer_port` (all on loopback). A stop signal to this
    process alone stops them all within `lifecycle.GRACE`; SIGKILL of it, by their reapers.
    Its start ends what a killed `flashrsi ui` on this home left, and fails its runs."""
    env = ui_environment(home, explorer_port)
    record = Record(Path(env["DAGSTER_HOME"]) / COMMANDS, "ui", f"port {port}", say=say)

    def start(started: list[Stoppable]) -> int:
        _fail_dead_runs(home)
        if explorer_port is not None:
            command = explorer_command(home, explorer_port, port)
            started.append(_child(record, "explorer", command))
            print(f"experiment explorer: http://127.0.0.1:{explorer_port}", flush=True)
        started.append(server := CodeServer(home, env))
        record.add(server.name, server.start_group())
        server.wait_ready()
        workspace = Path(env["DAGSTER_HOME"]) / WORKSPACE
        workspace.write_text(server.workspace())
        dev = _dagster_dev(port, workspace)
        started.append(_child(record, "dagster dev", dev, cwd=Path(home).resolve().parent, env=env))
        _announce_when_up(port, explorer_port)
        return started[-1].leader.wait()

    return supervise(record, start)


def _child(record: Record, name: str, command: list[str], **popen) -> Group:
    """`command` as a process group of its own, dying with this process, noted in `record`."""
    group = Group(command, name, **popen)
    record.add(name, group.leader.pid)
    return group


def _fail_dead_runs(home: Path) -> None:
    instance = persistent_instance(home)
    try:
        for run_id in fail_dead_runs(instance):
            say(f"run {run_id}, whose process had ended, is marked failed")
    finally:
        instance.dispose()


def landing(port: int, explorer_port: int | None) -> str:
    """What `flashrsi ui` prints once the Dagster UI answers, after Dagster's own lines: where
    the experiments are first (the explorer), then the Dagster UI and what it is for."""
    dagster = f"http://127.0.0.1:{port}"
    lines = [f"Dagster UI: {dagster} (launch experiments, runs, asset partitions and checks)"]
    if explorer_port is not None:
        explorer = f"http://127.0.0.1:{explorer_port}"
        lines.insert(
            0,
            f"Your experiments: {explorer} (the experiment explorer: each candidate's tree, "
            "code, diff, trajectories, scores and spend)",
        )
    return "\n".join(["", *(f"== {line}" for line in lines), ""])


def _announce_when_up(port: int, explorer_port: int | None) -> None:
    """Print `landing` once the Dagster UI answers (on a thread; given up after the code
    server's startup bound: Dagster then says what went wrong itself)."""

    def announce() -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            try:
                # loopback: never through the environment's proxy (`endpoints.direct_opener`)
                direct_opener().open(f"http://127.0.0.1:{port}/server_info", timeout=5).close()
            except OSError:
                time.sleep(1)
                continue
            print(landing(port, explorer_port), flush=True)
            return

    threading.Thread(target=announce, name="flashrsi-ui-landing", daemon=True).start()


def ui_environment(home: Path, explorer_port: int | None) -> dict[str, str]:
    """`dagster dev`'s environment: the home's instance, and the explorer's URL that candidate
    assets' metadata links to (`explorer.links`; one the user set, a proxy's, is kept)."""
    env = {**os.environ, "DAGSTER_HOME": str(instance_dir(home))}
    if explorer_port is not None:
        env.setdefault(EXPLORER_URL_ENV, f"http://127.0.0.1:{explorer_port}")
    return env


def explorer_command(home: Path, port: int, dagster_port: int) -> list[str]:
    """The explorer on `home`, its links pointing at the Dagster UI on `dagster_port`."""
    return [
        *(sys.executable, "-m", "flashrsi_dagster.cli", "explorer", "--home", str(home)),
        *("--port", str(port), "--dagster-url", f"http://127.0.0.1:{dagster_port}"),
    ]


def _dagster_dev(port: int, workspace: Path) -> list[str]:
    return [sys.executable, "-m", "dagster", "dev", "-w", str(workspace), "-p", str(port)]
