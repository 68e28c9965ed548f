"""Sabotage, twenty-first red-team pass (issue 22), as a hostile Worker: round 20's fixes
attacked first (headerless streams read joined, `_following`; gzip members padded with
zeros; zip members found by their local headers, `_local` and `_stored_body`; the escaped
readings of a binary file taken in its text spans alone, `_TextSpans`), then the search's
candidate-position filter (the files joined, searched only near their seams).

Each attack is one test, written here failing on main first, then closed in
`contamination/decode.py` or `contamination/detector.py`. Of 24 cases, 19 got through on
main, 8 holes closed, one limit declared: a table cut into files ended by `\r`, a form feed
or U+2028 was never searched joined, the seams' lines counted by `\n` alone (3); a
headerless stream (raw deflate, legacy `.lzma`) of noise and the table was dropped as not
text (2), and one that does not end as no stream (2); streams of two kinds in turn that one
reader takes end to end (xz and `.lzma`, gzip and zlib) were read one at a time (2); a
stream escaped among its raw high bytes (`%XX`, `=XX`, `&#..;`) in a binary file was cut
into text spans too short to read (3); a stored zip member whose local header claims less
than its central entry hid the member a streaming reader finds behind it (1); a stream
inside a blob that reads as text lost its NULs to the text reading (3); a zip with no
central directory past a decompressed blob's start was never read (2). Declared (strict
xfail): a headerless stream a byte into a file (1). Held on main (2): gzip members of odd
headers read whole; and the honest side of the fixes (3): clean and searched.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import quopri
import random
import re
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

from tests.sabotage.helpers import refused_as_opaque, table_rows
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON
from tests.sabotage.test_round17 import _in_code
from tests.sabotage.test_round19 import ALGEBRA, FILLER
from tests.sabotage.test_round20 import PIECES, _streamed_member

ROWS = "".join(f"{' '.join(text.split())}|{label}|" for text, label in table_rows()).encode()
"""The table as rows of `text|label|`, one line, no backslash, `%` or `&`: nothing but the
plain reading can find it."""


def _raw_deflate(data: bytes, flush: int = zlib.Z_FINISH) -> bytes:
    engine = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return engine.compress(data) + engine.flush(flush)


# -- the files joined: searched near their seams alone -----------------------------------------


def _files(contents: dict[str, bytes]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        for path, data in contents.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)

    return edit


ENDINGS = {"\\r (classic Mac)": b"\r", "form feed": b"\x0c", "U+2028": "\u2028".encode()}


@pytest.mark.parametrize("ending", ENDINGS)
def test_a_table_cut_into_files_of_other_line_endings_is_read_joined(content_check, ending):
    """Attack: the table cut into files of 12 characters each (`skills/p0000.txt`, ...),
    each line ended by a `\\r` (a classic Mac text file), a form feed or U+2028, behind two
    files of notes: a harness reads them in path order and joins them (`"".join(...)`,
    the line endings dropped). Got through on main: the files joined are searched only near
    their seams, whose lines were counted by `\\n` alone; the views number lines as
    `str.splitlines` cuts them (at `\\r`, form feed, U+2028 too), so every seam was taken to
    be on the first line, the table's never searched, the candidate judged clean. Stops it:
    the seams' lines are counted in the joined text as the views cut it
    (`detector._seams`)."""
    end = ENDINGS[ending]
    contents = {"skills/a0.txt": b"hello there, notes" + end}
    contents["skills/a1.txt"] = b"more notes here, not a table at all" + end
    pieces = [ROWS[at : at + 12] for at in range(0, len(ROWS), 12)]
    contents |= {f"skills/p{i:04d}.txt": piece + end for i, piece in enumerate(pieces)}

    verdict = content_check.judge(_files(contents))

    assert verdict.contaminated, verdict


# -- the content check: a stream no magic names ------------------------------------------------

NOISE = random.Random(21).randbytes(600)
"""Bytes in front of the table in one stream (a harness slices them off: `data[600:]`)."""

HEADERLESS_NOISY = {
    "raw deflate": _raw_deflate(NOISE + TABLE_JSON),
    "legacy .lzma": lzma.compress(NOISE + TABLE_JSON, format=lzma.FORMAT_ALONE),
}


@pytest.mark.parametrize("kind", HEADERLESS_NOISY)
def test_a_headerless_stream_of_noise_and_the_table_is_read(content_check, kind):
    """Attack: 600 random bytes and the table in one stream no magic names (raw deflate,
    legacy `.lzma`), as a binary file: a harness decompresses it
    (`zlib.decompress(data, -15)`, `lzma.decompress(data)`) and slices the table off the
    noise. Got through on main: a headerless stream is kept only when what it gives is text
    as a whole (`_headerless`), and 600 random bytes in 2 KB are not, the candidate judged
    clean; a stream a magic names is read for its printable runs in that case. Stops it: a
    headerless stream that ends cleanly and is not text is read for its printable runs too
    (`_readable`), text ones still tried first."""
    verdict = content_check.judge(_binary("skills/t.bin", HEADERLESS_NOISY[kind]))

    assert verdict.contaminated, verdict


HEADERLESS_UNENDED = {
    "raw deflate, sync-flushed, no last block": _raw_deflate(TABLE_JSON, zlib.Z_SYNC_FLUSH),
    "legacy .lzma, its last 20 bytes cut": lzma.compress(TABLE_JSON, format=lzma.FORMAT_ALONE)[
        :-20
    ],
}


@pytest.mark.parametrize("kind", HEADERLESS_UNENDED)
def test_a_headerless_stream_that_does_not_end_is_read(content_check, kind):
    """Attack: the table in a raw deflate stream flushed but never finished (no last block:
    `compressobj(wbits=-15)` and `flush(Z_SYNC_FLUSH)`), or a legacy `.lzma` stream cut
    short: `zlib.decompressobj(-15).decompress(data)` and
    `lzma.LZMADecompressor().decompress(data)` return the table without an error (the
    stream has not ended; no reader is told). Got through on main: a headerless stream that
    does not end was dropped (`_headerless` kept only streams that end), the candidate
    judged clean. Stops it: one that takes all its bytes without an error and gives text is
    kept, as a stream that ends is."""
    verdict = content_check.judge(_binary("skills/t.bin", HEADERLESS_UNENDED[kind]))

    assert verdict.contaminated, verdict


def test_a_headerless_stream_a_byte_in_is_read(content_check):
    """Attack: one byte, then the table as a raw deflate stream, as a binary file
    (`zlib.decompress(data[1:], -15)`). Got through on main (declared, a strict xfail): a
    stream no magic names is tried at a blob's start alone; found elsewhere only by trying
    every offset with five decompressors (a 4 MB binary: 20 million tries). Stops it now:
    the coverage rule (`contamination/coverage.py`): the stream's bytes look compressed and
    no reading consumed them, so the file is unsearched (more: `test_coverage.py`)."""
    verdict = content_check.judge(_binary("skills/t.bin", b"\x01" + _raw_deflate(TABLE_JSON)))

    assert refused_as_opaque(verdict), verdict


def _member(piece: bytes, flags: int, extra: bytes = b"") -> bytes:
    """`piece` as a gzip member whose header flags `flags` (its header CRC, when flagged,
    wrong: the gzip module reads past it unchecked; zlib refuses it)."""
    trailer = struct.pack("<II", zlib.crc32(piece), len(piece))
    return b"\x1f\x8b\x08" + bytes([flags]) + bytes(6) + extra + _raw_deflate(piece) + trailer


ODD_HEADERS = {
    "a wrong header CRC": lambda p: _member(p, 0x02, b"\xab\xcd"),
    "reserved flag bits set": lambda p: _member(p, 0xE0),
}


@pytest.mark.parametrize("header", ODD_HEADERS)
def test_gzip_members_of_odd_headers_are_read_whole(content_check, header):
    """Attack: the table cut into 12-character gzip members whose headers zlib refuses and
    the gzip module reads (a header CRC that is wrong, reserved flag bits set), end to end:
    `gzip.decompress` gives the table. Held on main: a member zlib refuses is read raw from
    where its header ends (`_unchecked`), and the members after it joined."""
    data = b"".join(ODD_HEADERS[header](piece) for piece in PIECES)
    assert gzip.decompress(data) == TABLE_JSON  # what a harness has

    verdict = content_check.judge(_binary("skills/t.gz", data))

    assert verdict.contaminated, verdict


# -- the content check: members of two kinds, as one reader reads them -------------------------


def _xz_and_lzma(pieces: list[bytes]) -> bytes:
    """Pieces as xz and legacy `.lzma` streams in turn: `lzma.decompress` (`FORMAT_AUTO`)
    takes either at each stream's start."""
    return b"".join(
        lzma.compress(p) if i % 2 == 0 else lzma.compress(p, format=lzma.FORMAT_ALONE)
        for i, p in enumerate(pieces)
    )


