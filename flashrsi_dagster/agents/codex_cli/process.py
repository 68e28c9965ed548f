"""One `codex exec` process: started (inside the run's jail when there is one) with exactly
the run's environment, waited for under the role's timeout, and stopped with its tools.

Every process of a run inherits its `CODEX_HOME`, which names the run's private folder, so
the run's processes (and their descendants) are found by that entry (`stop_processes`), jailed
or not; a jailed run's leftovers die with the jail anyway.
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from flashrsi_dagster.agents.claude_code.processes import stop_processes
from flashrsi_dagster.agents.codex_cli.home import RunHome
from flashrsi_dagster.environments.confinement import BASE_ENV, AgentRun

GRACE_SECONDS = 2.0
"""Between SIGTERM (the CLI ends its tools' processes) and SIGKILL."""


@dataclass(eq=False)  # one per run, kept in a set
class CodexProcess:
    popen: subprocess.Popen
    marker: bytes
    timed_out: bool = False
    cancelled: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self, timeout: float) -> int | None:
        """The exit code; at `timeout` the run is stopped (`timed_out`) and None returned."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.stop()
            return None
        finally:
            stop_processes(self.marker, GRACE_SECONDS)  # what it left running in background

    def stop(self) -> None:
        """SIGTERM the run's processes, SIGKILL what outlives the grace period. Idempotent."""
        with self._lock:
            stop_processes(self.marker, GRACE_SECONDS)
            if self.popen.poll() is None:  # the launcher itself (nsenter) if still there
                self.popen.kill()
            self.popen.wait()


def start(argv: list[str], env: dict[str, str], cwd: Path, run: RunHome, confined: AgentRun):
    """Start the CLI: `argv` run as the jail user inside the run's jail when it has one; its
    stdin the prompt file, its stdout and stderr files outside every jail mount."""
    if confined.jail is not None:
        argv, env = confined.jail.enter_argv(argv, env, cwd), dict(BASE_ENV)
    with (
        run.prompt.open("rb") as stdin,
        run.events.open("wb") as stdout,
        run.stderr.open("wb") as stderr,
    ):
        popen = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    return CodexProcess(popen, f"CODEX_HOME={run.home}".encode())
