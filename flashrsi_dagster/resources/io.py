"""An IO manager that keeps asset values inside the experiment folder, readable without
Dagster: tables as parquet, everything else as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field

from flashrsi_dagster.assets.partitions import parse_round_key
from flashrsi_dagster.records import write_text_atomic
from flashrsi_dagster.rollouts.scores import write_parquet


class ExperimentIOManager(dg.ConfigurableIOManager):
    home: str = Field(".flashrsi", description="Folder holding the experiments.")

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        path = self._path(context.asset_key, context.partition_key)
        if isinstance(obj, pd.DataFrame):
            write_parquet(obj, path.with_suffix(".parquet"))
        else:
            write_text_atomic(path.with_suffix(".json"), json.dumps(obj, indent=1, default=str))

    def load_input(self, context: dg.InputContext) -> Any:
        path = self._path(context.asset_key, context.asset_partition_key)
        if path.with_suffix(".parquet").exists():
            return pd.read_parquet(path.with_suffix(".parquet"))
        return json.loads(path.with_suffix(".json").read_text())

    def _path(self, asset_key: dg.AssetKey, key: str | dg.MultiPartitionKey) -> Path:
        keys = key.keys_by_dimension if isinstance(key, dg.MultiPartitionKey) else {}
        if "round" in keys:
            experiment, k = parse_round_key(keys["round"])
            name = f"round-{k:03d}-{keys['candidate']}"
        else:
            experiment, name = str(key), "experiment"
        asset = "-".join(asset_key.path)
        return Path(self.home) / experiment / "dagster" / asset / name
