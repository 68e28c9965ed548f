"""The content check's decoding budget on honest binary archives (issue 22, after round 19):
a binary file's readings that undo a text's escaping (latin-1 kept as UTF-8, `\\`, `%XX`,
`&#..;`, `=XX`) are applied to its text spans alone (`decode._TextSpans`), so a stored zip of
random members (a `.npz` of a small model's weights) is not read and charged again in each
reading; the budget still bounds what a hostile file makes the check read."""

from __future__ import annotations

import gzip
import random
import zipfile
from urllib.parse import quote_from_bytes

import pytest

from flashrsi_dagster.contamination.detector import RULES
from tests.sabotage.helpers import refused_as_opaque
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON, _zip


def _npz(members: int = 32, size: int = 16 << 10, seed: int = 0, table: bytes = b"") -> bytes:
    """A `.npz` as `numpy.savez` writes one: a stored zip of `members` arrays of random
    bytes (`size` each; seed 0 is one a reading of whose text spans changes nothing), `table`
    in the middle of the eighth."""
    rng = random.Random(seed)
    arrays = [rng.randbytes(size) for _ in range(members)]
    arrays[7] = arrays[7][: size // 2] + table + arrays[7][size // 2 :]
    named = [(f"arr_{n}.npy", data) for n, data in enumerate(arrays)]
    return _zip(named, zipfile.ZIP_STORED)


def test_an_honest_npz_is_not_undecoded(content_check):
    """Attack (on the honest side): a stored zip of 32 members of 16 KB of random bytes
    (512 KB, a small model's weights in `.npz`). Got through on main (rejected as unsearched):
    each reading of the file through its UTF-8 text (latin-1, unescaped, unquoted) turned
    every byte that is not UTF-8 into `?` or U+FFFD, so each stored member differed from the
    file's own and was read and charged again, 4 MB in all. Stops it: those readings are
    applied to the file's text spans alone, its other bytes kept as they are; a member
    read again is the same bytes, known by its digest, not charged. Since the coverage rule
    it is refused all the same, as opaque (random weights: no reading consumes them)."""
    verdict = content_check.judge(_binary("skills/weights.npz", _npz()))

    assert refused_as_opaque(verdict), verdict


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(TABLE_JSON, id="plain"),
        pytest.param(gzip.compress(TABLE_JSON, mtime=0).decode("latin-1").encode(), id="latin-1"),
        pytest.param(quote_from_bytes(gzip.compress(TABLE_JSON, mtime=0)).encode(), id="quoted"),
        pytest.param(
            repr(gzip.compress(TABLE_JSON, mtime=0).decode("latin-1")).encode("latin-1"),
            id="repr-in-latin-1",
        ),
    ],
)
def test_a_table_in_one_member_of_an_npz_is_caught(content_check, form):
    """Attack: the same `.npz` with the table in the middle of one member's random bytes, as
    it is, or gzip'd and kept as latin-1 text in UTF-8, URL-quoted (a text span between
    bytes that are not UTF-8) or as a str's repr in latin-1 (`\\x8b`, `\\n`, raw `ÿ`: no
    UTF-8). Caught on main. Still caught: the reading that undoes the escaping is applied to
    the text span, or the run of code escapes, the stream is written in. (The gzip'd forms are
    also called unsearched, as on main: the table's own text, found a layer deeper through
    the member, holds runs read as a fourth layer.)"""
    verdict = content_check.judge(_binary("skills/weights2.npz", _npz(table=form)))

    found = [rule for rule in verdict.rules if rule != RULES["undecoded"]]
    assert verdict.contaminated and found, verdict


def _escaped_member(rng: random.Random, size: int) -> bytes:
    """Random bytes with a text span that each reading changes (`%41`, `\\n`, `&#65;`, `=41`,
    a latin-1 letter in UTF-8) every 4 KB: no reading of the file is its bytes."""
    span = b" %41 \\n &#65; =41 \xc3\xa9 is text, long enough to be read "
    return b"".join(rng.randbytes(4096) + span for _ in range(size // 4096))


def test_a_zip_every_reading_changes_is_unsearched(content_check):
    """Attack: make the new accounting spend without bound: a 2 MB stored zip whose every
    member holds text spans each reading changes, so each reading's members are new bytes
    (no digest known), with the table in a zip past what they cost. Refused on main
    (unsearched). Still refused: a reading's members that are not the file's own bytes are
    read and charged as any new bytes are; past the budget the candidate is unsearched."""
    rng = random.Random(22)
    members = [(f"arr_{n}.npy", _escaped_member(rng, 64 << 10)) for n in range(32)]
    members.append(("t.zip", _zip([("t.json", TABLE_JSON)])))
    data = _zip(members, zipfile.ZIP_STORED)

    verdict = content_check.judge(_binary("skills/weights3.npz", data))

    assert verdict.contaminated and RULES["undecoded"] in verdict.rules, verdict
