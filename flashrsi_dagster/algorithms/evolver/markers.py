"""The Evolver's marker lines in the instructions it writes, which its offline model policy
reads (`offline_model/policies/`): written and read from here, so the simulator follows the
real instructions. Plain constants: the simulator imports this and nothing heavier."""

EVOLVER_PHASE = "Evolver phase:"
"""Evolver instructions: `induce`, `consolidate`, `diagnose`, `pick` or `design`."""

WHY = "WHY:"
"""Evolver design instruction: the failure class the candidate targets."""