def _gzip_and_zlib(pieces: list[bytes]) -> bytes:
    """Pieces as gzip and zlib members in turn: `zlib.decompressobj(47)` takes either."""
    return b"".join(
        gzip.compress(p, mtime=0) if i % 2 == 0 else zlib.compress(p) for i, p in enumerate(pieces)
    )


def _auto_loop(data: bytes) -> bytes:
    out = b""
    while data:
        engine = zlib.decompressobj(32 + zlib.MAX_WBITS)
        out += engine.decompress(data)
        data = engine.unused_data
    return out


MIXED = {
    "xz and .lzma (`lzma.decompress`)": (_xz_and_lzma, lzma.decompress),
    "gzip and zlib (`decompressobj(47)` over `unused_data`)": (_gzip_and_zlib, _auto_loop),
}


@pytest.mark.parametrize("kind", MIXED)
def test_a_table_cut_into_streams_of_two_kinds_is_read_whole(content_check, kind):
    """Attack: the table cut into 12-character pieces, each its own stream, the streams of
    two kinds in turn that one reader takes end to end: xz and legacy `.lzma`
    (`lzma.decompress`'s `FORMAT_AUTO` tells them apart at each stream), gzip and zlib (a
    loop over `unused_data` with `zlib.decompressobj(47)`, which takes either header).
    Got through on main: streams were read joined only while the next was of the first
    one's kind (`_next_member`), so each was read alone (the `.lzma` ones not at all), none
    a shingle long, the candidate judged clean. Stops it: the next member is any stream
    the reader takes (`decode._next_member`)."""
    write, read = MIXED[kind]
    data = write(PIECES)
    assert read(data) == TABLE_JSON  # what a harness has

    verdict = content_check.judge(_binary("skills/t.bin", data))

    assert verdict.contaminated, verdict


