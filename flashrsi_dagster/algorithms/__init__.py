"""Algorithms: Meta-Harness (and, later, ModularRSI and the Evolver SOP). Plain Python, no
Dagster: the Dagster layer maps their steps onto assets and runs."""
