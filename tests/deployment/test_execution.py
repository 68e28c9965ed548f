"""Where a home's runs execute their steps: `<home>/execution.yaml`, checked with Dagster's
own validation, carried by every run the sensor requests and every step the CLI takes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import ConfigError, load_config
from flashrsi_dagster.deployment.execution import home_run_config, runs_elsewhere
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.deployment.workers import celery_app
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.resources import ExperimentsResource

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
CELERY = """\
celery:
  broker: {env: FLASHRSI_TEST_BROKER_URL}
  config_source: {task_default_queue: flashrsi-x}
"""


def _home(tmp_path: Path, settings: str | None) -> Path:
    home = tmp_path / "home"
    home.mkdir(parents=True)
    if settings is not None:
        (home / "execution.yaml").write_text(settings)
    return home


def test_without_the_file_runs_carry_nothing_and_stay_in_process(tmp_path):
    config = home_run_config(_home(tmp_path, None))

    assert config == {}
    assert not runs_elsewhere(config)


def test_celery_runs_carry_the_executor_the_delivery_settings_and_the_absolute_home(
    tmp_path, monkeypatch
):
    _home(tmp_path, CELERY)
    monkeypatch.chdir(tmp_path)
    config = home_run_config(Path("home"))  # as the code location names it: relative

    celery = config["execution"]["config"]["celery"]
    assert celery["broker"] == {"env": "FLASHRSI_TEST_BROKER_URL"}  # a reference, unresolved
    assert celery["config_source"] == {
        "task_acks_late": True,  # a step on a dead worker goes back to the broker
        "task_reject_on_worker_lost": True,
        "task_default_queue": "flashrsi-x",
    }
    home = {"config": {"home": str(tmp_path / "home")}}
    assert config["resources"] == {"experiments_home": home, "io_manager": home}
    assert runs_elsewhere(config)


def test_the_file_can_turn_the_delivery_settings_off(tmp_path):
    settings = "celery:\n  config_source: {task_acks_late: false}\n"

    celery = home_run_config(_home(tmp_path, settings))["execution"]["config"]["celery"]

    assert celery["config_source"]["task_acks_late"] is False


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("celery:\n  brokr: x\n", 'celery: Received unexpected config entry "brokr"'),
        ("celery:\n  include: nope\n", "celery.include: Value at path root:celery:include"),
        ("kubernetes: {}\n", 'Received unexpected config entry "kubernetes"'),
        ("celery: [\n", "<config>: not valid YAML"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_key(tmp_path, settings, expected):
    home = _home(tmp_path, settings)

    with pytest.raises(ConfigError) as refused:
        home_run_config(home)

    assert str(refused.value).startswith(f"{home / 'execution.yaml'}: invalid config\n")
    assert expected in str(refused.value)


def test_a_worker_resolves_the_broker_in_memory_and_listens_on_the_homes_queue(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("FLASHRSI_TEST_BROKER_URL", "pyamqp://u:s3cret@127.0.0.1:5672//")
    home = _home(tmp_path, CELERY)

    app, queue = celery_app(home)

    assert queue == "flashrsi-x"
    assert app.conf.broker_url == "pyamqp://u:s3cret@127.0.0.1:5672//"
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert "execute_plan" in app.tasks
    assert list(home.rglob("*")) == [home / "execution.yaml"]  # nothing written


def test_a_worker_needs_the_celery_executor_and_the_variables_it_names(tmp_path, monkeypatch):
    monkeypatch.delenv("FLASHRSI_TEST_BROKER_URL", raising=False)
    with pytest.raises(ConfigError, match="celery: a worker needs this executor"):
        celery_app(_home(tmp_path / "a", "multiprocess: {}\n"))
    with pytest.raises(ConfigError, match="FLASHRSI_TEST_BROKER_URL"):
        celery_app(_home(tmp_path / "b", CELERY))


def test_the_sensor_requests_runs_with_the_homes_run_config(tmp_path):
    home = _home(tmp_path, CELERY)
    overrides = ["--experiment.home", str(home), "--benchmark.limit", "4"]
    experiment = open_experiment(load_config(EXAMPLE, overrides))
    name = experiment.config.experiment.name
    with dg.instance_for_test() as instance:
        defs_for("meta_harness").register(instance, name, open_algorithm(experiment))
        resources = {"experiments_home": ExperimentsResource.at(home)}
        with dg.build_sensor_context(instance=instance, resources=resources) as context:
            (request,) = round_driver(context).run_requests

    assert request.run_config == home_run_config(home)
    assert request.run_key == f"{name}:evaluate_seed:r000.c0"
