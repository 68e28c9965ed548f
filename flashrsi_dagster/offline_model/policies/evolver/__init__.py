"""`simulator/evolver`: the Evolver's model roles, simulated.

Stateless and deterministic like the Meta-Harness worker: every reply is decided from the
conversation so far; files are read and changed only through the MiniAgent tools `shell` and
`editor`, at relative paths inside the working folder. The instruction's first line,
`Evolver phase: <phase>` (`algorithms/evolver/markers.py`), chooses what it answers:

- `diagnose` (`diagnose.py`): one listed WHY per failing run, with a one-line evidence
  (`evidence.py`), as `{"diagnoses": [{"task", "why", "where", "evidence"}]}`;
- `pick` (`pick.py`): the heaviest WHYs of the failure table, as `{"whys", "reason"}`;
- `design` (`design.py`): one candidate, its mechanism chosen by its index so that a round's
  candidates differ: 1 keyword rules and 2 a default label in the prompt file
  (`prompt_mechanisms.py`), 3 and above an answer normaliser in the runtime code with a
  conditional activation beacon (`normaliser.py`);
- `induce` and `consolidate` (`induce.py`): taxonomy classes, as `{"whys": [{"name",
  "description"}]}`.

Structured answers are a final text with the JSON in a ```json block. Without a known phase
line the reply says so and nothing is done.
"""

from __future__ import annotations

from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.evolver.design import read_design
from flashrsi_dagster.offline_model.policies.evolver.diagnose import diagnose
from flashrsi_dagster.offline_model.policies.evolver.induce import consolidate, induce
from flashrsi_dagster.offline_model.policies.evolver.instruction import PHASES, read_instruction
from flashrsi_dagster.offline_model.policies.evolver.normaliser import answer_normaliser
from flashrsi_dagster.offline_model.policies.evolver.pick import pick
from flashrsi_dagster.offline_model.policies.evolver.prompt_mechanisms import (
    default_label,
    keyword_rules,
)
from flashrsi_dagster.offline_model.policies.worker import results_by_request

__all__ = ["evolver"]

NO_PHASE = (
    "Simulator Evolver: this instruction has no usable `Evolver phase:` line naming one of "
    f"{', '.join(PHASES)}, so there is nothing this simulated model can do."
)
MECHANISMS = (keyword_rules, default_label, answer_normaliser)
"""The design's mechanism by candidate index (1-based; the last serves every index above)."""


def evolver(conversation: Conversation) -> Reply:
    instruction = read_instruction(conversation)
    if instruction is None:
        return Reply(text=NO_PHASE)
    if instruction.phase == "diagnose":
        return diagnose(instruction)
    if instruction.phase == "pick":
        return pick(instruction)
    if instruction.phase == "induce":
        return induce(instruction)
    if instruction.phase == "consolidate":
        return consolidate(instruction)
    design = read_design(instruction.text)
    if isinstance(design, str):
        return Reply(text=design)
    mechanism = MECHANISMS[min(max(design.index, 1), len(MECHANISMS)) - 1]
    return mechanism(results_by_request(conversation), design)
