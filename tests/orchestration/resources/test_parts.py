"""The part resources inside real Dagster runs: what they start, they stop; what they build,
they close; what they override is what the benchmark gets."""

from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.config import load_config
from flashrsi_dagster.llm import endpoints
from flashrsi_dagster.orchestration.resources import (
    HarborEnvironmentResource,
    OfflineModelResource,
    TargetAgentResource,
)
from flashrsi_dagster.orchestration.resources.experiments import ExperimentsResource, default_parts
from flashrsi_dagster.orchestration.resources.snapshots import SnapshotStoreResource

EXAMPLE = Path(__file__).parents[3] / "examples" / "meta_harness.yaml"


def _config(tmp_path, *overrides: str):
    return load_config(EXAMPLE, ["--experiment.home", str(tmp_path), *overrides])


def _run(resources: dict, body) -> dict:
    """Run `body(**resources)` as a one-asset Dagster run; return what it saw."""
    seen: dict = {}

    @dg.asset(required_resource_keys=set(resources))
    def probe(context: dg.AssetExecutionContext) -> None:
        seen.update(body(**{k: getattr(context.resources, k) for k in resources}))

    assert dg.materialize([probe], resources=resources).success
    return seen


@pytest.fixture
def no_shared_server():
    endpoints.stop_offline_server()
    yield
    endpoints.stop_offline_server()


def test_the_offline_model_is_started_when_the_experiment_asks_and_stopped_after(
    tmp_path, no_shared_server
):
    config = _config(tmp_path)
    seen = _run(
        {"offline_model": OfflineModelResource(latency_ms=5)},
        lambda offline_model: {
            "url": offline_model.serve(config),
            "running": endpoints.offline_server_running(),
            "latency": endpoints.offline_server().config.latency_ms,
        },
    )
    assert seen["url"].startswith("http://127.0.0.1:") and seen["running"]
    assert seen["latency"] == 5
    assert not endpoints.offline_server_running()


def test_an_experiment_on_real_endpoints_starts_nothing(tmp_path, no_shared_server):
    config = _config(
        tmp_path,
        "--agent.llm.base_url",
        "http://127.0.0.1:9/v1",
        "--algorithm.worker.llm.base_url",
        "http://127.0.0.1:9/v1",
    )
    seen = _run(
        {"offline_model": OfflineModelResource()},
        lambda offline_model: {"url": offline_model.serve(config)},
    )
    assert seen["url"] is None and not endpoints.offline_server_running()


def test_a_server_someone_else_started_is_left_running(tmp_path, no_shared_server):
    mine = endpoints.offline_server()
    _run(
        {"offline_model": OfflineModelResource()},
        lambda offline_model: {"url": offline_model.serve(_config(tmp_path))},
    )
    assert endpoints.offline_server() is mine


def test_start_false_refuses_an_experiment_that_needs_the_simulator(tmp_path, no_shared_server):
    resource = OfflineModelResource(start=False)
    with pytest.raises(
        RuntimeError, match=r"meta-harness-demo.*base_url is `offline`.*start: false"
    ):
        resource.serve(_config(tmp_path))


def test_agents_built_during_a_run_are_closed_when_it_ends(tmp_path):
    config = _config(tmp_path)
    closed = []

    def body(target_agent):
        agent = target_agent.build(config.agent, None)
        close = agent.close
        agent.close = lambda: (closed.append(agent), close())
        return {"agent": agent}

    seen = _run({"target_agent": TargetAgentResource()}, body)
    assert closed == [seen["agent"]]


def test_the_harbor_resource_moves_trials_to_another_environment(tmp_path):
    config = _config(tmp_path, "--benchmark.name", "terminal_bench").benchmark
    moved = HarborEnvironmentResource(environment="docker").benchmark(config)
    kept = HarborEnvironmentResource().benchmark(config)
    assert moved.environment.type == "docker"
    assert kept.environment.import_path and "local" in kept.environment.import_path
    text = _config(tmp_path).benchmark
    assert HarborEnvironmentResource(environment="docker").benchmark(text).name == (
        "text_classification"
    )


def test_the_snapshot_store_resource_sets_both_size_limits_of_every_experiment(tmp_path):
    limits = SnapshotStoreResource(max_file_bytes=1234, max_total_bytes=56789)
    experiments = ExperimentsResource(
        **{**default_parts(), "snapshot_store": limits}, home=str(tmp_path)
    )

    experiment = experiments.create(EXAMPLE)
    reopened = experiments.open(experiment.config.experiment.name)

    for store in (experiment.snapshots, reopened.snapshots):
        assert (store.max_file_bytes, store.max_total_bytes) == (1234, 56789)
