"""From the `benchmark` config section to a benchmark and its splits."""

from __future__ import annotations

import importlib

from flashrsi_dagster.benchmarks.base import Benchmark, BenchmarkError
from flashrsi_dagster.benchmarks.splits import Splits, make_splits, replace_train
from flashrsi_dagster.config.models import BenchmarkConfig, SplitCounts

BENCHMARKS = {
    "text_classification": "flashrsi_dagster.benchmarks.text_classification:TextClassification",
    "terminal_bench": "flashrsi_dagster.benchmarks.harbor.benchmark:TerminalBench",
    "swe_bench": "flashrsi_dagster.benchmarks.swe_bench:SWEBench",
}


def load_benchmark(config: BenchmarkConfig) -> Benchmark:
    module_name, _, class_name = BENCHMARKS[config.name].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls.from_config(config)


def load_splits(config: BenchmarkConfig, benchmark: Benchmark) -> Splits:
    counts = config.split_counts
    if counts is None and benchmark.default_split_counts:
        counts = SplitCounts(**benchmark.default_split_counts)
    splits = make_splits(
        benchmark.tasks(), counts, seed=config.seed, limit=config.limit, source=_source(config)
    )
    if config.evolution_data_path is not None:
        evolution = benchmark.tasks_from(config.evolution_data_path)
        splits = replace_train(
            splits,
            evolution,
            limit=config.evolution_limit,
            source=str(config.evolution_data_path),
        )
    return splits


def _source(config: BenchmarkConfig) -> str:
    """What the pool was read from, for messages: the file or folder given, else built-in."""
    given = config.data_path or config.tasks_dir
    return str(given) if given else f"{config.name} (built-in data)"


__all__ = ["BENCHMARKS", "BenchmarkError", "load_benchmark", "load_splits"]
