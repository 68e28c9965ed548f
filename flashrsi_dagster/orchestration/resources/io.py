"""An IO manager that keeps asset values inside the experiment folder, readable without
Dagster: tables as parquet, everything else as JSON.

The values are derived from the records, but the UI shows them and downstream assets load
them, so they are written through the experiment's integrity chain like the records, and a
value is checked against it before it is loaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field

from flashrsi_dagster.orchestration.partitions import candidate_of
from flashrsi_dagster.records import Journal
from flashrsi_dagster.rollouts.scores import parquet_bytes


class ExperimentIOManager(dg.ConfigurableIOManager):
    home: str = Field(".flashrsi", description="Folder holding the experiments.")

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        journal, path = self._path(context.asset_key, context.partition_key)
        if isinstance(obj, pd.DataFrame):
            journal.write_bytes(path.with_suffix(".parquet"), parquet_bytes(obj))
        else:
            text = json.dumps(obj, indent=1, default=str)
            journal.write_bytes(path.with_suffix(".json"), text.encode("utf-8"))

    def load_input(self, context: dg.InputContext) -> Any:
        journal, path = self._path(context.asset_key, context.asset_partition_key)
        table = path.with_suffix(".parquet")
        path = table if table.exists() else path.with_suffix(".json")
        journal.check(path)
        if path == table:
            return pd.read_parquet(table)
        return json.loads(path.read_text())

    def _path(
        self, asset_key: dg.AssetKey, key: str | dg.MultiPartitionKey
    ) -> tuple[Journal, Path]:
        """The experiment's journal and the value's path (without its suffix)."""
        if isinstance(key, dg.MultiPartitionKey):
            experiment, k, slot = candidate_of(key)
            name = f"round-{k:03d}-{slot}"
        else:
            experiment, name = str(key), "experiment"
        asset = "-".join(asset_key.path)
        root = Path(self.home) / experiment
        return Journal(root), root / "dagster" / asset / name
