"""Links both ways between the explorer and the Dagster UI, as URLs only: the explorer does
not load Dagster, and the Dagster side imports `node_url` from here.

- A node links to its partition (`r001.c0|<experiment>`, round first as the grid joins them)
  of each of its algorithm's candidate-partitioned assets, and to its runs on the Runs page
  (filtered by the tags every step's run carries, `orchestration/tags.py`).
- A candidate asset's metadata links to the node: `node_url`, on the explorer's base URL,
  which `flashrsi ui` passes to the Dagster webserver in `EXPLORER_URL_ENV`; an experiment's
  summary links to its tree (`experiment_url`)."""

from __future__ import annotations

import os
from urllib.parse import quote, urlencode

from flashrsi_dagster.experiment.keys import candidate_key

EXPLORER_URL_ENV = "FLASHRSI_EXPLORER_URL"
"""The explorer's base URL as the Dagster code location links to it (set by `flashrsi ui`)."""
DEFAULT_EXPLORER_URL = "http://127.0.0.1:3100"
"""Where `flashrsi ui` and `flashrsi explorer` serve it unless told otherwise."""
EXPERIMENT_TAG, ROUND_TAG, CANDIDATE_TAG = (
    "flashrsi/experiment",
    "flashrsi/round",
    "flashrsi/candidate",
)
"""The run tags of `orchestration/context.py` and `orchestration/tags.py` (kept equal by
tests/explorer/test_links.py)."""
CANDIDATE_ASSETS: dict[str, tuple[str, ...]] = {
    "meta_harness": ("snapshot", "trajectories", "scores", "paired_stats", "failure_map"),
    "modular_rsi": ("snapshot", "trajectories", "gates", "findings", "memory"),
    "evolver": ("snapshot", "gates", "screen", "confirm", "decisions", "plan", "failure_map"),
    "dgm": ("candidate",),
    "stop": ("round",),
    "best_of_n": ("sample",),
}
"""Each algorithm's assets partitioned by candidate, the pages a node links to (kept equal to
the Definitions' by tests/explorer/test_links.py)."""


WHERE_EXPERIMENTS_ARE = (
    "**Your experiments** — each one's candidate tree, every candidate's code, diff, Worker "
    "and target trajectories, scores, checks and spend — are in the experiment explorer "
    "`flashrsi ui` serves beside this UI, at the address it prints "
    f"({DEFAULT_EXPLORER_URL} by default). Each candidate asset's `explorer` link opens its "
    "node there, and each experiment's `summary` links to its tree."
)
"""Said in the description of every job the Overview lists (markdown; no address read at
import time: the code location reads no environment then)."""


def explorer_base() -> str:
    return os.environ.get(EXPLORER_URL_ENV) or DEFAULT_EXPLORER_URL


def node_url(experiment: str, node: str, base: str | None = None) -> str:
    """The explorer's page of `node` (a snapshot id, or `r<round>.<slot>`) in `experiment`."""
    query = urlencode({"experiment": experiment, "node": node})
    return f"{(base or explorer_base()).rstrip('/')}/?{query}"


def experiment_url(experiment: str, base: str | None = None) -> str:
    """The explorer's page of `experiment`: its tree, plots and spend."""
    return f"{(base or explorer_base()).rstrip('/')}/?{urlencode({'experiment': experiment})}"


def runs_url(dagster: str, **tags: str) -> str:
    """The Runs page filtered by every one of `tags` (Dagster's `q[]=tag:<key>=<value>`)."""
    query = urlencode([("q[]", f"tag:{key}={value}") for key, value in tags.items()])
    return f"{dagster.rstrip('/')}/runs?{query}"


def experiment_runs(dagster: str | None, experiment: str) -> str | None:
    return runs_url(dagster, **{EXPERIMENT_TAG: experiment}) if dagster else None


def dagster_links(
    dagster: str | None, algorithm: str, experiment: str, round_: int | None, slot: str | None
) -> list[dict[str, str]]:
    """The node's pages in the Dagster UI: its partition of each candidate asset, then its
    runs. None for a node without a round and slot (the Evolver's vanilla seed)."""
    if dagster is None or round_ is None or slot is None:
        return []
    try:
        partition = f"{candidate_key(round_, slot)}|{experiment}"
    except ValueError:
        return []
    base = dagster.rstrip("/")
    assets = [
        {
            "asset": asset,
            "kind": "asset",
            "url": f"{base}/assets/{algorithm}/{asset}?view=partitions"
            f"&partition={quote(partition)}",
        }
        for asset in CANDIDATE_ASSETS.get(algorithm, ())
    ]
    tags = {EXPERIMENT_TAG: experiment, ROUND_TAG: str(round_), CANDIDATE_TAG: slot}
    return [*assets, {"asset": "runs", "kind": "runs", "url": runs_url(base, **tags)}]