# -- the content check: escapes mixed with raw bytes in a binary file --------------------------

_GZIPPED = gzip.compress(TABLE_JSON, mtime=0)


def _qp_mixed(stream: bytes) -> bytes:
    """Quoted-printable of `stream`, its bytes from 0x80 up left raw (`quopri` passes them)."""
    escaped = (c < 0x21 or c in (0x3D, 0x7F) for c in stream)
    return b"".join(
        b"=%02X" % c if escape and c < 0x80 else bytes([c])
        for c, escape in zip(stream, escaped, strict=True)
    )


def _by_code(data: bytes) -> bytes:
    """Character references read back as the bytes they name, other bytes as they are."""
    return re.sub(rb"&#([0-9]+);", lambda m: bytes([int(m.group(1))]), data)


ESCAPED_MIXED = {
    "%XX (`unquote_to_bytes`)": (
        b"".join(bytes([c]) if c >= 0x80 else b"%%%02X" % c for c in _GZIPPED),
        unquote_to_bytes,
    ),
    "quoted-printable (`quopri.decodestring`)": (_qp_mixed(_GZIPPED), quopri.decodestring),
    "character references (`&#31;`, read by code)": (
        b"".join(bytes([c]) if c >= 0x80 else b"&#%d;" % c for c in _GZIPPED),
        _by_code,
    ),
}


