"""Sabotage, eighteenth red-team pass (issue 22), as a hostile Worker and a hostile evolved
harness: round 17's fixes attacked first (the content check reading zip members from their
local headers: stray signatures, data descriptors, a stored body claimed past the member
after it), and the check's search for compressed streams inside a file's bytes.

Of 11 cases, 7 got through on main (2 holes, both closed in `contamination/decode.py`):
sixteen decoy magics hid the stream behind them (5); an honest zip storing a jar (a fat jar)
was rejected as unsearched (2).
"""

from __future__ import annotations

import bz2
import gzip
import random
import zipfile
import zlib

import pytest

from flashrsi_dagster.contamination.decode import MAX_MAGIC_OFFSETS
from flashrsi_dagster.contamination.detector import RULES
from tests.sabotage.helpers import refused_as_opaque
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON, _zip
from tests.sabotage.test_round17 import _in_code

# -- the content check: streams found inside a file's bytes -----------------------------------

DECOYED = {
    "16 gzip magics before a gzip stream": b"\x1f\x8b" * 16 + gzip.compress(TABLE_JSON),
    "16 gzip magics before a zip": b"\x1f\x8b" * 16 + _zip([("t.json", TABLE_JSON)]),
    "16 bzip2 magics before a bzip2 stream": b"\x00BZh" * 16 + bz2.compress(TABLE_JSON),
    "16 zlib headers before a zlib stream": b"\x78\x9c\x00" * 16 + zlib.compress(TABLE_JSON),
}


@pytest.mark.parametrize("form", DECOYED)
def test_a_stream_behind_many_decoy_magics_is_read(content_check, form):
    """Attack: sixteen decoy magics (two bytes each, in a binary file) before the table's
    gzip, bzip2 or zlib stream or zip: a harness seeks to its stream at a known offset.
    Got through on main: the check tried the first 16 places a magic starts in a file's
    bytes and no more, the 17th never decompressed, the candidate judged clean (4 forms).
    Stops it: up to `decode.MAX_MAGIC_OFFSETS` (1,024) places are tried, a reading of more
    is unsearched."""
    verdict = content_check.judge(_binary("skills/t.bin", DECOYED[form]))

    assert verdict.contaminated, verdict


def test_a_file_of_more_decoy_magics_than_the_check_tries_is_unsearched(content_check):
    """Attack: the same past the new bound. Got through on main (clean). Past
    `MAX_MAGIC_OFFSETS` places a stream opens, the stream behind them unread: the
    candidate is rejected as unsearched, never judged clean. (Round 19: a place counts
    only when a stream opens there, so the decoys are real streams, tiny zlib ones; a
    magic that opens none is not tried, and hides nothing.)"""
    decoys = b"".join(zlib.compress(b"decoy %d" % i) for i in range(MAX_MAGIC_OFFSETS + 1))
    data = decoys + gzip.compress(TABLE_JSON)

    verdict = content_check.judge(_binary("skills/t.bin", data))

    assert verdict.contaminated and RULES["undecoded"] in verdict.rules, verdict


def test_an_honest_binary_holding_magics_at_random_is_searched(content_check):
    """The honest side: 512 KB of random bytes (an image, a model's weights) hold a two-byte
    magic in about 37 places (more than the 16 tried before), under the bound: the file is
    searched, not called undecoded; since the coverage rule, refused as opaque (its bytes
    look compressed and no reading consumes them)."""
    data = random.Random(18).randbytes(512 << 10)

    verdict = content_check.judge(_binary("skills/weights.bin", data))

    assert refused_as_opaque(verdict), verdict


# -- the content check: local headers inside a stored member (round 17's `_local`) ------------


def _fat_jar(jars: int, classes: int) -> bytes:
    """A Spring Boot style "fat jar": `jars` nested jars of `classes` members each, stored
    uncompressed in the outer one (as `BOOT-INF/lib/*.jar` are, so that they are read in
    place): every nested member's local header sits in the outer archive's bytes."""
    inner = [
        _zip(
            [
                (f"p{j}/C{i}.class", b"\xca\xfe\xba\xbe class %d of jar %d" % (i, j))
                for i in range(classes)
            ]
        )
        for j in range(jars)
    ]
    return _zip(
        [(f"BOOT-INF/lib/l{j}.jar", jar) for j, jar in enumerate(inner)], zipfile.ZIP_STORED
    )


