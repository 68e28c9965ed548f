"""MiniAgent framework overhead, measured against the offline simulator at zero latency.

Run:  .venv/bin/python bench/miniagent_bench.py [--turns 50] [--repeats 5]

* per turn: the gap between two consecutive requests arriving at the simulator, minus the
  simulator's own time on the first of them (median over an N-turn run). Each turn is one
  model call plus one cheap tool call (`editor view` of a one-line file), so what remains is
  the loop, the SDK round trip, the message handling and the per-turn trajectory save.
* per start: from `Agent.run()` to the simulator receiving the first request, once the
  adapter's fork server is up (it imports the OpenAI SDK once per agent; every run is a fresh
  process forked from it). The first run of a new agent, which also waits for that import, is
  reported beside it.
Targets: <= 10 ms per turn, <= 0.5 s per start. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import itertools
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
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

TURN_TARGET_MS, START_TARGET_S = 10.0, 0.5


def _script(turns: int) -> list[dict]:
    view = {"name": "editor", "arguments": {"command": "view", "path": "note.txt"}}
    return [{"tool_calls": [view]}] * (turns - 1) + [{"text": "done"}]


def _run(agent, server, work: Path, name: str, turns: int) -> tuple[float, list[float]]:
    """Returns (seconds to the first request, client seconds per turn)."""
    server.add_script(name, _script(turns))
    server.clear_requests()
    agent.config.llm.model = f"simulator/script:{name}"
    started = datetime.now(UTC)
    trajectory = agent.run(work, "read the note", task_id=name)
    if trajectory.usage.turns != turns:
        raise RuntimeError(f"{name}: expected {turns} turns, got {trajectory}")
    records = server.requests
    gaps = [
        (after.time - before.time).total_seconds() - before.duration
        for before, after in itertools.pairwise(records)
    ]
    return (records[0].time - started).total_seconds(), gaps


def _role(server) -> RoleConfig:
    return RoleConfig.model_validate(
        {
            "type": "miniagent",
            "timeout": 600,
            "max_turns": 1000,
            "llm": {"model": "simulator/echo", "base_url": server.url, "max_retries": 0},
        }
    )


def measure(turns: int, repeats: int) -> dict:
    with OfflineModelServer(ServerConfig()) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "note.txt").write_text("hello\n")
        with target_agent(_role(server), HARNESS) as agent:
            time.sleep(3)  # let the fork server finish importing the SDK
            per_turn, starts = [], []
            for i in range(repeats):
                first, gaps = _run(agent, server, work, f"run-{i}", turns)
                per_turn.append(statistics.median(gaps))
                starts.append(first)
            first_start = _first_start(server, work)
    return {
        "turns": turns,
        "repeats": repeats,
        "per_turn_ms": [round(x * 1000, 2) for x in per_turn],
        "per_turn_median_ms": round(statistics.median(per_turn) * 1000, 2),
        "start_s": [round(x, 3) for x in starts],
        "start_median_s": round(statistics.median(starts), 3),
        "first_start_s": round(first_start, 3),
    }


def _first_start(server, work: Path) -> float:
    """A run started right after the agent is built: it waits for the fork server's import."""
    with target_agent(_role(server), HARNESS) as agent:
        return _run(agent, server, work, "first", 1)[0]


def render(report: dict) -> str:
    turn, start = report["per_turn_median_ms"], report["start_median_s"]
    return "\n".join(
        [
            f"MiniAgent framework overhead (offline simulator, zero latency; medians of "
            f"{report['repeats']}, {report['turns']}-turn runs)",
            f"per turn   {turn:8.2f} ms   target <= {TURN_TARGET_MS} ms   "
            f"{'PASS' if turn <= TURN_TARGET_MS else 'MISS'}",
            f"per start  {start:8.3f} s    target <= {START_TARGET_S} s     "
            f"{'PASS' if start <= START_TARGET_S else 'MISS'}   (fork server up)",
            f"first run  {report['first_start_s']:8.3f} s    (new agent: SDK import first)",
            f"samples: per turn {report['per_turn_ms']} ms; start {report['start_s']} s",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    report = measure(args.turns, args.repeats)
    print(render(report))
    save("miniagent_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
