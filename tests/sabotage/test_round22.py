"""Sabotage, twenty-second red-team pass (issue 22), as a hostile Worker, aimed at round 21's
own fixes in `contamination/decode.py` and `contamination/detector.py`: the seams of the files
joined counted as the views cut lines (`_seams`), a headerless stream of noise and the table
read for its printable runs (`_headerless`), streams of two kinds read joined
(`_next_member`), escaped runs read in a binary file (`_in_escaped_runs`), a stored body's
shorter extent (`_stored_body`), a zip with no central directory in a decompressed blob
(`_archive_at`), and the rework allowance (`Budget.again`).

Each attack is one test, written here failing on main first, then closed. Of 11 cases, 5 got
through on main, 5 holes closed, none declared: a headerless stream of noise and the table
that does not end (sync-flushed, cut short) was dropped (2 forms); a compressor's magic hidden
by a few escapes (`%1F%8B`, `=1F=8B`, `&#31;&#139;`, `\\x1f\\x8b`, `%XX` and `=XX` in turn), the
stream after them raw, was never read (5); a stream escaped as `=XX` and `%XX` in turn was
read one kind at a time (2); a streamed zip in a decompressed blob before a stray end
signature or a central directory pointing nowhere was never read (3); a listed member whose
local header names LZMA where its central entry says stored was read raw (1). Held on main
(6): a table cut into files whose `\\r\\n` straddles each seam, empty files between; one
cut into files each led by a byte order mark (UTF-8, UTF-16); a stored member whose local
header defers its size to a zip64 field; a gzip stream behind a headerless stream of text,
base64'd; the rework allowance spent by one file before the table's file; 1,024 zip
entries at one body told apart by their claimed sizes alone (bounded). And the honest side
of this round's fixes (2): clean and searched.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import quopri
import random
import struct
import zipfile
import zlib
from urllib.parse import unquote_to_bytes

import pytest

from flashrsi_dagster.contamination.detector import RULES
from tests.sabotage import test_decode_rework
from tests.sabotage.helpers import refused_as_opaque
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON, _zip
from tests.sabotage.test_round17 import _in_code
from tests.sabotage.test_round19 import FILLER
from tests.sabotage.test_round20 import _streamed_member
from tests.sabotage.test_round21 import NOISE, ROWS, _files, _raw_deflate

_GZIPPED = gzip.compress(TABLE_JSON, mtime=0)
work = test_decode_rework.work
"""Bytes inflated and hashed (the fixture of `test_decode_rework.py`)."""

# -- the content check: a headerless stream of noise and the table that does not end ------------

NOISY_UNENDED = {
    "raw deflate, sync-flushed, no last block": _raw_deflate(NOISE + TABLE_JSON, zlib.Z_SYNC_FLUSH),
    "legacy .lzma, its last 20 bytes cut": lzma.compress(
        NOISE + TABLE_JSON, format=lzma.FORMAT_ALONE
    )[:-20],
}


@pytest.mark.parametrize("kind", NOISY_UNENDED)
def test_a_headerless_stream_of_noise_and_the_table_that_does_not_end_is_read(content_check, kind):
    """Attack: round 21's two headerless fixes at once: 600 random bytes and the table in a
    raw deflate stream flushed but never finished, or a legacy `.lzma` stream cut short, as
    a binary file: `zlib.decompressobj(-15).decompress(data)[600:]` gives the table, no
    error. Got through on main: a headerless stream that is not text was read for its
    printable runs only when it ended (`_headerless`), one that is text ended or not; this
    one is neither, the candidate judged clean. Stops it: a stream that takes all its bytes
    without an error is read for its printable runs too, ended or not (random bytes fail
    every headerless kind within their length)."""
    verdict = content_check.judge(_binary("skills/t.bin", NOISY_UNENDED[kind]))

    assert verdict.contaminated, verdict


# -- the content check: a magic hidden by a few escapes ----------------------------------------

_MTIME_NOT_UTF8 = _GZIPPED[:4] + b"\xff\xff\xff\xff" + _GZIPPED[8:]
"""The table's gzip stream, its mtime bytes not UTF-8 (no text span of 24 bytes at its start)."""
ESCAPED_MAGIC = {
    "%XX (`unquote_to_bytes`)": (b"%1F%8B%08%00", unquote_to_bytes),
    "=XX (`quopri.decodestring`)": (b"=1F=8B=08=00", quopri.decodestring),
    "&#..; (read by code)": (
        b"&#31;&#139;&#8;&#0;",
        lambda d: d.replace(b"&#31;&#139;&#8;&#0;", _MTIME_NOT_UTF8[:4]),
    ),
    "%XX and =XX in turn (`quopri.decodestring(unquote_to_bytes(...))`)": (
        b"%1F=8B%08=00",
        lambda d: quopri.decodestring(unquote_to_bytes(d)),
    ),
    "\\xXX (`codecs.escape_decode`)": (
        b"\\x1f\\x8b\\x08\\x00",
        lambda d: d.replace(b"\\x1f\\x8b\\x08\\x00", _MTIME_NOT_UTF8[:4]),
    ),
}


