"""What the demo worker changes in a prompt: keywords mined from failures, as rule-line edits."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from flashrsi_dagster.offline_model.policies.rules import Rule, parse_rule

KEYWORDS_PER_LABEL = 3
MIN_WORD_LENGTH = 4

_WORD = re.compile(r"[a-z]+")
# Frequent words that say nothing about a label.
# fmt: off
STOPWORDS = frozenset({
    "about", "above", "after", "again", "against", "also", "because", "been", "before", "being",
    "below", "between", "both", "could", "does", "doing", "down", "during", "each", "either",
    "even", "ever", "every", "from", "further", "have", "having", "here", "hers", "herself",
    "himself", "however", "into", "itself", "just", "like", "made", "make", "many", "more",
    "most", "much", "must", "myself", "never", "once", "only", "other", "ours", "ourselves",
    "over", "same", "shall", "should", "some", "such", "than", "that", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "under", "until",
    "upon", "very", "were", "what", "when", "where", "which", "while", "whom", "whose", "with",
    "within", "without", "would", "your", "yours", "yourself", "yourselves", "text", "label",
    "please", "thanks", "thank", "will",
})
# fmt: on


@dataclass(frozen=True)
class Failure:
    """A failed trajectory: the label it should have given, and the text it was given."""

    label: str
    text: str


@dataclass(frozen=True)
class Edit:
    label: str
    keywords: tuple[str, ...]
    rule: Rule | None
    """The rule line to extend; None when a new rule line is added."""
    literal: str | None = None
    """A line added as written, not a rule (a workflow line)."""

    @property
    def new_line(self) -> str:
        if self.literal is not None:
            return self.literal
        if self.rule is None:
            return f"- {self.label} when the text mentions: {', '.join(self.keywords)}"
        line = self.rule.line.rstrip()
        stop = "." if line.endswith(".") else ""
        separator = ", " if self.rule.keywords else " "
        return f"{line.removesuffix(stop).rstrip()}{separator}{', '.join(self.keywords)}{stop}"


def plan_edits(prompt_lines: list[str], failures: list[Failure], skip: int = 0) -> list[Edit]:
    """One edit per failing label (alphabetical) that has new keywords to offer; `skip`:
    passing over that many of each label's best-ranked words (another sample's choice)."""
    first_rule: dict[str, Rule] = {}
    known: dict[str, set[str]] = {}
    for rule in filter(None, map(parse_rule, prompt_lines)):
        first_rule.setdefault(rule.label.lower(), rule)
        known.setdefault(rule.label.lower(), set()).update(rule.keywords)
    texts: dict[str, list[str]] = {}
    for failure in failures:
        texts.setdefault(failure.label, []).append(failure.text)
    edits = []
    for label in sorted(texts):
        words = pick_keywords(texts[label], known.get(label.lower(), set()), skip)
        if words:
            edits.append(Edit(label, tuple(words), first_rule.get(label.lower())))
    return edits


def pick_keywords(texts: list[str], known: set[str], skip: int = 0) -> list[str]:
    """Up to 3 new words, ranked by how many of the texts contain them (ties alphabetical),
    after the `skip` best."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(
            word
            for word in set(_WORD.findall(text.lower()))
            if len(word) >= MIN_WORD_LENGTH and word not in STOPWORDS and word not in known
        )
    ranked = sorted(counts, key=lambda word: (-counts[word], word))
    return ranked[skip : skip + KEYWORDS_PER_LABEL]


def summary(edits: list[Edit], prompt: str, failures: int, who: str = "Simulator worker") -> str:
    changes = [
        f"added the line `{edit.literal}`"
        if edit.literal is not None
        else f"extended the `{edit.label}` rule with {', '.join(edit.keywords)}"
        if edit.rule
        else f"added a `{edit.label}` rule for {', '.join(edit.keywords)}"
        for edit in edits
    ]
    return (
        f"{who}: updated {prompt} from {failures} failed trajectories: " + "; ".join(changes) + "."
    )
