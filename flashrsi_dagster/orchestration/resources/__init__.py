"""Dagster resources: the experiments under a home folder, and the parts they run on — the
snapshot store, the target and Worker agents, the Harbor environment, the offline model
server — and the IO manager writing asset values under the experiment home."""

from flashrsi_dagster.orchestration.resources.agents import TargetAgentResource, WorkerAgentResource
from flashrsi_dagster.orchestration.resources.experiments import (
    ExperimentsResource,
    default_parts,
    resources,
)
from flashrsi_dagster.orchestration.resources.harbor import HarborEnvironmentResource
from flashrsi_dagster.orchestration.resources.io import ExperimentIOManager
from flashrsi_dagster.orchestration.resources.offline_model import OfflineModelResource
from flashrsi_dagster.orchestration.resources.snapshots import SnapshotStoreResource

__all__ = [
    "ExperimentIOManager",
    "ExperimentsResource",
    "HarborEnvironmentResource",
    "OfflineModelResource",
    "SnapshotStoreResource",
    "TargetAgentResource",
    "WorkerAgentResource",
    "default_parts",
    "resources",
]