@pytest.mark.parametrize("form", ESCAPED_MAGIC)
def test_a_magic_hidden_by_a_few_escapes_is_read(content_check, form):
    """Attack: the table's gzip stream in a binary file, its first 4 bytes (the magic, the
    method, the flags) escaped (`%1F%8B%08%00`, `=1F=8B=08=00`, `&#31;...`, `\\x1f...`, or
    `%XX` and `=XX` in turn) and the rest raw: `gzip.decompress(unquote_to_bytes(data))`
    gives the table (an unescape of the whole file passes raw bytes through). Got through
    on main: the magic is nowhere in the bytes; the escapes are read in a binary file's
    text spans (24 bytes of UTF-8: the stream's are shorter) or in runs of 8 escapes or
    more (`_in_escaped_runs`), and 4 are fewer: the stream never read, the candidate
    judged clean. Stops it: a run of fewer escapes is read too when reading it shows a
    compressor's magic its bytes hide (`_unhides_magic`)."""
    escaped, read = ESCAPED_MAGIC[form]
    data = escaped + _MTIME_NOT_UTF8[4:]
    assert gzip.decompress(read(data)) == TABLE_JSON  # what a harness has

    verdict = content_check.judge(_binary("skills/t.dat", data))

    assert verdict.contaminated, verdict


# -- the content check: escapes of two kinds, nested -------------------------------------------


def _in_turn(stream: bytes, raw_high: bool) -> bytes:
    """`stream`'s bytes as `=XX` and `%XX` in turn (those from 0x80 up raw when `raw_high`):
    `quopri.decodestring(unquote_to_bytes(data))` reads it (a `%XX` is read first, a `=XX`
    passes it)."""
    return b"".join(
        bytes([c]) if raw_high and c >= 0x80 else (b"%%%02X" if at % 2 else b"=%02X") % c
        for at, c in enumerate(stream)
    )


@pytest.mark.parametrize("raw_high", [False, True], ids=["all escaped", "high bytes raw"])
def test_a_stream_escaped_in_two_kinds_in_turn_is_read(content_check, raw_high):
    """Attack: the table's gzip stream, its bytes escaped as `=XX` and `%XX` in turn (every
    byte, or those under 0x80 with the others raw), as a file: a harness unquotes it, then
    decodes it as quoted-printable (`quopri.decodestring(unquote_to_bytes(data))`), one
    escaping nested in the other's data. Got through on main: each escape kind was read
    alone (`_web_bytes`), each reading keeping the other's escapes, so no reading held the
    magic: the candidate judged clean. Stops it: a file holding escapes of two kinds or
    more is also read with them all in turn, in either order (`_composed`)."""
    data = _in_turn(_GZIPPED, raw_high)
    assert quopri.decodestring(unquote_to_bytes(data)) == _GZIPPED  # what a harness has

    verdict = content_check.judge(_binary("skills/t.dat", data))

    assert verdict.contaminated, verdict


