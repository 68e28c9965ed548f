"""What each role of an experiment spent, in all and per candidate, from the model gateway's
call log (`logs/gateway.jsonl`, `gateway/log.py`): the meter every model call passes, whatever
records the algorithm keeps. Each line names the candidate the host granted its run for
(`environments/attribution.py`: a key such as `r001.c0`, never the agent's word); a call made
for the experiment as a whole (a promotion, the sealed test), or logged before lines named
their candidate, counts under `EXPERIMENT`. A candidate's trajectories hold their own share
too (`records.tokens_by_role`); this is the gateway's account, the calls no trajectory holds
included.

Counted as `controls/spend.py` counts: a call is one the endpoint answered (2xx) or failed on
the infrastructure's side; tokens and cost over every line; unreadable lines skipped. Read
again only when the log's size or time changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXPERIMENT = "experiment"
"""Where a call no candidate is named on counts."""
Roles = dict[str, dict[str, Any]]

_read: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def spend(log: Path) -> dict[str, Any]:
    """`roles`: per role, model calls, input and output tokens, cost in USD (None: no call
    priced); `candidates`: the same per candidate key (`EXPERIMENT` for the rest)."""
    try:
        stat = log.stat()
    except FileNotFoundError:
        return {"roles": {}, "candidates": {}}
    key = (stat.st_mtime_ns, stat.st_size)
    kept = _read.get(log)
    if kept is None or kept[0] != key:
        kept = (key, _sum(log.read_bytes()))
        _read[log] = kept
    return kept[1]


def candidate_spend(log: Path, candidate: str) -> Roles:
    """Per role, the calls of runs granted for `candidate` (empty if none)."""
    return spend(log)["candidates"].get(candidate, {})


def _sum(data: bytes) -> dict[str, Any]:
    roles: Roles = {}
    candidates: dict[str, Roles] = {}
    for line in data.split(b"\n"):
        try:
            call = json.loads(line)
        except ValueError:
            continue  # a torn last line, or a blank one
        if not isinstance(call, dict) or not isinstance(call.get("role"), str):
            continue
        named = call.get("candidate")
        where = named if isinstance(named, str) and named else EXPERIMENT
        for total in (roles, candidates.setdefault(where, {})):
            _add(total, call)
    return {
        "roles": dict(sorted(roles.items())),
        "candidates": {k: dict(sorted(v.items())) for k, v in sorted(candidates.items())},
    }


def _add(roles: Roles, call: dict[str, Any]) -> None:
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
