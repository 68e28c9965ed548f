"""The round driver as a sensor, and the nightly schedule that starts a new experiment.

The sensor calls the same pure `next_step` as the CLI for every experiment under the home
folder and requests the next run with an idempotent run key; it stops an experiment once it is
done or aborted (a Worker failure)."""

import dagster as dg
from pydantic import Field

from flashrsi_dagster.assets.meta_harness import DRIVER_TAG
from flashrsi_dagster.assets.partitions import partition, register
from flashrsi_dagster.config import load_config
from flashrsi_dagster.jobs import meta_harness, meta_harness_finalize
from flashrsi_dagster.jobs.driver import run_key
from flashrsi_dagster.resources import ExperimentsResource


def next_request(experiments_home: ExperimentsResource, name: str) -> dg.RunRequest | None:
    step = experiments_home.next_step(name)
    tags = {DRIVER_TAG: "1", "flashrsi/experiment": name}
    if step.action in ("evaluate_seed", "propose"):
        return dg.RunRequest(
            run_key=run_key(name, step),
            job_name=meta_harness.name,
            partition_key=partition(name, step.round or 0),
            tags=tags,
        )
    if step.action in ("promote", "sealed_test"):
        return dg.RunRequest(
            run_key=run_key(name, step),
            job_name=meta_harness_finalize.name,
            partition_key=name,
            tags=tags,
        )
    return None


@dg.sensor(
    jobs=[meta_harness, meta_harness_finalize],
    minimum_interval_seconds=15,
    default_status=dg.DefaultSensorStatus.STOPPED,
)
def meta_harness_driver(
    context: dg.SensorEvaluationContext, experiments_home: ExperimentsResource
) -> dg.SensorResult:
    """Requests each experiment's next round once its previous run has finished."""
    requests = []
    for name in experiments_home.names():
        active = context.instance.get_runs(
            filters=dg.RunsFilter(
                tags={"flashrsi/experiment": name},
                statuses=[
                    dg.DagsterRunStatus.QUEUED,
                    dg.DagsterRunStatus.STARTED,
                    dg.DagsterRunStatus.NOT_STARTED,
                ],
            ),
            limit=1,
        )
        if active:
            continue
        request = next_request(experiments_home, name)
        if request is not None:
            requests.append(request)
    return dg.SensorResult(run_requests=requests)


class NightlyConfig(dg.ConfigurableResource):
    config_file: str = Field(
        "examples/meta_harness.yaml", description="Experiment YAML started every night."
    )


@dg.schedule(
    cron_schedule="0 2 * * *",
    job=meta_harness,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def nightly_meta_harness(
    context: dg.ScheduleEvaluationContext,
    nightly: NightlyConfig,
    experiments_home: ExperimentsResource,
) -> dg.RunRequest:
    """A new experiment each night from the config file (named after the date), seeded by
    requesting its round 0; the driver sensor takes it from there."""
    stamp = context.scheduled_execution_time.strftime("%Y%m%d")
    base = load_config(nightly.config_file).experiment.name
    experiment = experiments_home.create(nightly.config_file, name=f"{base}-nightly-{stamp}")
    name = experiment.config.experiment.name
    register(context.instance, name, experiment.config.algorithm.max_steps)
    return dg.RunRequest(
        run_key=f"{name}:evaluate_seed:0",
        partition_key=partition(name, 0),
        tags={DRIVER_TAG: "1", "flashrsi/experiment": name},
    )
