"""Dagster's write cost per event on a home's two storages — SQLite (`HomeStorage`, the default)
and PostgreSQL (`FLASHRSI_POSTGRES_URL`, dagster-postgres) — and the framework's share of a
Meta-Harness round on each.

Run:  .venv/bin/python bench/storage_bench.py [--runs 20] [--latency 1.0] [--tasks 10]
                              [--steps 2] [--concurrency 4] [--rounds 1] [--postgres URL]

Events: a real Meta-Harness experiment (the demo config, 4 dev tasks, one Worker step, the
offline simulator) runs once through Dagster; its runs' events — run and step events, logs,
asset materializations with their metadata (diffs, tables, charts), asset checks — are then
stored again `--runs` times into each storage's home instance, each source run under a new run
id, one event at a time through `DagsterInstance.handle_new_event` (what a run worker calls:
the event log, the asset index, the run's status). Reported per event: median, p95, mean (ms),
materializations apart (they also write the asset index).

Rounds: `round_overhead_bench.measure` (`--path dagster`, as `flashrsi run` runs a round) on a
home of each storage, `--rounds` times: the median share of a round's wall time that is the
framework's (target <= 5 % at concurrency 4, see that script).

PostgreSQL: a new database on the server `--postgres` names (default the machine's,
`postgresql://postgres@127.0.0.1:5432/postgres`), dropped afterwards. A report, not a test: it
always exits 0; on a shared machine the figures move with the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import dagster as dg
import psycopg2
from report import save
from round_overhead_bench import measure
from sqlalchemy.engine import make_url

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.deployment.postgres import URL_ENV
from flashrsi_dagster.experiment import open_experiment

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "meta_harness.yaml"
SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
MATERIALIZED = dg.DagsterEventType.ASSET_MATERIALIZATION


def source_runs(home: Path) -> list[tuple[dg.DagsterRun, list]]:
    """The runs of a small Meta-Harness experiment, each with its events."""
    config = load_config(
        EXAMPLE,
        [
            *("--experiment.home", str(home)),
            *("--benchmark.limit", "4", "--algorithm.max_steps", "1"),
        ],
    )
    with dg.instance_for_test() as instance:
        drive_on(instance, open_experiment(config), say=lambda _: None)
        runs = list(reversed(instance.get_runs()))
        return [(run, list(instance.all_logs(run.run_id))) for run in runs]


def replay(instance: dg.DagsterInstance, runs, times: int) -> dict[str, list[float]]:
    """Store every run's events `times` over, each copy under a new run id; ms per event."""
    spent: dict[str, list[float]] = {"all": [], "materialization": [], "other": []}
    for _ in range(times):
        for run, events in runs:
            run_id = str(uuid.uuid4())
            instance.add_run(
                run._replace(
                    run_id=run_id,
                    status=dg.DagsterRunStatus.NOT_STARTED,
                    job_snapshot_id=None,
                    execution_plan_snapshot_id=None,
                )
            )
            for event in events:
                copy = event._replace(run_id=run_id)
                started = time.perf_counter()
                instance.handle_new_event(copy)
                ms = (time.perf_counter() - started) * 1000
                kind = "materialization" if event.dagster_event_type == MATERIALIZED else "other"
                spent["all"].append(ms)
                spent[kind].append(ms)
    return spent


def figures(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "events": len(values),
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


@contextmanager
def storage(kind: str, server: str) -> Iterator[None]:
    """The setting for `kind` in this process's environment (a new database for postgres)."""
    if kind == "sqlite":
        saved = os.environ.pop(URL_ENV, None)
        try:
            yield
        finally:
            if saved is not None:
                os.environ[URL_ENV] = saved
        return
    url = make_url(server)
    name = f"flashrsi_bench_{uuid.uuid4().hex[:12]}"
    _admin(url, f'CREATE DATABASE "{name}"')
    os.environ[URL_ENV] = url.set(database=name).render_as_string(hide_password=False)
    try:
        yield
    finally:
        del os.environ[URL_ENV]
        _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin(url, sql: str) -> None:
    connection = psycopg2.connect(
        host=url.host, port=url.port, user=url.username, password=url.password,
        dbname=url.database, connect_timeout=3,
    )  # fmt: skip
    connection.autocommit = True  # CREATE / DROP DATABASE cannot run in a transaction
    with closing(connection), connection.cursor() as cursor:
        cursor.execute(sql)


def event_costs(runs, times: int, server: str) -> dict:
    report = {}
    for kind in ("sqlite", "postgres"):
        with storage(kind, server), tempfile.TemporaryDirectory() as home:
            instance = persistent_instance(Path(home))
            try:
                replay(instance, runs[:1], 1)  # warm: tables made, connections open
                spent = replay(instance, runs, times)
            finally:
                instance.dispose()
        report[kind] = {part: figures(values) for part, values in spent.items()}
    return report


def round_shares(args: argparse.Namespace) -> dict:
    report = {}
    for kind in ("sqlite", "postgres"):
        shares = []
        for _ in range(args.rounds):
            with storage(kind, args.postgres):
                run = measure(args.latency, args.tasks, args.steps, args.concurrency, "dagster")
            shares.append(run)
        report[kind] = {
            "median_share": [r["median_share"] for r in shares],
            "median_share_warm": [r["median_share_warm"] for r in shares],
            "total_share": [r["total_share"] for r in shares],
            "overhead_s": [[x["overhead_s"] for x in r["rounds"]] for r in shares],
            "wall_s": [[x["wall_s"] for x in r["rounds"]] for r in shares],
        }
    return report


def _print(events: dict, rounds: dict) -> None:
    print("\nper event (handle_new_event), ms      p50      p95     mean   events")
    for kind, parts in events.items():
        for part, f in parts.items():
            print(
                f"  {kind:<9} {part:<16} {f['p50_ms']:>8.2f} {f['p95_ms']:>8.2f} "
                f"{f['mean_ms']:>8.2f} {f['events']:>8}"
            )
    print("\nframework share of a round (median over rounds; all rounds together)")
    for kind, r in rounds.items():
        medians = ", ".join(f"{s:.1%}" for s in r["median_share"])
        totals = ", ".join(f"{s:.1%}" for s in r["total_share"])
        print(f"  {kind:<9} median {medians}; together {totals}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="copies of the experiment's runs")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model request")
    parser.add_argument("--tasks", type=int, default=10, help="dev tasks of the rounds")
    parser.add_argument("--steps", type=int, default=2, help="Worker steps of the rounds")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="experiments per storage; 0: none")
    parser.add_argument("--postgres", default=SERVER, help="a server to make a database on")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        runs = source_runs(Path(home))
    count = sum(len(events) for _, events in runs)
    print(f"storage bench: {len(runs)} runs, {count} events, stored {args.runs} times each")
    events = event_costs(runs, args.runs, args.postgres)
    rounds = round_shares(args) if args.rounds else {}
    _print(events, rounds)
    save(
        "storage_bench",
        {
            "runs": len(runs),
            "events_per_copy": count,
            "copies": args.runs,
            "latency_s": args.latency,
            "tasks": args.tasks,
            "steps": args.steps,
            "concurrency": args.concurrency,
            "per_event": events,
            "round_share": rounds,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
