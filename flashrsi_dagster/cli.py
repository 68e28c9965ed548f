"""`flashrsi`: the command line. Each command is a small function over the engine."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import yaml
from pydantic import ValidationError

from flashrsi_dagster.algorithms import registry
from flashrsi_dagster.algorithms.base import FINALIZE_ACTIONS
from flashrsi_dagster.config import ConfigError, ExperimentConfig, load_config
from flashrsi_dagster.config.names import InvalidName, name_problem
from flashrsi_dagster.experiment import (
    ConfigChangedError,
    Experiment,
    ExperimentPaths,
    NoExperiment,
    open_experiment,
)
from flashrsi_dagster.experiment.fork import ForkError, fork_overrides, pinned
from flashrsi_dagster.experiment.identity import normalised
from flashrsi_dagster.lifecycle import (
    CommandRunning,
    Stopped,
    raise_on_stop_signals,
    restore,
    stop_wins,
)
from flashrsi_dagster.records import IntegrityError, RecordError
from flashrsi_dagster.validation import dry_run, home_problems, one_line, path_problem

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2

_ON_STORED = (
    *("resume", "finalize", "ui", "explorer", "rollback", "archive-node", "worker", "compare"),
)
"""Commands on an experiment already started: they take its stored config, no overrides."""
_OVERRIDES_HELP = "dotted overrides, e.g. --algorithm.max_steps 2 --benchmark.limit 9"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flashrsi",
        description="Recursive self-improvement of agent harnesses on Dagster.",
        allow_abbrev=False,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _config_command(commands, "validate", "check a config and print it normalised")
    init = _config_command(commands, "init", "create (or reopen) the experiment of a config")
    run = _config_command(commands, "run", "run a whole experiment through Dagster")
    run.add_argument(
        "--force",
        action="store_true",
        help="continue despite a changed config; marks the experiment not sealed",
    )
    fork = _config_command(
        commands, "fork", "start a new experiment from a candidate of another one, and run it"
    )
    fork.add_argument(
        "--from", dest="origin", required=True, metavar="EXPERIMENT", help="the origin's name"
    )
    fork.add_argument(
        "--candidate",
        default="baseline",
        help="r<NNN>.<slot> (e.g. r002.c0), a snapshot id (or prefix), `baseline` (the "
        "origin's, else its seed; the default) or `seed`",
    )
    fork.add_argument(
        "--eval-sets",
        choices=["same", "next"],
        default="same",
        help="same: tasks unchanged stay on the origin's evaluation-set versions (comparable); "
        "next: every evaluation opens the next version (dev/e2, …), never compared",
    )
    resume = commands.add_parser(
        "resume", help="continue an interrupted experiment", allow_abbrev=False
    )
    resume.add_argument("--experiment", required=True, help="experiment name")
    _home_argument(resume)
    final = commands.add_parser(
        "finalize",
        help="run only the finalize steps (promotion, the sealed test) once the search is over",
        allow_abbrev=False,
    )
    final.add_argument("--experiment", required=True, help="experiment name")
    _home_argument(final)
    back = commands.add_parser(
        "rollback",
        help="make a known baseline the experiment's baseline again, for later runs",
        allow_abbrev=False,
    )
    back.add_argument("--experiment", required=True, help="experiment name")
    back.add_argument("--to", required=True, metavar="SNAPSHOT", help="snapshot id (or prefix)")
    back.add_argument("--reason", help="why (recorded in the decision ledger)")
    back.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long to wait for the experiment's runs in flight, once cancelled, to end "
        "(default 120); still running then, nothing is restored",
    )
    _home_argument(back)
    archive = commands.add_parser(
        "archive-node",
        help="set an Evolver node aside as archived-methodology-failure (its evidence is not "
        "to be trusted)",
        allow_abbrev=False,
    )
    archive.add_argument("--experiment", required=True, help="experiment name")
    archive.add_argument("--node", required=True, help="node id, e.g. r002.w1c3")
    archive.add_argument("--reason", required=True, help="why (recorded in the ledger)")
    _home_argument(archive)
    compare = commands.add_parser(
        "compare",
        help="an experiment's lift over its control (a budget-matched best_of_n), paired per "
        "task on dev, and on test once both have run their sealed tests",
        allow_abbrev=False,
    )
    compare.add_argument("--experiment", required=True, help="experiment name")
    compare.add_argument(
        "--control",
        help="the control's name (default: the experiment's `experiment.control`)",
    )
    compare.add_argument("--json", action="store_true", help="print the figures as JSON")
    _home_argument(compare)
    ui = commands.add_parser("ui", help="the Dagster UI on the experiments", allow_abbrev=False)
    _home_argument(ui)
    ui.add_argument("--port", default=3000, type=int)
    ui.add_argument(
        "--explorer-port", default=3100, type=int, help="the experiment explorer's port"
    )
    explorer = commands.add_parser(
        "explorer",
        help="the experiment explorer alone (read-only; `ui` starts it beside Dagster)",
        allow_abbrev=False,
    )
    _home_argument(explorer)
    explorer.add_argument("--port", default=3100, type=int)
    explorer.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: loopback only)"
    )
    explorer.add_argument(
        "--dagster-url", default=None, help="the Dagster UI's address, for links to its pages"
    )
    worker = commands.add_parser(
        "worker",
        help="a Celery worker for the steps the home's runs send to its broker "
        "(<home>/execution.yaml)",
        allow_abbrev=False,
    )
    _home_argument(worker)
    worker.add_argument("--name", help="worker name (Celery's node name, e.g. w1@%%h)")
    worker.add_argument("--loglevel", default="INFO")
    evaluate = _config_command(commands, "eval", "evaluate one harness on a split, no evolution")
    evaluate.add_argument(
        "--split",
        required=True,
        choices=["dev", "train", "all"],
        help="all: every task of the benchmark, drawn into no split (a suite check, e.g. "
        "harbor-oracle at 1 and harbor-nop at 0); refused in a started experiment's folder, "
        "and a folder it ran in never becomes an experiment",
    )
    evaluate.add_argument("--tasks", help="comma-separated task ids (default: the whole split)")
    evaluate.add_argument(
        "--snapshot",
        help="a snapshot id of the experiment, or `baseline`: its current baseline in the "
        "decision ledger (default: the seed)",
    )
    evaluate.add_argument("--fresh", action="store_true", help="ignore a previous record")
    commands.add_parser(
        "offline-model",
        help="serve the offline model simulator until stopped (see `offline-model --help`)",
        add_help=False,
    )
    init.add_argument(
        "--force",
        action="store_true",
        help="reopen despite a changed config; marks the experiment as not validly sealed",
    )
    return parser


def _home_argument(command: argparse.ArgumentParser) -> None:
    # `--experiment.home` too: the spelling that `run` and `init` take as an override.
    command.add_argument(
        "--home",
        "--experiment.home",
        dest="home",
        default=".flashrsi",
        type=Path,
        help="experiments folder",
    )


def _config_command(commands, name: str, summary: str) -> argparse.ArgumentParser:
    """A sub-command that takes `--config FILE` followed by dotted overrides."""
    command = commands.add_parser(name, help=summary, allow_abbrev=False, epilog=_OVERRIDES_HELP)
    command.add_argument("--config", required=True, type=Path, help="experiment YAML file")
    return command


GRPC_TIMEOUT = "300"
"""Seconds Dagster's client waits for its code server (`DAGSTER_GRPC_TIMEOUT_SECONDS`, read
when Dagster is imported): launching a queued run waits until its run worker has imported the
code location, which took more than Dagster's 60 s on a loaded 2-core machine."""


