"""ModularRSI's marker lines in the instructions it writes, which its offline model policy
reads (`offline_model/policies/`): written and read from here, so the simulator follows the
real instructions. Plain constants: the simulator imports this and nothing heavier."""

PHASE = "ModularRSI phase:"
"""ModularRSI instructions: `analysis`, `edit`, `review`, `integration` or `repair`."""

MODULE = "Module:"
"""ModularRSI instructions: the module a branch evolves (`integration` for the merge)."""

MODULE_FILES = "Module files:"
"""ModularRSI instructions: the files the edit may change, comma-separated."""

REFERENCES = "Branch references:"
"""ModularRSI integration: the folder holding one full checkout per chosen branch."""
