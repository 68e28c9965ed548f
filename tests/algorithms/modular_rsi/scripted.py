"""What the ModularRSI tests share: the five-module config on MiniAgent's built-in harness,
written for a scripted Worker, and the scripted answers of the analysis and the review."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.sabotage.helpers import say

MODULES = {
    "agent_loop": ["runtime/agent.py"],
    "tool_use": ["runtime/agent.py", "tools/shell.py"],
    "observation_management": ["runtime/agent.py", "tools/base.py"],
    "context_management": ["runtime/agent.py", "prompts/system.md"],
    "task_completion_detection": ["runtime/agent.py"],
}


def findings(*items: dict) -> dict:
    return say("```json\n" + json.dumps({"findings": list(items)}) + "\n```")


def verdict(kind: str, reason: str = "fine") -> dict:
    return say(json.dumps({"verdict": kind, "reason": reason}))


def write_config(
    tmp_path: Path,
    worker_model: str,
    *,
    worker: dict | None = None,
    benchmark: dict | None = None,
    **algorithm,
) -> Path:
    """`<tmp_path>/mrsi.yaml`: five modules, one batch of 4 train tasks, 3 test tasks."""
    config = {
        "experiment": {"name": "mrsi", "home": str(tmp_path / "home"), "seed": 0},
        "agent": {
            "type": "miniagent",
            "llm": {"model": "simulator/target", "base_url": "offline", "timeout": 30},
            "timeout": 60,
            "max_turns": 4,
        },
        "algorithm": {
            "name": "modular_rsi",
            "modules": MODULES,
            "epochs": 1,
            "batch_size": 4,
            "num_rollouts": 1,
            "integration_rounds": 0,
            "worker": {
                "type": "miniagent",
                "llm": {"model": worker_model, "base_url": "offline", "timeout": 30},
                "timeout": 120,
                "max_turns": 10,
                **(worker or {}),
            },
            **algorithm,
        },
        "benchmark": {
            "name": "text_classification",
            "split_counts": {"train": 4, "dev": 0, "test": 3},
            "concurrency": 4,
            **(benchmark or {}),
        },
    }
    role = config["algorithm"]["worker"]
    role["llm"]["timeout"] = min(30, role["timeout"] // 2)  # a call must fit in a run
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "mrsi.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


RULE = "- sports when the text mentions: match"
