"""How long a process that loaded Dagster takes to end, with its heap frozen at exit (as every
process importing `flashrsi_dagster` now does) and without (`thawed`: the package's exit handler
unregistered): a code server from its shutdown request to its exit (what a driver's `close`
waits for), and `flashrsi run` of a one-step Meta-Harness from its `main()` returning to its
exit. The two kinds alternate, so that they share the machine's load.

    .venv/bin/python bench/exit_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flashrsi_dagster.deployment.code_server import LOCATION
from flashrsi_dagster.orchestration.dagster_internals import DagsterGrpcClient, find_free_port

EXAMPLE = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
THAW = "import atexit, gc, flashrsi_dagster; atexit.unregister(gc.freeze) if {thawed} else None\n"
SERVER = THAW + "from flashrsi_dagster.deployment.code_server import main; main()"
RUN = THAW + (
    "import sys, time; from flashrsi_dagster.cli import main; code = main(sys.argv[1:])\n"
    "print('returned', time.monotonic(), file=sys.stderr, flush=True); sys.exit(code)"
)


def server_exit(thawed: bool) -> float:
    """Seconds from a code server's shutdown request to its exit."""
    home = Path(tempfile.mkdtemp()) / ".flashrsi"
    home.mkdir()
    port = find_free_port()
    options = ["--port", str(port), "--module-name", LOCATION, "--log-level", "warning"]
    env = {"FLASHRSI_HOME": str(home), "PATH": "/usr/bin:/bin"}
    code = SERVER.format(thawed=thawed)
    server = subprocess.Popen([sys.executable, "-c", code, *options], cwd=home.parent, env=env)
    client = DagsterGrpcClient(port=port, host="localhost")
    while True:
        try:
            client.ping("ready")
            break
        except Exception:  # not listening yet
            time.sleep(0.2)
    asked = time.monotonic()
    client.shutdown_server(timeout=5)
    server.wait()
    return time.monotonic() - asked


def run_exit(thawed: bool) -> float:
    """Seconds from `flashrsi run`'s `main()` returning to its exit."""
    home = Path(tempfile.mkdtemp()) / "home"
    overrides = ["--algorithm.max_steps", "1", "--benchmark.limit", "2"]
    command = [sys.executable, "-c", RUN.format(thawed=thawed), "run", "--config", str(EXAMPLE)]
    done = subprocess.run(
        [*command, *overrides, "--experiment.home", str(home)],
        capture_output=True,
        text=True,
        check=True,
    )
    ended = time.monotonic()
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("returned ")]
    return ended - float(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    print(f"load {Path('/proc/loadavg').read_text().split()[:3]}")
    for name, measure in (("code server", server_exit), ("flashrsi run", run_exit)):
        for thawed in (True, False) * repeat:
            state = "thawed" if thawed else "frozen"
            print(f"{name}, heap {state} at exit: {measure(thawed):.2f} s", flush=True)
    print(f"load {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
