"""The start job's Launchpad defaults: its overrides fit any algorithm's config file, and a
default launch works whatever the home holds already."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.config import ConfigError, load_config
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.start import StartExperiment, launch_problem
from flashrsi_dagster.orchestration.resources.experiments import (
    ExperimentsResource,
    InvalidExperiment,
)
from tests.experiment.origins import origin

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def test_the_default_overrides_apply_to_every_algorithm(modular_dir):
    overrides = StartExperiment().overrides

    assert StartExperiment().config_file == "examples/meta_harness.yaml"
    assert load_config(EXAMPLE, overrides).benchmark.limit == 9
    assert load_config(modular_dir / "modular.yaml", overrides).benchmark.limit == 9


def test_the_start_job_takes_a_name_never_a_path(config_dir):
    """The Launchpad's `name` is an experiment name: a path is refused, nothing written."""
    home = Path.cwd() / "home"
    experiments = ExperimentsResource.at(home)

    for name in ("../escape", str(Path.cwd() / "abs")):
        with pytest.raises(ConfigError, match="expected an experiment name"):
            experiments.create(config_dir / "exp.yaml", name=name)

    assert not home.exists() and sorted(Path.cwd().iterdir()) == []


def test_the_default_launch_right_after_make_demo_starts_a_fresh_experiment_then_resumes_it(
    tmp_path, monkeypatch
):
    """`make demo` made `meta-harness-demo` with its own overrides; the Launchpad's defaults
    (another config) start `meta-harness-demo-2` instead of failing, and launched again they
    reopen that one: nothing more is created."""
    monkeypatch.chdir(EXAMPLE.parents[1])  # the defaults' file is relative, as under `ui`
    home = tmp_path / "home"
    demo = ["--algorithm.max_steps", "2", "--benchmark.limit", "9"]  # the Makefile's
    ExperimentsResource.at(home).create(EXAMPLE, overrides=demo)
    made = (home / "meta-harness-demo" / "run_meta.json").read_bytes()
    job = build_definitions(str(home)).resolve_job_def("start_experiment")

    with dg.instance_for_test() as instance:
        runs = [job.execute_in_process(instance=instance) for _ in range(2)]  # the defaults
        assert all(r.success for r in runs)
        started = [instance.get_run_by_id(r.run_id).tags["flashrsi/experiment"] for r in runs]
        registered = instance.get_dynamic_partitions("meta_harness_experiment")

    assert started == ["meta-harness-demo-2", "meta-harness-demo-2"]
    (output,) = [e for e in runs[0].events_for_node("create_experiment") if e.is_successful_output]
    watch = output.step_output_data.metadata["watch"].value  # where the newcomer finds it
    assert watch == "/assets/meta_harness/summary?view=partitions&partition=meta-harness-demo-2"
    assert registered == ["meta-harness-demo-2"]
    assert sorted(p.name for p in home.iterdir()) == ["meta-harness-demo", "meta-harness-demo-2"]
    assert (home / "meta-harness-demo" / "run_meta.json").read_bytes() == made
    assert ExperimentsResource.at(home).config("meta-harness-demo-2").benchmark.limit == 9


def test_a_name_given_is_never_changed(tmp_path):
    """Only the file's own name moves aside: a name the user typed that exists with another
    config is refused, with the change named."""
    experiments = ExperimentsResource.at(tmp_path / "home")
    experiments.create(EXAMPLE, name="mine", overrides=["--benchmark.limit", "3"])
    with pytest.raises(InvalidExperiment, match=r"benchmark\.limit: 3 -> 4"):
        experiments.create(EXAMPLE, name="mine", overrides=["--benchmark.limit", "4"])


def test_the_start_job_forks_a_candidate_and_refuses_an_unknown_one_before_a_run(tmp_path):
    """`fork_from` and `candidate`, as `flashrsi fork`: the new experiment's identity pins the
    candidate's commit; an unknown candidate is the launch's one line, nothing created."""
    home = tmp_path / "home"
    _, _, child = origin(home, "origin")
    start = {"config_file": str(EXAMPLE), "name": "forked", "fork_from": "origin"}
    start |= {"candidate": "r001.c0", "overrides": ["--benchmark.limit", "4"]}
    run_config = {"ops": {"create_experiment": {"config": start}}}
    unknown = {"ops": {"create_experiment": {"config": {**start, "candidate": "r009.c0"}}}}

    problem = launch_problem(unknown, tmp_path, home)
    assert problem is not None and "has no candidate 'r009.c0'" in problem
    assert "\n" not in problem and not (home / "forked").exists()
    assert launch_problem(run_config, tmp_path, home) is None
    job = build_definitions(str(home)).resolve_job_def("start_experiment")
    with dg.instance_for_test() as instance:
        assert job.execute_in_process(instance=instance, run_config=run_config).success

    fork = ExperimentsResource.at(home).config("forked").experiment.fork
    assert (fork.experiment, fork.candidate, fork.snapshot) == ("origin", "r001.c0", child.id)