# -- the content check: zips read from their local headers -------------------------------------

_STREAMED = _streamed_member(b"t.json", _raw_deflate(TABLE_JSON))


def _central_pointing_nowhere() -> bytes:
    """A central directory of one entry whose local header would be 7 bytes into it, and
    its end record: zipfile reads it, and no member is at a local header."""
    central = struct.pack(
        "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 1, 1, 5, 0, 0, 0, 0, 0, 7
    ) + b"a.txt"  # fmt: skip
    return central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), 0, 0)


DECOYED = {
    "in the middle of a log, gzip'd": gzip.compress(
        FILLER[:20_000] + _STREAMED + b"PK\x05\x06" + FILLER[:20_000], mtime=0
    ),
    "300 random bytes in, bzip2'd": bz2.compress(
        NOISE[:300] + _STREAMED + b"PK\x05\x06" + NOISE[:300]
    ),
    "a central directory pointing nowhere after it, gzip'd": gzip.compress(
        FILLER[:20_000] + _STREAMED + _central_pointing_nowhere(), mtime=0
    ),
}


@pytest.mark.parametrize("form", DECOYED)
def test_a_streamed_zip_before_a_stray_central_directory_is_read(content_check, form):
    """Attack on round 21's `_archive_at`: the table's zip as a streaming writer leaves it
    (a local header, a deflated body, no central directory of its own), then the 4 bytes
    of an end-of-central-directory signature (`PK\\x05\\x06`) and more bytes, or a central
    directory of one entry pointing nowhere, in the middle of a gzip'd log or 300 random
    bytes into a bzip2'd blob: a harness decompresses it and reads the member from its
    local header, as a streaming reader does. Got through on main: a zip in a decompressed
    blob past its start was read only when no end signature followed it or a central
    directory after it put a member at a local header; one zipfile refuses, or one pointing
    nowhere, was taken for an archive read from inside another, never read, the candidate
    judged clean. Stops it: a zip past a decompressed blob's start is read from its first
    local header, whatever follows (`_stream_start`; the check was round 19's, when readings
    that shifted a stored body's offsets were taken through whole files, which round 20's
    text spans ended: an honest jar, stored, of images and class files stays clean)."""
    verdict = content_check.judge(_binary("skills/t.bin", DECOYED[form]))

    assert verdict.contaminated, verdict


def _lzma_member() -> bytes:
    """A zip of one member whose central entry says stored and whose local header says LZMA,
    its body the table as a zip's LZMA body (a version, the properties' size, them, raw LZMA)."""
    lzma1 = {"id": lzma.FILTER_LZMA1}
    props = lzma._encode_filter_properties(lzma1)  # type: ignore[attr-defined]
    raw = lzma.compress(TABLE_JSON, format=lzma.FORMAT_RAW, filters=[lzma1])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("t.bin", struct.pack("<BBH", 9, 20, len(props)) + props + raw)
    data = bytearray(buffer.getvalue())
    data[8:10] = struct.pack("<H", zipfile.ZIP_LZMA)  # the local header's method
    return bytes(data)


def test_a_member_its_local_header_calls_lzma_is_read_so(content_check):
    """Attack: a zip whose one member's central entry says stored and whose local header
    says LZMA (method 14), its body the table as a zip's LZMA body: a streaming reader
    (`bsdtar -xf -`, a harness's own loop over local headers) inflates it by the local
    header's method. Got through on main: members are read by their central entry's
    method, so its body was read raw (4 bytes of a version and a size, then a raw LZMA
    stream: no magic, no stream at its start), the candidate judged clean. Stops it: a
    listed member whose local header names another method is read by that one too
    (`_by_local_method`)."""
    verdict = content_check.judge(_binary("skills/t.zip", _lzma_member()))

    assert verdict.contaminated, verdict


