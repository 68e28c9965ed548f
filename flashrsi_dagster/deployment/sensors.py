"""The round driver as a sensor, and the nightly schedule that starts a new experiment.

The sensor asks every experiment under the home folder for the steps it may run now (the same
`ready_steps` as the CLI: the next step, and beside it the other candidates of its round where
the algorithm lets them run side by side) and requests each one's run, as separate runs in one
tick, through its algorithm's mapping, with an idempotent run key: Dagster never launches one
key twice, and the run queue's limits decide when each starts. A step whose run is active is
not requested again; an experiment with an active run that is none of its ready steps (a
sequential step, a run launched from the UI, a candidate whose run is still ending) is left
alone until that run ends. It stops asking once the experiment is done or aborted, and
leaves alone an experiment a `flashrsi run` / `resume` drives (it holds the driver lock:
one driver per experiment).

The schedule only *requests* a `start_experiment` run: previewing it creates nothing."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.execution import home_run_config
from flashrsi_dagster.deployment.start import start_experiment
from flashrsi_dagster.experiment.keys import nightly_name
from flashrsi_dagster.experiment.lock import driven
from flashrsi_dagster.orchestration.algorithm_defs import all_defs, defs_for
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.describe import previous_night
from flashrsi_dagster.orchestration.owner import fail_dead_runs
from flashrsi_dagster.orchestration.ready import ACTIVE, not_active
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from flashrsi_dagster.orchestration.tags import TITLE_TAG, endpoint_tags, title


@dg.sensor(
    jobs=[job for d in all_defs().values() for job in d.jobs],
    minimum_interval_seconds=1,  # at every loop of the sensor daemon (every 5 s)
    # On from the start: an experiment started from the Launchpad runs without a toggle.
    # `flashrsi run` is refused beside it (one driver per experiment), until it is turned off.
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def round_driver(
    context: dg.SensorEvaluationContext, experiments_home: ExperimentsResource
) -> dg.SensorResult:
    """Requests every step each experiment may run now that has no active run."""
    experiments = experiments_home
    run_config = home_run_config(experiments.home)  # where steps run: <home>/execution.yaml
    requests, additions = [], []
    for name in experiments.names():
        if driven(Path(experiments.home) / name):  # a `flashrsi run` drives it: one driver
            continue
        try:
            opened = experiments.algorithm(name)  # opened once, for the tick
            algorithm = defs_for(opened.name)
            tags = endpoint_tags(experiments.config(name), Path(experiments.home))
            ready = [algorithm.request(name, step, tags) for step in experiments.ready_steps(name)]
            # A home restored beside a fresh instance: a request for a partition the
            # instance does not know would fail the whole tick, so the tick adds it.
            missing = algorithm.unregistered(context.instance, name, opened)
        except Exception as exc:  # one unreadable experiment must not stop the others
            context.log.warning(f"experiment {name!r} skipped: {exc}")
            continue
        fail_dead_runs(context.instance, name)  # a killed `flashrsi run` would hold it back
        active = context.instance.get_runs(
            filters=dg.RunsFilter(tags={EXPERIMENT_TAG: name}, statuses=ACTIVE)
        )
        wanted = not_active([r for r in ready if r is not None], active)
        if wanted:
            requests.extend(r.with_replaced_attrs(run_config=run_config) for r in wanted)
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
    context: dg.ScheduleEvaluationContext,
    nightly: NightlyConfig,
    experiments_home: ExperimentsResource,
) -> dg.RunRequest:
    """A new experiment each night from the config file, named after the date: the run it
    requests creates it, and the driver sensor takes it from there. Evolution continues: a
    night after another forks the last night's adopted snapshot (its ledger's baseline, else
    its seed), onto the next version of every evaluation set (`eval_sets: next`), so the
    nights are one lineage and no score is compared across versions."""
    config_file = nightly.config_file
    stamp = context.scheduled_execution_time.strftime("%Y%m%d")
    name = nightly_name(load_config(config_file).experiment.name, stamp)
    start: dict = {"config_file": config_file, "name": name, "overrides": []}
    before = previous_night(name, experiments_home.names())
    if before is not None:
        start |= {"fork_from": before, "candidate": "baseline", "eval_sets": "next"}
    return dg.RunRequest(
        run_key=f"nightly:{name}",
        run_config={"ops": {"create_experiment": {"config": start}}},
        tags={EXPERIMENT_TAG: name, TITLE_TAG: title(name, "start (nightly)")},
    )
