"""Line markers in the instructions the framework writes, which the offline model's demo
policies look for (`offline_model/policies/`): written and read from here, so the simulator
follows the real instructions rather than a copy of them. Each starts a line of its own and is
followed by a value. Plain constants: the offline model imports this and nothing heavier.

A real model reads these lines as prose; only the simulator depends on their spelling.
"""

HISTORY = "History:"
"""Meta-Harness Worker instruction: the history folder, relative to the Worker's folder."""

PROMPT_FILE = "Prompt file:"
"""Meta-Harness Worker instruction: the harness file to start from (the first prompt file)."""

LABELS = "Labels:"
"""Text classification task: the allowed labels, comma-separated."""

TEXT = "Text:"
"""Text classification task: the text to classify (the rest of the message)."""

PHASE = "ModularRSI phase:"
"""ModularRSI instructions: `analysis`, `edit`, `review`, `integration` or `repair`."""

MODULE = "Module:"
"""ModularRSI instructions: the module a branch evolves (`integration` for the merge)."""

MODULE_FILES = "Module files:"
"""ModularRSI instructions: the files the edit may change, comma-separated."""

REFERENCES = "Branch references:"
"""ModularRSI integration: the folder holding one full checkout per chosen branch."""

EVOLVER_PHASE = "Evolver phase:"
"""Evolver instructions: `induce`, `consolidate`, `diagnose`, `pick` or `design`."""

WHY = "WHY:"
"""Evolver design instruction: the failure class the candidate targets."""
