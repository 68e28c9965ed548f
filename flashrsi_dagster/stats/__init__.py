"""Statistics over scores tables: the paired comparison and the failure map (engine, no Dagster)."""

from flashrsi_dagster.stats.failures import failure_map, failure_map_markdown
from flashrsi_dagster.stats.paired import (
    PairedStats,
    markdown_table,
    paired,
    per_task_table,
    task_rates,
    to_markdown,
)

__all__ = [
    "PairedStats",
    "failure_map",
    "failure_map_markdown",
    "markdown_table",
    "paired",
    "per_task_table",
    "task_rates",
    "to_markdown",
]
