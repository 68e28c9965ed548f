"""Meta-Harness's marker lines in the instructions it writes, which its offline model policy
reads (`offline_model/policies/`): written and read from here, so the simulator follows the
real instructions. Plain constants: the simulator imports this and nothing heavier."""

HISTORY = "History:"
"""Meta-Harness Worker instruction: the history folder, relative to the Worker's folder."""

HYPOTHESIS = "Hypothesis:"
"""Meta-Harness Worker report: the line of its final message that states the candidate's
hypothesis (`history.py` reads it into the candidate's `summary.json`)."""

AXIS = "Axis of change:"
"""Meta-Harness Worker report: the line that names the kind of change the candidate makes."""

CANDIDATES = "Candidate folders:"
"""Meta-Harness Worker instruction (`proposer: coordinated`): the folders, one per candidate of
the round, each a fresh seed checkout the one Worker session writes a candidate into."""
