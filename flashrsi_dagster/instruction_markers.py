"""Line markers shared by instructions the framework writes (each algorithm's own are in its
folder's `markers.py`), which the offline model's demo policies look for
(`offline_model/policies/`): written and read from here, so the simulator follows the real
instructions rather than a copy of them. Each starts a line of its own and is
followed by a value. Plain constants: the offline model imports this and nothing heavier.

A real model reads these lines as prose; only the simulator depends on their spelling.
"""

PROMPT_FILE = "Prompt file:"
"""Meta-Harness and Evolver Worker instructions: the harness file to start from."""

LABELS = "Labels:"
"""Text classification task: the allowed labels, comma-separated."""

TEXT = "Text:"
"""Text classification task: the text to classify (the rest of the message)."""

IMPROVER = "Improver harness:"
"""Worker instructions under `worker.harness: adopted`: the adopted snapshot the Worker runs
(its short id), so the harness it edits may make the next candidates in turn."""

BATCH_READING = "Workflow: read every history file in one shell command."
"""A workflow line a demo improver may write into an adopted harness's prompt; the demo Worker
policy reads its own system prompt for it (seed 003's recursion, made visible offline)."""
