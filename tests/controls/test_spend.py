"""An experiment's spend by role, from its gateway call log: forwarded calls and their tokens,
per role of that experiment only; a call the gateway refused reached no model; a torn line
(a crash mid-write) is skipped."""

from __future__ import annotations

import json
from pathlib import Path

from flashrsi_dagster.controls.spend import Spend, improvement, spend_by_role


def _line(role: str, status: int | None, tokens=(10, 5), experiment="e", fault=None) -> str:
    call = {"experiment": experiment, "role": role, "status": status, "fault": fault}
    call |= {"input_tokens": tokens[0], "output_tokens": tokens[1]}
    return json.dumps(call)


def test_forwarded_calls_and_tokens_are_counted_per_role_of_the_experiment(tmp_path: Path):
    log = tmp_path / "gateway.jsonl"
    lines = [
        _line("target", 200),
        _line("worker", 200),
        _line("worker", 200, (100, 20)),
        _line("worker", 502, (0, 0), fault="endpoint"),  # forwarded, failed upstream
        _line("worker", 429, (0, 0)),  # refused by the gateway: no model call
        _line("worker", 200, experiment="other"),
        _line("reviewer", 200),
    ]
    log.write_text("\n".join(lines) + '\n{"experiment": "e", "role": "wor')

    spent = spend_by_role(log, "e")

    assert spent == {
        "reviewer": Spend(model_calls=1, tokens=15),
        "target": Spend(model_calls=1, tokens=15),
        "worker": Spend(model_calls=3, tokens=135),
    }
    assert improvement(spent) == Spend(model_calls=4, tokens=150)


def test_an_experiment_without_a_log_spent_nothing(tmp_path: Path):
    assert spend_by_role(tmp_path / "missing.jsonl", "e") == {}
    assert improvement({}) == Spend()
