"""DGM's marker lines in the instruction it gives the improver, which its offline model
policy reads (`offline_model/policies/dgm.py`). Plain constants: the simulator imports this."""

LOGS = "Evaluation logs:"
"""The folder (relative to the improver's) holding its own train rollouts, one JSON each."""
ENTRY = "Entry:"
"""What this attempt works on: a failed train task id, or a special entry below."""
IMPROVE_WORKFLOW = "improve_workflow"
"""Special entry: improve how the agent improves itself (its own instructions)."""
STREAMLINE_TOOLS = "streamline_tools"
"""Special entry: make the agent's tools smaller or simpler."""
WORKFLOW_LINE = "Improver workflow: read every failure log before editing."
"""A line the demo improver may write into its own system prompt; the demo policy, running a
harness whose prompt has it, reads every failure, not just the entry's (recursion, offline)."""


def log_name(task_id: str) -> str:
    """The file name of a task's log in the improver's logs folder (`<name>.json`)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in task_id)