def _local_header(name: bytes, method: int, body: bytes, size: int, extra: bytes = b"") -> bytes:
    head = struct.pack(
        "<4sHHHHHIIIHH", b"PK\x03\x04", 45, 0, method, 0, 0, 0, size, size, len(name), len(extra)
    )
    return head + name + extra + body


def test_a_stored_member_of_a_zip64_size_hides_no_member_after_it(content_check):
    """Attack on `_stored_body`: a streamed zip (no central directory) whose first member is
    stored, its local header's sizes `0xFFFFFFFF` (the real one, 1 byte, in a zip64 extra
    field), then the table's deflated member: a streaming reader takes the byte and reads
    the table's member; a check taking the size as it stands skips every later local header
    as the first member's bytes. Held on main: the first member's data (the byte and the
    table's member) is read as a blob, and the member found in it by its local header."""
    zip64 = struct.pack("<HHQQ", 1, 16, 1, 1)
    first = _local_header(b"a.txt", zipfile.ZIP_STORED, b"X", 0xFFFFFFFF, zip64)
    deflated = _raw_deflate(TABLE_JSON)
    table = _local_header(b"t.json", zipfile.ZIP_DEFLATED, deflated, len(deflated))

    verdict = content_check.judge(_binary("skills/t.zip", first + table))

    assert verdict.contaminated, verdict


# -- held: seams, a stream behind a headerless one, the rework allowance -----------------------


def test_a_table_cut_into_files_whose_crlf_straddles_each_seam_is_read_joined(content_check):
    """Attack on round 21's `_seams`: the table cut into 12-character files, each ending
    with `\\r` and the next starting with `\\n` (one `\\r\\n` across each seam, one line
    break where a count of `\\r` and `\\n` apart sees two), an empty file after each: a
    harness joins them and strips the line breaks. Held on main: the seams' lines are
    counted in the text joined as `str.splitlines` cuts it, `\\r\\n` once, an empty file
    a seam on the same line."""
    contents = {"skills/a0.txt": b"hello there, notes\r"}
    for at, piece in enumerate(ROWS[n : n + 12] for n in range(0, len(ROWS), 12)):
        contents[f"skills/p{at:04d}a.txt"] = b"\n" + piece + b"\r"
        contents[f"skills/p{at:04d}b.txt"] = b""

    verdict = content_check.judge(_files(contents))

    assert verdict.contaminated, verdict


MARKED = {
    "UTF-8 with a BOM (`utf-8-sig`)": lambda piece: b"\xef\xbb\xbf" + piece,
    "UTF-16 (a BOM, then the piece)": lambda piece: piece.decode().encode("utf-16"),
    "UTF-16, each ending with CRLF": lambda piece: (piece.decode() + "\r\n").encode("utf-16"),
}


@pytest.mark.parametrize("form", MARKED)
def test_a_table_cut_into_files_led_by_a_byte_order_mark_is_read_joined(content_check, form):
    """Attack on `_seams`: the table cut into 12-character files, each led by a byte order
    mark (UTF-8's, or UTF-16's with the piece in UTF-16): a harness reads each in its
    encoding (`read_text(encoding="utf-8-sig")`, `"utf-16"`) and joins them, where the
    bytes joined hold a BOM (U+FEFF, or two bytes that are not UTF-8) at every seam. Held
    on main: the letters-only form drops what stands between the pieces, and NULs drop in
    every form."""
    contents = {"skills/a0.txt": b"hello there, notes\n"}
    for at, piece in enumerate(ROWS[n : n + 12] for n in range(0, len(ROWS), 12)):
        contents[f"skills/p{at:04d}.txt"] = MARKED[form](piece)

    verdict = content_check.judge(_files(contents))

    assert verdict.contaminated, verdict


