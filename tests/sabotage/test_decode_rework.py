"""The content check's decoder doing work again for nothing new (issue 22, after round 20):
bytes known already (a digest in `decode.Budget.seen`) are not charged to the 4 MB decoding
budget, so a hostile Worker could make the host's check inflate and hash gigabytes for a few
KB of file. Each attack is counted in work (bytes inflated and hashed, by wrapping
`zlib.decompressobj` and `decode._digest`), never in seconds; each ends unsearched, never
clean. What is read again is now charged to its own bound, `decode.MAX_REWORK_BYTES`, and the
rests of a stream read joined are known by their bytes, not hashed one by one. Of 3 cases,
3 got through on main, 3 closed."""

from __future__ import annotations

import gzip
import random
import zlib

import pytest

from flashrsi_dagster.contamination import decode
from flashrsi_dagster.contamination.decode import MAX_DECODED_BYTES, MAX_REWORK_BYTES
from flashrsi_dagster.contamination.detector import MAX_JUDGED_BYTES, RULES
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import _zip

BOUND = 2 * MAX_REWORK_BYTES + 16 * MAX_DECODED_BYTES
"""Work one verdict may do, at most: each byte read again inflated once and hashed once, and
what the budget itself pays for, with room to spare."""


@pytest.fixture
def work(monkeypatch) -> dict[str, int]:
    """Bytes inflated (any zlib decompressor's output) and hashed (`decode._digest`)."""
    counts = {"inflated": 0, "hashed": 0}
    inflater, digest = zlib.decompressobj, decode._digest

    class Counted:
        def __init__(self, *args, **kwargs) -> None:
            self.engine = inflater(*args, **kwargs)

        def decompress(self, data, *args):
            out = self.engine.decompress(data, *args)
            counts["inflated"] += len(out)
            return out

        def __getattr__(self, name):
            return getattr(self.engine, name)

    def hashed(data, unpacking):
        counts["hashed"] += len(data)
        return digest(data, unpacking)

    monkeypatch.setattr(zlib, "decompressobj", Counted)
    monkeypatch.setattr(decode, "_digest", hashed)
    return counts


def _unsearched(verdict) -> bool:
    return verdict.contaminated and RULES["undecoded"] in verdict.rules


def test_a_zip_of_one_member_a_thousand_times_is_bounded(content_check, work):
    """Attack: a 1.5 MB zip of 1,024 identical deflated members, each 1.5 MB of zeros (a
    ratio of 1,000): the first is charged to the budget, every other one is inflated again
    (`_zip_members`; in each of the file's readings), hashed, found known and charged
    nothing. Got through on main: 4.6 GB inflated and 4.6 GB hashed for one file (as much
    again for each copy a byte apart), and the file passed as searched. Stops it: a member
    found known charges its bytes to the rework allowance; past it the file ends
    unsearched."""
    data = _zip([(f"m{n}", bytes(3 << 19)) for n in range(1024)])

    verdict = content_check.judge(_binary("skills/frames.zip", data))

    assert _unsearched(verdict), verdict
    assert work["inflated"] + work["hashed"] <= BOUND, work


def test_many_gzip_members_in_front_of_megabytes_are_bounded(content_check, work):
    """Attack: 1,000 one-line gzip members in front of 4 MB of random bytes (within the
    judged bytes): each member is read joined behind the first, its rest (all 4 MB after it)
    hashed as read (`Budget.joined`), then hashed again when its magic is tried as a stream,
    found known and charged nothing. Got through on main: 8 GB hashed (17 s at load 7 to
    15), then rejected as unsearched. Stops it: the rests read joined are known by their
    length, first bytes and a byte-for-byte compare when met (`Budget.joined`), the stream
    charged once to the rework allowance: nothing is hashed per member."""
    members = b"".join(gzip.compress(b"%d" % n, mtime=0) for n in range(1000))
    data = members + random.Random(21).randbytes(MAX_JUDGED_BYTES - len(members) - 4096)

    verdict = content_check.judge(_binary("skills/frames.gz", data))

    assert _unsearched(verdict), verdict
    assert work["hashed"] <= BOUND, work


def test_a_stream_of_a_thousand_members_does_not_make_joined_quadratic(content_check, work):
    """Attack: 1,000 gzip members of 3.5 KB of random bytes each (3.5 MB, within the budget
    inflated): `Budget.joined` hashes every member's rest, 1.7 GB, and each member's magic
    hashes it again as a stream, found known (quadratic up to `MAX_MEMBERS`). Got through on
    main: 3.6 GB hashed for one file, then rejected as unsearched. Stops it: the rests are
    known by their bytes, the stream charged once to the rework allowance (an honest log of
    1,000 members of 1 KB of text hashed 406 MB on main: 3 MB now, bench/RESULTS.md)."""
    data = b"".join(gzip.compress(random.Random(n).randbytes(3500), mtime=0) for n in range(1000))

    verdict = content_check.judge(_binary("skills/frames2.gz", data))

    assert _unsearched(verdict), verdict
    assert work["hashed"] <= BOUND, work
