"""Starting an experiment from the UI (or the nightly schedule): a small job with a typed
config. It creates the experiment from a YAML file and registers its partitions; the round
driver sensor takes it from there. Nothing else creates an experiment in the Dagster layer,
so previewing a schedule or a sensor tick has no side effects."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import dagster as dg
from pydantic import Field, ValidationError

from flashrsi_dagster.config import ConfigError
from flashrsi_dagster.config.names import NAME_RULE
from flashrsi_dagster.experiment import ConfigChangedError
from flashrsi_dagster.experiment.fork import fork_overrides
from flashrsi_dagster.explorer.links import WHERE_EXPERIMENTS_ARE
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs, defs_for
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.resources.experiments import InvalidExperiment
from flashrsi_dagster.orchestration.tags import TITLE_TAG, title
from flashrsi_dagster.records import Redactor


class StartExperiment(dg.Config):
    """What the Launchpad asks for; the defaults start the offline demo."""

    config_file: str = Field(
        "examples/meta_harness.yaml",
        description="Experiment YAML, relative to the code location's folder (`flashrsi ui` "
        "runs it in the folder holding the home); the default is the offline demo.",
    )
    name: str | None = Field(
        None, description=f"Experiment name ({NAME_RULE}); None: the file's own."
    )
    overrides: list[str] = Field(
        # Only keys every algorithm's config has: the file may be any algorithm's.
        default_factory=lambda: ["--benchmark.limit", "9"],
        description="Dotted overrides as on the command line, e.g. --benchmark.limit 9 or, "
        "for Meta-Harness, --algorithm.max_steps 2.",
    )
    fork_from: str | None = Field(
        None,
        description="Fork: the experiment (of this home) whose candidate becomes the seed, as "
        "`flashrsi fork --from`; None: the seed is the target's harness.",
    )
    candidate: str = Field(
        "baseline",
        description="With fork_from: r<NNN>.<slot> (e.g. r002.c0), a snapshot id, `baseline` "
        "(the origin's, else its seed) or `seed`.",
    )

    eval_sets: Literal["same", "next"] = Field(
        "same",
        description="With fork_from: `same`, tasks unchanged stay on the origin's evaluation-set "
        "versions; `next`, every evaluation opens the next version (the nightly schedule's).",
    )

    def all_overrides(self) -> list[str]:
        """The overrides, with the fork's when `fork_from` names an origin."""
        fork = (
            fork_overrides(self.fork_from, self.candidate, self.eval_sets) if self.fork_from else []
        )
        return [*self.overrides, *fork]


@dg.op(required_resource_keys={"experiments_home"})
def create_experiment(context: dg.OpExecutionContext, config: StartExperiment) -> None:
    """Create (or reopen, unchanged) the experiment and register every partition it uses."""
    experiments = context.resources.experiments_home
    try:
        experiment = experiments.create(
            config.config_file, name=config.name, overrides=config.all_overrides()
        )
    except (ConfigError, InvalidExperiment, ConfigChangedError) as exc:
        # One clear message in the run's failure; nothing was written.
        raise dg.Failure(description=refusal(config, exc), allow_retries=False) from None
    settings = experiment.config
    name = settings.experiment.name
    defs = defs_for(settings.algorithm.name)
    defs.register(context.instance, name, experiments.algorithm(name, log=context.log.info))
    context.instance.add_run_tags(
        context.run_id, {EXPERIMENT_TAG: name, TITLE_TAG: title(name, "start")}
    )
    context.add_output_metadata(
        {
            "experiment": name,
            "algorithm": settings.algorithm.name,
            "folder": str(experiment.paths.root),
            "next": "the round_driver sensor (on by default; Automation tab) runs its rounds: "
            "if it was turned off, turn it on there, or run `flashrsi resume` on this home",
            "watch": _watch(defs, name),
            **_forked(settings.experiment.fork),
        }
    )


def _forked(fork) -> dict[str, str]:
    """Where a fork's seed comes from, as the run's output says it (the lineage)."""
    if fork is None or fork.snapshot is None:
        return {}
    return {"forked_from": f"{fork.experiment} {fork.candidate} ({fork.snapshot[:12]})"}


def _watch(defs: AlgorithmDefs, name: str) -> dg.MetadataValue:
    """Where the experiment shows in this UI: its summary's partition where the algorithm
    reports one, else its sealed test's (every algorithm's last asset, per experiment)."""
    keys = {k for a in defs.assets for k in getattr(a, "keys", None) or [a.key]}
    summary = dg.AssetKey([*defs.sealed_test.path[:-1], "summary"])
    shown = summary if summary in keys else defs.sealed_test
    return dg.MetadataValue.url(
        f"/assets/{'/'.join(shown.path)}?view=partitions&partition={quote(name)}"
    )


def refusal(config: StartExperiment, exc: Exception, folder: Path | None = None) -> str:
    """Why a start is refused, on one line, naming the file once (as given: relative to
    `folder`, where the run would resolve it). The file can be any YAML on the host, and the
    message names its keys: redacted, as any event."""
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    text = text.replace(": invalid config; ", ": invalid config: ")
    text = text.removeprefix(f"{folder}/") if folder is not None else text
    where = f"{config.config_file}: "
    return Redactor().text(text if text.startswith(where) else where + text)


def launch_problem(
    run_config: Mapping[str, Any], folder: Path, home: Path | None = None
) -> str | None:
    """Why a `start_experiment` run with `run_config` would fail at once, as its one-line
    message; None when it may start. Checked as the run is submitted (`RunQueue`), before a
    run worker starts: the Launchpad's own validation knows only the types. `folder`: where
    the code location runs (relative paths start there); `home`: its experiments folder where
    the run config names none (default: the resource's, under `folder`)."""
    from flashrsi_dagster.orchestration.resources.experiments import ExperimentsResource

    ops, resources = run_config.get("ops") or {}, run_config.get("resources") or {}
    given = (ops.get(create_experiment.name) or {}).get("config") or {}
    named = ((resources.get("experiments_home") or {}).get("config") or {}).get("home")
    try:
        config = StartExperiment(**given)
    except ValidationError as exc:
        return f"create_experiment: {exc.errors()[0]['msg']}"
    default = home or ExperimentsResource.model_fields["home"].default
    experiments = ExperimentsResource.at(folder / (named or default))
    try:
        experiments.check(
            folder / config.config_file, name=config.name, overrides=config.all_overrides()
        )
    except (ConfigError, InvalidExperiment, ConfigChangedError) as exc:
        return refusal(config, exc, folder)
    return None


@dg.job(
    description="Create an experiment from a YAML file and register its partitions; the round "
    f"driver sensor then runs it.\n\n{WHERE_EXPERIMENTS_ARE}",
    executor_def=dg.in_process_executor,  # one small op: a step subprocess costs ~all its time
)
def start_experiment() -> None:
    create_experiment()
