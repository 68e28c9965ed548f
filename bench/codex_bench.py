"""Codex (the Python core, `type: codex`) framework overhead, measured as
`miniagent_bench.py` measures MiniAgent: against the offline simulator at zero latency, jailed.

Run:  .venv/bin/python bench/codex_bench.py [--turns 50] [--repeats 5]

* per turn: the gap between two consecutive requests at the simulator, minus the simulator's
  own time on the first (median over an N-turn run). Each turn is one model call plus one
  cheap in-process tool call (`update_plan`), so what remains is the loop, the SDK round trip
  and one JSONL event line.
* per start: from `Agent.run()` to the simulator receiving the first request. There is no fork
  server: every call copies the snapshot into a fresh home, enters the jail, starts a Python
  process and imports the OpenAI SDK, so this is the whole per-call start-up.
A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from report import save

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.codex.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

PLAN = {"name": "update_plan", "arguments": {"plan": [{"step": "read", "status": "completed"}]}}


def _run(agent, server, work: Path, name: str, turns: int) -> tuple[float, list[float]]:
    server.add_script(name, [{"tool_calls": [PLAN]}] * (turns - 1) + [{"text": "done"}])
    server.clear_requests()
    agent.config.llm.model = f"simulator/script:{name}"
    started = datetime.now(UTC)
    trajectory = agent.run(work, "plan", task_id=name)
    if trajectory.usage.turns != turns:
        raise RuntimeError(f"{name}: expected {turns} turns, got {trajectory}")
    records = server.requests
    gaps = [
        (after.time - before.time).total_seconds() - before.duration
        for before, after in itertools.pairwise(records)
    ]
    return (records[0].time - started).total_seconds(), gaps


def measure(turns: int, repeats: int) -> dict:
    with OfflineModelServer(ServerConfig()) as server, tempfile.TemporaryDirectory() as tmp:
        role = RoleConfig.model_validate(
            {
                "type": "codex",
                "timeout": 600,
                "max_turns": 1000,
                "llm": {"model": "x", "base_url": server.url, "api": "responses"},
            }
        )
        with target_agent(role, HARNESS) as agent:
            per_turn, starts = [], []
            for i in range(repeats):
                first, gaps = _run(agent, server, Path(tmp), f"run-{i}", turns)
                per_turn.append(statistics.median(gaps))
                starts.append(first)
    return {
        "turns": turns,
        "repeats": repeats,
        "per_turn_ms": [round(x * 1000, 2) for x in per_turn],
        "per_turn_median_ms": round(statistics.median(per_turn) * 1000, 2),
        "start_s": [round(x, 3) for x in starts],
        "start_median_s": round(statistics.median(starts), 3),
    }


def render(report: dict) -> str:
    return "\n".join(
        [
            f"Codex (Python core) framework overhead (offline simulator, zero latency, jailed; "
            f"medians of {report['repeats']}, {report['turns']}-turn runs)",
            f"per turn   {report['per_turn_median_ms']:8.2f} ms",
            f"per start  {report['start_median_s']:8.3f} s    (home copy, jail, SDK import)",
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
    save("codex_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