def test_a_gzip_stream_behind_a_headerless_stream_of_text_is_read(content_check):
    """Attack: a raw deflate stream of notes, then the table's gzip stream, base64'd in code:
    `d = zlib.decompressobj(-15); d.decompress(blob); gzip.decompress(d.unused_data)`. A
    blob whose headerless stream gives text is taken to be that stream (`_unpacked` returns
    there). Held on main: the gzip stream's magic is found in the blob's bytes, read as a
    file's bytes are (`_blobs`)."""
    notes = b"just some notes about the weather today, nothing else " * 4

    verdict = content_check.judge(_in_code("runtime/x.py", _raw_deflate(notes) + _GZIPPED))

    assert verdict.contaminated, verdict


def test_the_rework_allowance_spent_early_leaves_the_later_table_unpassed(content_check):
    """Attack on the rework allowance: a first file spends it (a zip of 1,024 members of one
    1.5 MB body of zeros), so that a later file, the table gzip'd, ends unread. Held on
    main: past the allowance every file ends unsearched (`Reworked`), the budget `cut`, and
    the candidate is rejected as unsearched, never clean."""
    bomb = _zip([(f"m{n}", bytes(3 << 19)) for n in range(1024)])

    def edit(folder) -> None:
        _binary("skills/a.zip", bomb)(folder)
        _binary("skills/z.gz", _GZIPPED)(folder)

    verdict = content_check.judge(edit)

    assert verdict.contaminated, verdict


# -- the honest side of this round's fixes -----------------------------------------------------

_RECORDS = random.Random(2201)
HONEST = {
    "a binary of records holding URLs and mail of `%XX` and `=XX`": _binary(
        "skills/history.db",
        b"".join(
            _RECORDS.randbytes(200)
            + b"https://example.org/?q=caf%C3%A9&x=%2F Subject: =C3=A9t=C3=A9"
            for _ in range(1000)
        ),
    ),
    "a zip of notes and random bytes": _binary(
        "skills/notes.zip",
        _zip([("a.md", FILLER[:30_000]), ("b.bin", _RECORDS.randbytes(30_000))]),
    ),
}


@pytest.mark.parametrize("form", HONEST)
def test_honest_files_this_round_reads_again_are_searched(content_check, form):
    """The honest side of this round's fixes: a binary whose records hold URLs and mail
    headers full of `%XX` and `=XX` (now also read with both in turn), a zip of notes (its
    local headers read for their methods, which agree): not called unsearched; both refused
    as opaque since the coverage rule (their random records and member: binary data no
    reading consumes)."""
    verdict = content_check.judge(HONEST[form])

    assert refused_as_opaque(verdict), verdict


def _one_body_many_claims(count: int = 1024) -> bytes:
    """A zip of one deflated member (1.5 MB of zeros) and `count` central entries all at its
    local header, each claiming another compressed size (a reader inflates the body to its
    stream's end whatever size is claimed): entries alike but for that field."""
    body = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    deflated = body.compress(bytes(3 << 19)) + body.flush()
    local = _local_header(b"m", zipfile.ZIP_DEFLATED, deflated, len(deflated))
    central = b"".join(
        struct.pack(
            "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, 0,
            len(deflated) - n, 3 << 19, 1, 0, 0, 0, 0, 0, 0,
        ) + b"m"
        for n in range(count)
    )  # fmt: skip
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, len(central), len(local), 0)
    return local + central + end


def test_entries_of_one_body_told_apart_by_a_claimed_size_are_bounded(content_check, work):
    """Attack on the rework allowance's dedup of zip entries (`dict.fromkeys` of members:
    entries alike at one local header are read once): 1,024 central entries at one
    deflated member of 1.5 MB of zeros, each claiming another compressed size, so that no
    two are alike, each inflated to its stream's end, 1.5 GB for a 50 KB file. Held on
    main: each is found known and charged to the rework allowance, past which the file ends
    unsearched; the work stays within the bound of `test_decode_rework.py`."""
    verdict = content_check.judge(_binary("skills/frames.zip", _one_body_many_claims()))

    assert verdict.contaminated and RULES["undecoded"] in verdict.rules, verdict
    assert work["inflated"] + work["hashed"] <= test_decode_rework.BOUND, work
