"""`simulator/sampling-worker`: best-of-N's Worker, the demo Worker (`worker.py`) drawing one
of several independent samples. A real model sampled N times at a non-zero temperature makes
N different edits; this simulator is deterministic, so the instruction says which sample it
is: a line `Sample: <i> of <N>` (`algorithms/best_of_n/markers.py`). Sample i passes over the
i best-ranked keywords of each failing label and takes the next ones (sample 0 is exactly
`simulator/worker`); everything else — reading the history folder through its tools, editing
the prompt file — is the demo Worker's. Without the line it is sample 0."""

from __future__ import annotations

import re

from flashrsi_dagster.algorithms.best_of_n import markers
from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.markers import marker, marker_value
from flashrsi_dagster.offline_model.policies.worker import improve

_SAMPLE = marker(markers.SAMPLE)
_INDEX = re.compile(r"(\d{1,6})\b")


def sample(conversation: Conversation) -> Reply:
    return improve(conversation, skip=sample_index("\n".join(conversation.user_texts())))


def sample_index(text: str) -> int:
    """The 0-based sample index the instruction names; 0 when it names none."""
    value = marker_value(_SAMPLE, text)
    found = _INDEX.match(value) if value else None
    return int(found[1]) if found else 0
