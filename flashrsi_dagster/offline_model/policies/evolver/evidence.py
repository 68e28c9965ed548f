"""A diagnosis's evidence, one line the diagnosis writes and the design reads back:

    expected <label>, answered <answer>; text: <the classified text, whitespace collapsed, cut>

The design instruction lists each example as `- <task>: <evidence>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TEXT_CHARS = 300
NOT_RECORDED = "(not recorded)"
"""What the run summary says when a run has no expected label (`evolver/train_runs.py`)."""
_EVIDENCE = re.compile(
    r"expected (?P<expected>.+?), answered (?P<answer>.*?); text: (?P<text>.*?)[ \t]*$"
)


@dataclass(frozen=True)
class Evidence:
    expected: str
    answer: str
    text: str

    def line(self) -> str:
        text = " ".join(self.text.split())[:TEXT_CHARS]
        return f"expected {self.expected}, answered {' '.join(self.answer.split())}; text: {text}"

    @property
    def label(self) -> str | None:
        """The expected label, when the run recorded one."""
        return None if self.expected == NOT_RECORDED else self.expected


def read_evidence(line: str) -> Evidence | None:
    match = _EVIDENCE.search(line)
    return Evidence(match["expected"], match["answer"], match["text"]) if match else None
