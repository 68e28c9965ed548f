"""The instructions of the Evolver's model calls: the diagnosis of failed train runs, the
pick of the round's WHYs, and the design of one candidate. Each starts with marker lines
(`instruction_markers`) the offline simulator's policies read. Only train trajectories reach
them: the sealed test has no path here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.algorithms.evolver import markers as evolver_markers
from flashrsi_dagster.algorithms.evolver.choose import WhyHistory
from flashrsi_dagster.algorithms.evolver.failure_map import Diagnosis, Flip
from flashrsi_dagster.algorithms.evolver.taxonomy import Taxonomy

DIAGNOSE = """\
{phase} diagnose
Each run below failed a train task of the benchmark. Give each failing task one WHY from the
taxonomy (what went wrong), a WHERE hint (prompt, runtime, or config: where a fix would act)
and one line of evidence from the run.

Taxonomy:
{taxonomy}

{runs}

Answer with one JSON object, in a ```json block:
{{"diagnoses": [{{"task": "<task id>", "why": "<class>", "where": "<hint>",
"evidence": "<line>"}}]}}
"""


def diagnose_instruction(taxonomy: Taxonomy, runs: Mapping[str, str]) -> str:
    """`runs`: failing train task id -> its run, summarised (question, answer, expected)."""
    return DIAGNOSE.format(
        phase=evolver_markers.EVOLVER_PHASE,
        taxonomy="\n".join(f"- {w.name}: {w.description}" for w in taxonomy.whys),
        runs="\n\n".join(f"### task {task}\n{text}" for task, text in runs.items()),
    )


PICK = """\
{phase} pick
Choose the failure classes (WHYs) this round of harness changes should target: at most
{limit}. The failure map (failing train tasks per WHY) and each WHY's history of attempts:

{table}

Prefer WHYs that explain many failures and have not failed repeatedly. Answer with one JSON
object: {{"whys": ["<class>", ...], "reason": "<why these>"}}
"""


def pick_instruction(
    failing: Mapping[str, int], history: Mapping[str, WhyHistory], limit: int
) -> str:
    rows = []
    for why, count in failing.items():
        past = history.get(why, WhyHistory())
        rows.append(
            f"- {why}: {count} failing task(s); earlier candidates lost {past.failed}, "
            f"never fired {past.inert}"
        )
    return PICK.format(phase=evolver_markers.EVOLVER_PHASE, limit=limit, table="\n".join(rows))


DESIGN = """\
{phase} design
{why_marker} {why}
{prompt_marker} {prompt_file}
You are improving an agent harness: the folder you are in is the current parent version. Design
and make ONE change that fixes failures of this class: {why} ({description}). This is
candidate {index} of {count} for this class: make it a different mechanism from the obvious
one if your index is above 1.

Failing train tasks of this class, with what the diagnosis saw:
{examples}
{flips}{history}
Rules: change only files the harness declares ({components}). Any Python you add must call
`activation_beacon("<mechanism name>")` where the new mechanism acts (import it with
`from runtime.beacon import activation_beacon`; the name is up to 64 letters, digits, `_`, `.`,
`:` or `-`); an edit of Python code without one is refused.
Finish with a short summary of the mechanism and where it acts.
"""


def design_instruction(
    why: str,
    description: str,
    examples: Sequence[Diagnosis],
    flips: Sequence[Flip],
    history: WhyHistory,
    index: int,
    count: int,
    components: str,
    prompt_file: str,
) -> str:
    listed = "\n".join(f"- {d.task}: {d.evidence or '(no evidence given)'}" for d in examples)
    replay = ""
    if flips:
        replay = "\nEarlier candidates broke these tasks (harm replay of the regressed runs):\n"
        replay += "\n".join(f"--- {f.task} (round {f.round})\n{f.excerpt}" for f in flips)
        replay += "\n"
    past = (
        f"\nHistory of this class: {history.failed} earlier candidate(s) lost, "
        f"{history.inert} never fired (their trigger was never hit: act where the failures "
        "actually pass).\n"
        if history.failed or history.inert
        else ""
    )
    return DESIGN.format(
        phase=evolver_markers.EVOLVER_PHASE,
        why_marker=evolver_markers.WHY,
        why=why,
        description=description,
        index=index,
        count=count,
        examples=listed or "- (none recorded)",
        flips=replay,
        history=past,
        components=components,
        prompt_marker=markers.PROMPT_FILE,
        prompt_file=prompt_file,
    )
