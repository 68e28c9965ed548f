"""The Kubernetes route (deploy/kubernetes/). No cluster and no helm run here, and Dagster's
chart cannot be fetched, so nothing renders the chart's templates: the sections the chart
copies into `dagster.yaml` (run launcher, run coordinator, storage scheme) are rendered as its
templates render them and checked with Dagster's own config validation and the code that will
read them; the plain manifests, and the pod parts of the values that the chart copies into its
pods verbatim, are validated against Kubernetes' own OpenAPI schema (`kubernetes-validate`,
offline); and what must agree (image, home, secrets, limits) is checked against the code."""

from __future__ import annotations

import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import sqlalchemy as sa
import yaml
from dagster_k8s import K8sRunLauncher
from dagster_postgres.utils import get_conn_string

from flashrsi_dagster.deployment.code_server import HOME_ENV, LOCATION
from flashrsi_dagster.deployment.run_queue import RunLimits, RunQueue, run_queue
from flashrsi_dagster.orchestration.dagster_internals import validate_config

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
VALUES = yaml.safe_load((DEPLOY / "values.yaml").read_text())
MANIFESTS = sorted(p for p in DEPLOY.glob("*.yaml") if p.name != "values.yaml")
KUBERNETES = "1.30.0"  # the oldest release the manifests are checked against
RELEASE = {"namespace": "flashrsi", "service_account": "flashrsi-dagster"}
LOCATION_VALUES = VALUES["dagster-user-deployments"]["deployments"][0]
LAUNCHER = VALUES["runLauncher"]["config"]["k8sRunLauncher"]


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
    keys = {"envVars": "env_vars", "volumeMounts": "volume_mounts", "volumes": "volumes"}
    config |= {name: own[key] for key, name in keys.items() if own.get(key)}
    if own.get("runK8sConfig"):
        k8s = own["runK8sConfig"]
        config["run_k8s_config"] = {
            "container_config": k8s.get("containerConfig", {}),
            "pod_spec_config": k8s.get("podSpecConfig", {}),
        }
    return config


def run_coordinator(values: dict) -> dict:
    """`run_coordinator` as the chart's `dagsterYaml.runCoordinator.custom` renders it."""
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    assert coordinator["type"] == "CustomRunCoordinator"
    return coordinator["config"]["customRunCoordinator"]


def test_the_run_launcher_config_passes_dagsters_validation():
    result = validate_config(K8sRunLauncher.config_type(), run_launcher(VALUES))

    assert result.success, [e.message for e in result.errors or []]
    assert VALUES["runLauncher"]["type"] == "K8sRunLauncher"


def test_the_validation_is_real_a_misspelt_key_fails_it():
    config = {**run_launcher(VALUES), "volume_mount": []}

    assert not validate_config(K8sRunLauncher.config_type(), config).success


def test_the_run_coordinator_is_the_projects_run_queue_with_its_limits_and_the_home():
    custom = run_coordinator(VALUES)
    result = validate_config(RunQueue.config_type(), custom["config"])

    assert result.success, [e.message for e in result.errors or []]
    made = yaml.safe_load(run_queue(RunLimits()))["run_coordinator"]
    assert (custom["module"], custom["class"]) == (made["module"], made["class"])
    assert custom["config"] == {**made["config"], "home": {"env": HOME_ENV}}


def test_the_storage_scheme_reaches_the_driver_dagster_postgres_runs_on():
    postgres = VALUES["postgresql"]
    url = get_conn_string(
        username=postgres["postgresqlUsername"], hostname=postgres["postgresqlHost"],
        db_name=postgres["postgresqlDatabase"], scheme=postgres["postgresqlScheme"],
    )  # fmt: skip
    assert sa.create_engine(url).dialect.driver == "psycopg2"


