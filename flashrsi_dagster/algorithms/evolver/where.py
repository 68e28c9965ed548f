"""WHERE a candidate acts, bound mechanically from the files it changed (a self-declared
WHERE is kept for audit only), and the QD archive's cell: (WHERE, WHY).

Four levels, from the roles the harness's components.yaml gives the changed files: `prompt`
(prompt and skill files only), `runtime` (code only), `mixed` (both), `edit` (anything else:
config, hooks, data).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from flashrsi_dagster.snapshots import Components

Where = Literal["prompt", "runtime", "mixed", "edit"]
PROMPT_KINDS = frozenset({"prompt", "skill"})
CODE_KINDS = frozenset({"code"})


def bind_where(changed: Iterable[str], components: Components) -> Where:
    kinds = {components.role_of(path) for path in changed}
    if not kinds:
        raise ValueError("bind_where: a candidate that changed nothing has no WHERE")
    if kinds <= PROMPT_KINDS:
        return "prompt"
    if kinds <= CODE_KINDS:
        return "runtime"
    if kinds <= PROMPT_KINDS | CODE_KINDS:
        return "mixed"
    return "edit"


def cell_of(where: Where, why: str) -> str:
    return f"{where}:{why}"
