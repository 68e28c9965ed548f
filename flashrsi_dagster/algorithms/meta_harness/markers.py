"""Meta-Harness's marker lines in the instructions it writes, which its offline model policy
reads (`offline_model/policies/`): written and read from here, so the simulator follows the
real instructions. Plain constants: the simulator imports this and nothing heavier."""

HISTORY = "History:"
"""Meta-Harness Worker instruction: the history folder, relative to the Worker's folder."""
