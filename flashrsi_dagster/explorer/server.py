"""The explorer's web server: the page in `static/` and a read-only JSON API on a home folder.

Every route takes an experiment by name (checked with the project's name rule) and a node by
the id the tree gave it; a node not in the experiment's tree, a file not in its snapshot, is a
404. Nothing is written: GET only. Bound to loopback unless told otherwise (`serve`)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flashrsi_dagster.config.names import InvalidName
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.experiment.paths import ExperimentPaths
from flashrsi_dagster.explorer import records
from flashrsi_dagster.explorer.candidates import Node, Tree, candidate_tree
from flashrsi_dagster.explorer.home import (
    NotAnExperiment,
    algorithm_of,
    experiment_names,
    experiment_paths,
)
from flashrsi_dagster.snapshots.store import SnapshotError

STATIC = Path(__file__).parent / "static"
LOOPBACK = "127.0.0.1"
_NODE = re.compile(r"[0-9a-f]{40}|r\d+\.[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
CANDIDATE_ASSETS: dict[str, tuple[str, ...]] = {
    "meta_harness": ("snapshot", "trajectories", "scores", "paired_stats", "failure_map"),
    "modular_rsi": ("snapshot", "trajectories", "gates", "findings", "memory"),
    "evolver": ("snapshot", "gates", "screen", "confirm", "decisions", "plan", "failure_map"),
    "dgm": ("candidate",),
    "stop": ("round",),
    "best_of_n": ("sample",),
}
"""Each algorithm's assets partitioned by candidate, the pages a node links to (kept equal to
the Definitions' by tests/explorer/test_links.py: the explorer does not load Dagster)."""


class NotFound(LookupError):
    pass


def create_app(home: Path, dagster_url: str | None = None) -> Starlette:
    """The explorer on `home`; `dagster_url` (the Dagster UI's address) for deep links."""
    home = Path(home)

    def api(handler: Callable[..., Any]) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                return JSONResponse(handler(home, dagster_url, **request.path_params))
            except InvalidName as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except (NotAnExperiment, NotFound, SnapshotError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)

        return endpoint

    routes = [
        Route("/", lambda _: FileResponse(STATIC / "index.html")),
        Route("/api/experiments", api(_experiments)),
        Route("/api/experiments/{name}/tree", api(_tree)),
        Route("/api/experiments/{name}/nodes/{node}", api(_node)),
        Route("/api/experiments/{name}/nodes/{node}/code", api(_code)),
        Route("/api/experiments/{name}/nodes/{node}/code/{path:path}", api(_file)),
        Route("/api/experiments/{name}/nodes/{node}/diff", api(_diff)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={404: _refused, 405: _refused})


async def _refused(request: Request, exc: Exception) -> JSONResponse:
    """The router's own refusals (no such route, a method other than GET) in the API's form."""
    status = getattr(exc, "status_code", 404)
    return JSONResponse({"error": f"{request.method} {request.url.path}: {exc}"}, status)


def _experiments(home: Path, _dagster: str | None) -> list[dict[str, str]]:
    return [
        {"name": n, "algorithm": algorithm_of(experiment_paths(home, n))}
        for n in experiment_names(home)
    ]


def _opened(home: Path, name: str) -> tuple[ExperimentPaths, Tree]:
    paths = experiment_paths(home, name)
    return paths, candidate_tree(paths, algorithm_of(paths))


def _tree(home: Path, dagster: str | None, name: str) -> dict[str, Any]:
    _, tree = _opened(home, name)
    return {**tree.model_dump(mode="json"), "dagster": dagster}


def _found(tree: Tree, node: str) -> Node:
    if _NODE.fullmatch(node):
        for candidate in tree.nodes:
            if candidate.id == node:
                return candidate
    raise NotFound(f"no node {node[:60]!r} in experiment {tree.experiment!r}")


def _snapshot(tree: Tree, node: str) -> str:
    found = _found(tree, node)
    if found.snapshot_id is None:
        raise NotFound(f"node {node} committed no snapshot")
    return found.snapshot_id


def _node(home: Path, dagster: str | None, name: str, node: str) -> dict[str, Any]:
    paths, tree = _opened(home, name)
    found = _found(tree, node)
    decisions = records.node_decisions(paths, found.id)
    files = records.node_records(paths, decisions)
    return {
        "node": found.model_dump(mode="json"),
        "decisions": [d.model_dump(mode="json") for d in decisions],
        **records.trajectories(paths, files),
        "records": records.other_records(paths, files),
        "links": dagster_links(dagster, tree, found),
    }


def _code(home: Path, _dagster: str | None, name: str, node: str) -> list[dict[str, Any]]:
    paths, tree = _opened(home, name)
    return records.code_tree(paths, _snapshot(tree, node))


def _file(home: Path, _dagster: str | None, name: str, node: str, path: str) -> dict[str, Any]:
    paths, tree = _opened(home, name)
    return records.code_file(paths, _snapshot(tree, node), path)


def _diff(home: Path, _dagster: str | None, name: str, node: str) -> dict[str, Any]:
    paths, tree = _opened(home, name)
    return records.diff_to_parent(paths, _snapshot(tree, node))


def dagster_links(dagster: str | None, tree: Tree, node: Node) -> list[dict[str, str]]:
    """The node's pages in the Dagster UI: each candidate asset's partition
    (`r001.c0|<experiment>`, round first as the grid joins them)."""
    if dagster is None or node.round is None or node.slot is None:
        return []
    try:
        partition = f"{candidate_key(node.round, node.slot)}|{tree.experiment}"
    except ValueError:
        return []
    base = dagster.rstrip("/")
    return [
        {
            "asset": asset,
            "url": f"{base}/assets/{tree.algorithm}/{asset}?view=partitions"
            f"&partition={quote(partition)}",
        }
        for asset in CANDIDATE_ASSETS.get(tree.algorithm, ())
    ]


def serve(home: Path, port: int, host: str = LOOPBACK, dagster_url: str | None = None) -> None:
    """Serve the explorer until interrupted."""
    uvicorn.run(create_app(home, dagster_url), host=host, port=port, log_level="warning")