def test_every_pod_runs_the_code_locations_image_which_holds_what_the_helm_guide_requires():
    images = {
        yaml.safe_dump(part["image"])
        for part in (LOCATION_VALUES, VALUES["dagsterWebserver"], VALUES["dagsterDaemon"])
    }
    assert len(images) == 1  # the RunQueue is imported where runs are submitted
    assert LOCATION_VALUES["dagsterApiGrpcArgs"] == ["--module-name", LOCATION]
    assert LOCATION_VALUES["includeConfigInLaunchedRuns"]["enabled"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = {d.split("==")[0].split("[")[0] for d in project["dependencies"]}  # not dev
    assert {"dagster-k8s", "dagster-postgres", "dagster-webserver"} <= installed


def test_every_pod_mounts_the_one_shared_home_and_names_it():
    claim = yaml.safe_load((DEPLOY / "home-volume.yaml").read_text())
    (mount,) = LAUNCHER["volumeMounts"]
    home = mount["mountPath"]
    for part in (LOCATION_VALUES, VALUES["dagsterWebserver"], VALUES["dagsterDaemon"]):
        assert part["volumes"] == LAUNCHER["volumes"] and part["volumeMounts"] == [mount]
        assert {"name": HOME_ENV, "value": home} in part["env"]
    assert f"{HOME_ENV}={home}" in LAUNCHER["envVars"]
    (volume,) = LAUNCHER["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


def _variables(node) -> list[str]:
    """Every variable the values set by value: `env` entries and `envVars` strings."""
    if isinstance(node, list):
        return [n for item in node for n in _variables(item)]
    if not isinstance(node, dict):
        return []
    own = [node["name"]] if {"name", "value"} <= node.keys() else []
    own += [v.split("=")[0] for v in node.get("envVars", [])]
    return own + [n for value in node.values() for n in _variables(value)]


def test_model_keys_come_from_a_secret_and_no_value_holds_one():
    assert _names(LOCATION_VALUES["envSecrets"]) == _names(LAUNCHER["envSecrets"])
    assert set(_variables(VALUES)) == {HOME_ENV}  # keys and passwords only from Secrets
    assert VALUES["global"]["postgresqlSecretName"] and "postgresqlPassword" not in str(VALUES)


def test_agents_can_be_jailed_in_the_run_pods_and_the_namespace_admits_them():
    jail = {"privileged": True, "runAsUser": 0}
    assert LOCATION_VALUES["securityContext"] == jail
    assert LAUNCHER["runK8sConfig"]["containerConfig"]["securityContext"] == jail
    namespace = yaml.safe_load((DEPLOY / "namespace.yaml").read_text())
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.name)
def test_every_manifest_is_valid_against_the_kubernetes_schema(manifest):
    for resource in yaml.safe_load_all(manifest.read_text()):
        kubernetes_validate.validate(resource, KUBERNETES, strict=True)


def _pod(container: dict, volumes: list) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "flashrsi"},
        "spec": {"containers": [{"name": "flashrsi", **container}], "volumes": volumes},
    }


def test_the_pod_parts_of_the_values_are_valid_against_the_kubernetes_schema():
    image = LOCATION_VALUES["image"]
    container = {
        "image": f"{image['repository']}:{image['tag']}",
        "imagePullPolicy": image["pullPolicy"],
        "env": LOCATION_VALUES["env"],
        "envFrom": [{"secretRef": {"name": n}} for n in _names(LOCATION_VALUES["envSecrets"])],
        "volumeMounts": LOCATION_VALUES["volumeMounts"],
        "securityContext": LOCATION_VALUES["securityContext"],
    }
    kubernetes_validate.validate(_pod(container, LOCATION_VALUES["volumes"]), KUBERNETES, True)
    run = {**container, **LAUNCHER["runK8sConfig"]["containerConfig"]}
    kubernetes_validate.validate(_pod(run, LAUNCHER["volumes"]), KUBERNETES, True)
    broken = {**container, "securityContext": {"privilegd": True}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(_pod(broken, []), KUBERNETES, True)
