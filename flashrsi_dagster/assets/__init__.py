"""Dagster assets: the thin layer mapping the algorithms' steps onto partitioned assets."""
