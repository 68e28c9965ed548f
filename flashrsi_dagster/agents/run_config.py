"""The RunConfig record that heads every trajectory's messages."""

from __future__ import annotations

from typing import Any

from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.records import Redactor

RUN_CONFIG_ROLE = "run_config"


def run_config_message(
    config: RoleConfig, snapshot_id: str | None, role: str, redactor: Redactor
) -> dict[str, Any]:
    """The role's config as it was for this run (secrets as references, then redacted), and
    the snapshot it ran. Backend defaults are not expanded: this is not the full request."""
    return {
        "role": RUN_CONFIG_ROLE,
        "content": redactor.value(
            {
                "kind": "run_config",
                "schema_version": 1,
                "agent_role": role,
                "snapshot_id": snapshot_id,
                "config": config.model_dump(mode="json"),
            }
        ),
    }
