"""Best-of-N's marker lines in the Worker instruction, which its offline model policy reads
(`offline_model/policies/sampling.py`): written and read from here, so the simulator follows
the real instruction. Plain constants: the simulator imports this and nothing heavier."""

HISTORY = "History:"
"""The folder holding the seed and its rollouts, relative to the Worker's folder (the same
spelling as Meta-Harness's: the demo Worker reads either)."""

SAMPLE = "Sample:"
"""`Sample: <i> of <N>`: which independent sample this edit is (0-based), of how many at most."""
