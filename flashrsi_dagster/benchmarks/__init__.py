"""Benchmarks: task sets, splits and scorers that agents are evaluated on."""
