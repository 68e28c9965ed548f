"""`simulator/modular-worker` and `simulator/reviewer`: ModularRSI's model roles, simulated.

Stateless and deterministic like the Meta-Harness worker: every reply is decided from the
conversation so far, read through the MiniAgent tools `shell` (`{"command"}`) and `editor`
(`view`, `create`, `str_replace`, `insert`), and only relative paths inside the working folder
are used. The instruction's marker lines (`instruction_markers`: `ModularRSI phase:`,
`Module:`, `Module files:`, `Branch references:`) choose the phase:

- `analysis` (`analysis.py`): findings, as keyword guidance for the failing tasks' labels, on
  the module file that can carry it;
- `edit` (`edit.py`): the guidance written where the module's place lets the model see it
  (`places.py`), or, for task completion detection, the final answer made a bare label;
- `review` (`review.py`): a verdict by written rules; an edit outside the module's
  responsibility (guidance added by a module that does not decide what the model reads) is
  rejected;
- `integration` and `repair` (`merge.py`): the branches' changes merged into the seed's files
  by text, from the reference checkouts; a repair restores a file that no longer compiles.

`simulator/modular-worker` answers every phase (so it can be its own reviewer);
`simulator/reviewer` answers only the review, for a separate reviewer role.
"""

from __future__ import annotations

from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.modular_rsi.analysis import analyse
from flashrsi_dagster.offline_model.policies.modular_rsi.edit import edit
from flashrsi_dagster.offline_model.policies.modular_rsi.instruction import read_instruction
from flashrsi_dagster.offline_model.policies.modular_rsi.merge import integrate, repair
from flashrsi_dagster.offline_model.policies.modular_rsi.review import review

__all__ = ["modular_worker", "reviewer"]

_NO_PHASE = (
    "Simulator {who}: this instruction has no `ModularRSI phase:` line naming one of analysis, "
    "edit, review, integration, repair, so there is nothing this simulated model can do."
)


def modular_worker(conversation: Conversation) -> Reply:
    instruction = read_instruction(conversation)
    if instruction is None:
        return Reply(text=_NO_PHASE.format(who="ModularRSI worker"))
    if instruction.phase == "analysis":
        return analyse(conversation, instruction)
    if instruction.phase == "edit":
        return edit(conversation, instruction)
    if instruction.phase == "review":
        return review(instruction)
    if instruction.phase == "integration":
        return integrate(conversation, instruction)
    return repair(conversation, instruction)


def reviewer(conversation: Conversation) -> Reply:
    instruction = read_instruction(conversation)
    if instruction is None or instruction.phase != "review":
        return Reply(
            text=_NO_PHASE.format(who="reviewer").replace(
                "one of analysis, edit, review, integration, repair", "review"
            )
        )
    return review(instruction)