def test_a_fat_jar_of_stored_jars_is_searched(content_check):
    """Attack (on the honest side): a vendored fat jar whose stored nested jars hold 1,200
    members between them (each jar under `MAX_ZIP_MEMBERS`), every one a local header's
    signature in the outer archive's bytes. Got through on main (rejected as unsearched, an
    honest harness refused): round 17's `_local` counted every signature as a member, more
    than `MAX_ZIP_MEMBERS` (and see the next test)."""
    verdict = content_check.judge(_binary("skills/app.jar", _fat_jar(6, 200)))

    assert not verdict.contaminated and not verdict.rules, verdict


def test_a_zip_storing_a_small_jar_is_searched(content_check):
    """Attack (on the honest side): a zip storing one jar of three classes. Got through on
    main (rejected as unsearched): the check read a zip from each of the first 16 places its
    magic starts, so also from the nested jar's second local header; zipfile then took the
    outer archive's central directory, its offsets shifted, and a listed entry that did not
    read made the archive unsearched. Stops it: a zip is read from its first local header
    alone, a central entry at no local header is passed over as zipfile does, and a
    signature inside a stored body is that member's bytes, not a member."""
    verdict = content_check.judge(_binary("skills/lib.zip", _fat_jar(1, 3)))

    assert not verdict.contaminated and not verdict.rules, verdict


def _covering(data: bytes) -> bytes:
    """A stored decoy whose local header claims a body running past the table's deflated
    member after it (the central directory listing the decoy alone): a streaming reader
    skips the table as the decoy's bytes; a harness slices it out anyway."""
    table = _zip([("t.json", data)])
    table = table[: table.find(b"PK\x01\x02")]
    decoy = bytearray(_zip([("d", b"decoy " * 8)], zipfile.ZIP_STORED))
    local, central = decoy.find(b"PK\x03\x04"), decoy.find(b"PK\x01\x02")
    claimed = (len(b"decoy " * 8) + len(table)).to_bytes(4, "little")
    decoy[local + 18 : local + 26] = claimed * 2
    body_end = local + 30 + 1 + len(b"decoy " * 8)
    out = bytes(decoy[:body_end]) + table + bytes(decoy[central:])
    out = bytearray(out)
    end = out.find(b"PK\x05\x06")
    out[end + 16 : end + 20] = (central + len(table)).to_bytes(4, "little")
    return bytes(out)


def test_a_member_inside_a_stored_body_claimed_past_it_is_read(content_check):
    """Attack on this round's own fix: the table's member inside a stored decoy's claimed
    body, so that it is skipped as the decoy's bytes. Held: the decoy's body is read as its
    data, and the member in it unpacked from there."""
    verdict = content_check.judge(_binary("skills/c.zip", _covering(TABLE_JSON)))

    assert verdict.contaminated, verdict


def _descriptor(data: bytes) -> bytes:
    """A stored member holding `data` gzip'd, written as a streaming writer writes it: flag
    bit 3, sizes 0 in its local header, the sizes in a data descriptor after the body."""
    out = bytearray(_zip([("t.gz", gzip.compress(data))], zipfile.ZIP_STORED))
    local = out.find(b"PK\x03\x04")
    out[local + 6] |= 8
    out[local + 14 : local + 26] = bytes(12)
    return bytes(out)


@pytest.mark.parametrize("where", ["file", "base64'd in code"])
def test_a_stored_member_with_a_data_descriptor_is_read(content_check, where):
    """Attack: a member stored with a data descriptor (its local header's sizes 0) holding
    the table gzip'd. Held: the central directory gives its size, and the gzip stream in
    the stored bytes is found by its magic anyway."""
    blob = _descriptor(TABLE_JSON)
    edit = _binary("skills/d.zip", blob) if where == "file" else _in_code("runtime/d.py", blob)

    assert content_check.judge(edit).contaminated
