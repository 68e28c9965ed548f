"""Every registered benchmark keeps the `Benchmark` contract the engine relies on."""

from __future__ import annotations

import inspect

import pytest

from flashrsi_dagster.benchmarks.base import Benchmark
from flashrsi_dagster.benchmarks.loading import BENCHMARKS, load_benchmark
from flashrsi_dagster.config import BenchmarkConfig

METHODS = ("from_config", "tasks", "tasks_from", "rollout")


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_registered_benchmark_is_a_benchmark(name: str):
    benchmark = load_benchmark(BenchmarkConfig(name=name))

    assert isinstance(benchmark, Benchmark)
    assert benchmark.name == name


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
@pytest.mark.parametrize("method", METHODS)
def test_every_method_takes_the_protocols_parameters(name: str, method: str):
    # isinstance only sees that the names exist; the engine calls them with these arguments.
    benchmark = load_benchmark(BenchmarkConfig(name=name))

    expected = inspect.signature(getattr(Benchmark, method)).parameters
    actual = inspect.signature(getattr(benchmark, method)).parameters

    assert [(p.name, p.kind) for p in actual.values()] == [
        (p.name, p.kind) for p in expected.values() if p.name not in ("self", "cls")
    ]
