"""The Kubernetes route (deploy/kubernetes/): no cluster runs here, so the Helm values are
rendered into the `dagster.yaml` sections the chart's templates make of them (run launcher,
run coordinator) and checked with Dagster's own config validation, and the pieces that must
agree (the home volume, the code location, the concurrency tag) are checked against each
other and against the code."""

from __future__ import annotations

from pathlib import Path

import yaml
from dagster._config import validate_config
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster_k8s import K8sRunLauncher

from flashrsi_dagster.definitions import HOME
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG

DEPLOY = Path(__file__).parents[2] / "deploy" / "kubernetes"
VALUES = yaml.safe_load((DEPLOY / "values.yaml").read_text())
RELEASE = {"namespace": "flashrsi", "service_account": "flashrsi-dagster"}


def _names(entries: list[dict] | None) -> list[str]:
    return [entry["name"] for entry in entries or [] if "name" in entry]


def run_launcher(values: dict) -> dict:
    """`run_launcher.config` as the chart's `dagsterYaml.runLauncher.k8s` template renders it."""
    own = values["runLauncher"]["config"]["k8sRunLauncher"]
    config = {
        "load_incluster_config": own["loadInclusterConfig"],
        "job_namespace": own.get("jobNamespace", RELEASE["namespace"]),
        "image_pull_policy": own["imagePullPolicy"],
        "service_account_name": RELEASE["service_account"],
        "dagster_home": {"env": "DAGSTER_HOME"},
        "instance_config_map": {"env": "DAGSTER_K8S_INSTANCE_CONFIG_MAP"},
        "postgres_password_secret": {"env": "DAGSTER_K8S_PG_PASSWORD_SECRET"},
        "env_config_maps": [
            {"env": "DAGSTER_K8S_PIPELINE_RUN_ENV_CONFIGMAP"},
            *_names(own.get("envConfigMaps")),
        ],
    }
    if own.get("envSecrets"):
        config["env_secrets"] = _names(own["envSecrets"])
    for key, name in (("envVars", "env_vars"), ("volumeMounts", "volume_mounts")):
        if own.get(key):
            config[name] = own[key]
    if own.get("volumes"):
        config["volumes"] = own["volumes"]
    return config


def run_coordinator(values: dict) -> dict:
    """`run_coordinator.config` as the chart's `dagsterYaml.runCoordinator.queued` renders it."""
    own = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    keys = {
        "maxConcurrentRuns": "max_concurrent_runs",
        "tagConcurrencyLimits": "tag_concurrency_limits",
        "dequeueIntervalSeconds": "dequeue_interval_seconds",
    }
    return {name: own[key] for key, name in keys.items() if own.get(key)}


def test_the_run_launcher_config_passes_dagsters_validation():
    result = validate_config(K8sRunLauncher.config_type(), run_launcher(VALUES))

    assert result.success, [e.message for e in result.errors or []]
    assert VALUES["runLauncher"]["type"] == "K8sRunLauncher"


def test_the_validation_is_real_a_misspelt_key_fails_it():
    config = {**run_launcher(VALUES), "volume_mount": []}

    assert not validate_config(K8sRunLauncher.config_type(), config).success


def test_the_run_queue_passes_dagsters_validation_and_limits_runs_per_experiment():
    config = run_coordinator(VALUES)
    result = validate_config(QueuedRunCoordinator.config_type(), config)

    assert result.success, [e.message for e in result.errors or []]
    assert VALUES["dagsterDaemon"]["runCoordinator"]["type"] == "QueuedRunCoordinator"
    (limit,) = config["tag_concurrency_limits"]
    assert limit["key"] == EXPERIMENT_TAG and limit["value"] == {"applyLimitPerUniqueValue": True}


def test_the_code_location_and_every_run_pod_mount_one_shared_home_where_the_code_finds_it():
    (location,) = VALUES["dagster-user-deployments"]["deployments"]
    launcher = VALUES["runLauncher"]["config"]["k8sRunLauncher"]
    claim = yaml.safe_load((DEPLOY / "home-volume.yaml").read_text())

    assert location["dagsterApiGrpcArgs"] == ["--module-name", "flashrsi_dagster.definitions"]
    assert location["includeConfigInLaunchedRuns"]["enabled"]
    assert location["volumes"] == launcher["volumes"]
    assert location["volumeMounts"] == launcher["volumeMounts"]
    (volume,) = launcher["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    (mount,) = launcher["volumeMounts"]
    assert Path(mount["mountPath"]).name == HOME  # the home, relative to the working directory