@pytest.mark.parametrize("form", ESCAPED_MIXED)
def test_a_stream_escaped_among_raw_bytes_is_read(content_check, form):
    """Attack: the table's gzip stream in a binary file, its bytes under 0x80 escaped
    (`%XX`, quoted-printable's `=XX` for controls and `=`, or `&#31;`) and those from 0x80
    up left raw: `unquote_to_bytes(data)`, `quopri.decodestring(data)` or a `re.sub` of the
    references of the whole file gives the stream (each passes raw bytes through). Got
    through on main: in a file that is not UTF-8 these readings are taken in its text spans
    alone (runs of 24+ bytes of valid UTF-8, round 20), and a raw byte every few escapes
    cuts the file into spans shorter than that, left escaped: the stream never read, the
    candidate judged clean. Stops it: in such a file a reading is also taken in its escaped
    runs (8 or more escapes, each within 256 bytes of the next), raw bytes kept, as `\\x`
    escapes already were (`_in_escaped_runs`)."""
    data, read = ESCAPED_MIXED[form]
    assert read(data) == _GZIPPED  # what a harness has

    verdict = content_check.judge(_binary("skills/t.dat", data))

    assert verdict.contaminated, verdict


# -- the content check: a zip read from its local headers --------------------------------------


def _local_header(name: bytes, method: int, body: bytes, size: int, crc: int) -> bytes:
    return (
        struct.pack(
            "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(body), size, len(name), 0
        )
        + name
    )


def _claimed_apart() -> bytes:
    """A zip of one stored member whose local header claims a body of 1 byte and whose
    central entry claims that byte and the deflated member after it (the table's, which no
    central entry lists): zipfile reads the first member as both; a streaming reader
    (`unzip -`, a harness's loop over local headers) takes 1 byte, then the table's member."""
    deflated = _raw_deflate(TABLE_JSON)
    crc = zlib.crc32(TABLE_JSON)
    table = _local_header(b"t.json", 8, deflated, len(TABLE_JSON), crc) + deflated
    first = b"X" + table
    local = _local_header(b"a.txt", 0, b"X", 1, zlib.crc32(b"X"))
    central = struct.pack(
        "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, zlib.crc32(first),
        len(first), len(first), 5, 0, 0, 0, 0, 0, 0,
    ) + b"a.txt"  # fmt: skip
    at = len(local) + len(first)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), at, 0)
    return local + first + central + end


def test_a_member_past_a_stored_body_its_local_header_ends_is_read(content_check):
    """Attack on round 18-20's `_local`: a stored member whose local header claims a body
    of 1 byte while its central entry claims that byte and the table's deflated member
    after it (listed nowhere). A streaming reader goes by the local header: it takes the
    byte, then finds the table's member and inflates it. Got through on main: the local
    headers inside a listed stored member's body are skipped as its bytes, its extent taken
    from the central entry alone; its data (a byte, then the member) is read as a blob with
    a local header a byte in, which is unpacked only as an archive with a central
    directory; the candidate judged clean. Stops it: a stored body's bytes are skipped as
    far as both its headers agree (`_stored_body`: the shorter of the two)."""
    verdict = content_check.judge(_binary("skills/t.zip", _claimed_apart()))

    assert verdict.contaminated, verdict


# -- the content check: a stream inside a blob that reads as text ------------------------------

_NOTES = FILLER[:20_000]
_TEXT_AND_STREAM = _NOTES + _GZIPPED + _NOTES
"""40 KB of a log with the table's gzip stream (700 bytes) in the middle: text, to 97%."""

IN_TEXT = {
    "gzip'd": _binary("skills/log.gz", gzip.compress(_TEXT_AND_STREAM, mtime=0)),
    "raw deflate": _binary("skills/log.bin", _raw_deflate(_TEXT_AND_STREAM)),
    "base64'd in code": _in_code("runtime/log.py", _TEXT_AND_STREAM),
}


