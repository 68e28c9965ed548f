"""One driver per experiment: a second `flashrsi run` / `resume` of an experiment being
driven is refused, and so is one beside the round driver sensor while it runs; neither
launches a step. A driver starting just after the sensor was turned off waits for the tick
the sensor was still running."""

from __future__ import annotations

import os
import sys
import threading
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
    TickData,
    TickStatus,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._daemon.types import DaemonHeartbeat

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment import cli_driver
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.lock import DriverBusy, driving
from tests.conftest import PATIENCE, wait_until

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


def _sensor_state(instance: dg.DagsterInstance, status: InstigatorStatus) -> InstigatorState:
    """The round driver sensor as the UI leaves it (`status`), its daemon beating."""
    location = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name="flashrsi_dagster.definitions")
    )
    repository = RemoteRepositoryOrigin(location, "__repository__")
    state = InstigatorState(
        RemoteInstigatorOrigin(repository, round_driver.name),
        InstigatorType.SENSOR,
        status,
        SensorInstigatorData(),
    )
    instance.add_instigator_state(state)
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "SENSOR", None, None))
    return state


def _tick_in_flight(instance: dg.DagsterInstance, state: InstigatorState):
    return instance.create_tick(
        TickData(
            instigator_origin_id=state.instigator_origin_id,
            instigator_name=round_driver.name,
            instigator_type=InstigatorType.SENSOR,
            status=TickStatus.STARTED,
            timestamp=time.time(),
            selector_id=state.selector_id,
        )
    )


def test_flashrsi_run_is_refused_while_the_round_driver_sensor_runs(tmp_path):
    experiment = _experiment(tmp_path)
    with dg.instance_for_test() as instance:
        _sensor_state(instance, InstigatorStatus.RUNNING)  # turned on in the UI
        with pytest.raises(DriverBusy, match="round_driver sensor is on"):
            drive_on(instance, experiment, say=lambda _: None)
        assert instance.get_runs() == []


def test_a_driver_waits_for_the_tick_the_sensor_was_running_when_turned_off():
    """The sensor was turned off while a tick ran: that tick read the experiment before the
    driver lock was taken and submits its runs when it ends, so a driver starting meanwhile
    would request the same steps again (duplicated runs). It waits for the tick to end,
    then goes on (the tick's runs are adopted as its own)."""
    lines: list[str] = []
    with dg.instance_for_test() as instance:
        tick = _tick_in_flight(instance, _sensor_state(instance, InstigatorStatus.STOPPED))
        waiting = threading.Thread(
            target=cli_driver._refuse_beside_the_sensor, args=(instance, "e", lines.append)
        )
        waiting.start()
        try:
            wait_until(lambda: lines, "the driver's wait for the tick")
            assert waiting.is_alive(), "the driver went on while the tick ran"
        finally:
            instance.update_tick(tick.with_status(TickStatus.SUCCESS))
            waiting.join(PATIENCE)
        assert not waiting.is_alive()
    assert lines == ["   waiting for the round_driver sensor's tick in flight to end"]


def test_a_tick_that_never_ends_refuses_the_driver_with_its_reason(monkeypatch):
    """A tick still recorded as started past `TICK_WAIT` (its daemon alive, the tick stuck):
    the driver is refused in one line rather than racing it or waiting without a bound."""
    monkeypatch.setattr(cli_driver, "TICK_WAIT", 1.0)
    with dg.instance_for_test() as instance:
        _tick_in_flight(instance, _sensor_state(instance, InstigatorStatus.STOPPED))
        with pytest.raises(DriverBusy, match="turned off while it ran, has not ended in 1 s"):
            cli_driver._refuse_beside_the_sensor(instance, "e", lambda _: None)


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
