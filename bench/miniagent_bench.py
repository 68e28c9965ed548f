"""Agent framework overhead, measured against the offline simulator at zero latency.

Run:  .venv/bin/python bench/miniagent_bench.py [--agent miniagent] [--turns 50] [--repeats 5]

`--agent` is any registry name (`miniagent`, `claude-code`, …) with an entry in `CHEAP_CALLS`.

* per turn: the gap between two consecutive requests arriving at the simulator, minus the
  simulator's own time on the first of them (median over an N-turn run). Each turn is one
  model call plus the agent's cheapest tool call (reading a one-line file), so what remains is
  the loop, the client round trip, the message handling and the per-turn bookkeeping.
* per start: from `Agent.run()` to the simulator receiving the first request, once the agent
  has run once (MiniAgent's fork server has imported the OpenAI SDK; Claude Code and the Codex
  CLI start afresh every run, so their start is the CLI's start inside the jail; Codex's Python
  core copies its home, enters the jail, starts Python and imports the SDK every call). The
  first run of a new agent is reported beside it.
Targets (MiniAgent's): <= 10 ms per turn, <= 0.5 s per start. A report, not a test: it always
exits 0.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from report import save

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.registry import adapter_class
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

TARGETS = {"miniagent": (10.0, 0.5)}
"""Per agent: (ms per turn, s per start) it is held to; others are reported only."""

CHEAP_CALLS: dict[str, Callable[[Path], dict]] = {
    "miniagent": lambda work: {
        "name": "editor",
        "arguments": {"command": "view", "path": "note.txt"},
    },
    "claude-code": lambda work: {
        "name": "Read",
        "arguments": {"file_path": str(work / "note.txt")},
    },
    "codex": lambda work: _PLAN,
    "codex-cli": lambda work: _PLAN,
}
"""Per agent: its cheapest tool call: reading `note.txt` in the task folder `work` where the
agent reads files in its own process; Codex reads only through a shell command (a process of
its own), so its cheapest call is a plan update, which runs no process."""
_PLAN = {"name": "update_plan", "arguments": {"plan": [{"step": "read", "status": "completed"}]}}


def _script(agent: str, work: Path, turns: int) -> list[dict]:
    return [{"tool_calls": [CHEAP_CALLS[agent](work)]}] * (turns - 1) + [{"text": "done"}]


def _run(agent, server, work: Path, name: str, turns: int) -> tuple[float, list[float]]:
    """Returns (seconds to the first request, client seconds per turn)."""
    server.add_script(name, _script(agent.name, work, turns))
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


def _role(agent: str, server) -> RoleConfig:
    api = adapter_class(agent).supported_apis[0]
    return RoleConfig.model_validate(
        {
            "type": agent,
            "timeout": 600,
            "max_turns": 1000,
            "llm": {
                "model": "simulator/echo",
                "base_url": server.root_url if api == "anthropic" else server.url,
                "api": api,
                "max_retries": 0,
            },
        }
    )


def measure(agent: str, turns: int, repeats: int) -> dict:
    if agent not in CHEAP_CALLS:
        raise SystemExit(f"{agent}: add its cheapest tool call to CHEAP_CALLS in {__file__}")
    with OfflineModelServer(ServerConfig()) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp).resolve()
        (work / "note.txt").write_text("hello\n")
        first_start = _run_new(agent, server, work)
        with target_agent(_role(agent, server)) as running:
            _run(running, server, work, "warm-up", 1)  # MiniAgent: its fork server is up
            per_turn, starts = [], []
            for i in range(repeats):
                first, gaps = _run(running, server, work, f"run-{i}", turns)
                per_turn.append(statistics.median(gaps))
                starts.append(first)
    return {
        "agent": agent,
        "turns": turns,
        "repeats": repeats,
        "per_turn_ms": [round(x * 1000, 2) for x in per_turn],
        "per_turn_median_ms": round(statistics.median(per_turn) * 1000, 2),
        "start_s": [round(x, 3) for x in starts],
        "start_median_s": round(statistics.median(starts), 3),
        "first_start_s": round(first_start, 3),
    }


def _run_new(agent: str, server, work: Path) -> float:
    """A run started right after the agent is built (MiniAgent: waits for the SDK import)."""
    with target_agent(_role(agent, server)) as running:
        return _run(running, server, work, "first", 1)[0]


def render(report: dict) -> str:
    turn, start = report["per_turn_median_ms"], report["start_median_s"]
    turn_target, start_target = TARGETS.get(report["agent"], (None, None))
    return "\n".join(
        [
            f"{report['agent']} framework overhead (offline simulator, zero latency; medians "
            f"of {report['repeats']}, {report['turns']}-turn runs)",
            f"per turn   {turn:8.2f} ms   {_verdict(turn, turn_target, 'ms')}",
            f"per start  {start:8.3f} s    {_verdict(start, start_target, 's')}",
            f"first run  {report['first_start_s']:8.3f} s    (a new agent's first run)",
            f"samples: per turn {report['per_turn_ms']} ms; start {report['start_s']} s",
        ]
    )


def _verdict(value: float, target: float | None, unit: str) -> str:
    if target is None:
        return "(no target)"
    return f"target <= {target} {unit}   {'PASS' if value <= target else 'MISS'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="miniagent", help="an adapter registry name")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    report = measure(args.agent, args.turns, args.repeats)
    print(render(report))
    save(f"{args.agent.replace('-', '_')}_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
