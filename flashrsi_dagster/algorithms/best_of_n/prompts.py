"""The Worker's instruction for one best-of-N sample."""

from __future__ import annotations

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.algorithms.best_of_n import markers as best_of_n_markers
from flashrsi_dagster.snapshots import Components

INSTRUCTION = """\
You are improving an agent harness. The folder you are in is a fresh copy of the seed
harness: edit it in place so that the agent scores better on its tasks.

{history_marker} {history}
{prompt_file_marker} {prompt_file}
{sample_marker} {sample} of {samples}

`{history}/rollouts/{split}/` holds the seed's rollouts on {split} tasks, one JSON file per
run (its answer, score and messages); `{history}/seed/` is the seed itself. Read what you
need with your tools; study the failures before you edit.

This is one of up to {samples} independent samples: each starts from the seed, none sees
another's edit, and the best on held-out tasks is kept. Try your own idea.

Only these files of the harness are yours to change ({components}); any other change, or
none, wastes this sample. `{history}` is removed before your edit is committed: do not put
anything there. Finish with a short summary of what you changed and why.
"""


def worker_instruction(
    components: Components, history: str, prompt_file: str, *, sample: int, samples: int, split: str
) -> str:
    return INSTRUCTION.format(
        history_marker=best_of_n_markers.HISTORY,
        history=history,
        prompt_file_marker=markers.PROMPT_FILE,
        prompt_file=prompt_file,
        sample_marker=best_of_n_markers.SAMPLE,
        sample=sample,
        samples=samples,
        split=split,
        components=components.describe(),
    )