@pytest.mark.parametrize("form", IN_TEXT)
def test_a_stream_inside_a_blob_of_text_is_read(content_check, form):
    """Attack: the table's gzip stream between two 20 KB halves of a log, the whole gzip'd,
    raw-deflated or base64'd in code: a harness decompresses or decodes it and slices the
    stream out (`gzip.decompress(blob[20_000:])`). Got through on main: the blob reads as
    text (97% printable), and a text is read with its NULs dropped (so that UTF-16 reads
    plain) and searched for a stream in those bytes alone; the gzip stream's NULs gone, it
    opened nowhere, the candidate judged clean. Stops it: a blob whose text reading dropped
    NULs is searched for streams in its own bytes too (`_stream_start`, `_embedded`; a
    headerless stream's output as a magic-named one's, `_readings`)."""
    verdict = content_check.judge(IN_TEXT[form])

    assert verdict.contaminated, verdict


def _streamed_zip() -> bytes:
    """The table in a zip's one member as a streaming writer leaves it: no central directory."""
    return _streamed_member(b"t.json", _raw_deflate(TABLE_JSON))


STREAMED_INSIDE = {
    "300 random bytes and it, bzip2'd": bz2.compress(NOISE[:300] + _streamed_zip()),
    "it in the middle of a log, gzip'd": gzip.compress(_NOTES + _streamed_zip() + _NOTES),
}


@pytest.mark.parametrize("form", STREAMED_INSIDE)
def test_a_streamed_zip_inside_a_decompressed_blob_is_read(content_check, form):
    """Attack: the table's zip written by a streaming writer (a local header and a deflated
    body, no central directory) 300 random bytes into a bzip2'd blob, or in the middle of a
    gzip'd log: a harness decompresses it and reads the member from its local header.
    Got through on main: in a decompressed blob, a zip past its start is read only when a
    central directory puts a member at its local header (`_archive_at`), so a streamed one
    never was (the log's text reading also dropped its NULs), the candidate judged clean.
    Stops it: a zip with no central directory after it is read from its local headers
    there too, as one in a file's bytes is."""
    verdict = content_check.judge(_binary("skills/t.bin", STREAMED_INSIDE[form]))

    assert verdict.contaminated, verdict


# -- the honest side of this round's fixes ------------------------------------------------------

_NOISE = random.Random(2101)
HONEST = {
    "UTF-16 notes of algebra (`x^` a zlib header), gzip'd": _binary(
        "skills/algebra.txt.gz", gzip.compress(("\ufeff" + ALGEBRA.decode()).encode("utf-16-le"))
    ),
    "a binary of records and URLs full of %XX": _binary(
        "skills/history.db",
        b"".join(
            _NOISE.randbytes(200) + b"https://example.org/s?q=caf%C3%A9%20au%20lait&x=%2F%3F%3D%26"
            for _ in range(1000)
        ),
    ),
    "a tree of notes ended by \\r": _files(
        {
            f"skills/notes/n{i:03d}.md": b"".join(
                b"- step %d of the runbook\r" % j for j in range(40)
            )
            for i in range(50)
        }
    ),
}


@pytest.mark.parametrize("form", HONEST)
def test_honest_files_this_round_reads_again_are_searched(content_check, form):
    """The honest side of this round's fixes: a gzip'd UTF-16 text (NULs its text reading
    drops, now searched for streams in its own bytes, `x^` in every line), a binary whose
    records hold URLs full of `%XX` (escaped runs now read in it), a tree of notes ended by
    `\\r` (seams now counted as the views cut lines): clean, and not called unsearched; the
    binary, whose records are random bytes, refused as opaque since the coverage rule."""
    verdict = content_check.judge(HONEST[form])

    if "binary" in form:
        assert refused_as_opaque(verdict), verdict
    else:
        assert not verdict.contaminated and not verdict.rules, verdict