def main(argv: Sequence[str] | None = None) -> int:
    # Before anything imports Dagster: its client reads the timeout once, at import.
    os.environ.setdefault("DAGSTER_GRPC_TIMEOUT_SECONDS", GRPC_TIMEOUT)
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # every command reads configs or serves the algorithms' simulator policies
        registry.check()
    except registry.UnknownAlgorithmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if argv[:1] == ["offline-model"]:
        from flashrsi_dagster.offline_model.cli import main as serve

        return serve(argv[1:])
    args, overrides = _parser().parse_known_args(argv)
    if args.command in _ON_STORED:
        if overrides:  # the experiment's own config is used; nothing may silently not apply
            print(
                f"error: {args.command} takes no overrides: {' '.join(overrides)}", file=sys.stderr
            )
            return EXIT_BAD_INPUT
        problem = name_problem(args.experiment) if hasattr(args, "experiment") else None
        if problem:  # before the home is read: `../other-home/x` must not reach another home
            print(f"error: --experiment: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if problem := path_problem(args.home):  # stat would fail in each command's own way
            print(f"error: --home: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
        commands = {
            "resume": _resume,
            "finalize": _resume,
            "ui": _ui,
            "explorer": _explorer,
            "worker": _worker,
            "rollback": _rollback,
            "archive-node": _archive_node,
            "compare": _compare,
        }
        return commands[args.command](args)
    if args.command == "fork":
        problem = name_problem(args.origin)
        if problem:  # a name, never a path: `../other-home/x` must not reach another home
            print(f"error: --from: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
        overrides = [*overrides, *fork_overrides(args.origin, args.candidate, args.eval_sets)]
    try:
        config = pinned(load_config(args.config, overrides))
    except (ConfigError, ForkError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # eval needs only the split it scores (all: none is drawn, every task is scored)
    splits = (args.split,) if args.command == "eval" else None
    if not _preflight(config, splits, home_only=args.command == "init"):
        return EXIT_BAD_INPUT
    if args.command == "validate":
        return _validate(config)
    if args.command == "eval":
        return _eval(config, args)
    if args.command == "run":
        return _run(config, force=args.force)
    if args.command == "fork":
        return _fork(config)
    return _init(config, force=args.force)


def _preflight(
    config: ExperimentConfig, splits: tuple[str, ...] | None = None, *, home_only: bool = False
) -> bool:
    """The dry run, before anything is written: every problem is printed (one line each,
    naming the key) and the command refuses to go on. `home_only` (init, which runs no
    agent): only that the experiment folder can be made."""
    problems = home_problems(config) if home_only else dry_run(config, splits=splits)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return not problems


def _validate(config: ExperimentConfig) -> int:
    print(yaml.safe_dump(normalised(config), sort_keys=False, allow_unicode=True), end="")
    print(f"# ok: {describe(config)}", file=sys.stderr)
    return EXIT_OK


def _open(
    config: ExperimentConfig, *, force: bool = False, create: bool = True
) -> Experiment | None:
    """The experiment, or None (with the reason on stderr) when its config has changed, its
    records fail the integrity check, or (not `create`) it was never started."""
    started = datetime.now(UTC)
    try:
        experiment = open_experiment(config, force=force, create=create)
    except (ConfigChangedError, NoExperiment) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    except OSError as exc:  # a folder the experiment cannot be made in (init has no dry run)
        print(
            f"error: experiment.home: cannot open experiment {config.experiment.name!r} in "
            f"{config.experiment.dir}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return None
    except IntegrityError as exc:
        print(f"error: experiment {config.experiment.name!r} refused: {exc}", file=sys.stderr)
        return None
    for replaced in experiment.meta.replaced:
        if replaced.at >= started:
            print(
                f"note: experiment {config.experiment.name} had run no rollout, so its config "
                f"was replaced (recorded in run_meta.json): {'; '.join(replaced.changes)}"
            )
    return experiment


def _init(config: ExperimentConfig, *, force: bool) -> int:
    experiment = _open(config, force=force)
    if experiment is None:
        return EXIT_BAD_INPUT
    print(f"experiment {config.experiment.name}: {experiment.paths.root}")
    print(f"  config fingerprint {experiment.meta.fingerprint[:16]}")
    note = experiment.meta.validity_note()
    if note:
        print(f"  {note}")
    return EXIT_OK


def _instance_ready(home: Path) -> bool:
    """The home's Dagster instance opens on its storage; else False, having said why."""
    from flashrsi_dagster.deployment.instance import check_instance
    from flashrsi_dagster.deployment.postgres import StorageSettingError

    try:
        check_instance(home)
    except StorageSettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return False
    return True


def _run(config: ExperimentConfig, *, force: bool) -> int:
    if not _instance_ready(Path(config.experiment.home)):
        return EXIT_BAD_INPUT
    experiment = _open(config, force=force)
    return EXIT_BAD_INPUT if experiment is None else _drive(experiment)


def _fork(config: ExperimentConfig) -> int:
    """`run` of the forked config, saying where its seed comes from first. An experiment of
    that name that exists already is reopened only with the same config (origin and commit
    included), as `run` does."""
    fork = config.experiment.fork
    assert fork is not None and fork.snapshot is not None
    print(
        f"experiment {config.experiment.name}: forked from {fork.experiment} {fork.candidate} "
        f"(snapshot {fork.snapshot[:12]}); evaluation sets: {fork.eval_sets}"
    )
    return _run(config, force=False)


def _resume(args: argparse.Namespace) -> int:
    config = _stored_config(args.home.resolve(), args.experiment)
    if config is None or not _preflight(config) or not _instance_ready(args.home.resolve()):
        return EXIT_BAD_INPUT
    experiment = _open(config, create=False)  # resume never starts an experiment
    only = FINALIZE_ACTIONS if args.command == "finalize" else None
    return EXIT_BAD_INPUT if experiment is None else _drive(experiment, only=only)


def _stored_algorithm(args: argparse.Namespace):
    """The algorithm of experiment `args.experiment` under `args.home`, opened quietly; None
    (having said why) when there is no such experiment or it cannot be opened."""
    from flashrsi_dagster.algorithms.registry import open_algorithm

    config = _stored_config(args.home.resolve(), args.experiment)
    experiment = None if config is None else _open(config, create=False)
    return None if experiment is None else open_algorithm(experiment, log=lambda _: None)


def _rollback(args: argparse.Namespace) -> int:
    from flashrsi_dagster.decisions import RollbackError, rollback
    from flashrsi_dagster.decisions.rollback import WAIT
    from flashrsi_dagster.deployment.halting import experiment_runs
    from flashrsi_dagster.deployment.postgres import StorageSettingError

    if args.wait is not None and not args.wait >= 0:
        print(f"error: --wait: expected seconds >= 0, got {args.wait:g}", file=sys.stderr)
        return EXIT_BAD_INPUT
    algorithm = _stored_algorithm(args)
    if algorithm is None:
        return EXIT_BAD_INPUT
    try:
        runs = experiment_runs(args.home.resolve(), args.experiment)
        wait = WAIT if args.wait is None else args.wait
        entry = rollback(algorithm, args.to, args.reason, runs=runs, wait=wait)
    except RollbackError as exc:
        print(f"error: experiment {args.experiment!r}: roll-back refused: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except IntegrityError as exc:
        print(f"error: experiment {args.experiment!r} refused: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except StorageSettingError as exc:  # its database gone: said as `run` and `resume` say it
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        algorithm.close()
    restored, replaced = entry.candidate.snapshot_id or "", entry.baseline.snapshot_id or ""
    for line in entry.evidence.runs:
        print(f"cancelled run {line}")
    print(
        f"experiment {args.experiment}: baseline rolled back to {restored[:12]} (was "
        f"{replaced[:12]}); ledger entry {entry.id}: {entry.reason}\n"
        f"later runs start from it: `flashrsi eval --snapshot baseline`; the records are kept"
    )
    return EXIT_OK


def _archive_node(args: argparse.Namespace) -> int:
    from flashrsi_dagster.algorithms.base import StepOrderError

    algorithm = _stored_algorithm(args)
    if algorithm is None:
        return EXIT_BAD_INPUT
    try:
        if not hasattr(algorithm, "archive_node"):
            raise ValueError(f"it runs {algorithm.name}: only the Evolver's candidates are nodes")
        node = algorithm.archive_node(args.node, args.reason)
    except (ValueError, StepOrderError) as exc:
        print(f"error: experiment {args.experiment!r}: archive refused: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        algorithm.close()
    print(f"experiment {args.experiment}: {node.id} is {node.state}; the ledger records why")
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from flashrsi_dagster.controls.lift import lift, lift_lines
    from flashrsi_dagster.controls.stored import NoStoredExperiment, open_stored

    home = args.home.resolve()
    try:
        experiment = open_stored(home, args.experiment, "--experiment")
        name = args.control or experiment.config.experiment.control
        if name is None:
            raise NoStoredExperiment(
                f"--control: experiment {args.experiment!r} names no control "
                "(`experiment.control`); give one"
            )
        if problem := name_problem(name):
            raise NoStoredExperiment(f"--control: {problem}")
        result = lift(experiment, open_stored(home, name, "--control"))
    except NoStoredExperiment as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(result.model_dump_json(indent=1))
    else:
        print(f"experiment {result.experiment}")
        print("\n".join(f"  {line}" for line in lift_lines(result)))
    return EXIT_OK


def _stored_config(home: Path, name: str) -> ExperimentConfig | None:
    """The config the experiment runs with, from its run_meta.json; None (saying why) when
    there is no such experiment or its record cannot be read back."""
    from flashrsi_dagster.orchestration.resources import ExperimentsResource

    experiments, folder = ExperimentsResource.at(home), home / name
    meta = ExperimentPaths(folder).run_meta
    if not folder.is_dir():
        known = ", ".join(experiments.names()) or "none"
        print(
            f"error: no experiment {name!r} under {home} (experiments there: {known})",
            file=sys.stderr,
        )
    elif not meta.is_file():
        print(
            f"error: {folder} has no run_meta.json, so no experiment was started there (`flashrsi "
            f"eval` writes records without one); start it with `flashrsi run --config FILE "
            f"--experiment.home {home}`",
            file=sys.stderr,
        )
    else:
        try:
            return experiments.config(name)
        except InvalidName as exc:
            print(f"error: {exc}", file=sys.stderr)
        except (RecordError, ValidationError) as exc:
            print(f"error: {meta}: its config cannot be reopened: {one_line(exc)}", file=sys.stderr)
    return None


def _drive(experiment, only: tuple[str, ...] | None = None) -> int:
    from flashrsi_dagster.algorithms.base import StepOrderError
    from flashrsi_dagster.deployment.cli_driver import drive, summary
    from flashrsi_dagster.experiment.lock import DriverBusy

    handlers = raise_on_stop_signals()  # its runs and code server stop with it
    try:
        with stop_wins():
            state = drive(experiment, say=lambda line: print(line, flush=True), only=only)
    except Stopped as stop:
        print(f"{stop}: resume to carry on", file=sys.stderr)
        return stop.status
    except DriverBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (StepOrderError, ConfigError) as exc:  # ConfigError: the home's execution.yaml
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except IntegrityError as exc:
        name = experiment.config.experiment.name
        print(f"error: experiment {name!r} refused: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        restore(handlers)
    text, aborted = summary(experiment, state)
    print(text)
    return EXIT_FAILED if aborted else EXIT_OK


def _ui(args: argparse.Namespace) -> int:
    from flashrsi_dagster.deployment.instance import ui

    if not _instance_ready(args.home.resolve()):
        return EXIT_BAD_INPUT
    try:
        return ui(args.home.resolve(), args.port, args.explorer_port)
    except CommandRunning as exc:
        print(f"error: {exc} on this home", file=sys.stderr)
        return EXIT_FAILED


def _explorer(args: argparse.Namespace) -> int:
    from flashrsi_dagster.explorer.server import serve

    serve(args.home.resolve(), args.port, host=args.host, dagster_url=args.dagster_url)
    return EXIT_OK


def _worker(args: argparse.Namespace) -> int:
    from flashrsi_dagster.deployment.workers import supervise

    try:
        return supervise(args.home.resolve(), name=args.name, loglevel=args.loglevel)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CommandRunning as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _eval(config: ExperimentConfig, args: argparse.Namespace) -> int:
    from flashrsi_dagster.agents.base import ContainerUnsupported
    from flashrsi_dagster.benchmarks.base import BenchmarkError
    from flashrsi_dagster.evaluation import evaluate
    from flashrsi_dagster.snapshots import SnapshotError

    def progress(done: int, total: int, t) -> None:
        score = "-" if t.score is None else f"{t.score:g}"
        print(
            f"[{done}/{total}] {t.task_id}  {t.status}  score {score}  "
            f"{t.usage.turns} turns  {t.duration:.1f}s",
            flush=True,
        )

    snapshot_id = args.snapshot
    if snapshot_id == "baseline":
        from flashrsi_dagster.decisions import Ledger
        from flashrsi_dagster.records.verify import problems_of

        root = ExperimentPaths(config.experiment.dir).root
        # the ledger names the baseline only if the chain vouches for it (a forged line no)
        problems = problems_of(root) if root.is_dir() else []
        if problems:
            print(f"error: {IntegrityError(problems)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        entry = Ledger(root).baseline()
        snapshot_id = entry.candidate.snapshot_id if entry else None  # none yet: the seed
    try:
        result = evaluate(
            config,
            split=args.split,
            snapshot_id=snapshot_id,
            fresh=args.fresh,
            task_ids=args.tasks.split(",") if args.tasks else None,
            progress=progress,
        )
    except (BenchmarkError, SnapshotError, ContainerUnsupported) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print_summary(result)
    return EXIT_OK


def _print_summary(result) -> None:
    s = result.summary
    cost = "unpriced" if s["cost"] is None else f"${s['cost']:.4f}"
    print(
        f"\n{result.split} split, snapshot {result.snapshot.short_id}: "
        f"score {s['score']:.3f} over {s['tasks']} tasks "
        f"({s['success']} succeeded, {s['infra_reruns']} infrastructure reruns)"
    )
    print(
        f"tokens {s['input_tokens']} in / {s['output_tokens']} out, {s['tool_calls']} tool "
        f"calls, {cost}, {s['duration']:.1f}s of rollout time"
    )
    for mode in s["failure_modes"]:
        print(f"  {mode['count']:4d}  {mode['status']}  {mode['error_type']}")
    print(f"record: {result.record_path}\nscores: {result.scores_path}")


def describe(config: ExperimentConfig) -> str:
    """One line saying what the config will run."""
    algorithm, bench = config.algorithm, config.benchmark
    counts = bench.split_counts
    splits = (
        f"train/dev/test {counts.train}/{counts.dev}/{counts.test}" if counts else "default splits"
    )
    limit = f", at most {bench.limit} tasks per split" if bench.limit else ""
    parameters = ", ".join(f"{k}={v}" for k, v in algorithm.parameters().items())
    roles = ", ".join(f"{n} {r.type} with {r.llm.model}" for n, r in config.roles().items())
    return (
        f"{algorithm.name} ({parameters}) on {bench.name} ({splits}{limit}); {roles}; "
        f"experiment folder {config.experiment.dir}"
    )


if __name__ == "__main__":
    sys.exit(main())
