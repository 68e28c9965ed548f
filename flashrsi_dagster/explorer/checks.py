"""A node's checks, evaluated from its records by the functions the Dagster asset checks use
(`checks.host`), so the explorer and the Dagster UI agree on what passed, warned or failed.

What a node's records hold decides which checks it shows: the contamination verdict (a
`content_verdict` record among its files), the behaviour signal its latest ledger entry
measured (against that entry's baseline, which is the candidate's parent where the algorithm
compares with its parent), its outcome as `edit_adopted`, and for Meta-Harness the edit's
declared paths (the algorithm whose snapshot asset carries that check)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flashrsi_dagster.checks import CheckOutcome, host
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions.ledger import Decision
from flashrsi_dagster.explorer.candidates import Node
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.stats.behaviour import BehaviourSignal

EDIT_PATHS_CHECKED = ("meta_harness",)
"""The algorithms whose snapshot asset carries `edit_within_declared_paths`."""


def node_checks(
    node: Node,
    decisions: list[Decision],
    files: list[Path],
    store: SnapshotStore | None,
    algorithm: str,
) -> list[dict[str, Any]]:
    """The node's checks, each as `shown` gives it; none for the seed."""
    if node.outcome in ("seed", "unjudged"):
        return []
    found = [(_content(node, files), "its contamination verdict")]
    found += [
        (host.behaviour(signal), f"ledger entry {e.id}") for e, signal in _behaviour(decisions)
    ]
    found.append((host.decided(node.outcome, node.reason), "its outcome in the ledger"))
    if algorithm in EDIT_PATHS_CHECKED and store is not None:
        info = {"snapshot_id": node.snapshot_id, "parent_id": node.parent, "status": node.outcome}
        found.append((host.edit_within_declared_paths(store, info), "its snapshot and parent"))
    return [shown(outcome, source) for outcome, source in found]


def _content(node: Node, files: list[Path]) -> CheckOutcome:
    """The verdict among the node's records (`…-content.json`), else why there is none."""
    for path in files:
        text = path.read_text(encoding="utf-8") if path.suffix == ".json" else ""
        if '"content_verdict"' in text and json.loads(text).get("kind") == "content_verdict":
            return host.content(ContentVerdict.model_validate_json(text), "")
    return host.content(None, f"no verdict on record ({node.outcome}: {node.reason})")


def _behaviour(decisions: list[Decision]) -> list[tuple[Decision, BehaviourSignal]]:
    """The latest entry's behaviour signal, if it measured one."""
    for entry in reversed(decisions):
        if entry.evidence.behaviour:
            return [(entry, BehaviourSignal.model_validate(entry.evidence.behaviour))]
    return []


def shown(outcome: CheckOutcome, source: str) -> dict[str, Any]:
    """A check as the page shows it: its status (passed, warning, failed) and why first."""
    return {
        "name": outcome.name,
        "status": outcome.status,
        "severity": outcome.severity,
        "summary": outcome.summary,
        "description": host.DESCRIPTIONS[outcome.name],
        "metadata": outcome.metadata,
        "markdown": outcome.markdown,
        "source": source,
    }
