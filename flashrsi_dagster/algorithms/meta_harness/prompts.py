"""The Worker's instruction for one Meta-Harness step."""

from __future__ import annotations

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.algorithms.meta_harness import markers as meta_harness_markers
from flashrsi_dagster.algorithms.meta_harness.plan import SLOT, slots_of
from flashrsi_dagster.snapshots import Components

INSTRUCTION = """\
You are improving an agent harness. The folder you are in is a fresh copy of {start}:
edit it in place so that the agent scores better on its tasks.

{history_marker} {history}
{prompt_file_marker} {prompt_file}

`{history}/index.json` maps every earlier snapshot id to its source folder under
`{history}/snapshots/`, with its round, dev score and status (regressed versions included).
`{history}/trajectories/round-<k>/` holds each round's evaluation rollouts (`dev/`), its
outcome (`round.json`), the edit decision (`edit.json`) and the earlier Worker run
(`worker.json`). Read what you need with your tools; study the failures before you edit.

Only these files of the harness are yours to change ({components}); any other change, or
none, wastes this step. `{history}` is removed before your edit is committed: do not put
anything there.

Rules (the reference proposer's):
- Change a mechanism, not a number. A candidate whose logic is an earlier one's with other
  constants (sizes, counts, budgets, thresholds) is a parameter tweak: such sweeps almost
  always tie or regress. Combining mechanisms of earlier candidates is fine.
- Generalise; never overfit the evaluation set. Do not hard-code answers, task ids, dataset
  or task names, or knowledge of particular tasks: the harness must help on many unseen tasks
  (the score that counts is on tasks you never see). General rules are fine.
- Prototype before you commit: try the mechanism on real examples from `{history}` (with a
  scratch script outside this folder, or by reading the rollouts closely), compare a few
  variants, then write the one that works. Delete scratch files.
- `{history}/trajectories/round-<k>/summary.json` is the report of each earlier candidate
  (hypothesis, axis of change, outcome) and `{history}/frontier.json` the candidates no other
  beats on both dev score and tokens per task: read them before you choose a direction, and
  choose another axis if the last ones all tried the same.

Finish with a short report of this candidate, its last lines being
{hypothesis_marker} <the falsifiable claim this candidate tests>
{axis_marker} <what kind of change it is: prompt, tools, control flow, memory, …>
"""


SIDE_BY_SIDE = """
This round has {count} candidates, made side by side from the same history; yours is
{slot}. None of you sees the others' edits: a round can try several ideas at once. The
other candidates of earlier rounds are under `{history}/trajectories/round-<k>-c<i>/`.
"""


COORDINATED = """
This round has {count} candidates and they are all yours: {candidates_marker} {folders}
Each of these folders is a fresh copy of {start} (the paths above are relative
to each); write one candidate into each, deliberately different from the others: a different
hypothesis, a different mechanism (mix exploiting what worked with exploring what was not
tried). Each folder is committed and evaluated on its own; one left unchanged, or identical to
another, is rejected and wastes its evaluation. Nothing outside these folders is kept. End your
report with one section per candidate, each starting with a line `Candidate <folder>:` and
holding that candidate's `{hypothesis_marker}` and `{axis_marker}` lines.
"""


SEED = "the seed harness"
"""What the Worker's folder is a copy of unless `initial_harnesses` gave a better start."""


def start_words(slot: str, snapshot_id: str, history: str) -> str:
    """What the Worker's folder is a copy of: the seed (slot c0 of round 0), or the initial
    harness that scored best on dev (`plan.start_of`), named as the history lists it."""
    if slot == SLOT:
        return SEED
    return (
        f"the initial harness that scored best on dev, not the seed: round 0's candidate "
        f"{slot}, snapshot {snapshot_id} in `{history}/index.json`"
    )


def worker_instruction(
    components: Components,
    history: str,
    prompt_file: str,
    *,
    slot: str = SLOT,
    candidates: int = 1,
    coordinated: bool = False,
    start: str = SEED,
) -> str:
    """The instruction; with several candidates a round, also which one this is (one a
    round: word for word as before `candidates_per_round`), or, `coordinated`, the folders
    the one session writes them all into. `start`: what the checkout is a copy of
    (`start_words`)."""
    text = INSTRUCTION.format(
        start=start,
        history_marker=meta_harness_markers.HISTORY,
        history=history,
        prompt_file_marker=markers.PROMPT_FILE,
        prompt_file=prompt_file,
        components=components.describe(),
        hypothesis_marker=meta_harness_markers.HYPOTHESIS,
        axis_marker=meta_harness_markers.AXIS,
    )
    if coordinated:
        text += COORDINATED.format(
            start=start,
            count=candidates,
            candidates_marker=meta_harness_markers.CANDIDATES,
            folders=" ".join(slots_of(candidates)),
            hypothesis_marker=meta_harness_markers.HYPOTHESIS,
            axis_marker=meta_harness_markers.AXIS,
        )
    elif candidates > 1:
        text += SIDE_BY_SIDE.format(count=candidates, slot=slot, history=history)
    return text
