"""How long what a driver started outlives a SIGKILL of the driver.

Run:  .venv/bin/python bench/reaper_bench.py [--repeat 3] [--stage importing|stalled]

The driver of `tests/deployment/test_reaper.py` (the code server `flashrsi run` starts, and a run
submitted to the home's queue) runs until its run worker exists; then the driver alone is
SIGKILLed, and the time until no process of its session is left (code server, reaper, run
worker, resource tracker; zombies aside) is reported. `--stage importing` kills as soon as the
run worker appears, while it imports Dagster and the code location (before this reaper: up to
~45 s on a loaded machine); `--stage stalled` holds the worker before any import, as long as
need be. A report, not a test: it always exits 0; the figures move with the load.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests.deployment.test_reaper import DRIVER, STALLED, _session


def _worker(session: int) -> bool:
    return any("--multiprocessing-fork" in line for line in _session(session))


def once(stage: str) -> tuple[float, int]:
    """Seconds from the kill until the session is empty, and how many processes it had."""
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder) / "site"
        site.mkdir()
        env = dict(os.environ)
        if stage == "stalled":
            (site / "sitecustomize.py").write_text(STALLED)
            env.update(PYTHONPATH=str(site), STALLED_IN=folder)
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(Path(folder) / "home")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        while not _worker(driver.pid):
            time.sleep(0.02)
        count = len(_session(driver.pid))
        os.kill(driver.pid, signal.SIGKILL)
        killed = time.monotonic()
        driver.wait()
        while _session(driver.pid):
            time.sleep(0.01)
        return time.monotonic() - killed, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stage", choices=["importing", "stalled"], default="importing")
    args = parser.parse_args()
    times = []
    for _ in range(args.repeat):
        seconds, count = once(args.stage)
        times.append(seconds)
        print(f"{args.stage}: {count} processes in the session, all gone {seconds:.3f} s after")
    load = os.getloadavg()[0]
    print(f"median {statistics.median(times):.3f} s, max {max(times):.3f} s (load {load:.1f})")


if __name__ == "__main__":
    main()
