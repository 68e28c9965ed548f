"""The contamination check: is a candidate harness carrying the benchmark's tasks or answers?

Confinement keeps an evolved harness away from the labels and the scorer; it cannot see a
harness that brings the answers in its own files (a model that memorised a public benchmark
can write them in). So every candidate's files are searched for every task's secrets (the
benchmark's `secrets(task)`: inputs, answers, reference solutions, test files, patches; all
splits), in the plain text and the texts a reader could recover from it, before it is scored.

Modules: `normalise` (the compared form), `decode` (a file's texts: escapes, base64, hex,
compression), `coverage` (every byte accounted for, or the file unsearched), `index` (the
secrets as shingles and digests), `detector` (the search and the thresholds), `windows`
(where a text may hold a shingle, found at C speed), `verdict` (the record and its
Worker-safe line), `check` (what the algorithms call).
"""

from flashrsi_dagster.contamination.check import ContentCheck
from flashrsi_dagster.contamination.verdict import ContentVerdict, Hit

__all__ = ["ContentCheck", "ContentVerdict", "Hit"]
