"""Every algorithm's example, driven by `flashrsi run` (`cli_driver.drive`) on a home whose
instance launches runs with Dagster's `DockerRunLauncher`: each step, the rounds past the
seed's included, runs in a container of the code location's image, unconfined, on the home's
own SQLite instance (the home mounted at the same path). It leaves the same figures as the
same example run here: summary, ledger and snapshot count (`test_unconfined.py`, which checks
those against jailed). Meta-Harness is `test_containers.py`'s, by the run launcher and by the
`docker` executor; the five others are here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import dagster as dg
import pytest
from dagster_docker.docker_run_launcher import DOCKER_CONTAINER_ID_TAG

from flashrsi_dagster.deployment.cli_driver import drive
from flashrsi_dagster.deployment.containers import ContainerConfig
from flashrsi_dagster.deployment.instance import SETTINGS
from tests.algorithms.test_unconfined import SMALL, figures_of, opened, unconfined_figures

IN_CONTAINERS = [name for name in SMALL if name != "meta_harness"]


def _home_launching_into_containers(home: Path, image: str) -> None:
    """The home's instance as `flashrsi run` makes it, with the run launcher added. Its SQLite
    storage names its folder as `{env: DAGSTER_HOME}`, which the runs are passed by name."""
    config = ContainerConfig(home=home, image=image, env_vars=["DAGSTER_HOME"])
    (home / ".dagster").mkdir(parents=True)
    (home / ".dagster" / "dagster.yaml").write_text(SETTINGS + config.run_launcher_yaml())


def _runs(home: Path) -> list[dg.DagsterRun]:
    instance = dg.DagsterInstance.from_config(str(home / ".dagster"))
    try:
        return list(instance.get_runs())
    finally:
        instance.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("name", IN_CONTAINERS)
def test_an_example_driven_into_containers_reaches_the_same_figures(
    name: str,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    code_image: str,
    monkeypatch: pytest.MonkeyPatch,
):
    home = tmp_path / "containers" / ".flashrsi"
    _home_launching_into_containers(home, code_image)
    monkeypatch.setenv("DAGSTER_HOME", str(home / ".dagster"))  # `drive` sets it: put back after
    state = drive(opened(name, home, "none"), say=lambda _: None)

    runs = _runs(home)
    containers = [run.tags.get(DOCKER_CONTAINER_ID_TAG) for run in runs]
    subprocess.run(["docker", "rm", "--force", *filter(None, containers)], capture_output=True)
    assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs), runs
    assert len(runs) >= 3 and all(containers), "a step ran outside a container"
    lines, snapshots = figures_of(opened(name, home, "none"), state)
    here, snapshots_here = unconfined_figures(name, tmp_path_factory, worker_id)
    # a round's branches (ModularRSI's modules) run side by side here, one after another in
    # `figures`: their lines come in the order they ended, so the lines are compared as a set
    assert (sorted(lines), snapshots) == (sorted(here), snapshots_here)
    assert snapshots > 1, "no snapshot past the seed: nothing was edited"
