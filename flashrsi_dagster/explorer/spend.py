"""What each role of an experiment spent, from the model gateway's call log
(`logs/gateway.jsonl`, `gateway/log.py`): the meter every model call passes, whatever records
the algorithm keeps. A candidate's own share is in its trajectories (`records.tokens_by_role`);
this is the experiment's whole account, the roles' calls that no trajectory holds included.

Counted as `controls/spend.py` counts: a call is one the endpoint answered (2xx) or failed on
the infrastructure's side; tokens and cost over every line; unreadable lines skipped. Read
again only when the log's size or time changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_read: dict[Path, tuple[tuple[int, int], dict[str, dict[str, Any]]]] = {}


def role_spend(log: Path) -> dict[str, dict[str, Any]]:
    """Per role: model calls, input and output tokens, cost in USD (None: no call priced)."""
    try:
        stat = log.stat()
    except FileNotFoundError:
        return {}
    key = (stat.st_mtime_ns, stat.st_size)
    kept = _read.get(log)
    if kept is None or kept[0] != key:
        kept = (key, _sum(log.read_bytes()))
        _read[log] = kept
    return kept[1]


def _sum(data: bytes) -> dict[str, dict[str, Any]]:
    roles: dict[str, dict[str, Any]] = {}
    for line in data.split(b"\n"):
        try:
            call = json.loads(line)
        except ValueError:
            continue  # a torn last line, or a blank one
        if not isinstance(call, dict) or not isinstance(call.get("role"), str):
            continue
        role = roles.setdefault(
            call["role"], {"model_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": None}
        )
        status = call.get("status")
        forwarded = (isinstance(status, int) and 200 <= status < 300) or bool(call.get("fault"))
        role["model_calls"] += int(forwarded)
        role["input_tokens"] += int(call.get("input_tokens") or 0)
        role["output_tokens"] += int(call.get("output_tokens") or 0)
        if isinstance(call.get("cost_usd"), (int, float)):
            role["cost"] = (role["cost"] or 0.0) + call["cost_usd"]
    return dict(sorted(roles.items()))
