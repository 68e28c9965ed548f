"""The round driver as a sensor, and the nightly schedule that starts a new experiment.

The sensor asks every experiment under the home folder for its next step (the same
`next_step` as the CLI) and requests that step's run through its algorithm's mapping, with
an idempotent run key; it leaves an experiment alone while any of its runs is active, and
stops asking once it is done or aborted.

The schedule only *requests* a `start_experiment` run: previewing it creates nothing."""

import dagster as dg
from pydantic import Field

from flashrsi_dagster.assets.context import EXPERIMENT_TAG
from flashrsi_dagster.config import load_config
from flashrsi_dagster.defs import ALGORITHM_DEFS, defs_for
from flashrsi_dagster.experiment.keys import nightly_name
from flashrsi_dagster.jobs.execution import home_run_config
from flashrsi_dagster.jobs.start import start_experiment
from flashrsi_dagster.resources import ExperimentsResource

ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,  # its process still runs (its jails, its last writes)
    dg.DagsterRunStatus.SUSPENDED,  # it resumes where it stopped
]


@dg.sensor(
    jobs=[job for d in ALGORITHM_DEFS.values() for job in d.jobs],
    minimum_interval_seconds=1,  # at every loop of the sensor daemon (every 5 s)
    default_status=dg.DefaultSensorStatus.STOPPED,
)
def round_driver(
    context: dg.SensorEvaluationContext, experiments_home: ExperimentsResource
) -> dg.SensorResult:
    """Requests each experiment's next step once its previous run has finished."""
    experiments = experiments_home
    run_config = home_run_config(experiments.home)  # where steps run: <home>/execution.yaml
    requests, additions = [], []
    for name in experiments.names():
        active = context.instance.get_runs(
            filters=dg.RunsFilter(tags={EXPERIMENT_TAG: name}, statuses=ACTIVE), limit=1
        )
        if active:
            continue
        try:
            opened = experiments.algorithm(name)  # opened once, for the tick
            algorithm = defs_for(opened.name)
            request = algorithm.request(name, experiments.next_step(name))
            # A home restored beside a fresh instance: a request for a partition the
            # instance does not know would fail the whole tick, so the tick adds it.
            missing = algorithm.unregistered(context.instance, name, opened)
        except Exception as exc:  # one unreadable experiment must not stop the others
            context.log.warning(f"experiment {name!r} skipped: {exc}")
            continue
        if request is not None:
            requests.append(request.with_replaced_attrs(run_config=run_config))
            additions.extend(missing)
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=additions)


class NightlyConfig(dg.ConfigurableResource):
    config_file: str = Field(
        "examples/meta_harness.yaml", description="Experiment YAML started every night."
    )


@dg.schedule(
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    job=start_experiment,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def nightly_evolution(
    context: dg.ScheduleEvaluationContext, nightly: NightlyConfig
) -> dg.RunRequest:
    """A new experiment each night from the config file, named after the date: the run it
    requests creates it, and the driver sensor takes it from there."""
    config_file = nightly.config_file
    stamp = context.scheduled_execution_time.strftime("%Y%m%d")
    name = nightly_name(load_config(config_file).experiment.name, stamp)
    return dg.RunRequest(
        run_key=f"nightly:{name}",
        run_config={
            "ops": {
                "create_experiment": {
                    "config": {"config_file": config_file, "name": name, "overrides": []}
                }
            }
        },
        tags={EXPERIMENT_TAG: name},
    )
