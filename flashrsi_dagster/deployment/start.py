"""Starting an experiment from the UI (or the nightly schedule): a small job with a typed
config. It creates the experiment from a YAML file and registers its partitions; the round
driver sensor takes it from there. Nothing else creates an experiment in the Dagster layer,
so previewing a schedule or a sensor tick has no side effects."""

import dagster as dg
from pydantic import Field

from flashrsi_dagster.config import ConfigError
from flashrsi_dagster.config.names import NAME_RULE
from flashrsi_dagster.experiment import ConfigChangedError
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
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


@dg.op(required_resource_keys={"experiments_home"})
def create_experiment(context: dg.OpExecutionContext, config: StartExperiment) -> None:
    """Create (or reopen, unchanged) the experiment and register every partition it uses."""
    experiments = context.resources.experiments_home
    try:
        experiment = experiments.create(
            config.config_file, name=config.name, overrides=config.overrides
        )
    except (ConfigError, InvalidExperiment, ConfigChangedError) as exc:
        # One clear message in the run's failure, not a trace; nothing was written. The file
        # can be any YAML on the host, and the message names its keys: redacted, as any event.
        message = Redactor().text(f"{config.config_file}: {exc}")
        raise dg.Failure(description=message, allow_retries=False) from None
    settings = experiment.config
    name = settings.experiment.name
    defs_for(settings.algorithm.name).register(
        context.instance, name, experiments.algorithm(name, log=context.log.info)
    )
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
        }
    )


@dg.job(
    description="Create an experiment from a YAML file and register its partitions.",
    executor_def=dg.in_process_executor,  # one small op: a step subprocess costs ~all its time
)
def start_experiment() -> None:
    create_experiment()
