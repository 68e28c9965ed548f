"""Design candidates 1 and 2: mechanisms that act in the prompt file.

- Keyword rules (candidate 1): each example's (expected label, text) is a
  `prompt_edits.Failure`; `plan_edits` mines up to 3 keywords per label, written as
  `simulator/worker` writes them: `editor view`, then an existing rule line of the label
  extended (`str_replace`), new rule lines `insert`ed after the last line, or the file
  `create`d. No example with a label and text, or no new keyword: nothing is edited.
- A default label (candidate 2), a deliberately different and riskier mechanism: the
  examples' most common expected label (ties alphabetical) becomes `Default label: <label>`,
  replacing the file's first default line or `insert`ed after its last line (`create`d when
  the file is missing). Every text no rule matches then gets that label, right or wrong.
"""

from __future__ import annotations

from collections import Counter

from flashrsi_dagster.offline_model.conversation import Reply
from flashrsi_dagster.offline_model.policies.evolver.design import Design, Done, edited, finish
from flashrsi_dagster.offline_model.policies.prompt_edits import Failure, plan_edits, summary
from flashrsi_dagster.offline_model.policies.rules import default_label as default_of
from flashrsi_dagster.offline_model.policies.worker import edit_calls, editor_call, file_lines

WHO = "Simulator Evolver, candidate {index} ({mechanism})"


def keyword_rules(done: Done, design: Design) -> Reply:
    who = WHO.format(index=design.index, mechanism="keyword rules")
    failures = [Failure(e.label, e.text) for e in design.examples if e.label and e.text]
    if not failures:
        said = f"{who}: no example names a label and a text; nothing was changed."
        return finish(said, "prompt", done)
    view = done.get(("editor", "view", design.prompt))
    if view is None:
        return Reply(tool_calls=(editor_call(command="view", path=design.prompt),))
    lines = file_lines(view)
    edits = plan_edits(lines or [], failures)
    if not edits:
        said = f"{who}: {design.prompt} already names every keyword the examples suggest"
        return finish(said + "; nothing was changed.", "prompt", done)
    if edited(done, design.prompt):
        return finish(summary(edits, design.prompt, len(failures), who), "prompt", done)
    return Reply(tool_calls=edit_calls(edits, lines, design.prompt))


def default_label(done: Done, design: Design) -> Reply:
    who = WHO.format(index=design.index, mechanism="a default label")
    counts = Counter(e.label for e in design.examples if e.label)
    if not counts:
        said = f"{who}: no example names its expected label; nothing was changed."
        return finish(said, "prompt", done)
    label = min(counts, key=lambda name: (-counts[name], name))
    view = done.get(("editor", "view", design.prompt))
    if view is None:
        return Reply(tool_calls=(editor_call(command="view", path=design.prompt),))
    lines = file_lines(view)
    current = next((line for line in lines or [] if default_of(line) is not None), None)
    if current is not None and default_of(current) == label:
        said = f"{who}: {design.prompt} already defaults to `{label}`; nothing was changed."
        return finish(said, "prompt", done)
    if edited(done, design.prompt):
        said = (
            f"{who}: set `Default label: {label}` in {design.prompt}, the label {counts[label]} "
            f"of the {sum(counts.values())} examples expected; every text no rule matches now "
            "gets it."
        )
        return finish(said, "prompt", done)
    return Reply(tool_calls=(_default_call(design.prompt, lines, current, label),))


def _default_call(prompt: str, lines: list[str] | None, current: str | None, label: str):
    line = f"Default label: {label}"
    if lines is None:
        return editor_call(command="create", path=prompt, file_text=line + "\n")
    if current is not None:
        return editor_call(command="str_replace", path=prompt, old_str=current, new_str=line)
    return editor_call(command="insert", path=prompt, insert_line=len(lines), new_str=line)
