"""The explorer's web server: the page in `static/` and a read-only JSON API on a home folder.

Every route takes an experiment by name (checked with the project's name rule) and a node by
the id the tree gave it; a node not in the experiment's tree, a file not in its snapshot, is a
404. Nothing is written: GET only. Bound to loopback unless told otherwise (`serve`); there, a
request must name a loopback host (`Host:`), so a web page whose name was pointed at 127.0.0.1
after it loaded (DNS rebinding) cannot read the experiments through the researcher's browser."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flashrsi_dagster.config.names import InvalidName
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.explorer import records
from flashrsi_dagster.explorer.cache import Experiments, Opened
from flashrsi_dagster.explorer.candidates import Node
from flashrsi_dagster.explorer.checks import node_checks
from flashrsi_dagster.explorer.home import (
    NotAnExperiment,
    algorithm_of,
    experiment_names,
    experiment_paths,
    forked_from,
)
from flashrsi_dagster.explorer.links import dagster_links, experiment_runs
from flashrsi_dagster.explorer.plots import plots
from flashrsi_dagster.explorer.spend import candidate_spend, spend
from flashrsi_dagster.snapshots.store import SnapshotError

STATIC = Path(__file__).parent / "static"
LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
"""The `Host:` a browser sends for the explorer on loopback (the port aside)."""
_NODE = re.compile(r"[0-9a-f]{40}|r\d+\.[A-Za-z0-9][A-Za-z0-9_-]{0,39}")


class NotFound(LookupError):
    pass


def create_app(
    home: Path, dagster_url: str | None = None, hosts: Sequence[str] = LOOPBACK_NAMES
) -> Starlette:
    """The explorer on `home`; `dagster_url` (the Dagster UI's address) for deep links;
    `hosts`: the names a request's `Host:` may give (`*`: any), others are refused (400)."""
    experiments = Experiments(home)

    def api(handler: Callable[..., Any]) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                return JSONResponse(handler(experiments, dagster_url, **request.path_params))
            except InvalidName as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except (NotAnExperiment, NotFound, SnapshotError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)

        return endpoint

    routes = [
        Route("/", lambda _: FileResponse(STATIC / "index.html")),
        Route("/api/experiments", api(_experiments)),
        Route("/api/experiments/{name}/tree", api(_tree)),
        Route("/api/experiments/{name}/spend", api(_spend)),
        Route("/api/experiments/{name}/nodes/{node}", api(_node)),
        Route("/api/experiments/{name}/nodes/{node}/code", api(_code)),
        Route("/api/experiments/{name}/nodes/{node}/code/{path:path}", api(_file)),
        Route("/api/experiments/{name}/nodes/{node}/diff", api(_diff)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))],
        exception_handlers={404: _refused, 405: _refused},
    )


async def _refused(request: Request, exc: Exception) -> JSONResponse:
    """The router's own refusals (no such route, a method other than GET) in the API's form."""
    status = getattr(exc, "status_code", 404)
    return JSONResponse({"error": f"{request.method} {request.url.path}: {exc}"}, status)


def _experiments(experiments: Experiments, _dagster: str | None) -> list[dict[str, str]]:
    """Each experiment's name and algorithm (from its run_meta: no tree is built to list it)."""
    home = experiments.home
    listed = []
    for name in experiment_names(home):
        paths = experiment_paths(home, name)
        origin = forked_from(paths)
        listed.append({"name": name, "algorithm": algorithm_of(paths)})
        if origin is not None:
            listed[-1]["forked_from"] = origin["experiment"]
    return listed


def _tree(experiments: Experiments, dagster: str | None, name: str) -> dict[str, Any]:
    tree = experiments.open(name).tree
    return {
        **tree.model_dump(mode="json"),
        "forked_from": forked_from(experiment_paths(experiments.home, name)),
        "plots": plots(tree),
        "dagster": dagster,
        "runs": experiment_runs(dagster, tree.experiment),
    }


def _spend(experiments: Experiments, _dagster: str | None, name: str) -> dict[str, Any]:
    return spend(experiments.open(name).paths.gateway_log)


def _found(opened: Opened, node: str) -> Node:
    found = opened.nodes.get(node) if _NODE.fullmatch(node) else None
    if found is None:
        raise NotFound(f"no node {node[:60]!r} in experiment {opened.tree.experiment!r}")
    return found


def _snapshot(opened: Opened, node: str) -> str:
    found = _found(opened, node)
    if found.snapshot_id is None:
        raise NotFound(f"node {node} committed no snapshot")
    return found.snapshot_id


def _node(experiments: Experiments, dagster: str | None, name: str, node: str) -> dict[str, Any]:
    opened = experiments.open(name)
    found = _found(opened, node)
    decisions = records.node_decisions(opened.entries, found.id)
    files = records.node_records(opened.paths, decisions)
    public_test = opened.tree.sealed_test is not None
    tree = opened.tree
    own = found.round is not None and found.slot is not None
    where = candidate_key(found.round, found.slot) if own else None  # type: ignore[arg-type]
    return {
        "node": found.model_dump(mode="json"),
        "decisions": [d.model_dump(mode="json") for d in decisions],
        **records.trajectories(opened.paths, files, public_test),
        "records": records.other_records(opened.paths, files),
        "checks": node_checks(found, decisions, files, opened.store, tree.algorithm),
        "spend": {} if where is None else candidate_spend(opened.paths.gateway_log, where),
        "links": dagster_links(dagster, tree.algorithm, tree.experiment, found.round, found.slot),
    }


def _code(experiments: Experiments, _dagster: str | None, name: str, node: str) -> list:
    opened = experiments.open(name)
    return records.code_tree(opened.store, _snapshot(opened, node))


def _file(
    experiments: Experiments, _dagster: str | None, name: str, node: str, path: str
) -> dict[str, Any]:
    opened = experiments.open(name)
    return records.code_file(opened.store, _snapshot(opened, node), path)


def _diff(experiments: Experiments, _dagster: str | None, name: str, node: str) -> dict:
    opened = experiments.open(name)
    return records.diff_to_parent(opened.store, _snapshot(opened, node))


def serve(home: Path, port: int, host: str = LOOPBACK, dagster_url: str | None = None) -> None:
    """Serve the explorer until interrupted. Bound elsewhere than loopback, any `Host:` is
    taken: whoever binds it there has chosen who reaches it (a proxy's name is not known)."""
    hosts = LOOPBACK_NAMES if host in LOOPBACK_NAMES else ("*",)
    app = create_app(home, dagster_url, hosts)
    uvicorn.run(app, host=host, port=port, log_level="warning")
