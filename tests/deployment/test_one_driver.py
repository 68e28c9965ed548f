"""One driver per experiment: a second `flashrsi run` / `resume` of an experiment being
driven is refused, and so is one beside the round driver sensor while it runs; neither
launches a step."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import (
    InProcessCodeLocationOrigin,
    RemoteInstigatorOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.scheduler.instigation import (
    InstigatorState,
    InstigatorStatus,
    InstigatorType,
    SensorInstigatorData,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._daemon.types import DaemonHeartbeat

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.lock import DriverBusy, driving

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def _experiment(home: Path):
    return open_experiment(load_config(EXAMPLE, ["--experiment.home", str(home)]))


def test_a_second_driver_of_one_experiment_is_refused(tmp_path):
    experiment = _experiment(tmp_path)
    with dg.instance_for_test() as instance, driving(experiment.paths.root):
        with pytest.raises(DriverBusy, match="another process drives this experiment") as busy:
            drive_on(instance, experiment, say=lambda _: None)
        assert f"this experiment (process {os.getpid()}: {Path(sys.argv[0]).name}" in str(
            busy.value
        )
        assert instance.get_runs() == []


def test_flashrsi_run_is_refused_while_the_round_driver_sensor_runs(tmp_path):
    experiment = _experiment(tmp_path)
    with dg.instance_for_test() as instance:
        location = InProcessCodeLocationOrigin(
            LoadableTargetOrigin(module_name="flashrsi_dagster.definitions")
        )
        repository = RemoteRepositoryOrigin(location, "__repository__")
        instance.add_instigator_state(  # turned on in the UI, its daemon beating
            InstigatorState(
                RemoteInstigatorOrigin(repository, round_driver.name),
                InstigatorType.SENSOR,
                InstigatorStatus.RUNNING,
                SensorInstigatorData(),
            )
        )
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "SENSOR", None, None))
        with pytest.raises(DriverBusy, match="round_driver sensor is on"):
            drive_on(instance, experiment, say=lambda _: None)
        assert instance.get_runs() == []


def test_the_round_driver_sensor_is_on_by_default_so_flashrsi_run_is_refused_beside_it(tmp_path):
    """Nobody turned it on: under a live daemon the sensor runs as declared in code (an
    experiment started from the Launchpad runs with no toggle), so it drives."""
    assert round_driver.default_status == dg.DefaultSensorStatus.RUNNING
    experiment = _experiment(tmp_path)
    with dg.instance_for_test() as instance:
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "SENSOR", None, None))
        with pytest.raises(DriverBusy, match="round_driver sensor is on"):
            drive_on(instance, experiment, say=lambda _: None)
        assert instance.get_runs() == []
