"""Every algorithm's example reaches the same figures with `confinement: none` (the mode of a
container or a pod) as jailed: the same dev scores, edits, promotions and sealed test, rounds
past the seed's included; and the same again driven by `flashrsi run` on an instance whose
`DockerRunLauncher` runs each step in a container of the code location's image. The offline
model is deterministic, so any difference is one in what the Worker or the target saw."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import dagster as dg
import pytest
from dagster_docker.docker_run_launcher import DOCKER_CONTAINER_ID_TAG

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_lines
from flashrsi_dagster.deployment.cli_driver import drive
from flashrsi_dagster.deployment.containers import ContainerConfig
from flashrsi_dagster.deployment.instance import SETTINGS
from flashrsi_dagster.experiment import open_experiment
from tests.conftest import needs_jails

EXAMPLES = Path(__file__).parents[2] / "examples"
SMALL = {  # each cut down to one round (batch, generation) past the seed's
    "meta_harness": ("--algorithm.max_steps", "1", "--benchmark.limit", "6"),
    "best_of_n": ("--benchmark.limit", "6"),
    "dgm": ("--algorithm.generations", "1", "--benchmark.limit", "6"),
    "evolver": ("--algorithm.max_rounds", "1", "--benchmark.limit", "6"),
    "stop": (
        *("--algorithm.rounds", "1", "--algorithm.groups", "1", "--algorithm.group_size", "4"),
        *("--benchmark.split_counts.train", "4", "--benchmark.split_counts.dev", "4"),
        *("--benchmark.split_counts.test", "4"),
    ),
    "modular_rsi": (
        *("--algorithm.edit_budget", "1", "--algorithm.num_rollouts", "1"),
        *("--benchmark.split_counts.train", "3", "--benchmark.split_counts.test", "3"),
    ),
}
_VARYING = re.compile(r"\b[0-9a-f]{12,40}\b|@\d{4}-\d\d-\d\dT[0-9:.+]+|\b\d+ tokens\b")
"""What differs between any two runs: snapshot ids (a commit's time is in its id), ledger
times, and token counts (the records a Worker reads hold those ids and times)."""


def figures(name: str, home: Path, confinement: str) -> tuple[list[str], int]:
    """The example's summary and ledger lines (what varies masked) and how many snapshots
    it made, run here."""
    experiment = _opened(name, home, confinement)
    algorithm = open_algorithm(experiment, log=lambda _: None)
    return _figures(experiment, algorithm.run())


def _opened(name: str, home: Path, confinement: str):
    overrides = ["--experiment.home", str(home), "--experiment.confinement", confinement]
    return open_experiment(load_config(EXAMPLES / f"{name}.yaml", [*overrides, *SMALL[name]]))


def _figures(experiment, state) -> tuple[list[str], int]:
    algorithm = open_algorithm(experiment, log=lambda _: None)
    lines = [*algorithm.summary(state), *ledger_lines(Ledger.of(experiment))]
    return [_VARYING.sub("<varies>", line) for line in lines], len(experiment.snapshots.history())


_UNCONFINED: dict[str, tuple[list[str], int]] = {}
"""Each example's figures run here unconfined, for the container test to compare with (the
file runs whole on one worker: `make test`'s `--dist loadfile`)."""


def unconfined_here(name: str, home: Path) -> tuple[list[str], int]:
    if name not in _UNCONFINED:
        _UNCONFINED[name] = figures(name, home, "none")
    return _UNCONFINED[name]


@needs_jails
@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_an_example_reaches_the_same_figures_unconfined_as_jailed(name: str, tmp_path: Path):
    unconfined = unconfined_here(name, tmp_path / "none")
    jailed = figures(name, tmp_path / "bwrap", "bwrap")

    assert unconfined == jailed
    assert unconfined[1] > 1, "no snapshot past the seed: nothing was edited"


IN_CONTAINERS = [name for name in SMALL if name != "meta_harness"]
"""Meta-Harness's rounds run in containers in `tests/deployment/test_containers.py`, by the
run launcher and by the `docker` executor."""


@pytest.mark.slow
@pytest.mark.parametrize("name", IN_CONTAINERS)
def test_an_example_driven_into_containers_reaches_the_same_figures(
    name: str, tmp_path: Path, code_image: str, monkeypatch: pytest.MonkeyPatch
):
    home = tmp_path / "containers" / ".flashrsi"
    # the SQLite storage names its folder as `{env: DAGSTER_HOME}`: the runs need it too
    config = ContainerConfig(home=home, image=code_image, env_vars=["DAGSTER_HOME"])
    (home / ".dagster").mkdir(parents=True)
    (home / ".dagster" / "dagster.yaml").write_text(SETTINGS + config.run_launcher_yaml())
    monkeypatch.setenv("DAGSTER_HOME", str(home / ".dagster"))  # as `drive` sets it
    state = drive(_opened(name, home, "none"), say=lambda _: None)

    runs = _runs(home)
    assert runs and all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs), runs
    containers = [run.tags.get(DOCKER_CONTAINER_ID_TAG) for run in runs]
    assert all(containers), "a step ran outside a container"  # each in a container of its own
    subprocess.run(["docker", "rm", "--force", *containers], capture_output=True, check=True)
    experiment = _opened(name, home, "none")
    assert _figures(experiment, state) == unconfined_here(name, tmp_path / "none")


def _runs(home: Path) -> list[dg.DagsterRun]:
    """Every run of the home's instance."""
    instance = dg.DagsterInstance.from_config(str(home / ".dagster"))
    try:
        return list(instance.get_runs())
    finally:
        instance.dispose()
