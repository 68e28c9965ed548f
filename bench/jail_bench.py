"""Jail start-up per rollout, measured two ways.

Run:  .venv/bin/python bench/jail_bench.py [--repeats 40]

* bare: a jail as a MiniAgent run gets it (the harness runtime read-only, a task folder and
  a run folder writable) started until ready, the gateway's socket made inside it, closed;
  back to back ("hot"), and with 0.1 s between jails ("cold": on this VM an idle CPU wakes
  slowly, and a jail's start is a chain of processes waiting on each other);
* per rollout: from `Agent.run()` to the offline simulator receiving the run's first request,
  jailed (`confinement: bwrap`) against unconfined (`none`), both through the model gateway,
  with the fork server warm; the difference is what the jail adds to a rollout's start.
Target: <= 20 ms per rollout. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from report import save

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import JAIL_GATEWAY_PORT, Confinement
from flashrsi_dagster.environments.jail import Jail, Mount, give_to_jail_user
from flashrsi_dagster.environments.runtime import python_runtime
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

TARGET_MS = 20.0


def bare(repeats: int, gap: float = 0.0) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        task, run = Path(tmp, "task"), Path(tmp, "run")
        task.mkdir(), run.mkdir()
        give_to_jail_user([task, run])
        spec = python_runtime().with_mounts(
            Mount(task, writable=True), Mount(run, writable=True), Mount(HARNESS)
        )
        times = []
        for _ in range(repeats):
            clock = time.perf_counter()
            with Jail(spec) as jail:
                jail.listen(JAIL_GATEWAY_PORT).close()
            times.append(time.perf_counter() - clock)
            time.sleep(gap)
    return times


def per_rollout(repeats: int, jailed: bool) -> list[float]:
    role = RoleConfig.model_validate(
        {"type": "miniagent", "llm": {"model": "simulator/echo", "base_url": "offline"}}
    )
    with OfflineModelServer(ServerConfig()) as server, tempfile.TemporaryDirectory() as tmp:
        role.llm.base_url = server.url
        confinement = Confinement(jailed=jailed, experiment="bench")
        with target_agent(role, HARNESS, confinement=confinement) as agent:
            agent.run(Path(tmp), "warm up", task_id="warm")  # the fork server's SDK import
            starts = []
            for i in range(repeats):
                work = Path(tmp, f"task-{i}")
                work.mkdir()
                server.clear_requests()
                started = datetime.now(UTC)
                agent.run(work, "hello", task_id=f"t{i}")
                starts.append((server.requests[0].time - started).total_seconds())
    return starts


def measure(repeats: int) -> dict:
    bare_s, cold_s = bare(repeats), bare(repeats, gap=0.1)
    jailed, unconfined = per_rollout(repeats, True), per_rollout(repeats, False)
    median = statistics.median
    return {
        "repeats": repeats,
        "bare_median_ms": round(median(bare_s) * 1000, 2),
        "bare_cold_median_ms": round(median(cold_s) * 1000, 2),
        "start_jailed_median_ms": round(median(jailed) * 1000, 2),
        "start_unconfined_median_ms": round(median(unconfined) * 1000, 2),
        "added_per_rollout_ms": round((median(jailed) - median(unconfined)) * 1000, 2),
        "bare_ms": [round(x * 1000, 2) for x in bare_s],
    }


def render(report: dict) -> str:
    added = report["added_per_rollout_ms"]
    return "\n".join(
        [
            f"Jail start-up (medians of {report['repeats']})",
            f"bare jail (start, gateway socket, close)  {report['bare_median_ms']:7.2f} ms hot, "
            f"{report['bare_cold_median_ms']:.2f} ms cold   target <= {TARGET_MS} ms",
            f"run() to first request, jailed            {report['start_jailed_median_ms']:7.2f} ms",
            f"run() to first request, unconfined        "
            f"{report['start_unconfined_median_ms']:7.2f} ms",
            f"added per rollout {added:7.2f} ms   target <= {TARGET_MS} ms   "
            f"{'PASS' if added <= TARGET_MS else 'MISS'}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    report = measure(parser.parse_args(argv).repeats)
    print(render(report))
    save("jail_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
