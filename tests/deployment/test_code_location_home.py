"""The code location's experiment home is named, never guessed: `FLASHRSI_HOME` where a
container, a pod or `flashrsi ui` sets it, whatever the folder is called and wherever the
process runs; `./.flashrsi` without it. Every home path the README and the docs show is
checked here: the code location loaded with it, the container config made for it, and the run
queue given it by `{env: FLASHRSI_HOME}`, as the Kubernetes values give it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from flashrsi_dagster.cli import main
from flashrsi_dagster.definitions import HOME, code_location_home, defs
from flashrsi_dagster.deployment.code_server import HOME_ENV, CodeServer
from flashrsi_dagster.deployment.containers import ContainerConfig
from flashrsi_dagster.deployment.run_queue import RunQueue

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "meta_harness.yaml"
DOCUMENTED = re.compile(
    r"(?:--home|--experiment\.home|FLASHRSI_HOME=|mountPath:|FLASHRSI_HOME\s*value:)\s*(/[\w./-]+)"
)

ENV_ENTRY = re.compile(r"name: FLASHRSI_HOME\s*\n\s*value:")  # a pod's `env` entry, one line


def documented_homes() -> set[str]:
    """Every absolute home path the README, the docs and the deploy files show."""
    texts = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "deploy").rglob("*")]
    found = set()
    for path in texts:
        if path.is_file():
            text = ENV_ENTRY.sub("FLASHRSI_HOME value:", path.read_text())
            found |= {m.rstrip(".") for m in DOCUMENTED.findall(text)}
    return found


def test_the_docs_show_one_home_layout():
    assert documented_homes() == {"/shared/home"}


@pytest.mark.parametrize("home", sorted(documented_homes()))
def test_a_documented_home_is_the_code_locations_the_containers_and_the_queues(home, monkeypatch):
    monkeypatch.setenv(HOME_ENV, home)
    loaded = defs()  # as Dagster loads the code location
    assert loaded.resources["experiments_home"].home == home
    assert loaded.resources["io_manager"].home == home

    container = ContainerConfig(home=Path(home)).container()
    assert f"{HOME_ENV}={home}" in container["env_vars"]
    assert container["container_kwargs"]["volumes"] == [f"{home}:{home}"]

    settings = {"home": {"env": HOME_ENV}, "max_concurrent_runs": 2}
    with dg.instance_for_test(
        overrides={
            "run_coordinator": {
                "module": RunQueue.__module__,
                "class": "RunQueue",
                "config": settings,
            }
        }
    ) as instance:
        assert instance.run_coordinator.home == Path(home)


def test_without_the_variable_the_home_is_dotflashrsi_where_the_code_runs(tmp_path):
    assert code_location_home({}) == HOME
    assert CodeServer(tmp_path / "any-name").env[HOME_ENV] == str(tmp_path / "any-name")
    (tmp_path / "home" / ".dagster").mkdir(parents=True)
    with dg.instance_for_test(temp_dir=str(tmp_path / "home" / ".dagster")) as instance:
        queue = RunQueue.from_config_value(None, {})  # type: ignore[arg-type]
        queue.register_instance(instance)
        assert queue.home == tmp_path / "home"


SENSOR = """
import json, dagster as dg
from flashrsi_dagster.definitions import defs
from flashrsi_dagster.deployment.sensors import round_driver
loaded = defs()
resources = {"experiments_home": loaded.resources["experiments_home"]}
with dg.instance_for_test() as instance, dg.build_sensor_context(
    instance=instance, resources=resources
) as context:
    result = round_driver(context)
print(json.dumps([r.run_key for r in result.run_requests or []]))
"""


def test_a_process_elsewhere_finds_a_home_of_any_name_by_the_variable(tmp_path, monkeypatch):
    """A pod's code location: its working folder is not the home's parent."""
    home = tmp_path / "shared" / "home"
    args = ["init", "--config", str(EXAMPLE), "--experiment.home", str(home)]
    assert main([*args, "--benchmark.limit", "2"]) == 0
    env = {**os.environ, HOME_ENV: str(home)}
    elsewhere = tmp_path / "workdir"
    elsewhere.mkdir()
    found = subprocess.run(
        [sys.executable, "-c", SENSOR], cwd=elsewhere, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout.splitlines()[-1]) == ["meta-harness-demo:evaluate_seed:r000.c0"]
    assert not (elsewhere / HOME).exists()


def test_the_kubernetes_values_set_the_variable_where_they_mount_the_home():
    values = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "values.yaml").read_text())
    (location,) = values["dagster-user-deployments"]["deployments"]
    home = {e["name"]: e["value"] for e in location["env"]}[HOME_ENV]
    assert [m["mountPath"] for m in location["volumeMounts"]] == [home]
