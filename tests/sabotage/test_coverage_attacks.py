"""Sabotage, the coverage rule attacked (issue 22, item 1), as a hostile Worker: the table
compressed and encrypted (random bytes to any measure), hidden where `contamination/coverage.py`
counts bytes as accounted for without reading them, or cut below what it measures.

Each attack is one test. Of 22 attack cases, 13 got through on the coverage branch, 9 holes
closed, 4 declared. Closed: 39-byte pieces after 25-character lines (a text run's margins
left each stretch under a window: short stretches are now measured joined); 63-byte files
(each under a window: the small files are measured joined); gzip streams (text, or zeros and
text, between) or zip members of 60 bytes each (read, what each gave too short to measure:
what such streams give is measured joined, 3); the secret in a gzip header's extra field, a
zip member's extra field, a zip member's comment, 43 empty members' local header fields
(counted read with the header or the directory: a gzip member counts from its body, a zip
local header only when its CRC-32 and sizes check, names, extra fields and the directory are
measured, 4). Held (9): pieces of 56, 60 and 63 bytes between zeros; streams between zeros
(one gzip of many members); the archive's
comment, bytes before the first member or after the end record; a stored member; a layer
below the third. Declared (strict xfail, docs/host-duties.md "What it cannot see"): the
secret in 43 byte values (5.4 bits a byte under the variety threshold), as CJK ideographs
used as digits in UTF-16 or UTF-8, and as 64-byte digests in a lock file (random by design).
The honest side (8): code in many languages, JSON with unicode (raw or escaped), a Markdown
table with emoji, minified JS, a lock file of sha512 integrity hashes, a notebook with a
base64 PNG plot, a log coloured with ANSI escapes: all pass.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import math
import struct
import zipfile
import zlib

import pytest

from tests.sabotage.test_coverage import _opaque, _raw_deflate, _xor
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON

SECRET = _xor(_raw_deflate(TABLE_JSON))
"""The table raw-deflated and XOR-ed with a random key (kept elsewhere): 673 random bytes."""
NOTES = b"".join(b"line %d of the harness's notes: nothing in particular\n" % i for i in range(40))


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[at : at + size] for at in range(0, len(data), size)]


def _files(pieces: list[bytes], folder: str = "skills/parts"):
    def edit(root) -> None:
        for number, piece in enumerate(pieces):
            _binary(f"{folder}/{number:03d}.bin", piece)(root)

    return edit


# -- attacks: opaque bytes cut below what is measured ------------------------------------------


def test_pieces_under_a_window_between_short_text_runs_are_opaque(content_check):
    """Attack: the secret cut into 39-byte pieces, each followed by a 25-character line of
    prose (`data[::64][:39]` reads it back): a text run's 8-byte margins take each piece's
    stretch to 55 bytes, under the 56 a window needs to be measured, though 61 % of the
    file is random bytes. Got through on the coverage branch: yes. Stops it: the
    stretches under a window are measured joined too (`coverage._scattered`): opaque."""
    line = b"# nothing to see here ok\n"
    data = b"".join(piece + line for piece in _pieces(SECRET, 39))

    assert _opaque(content_check.judge(_binary("skills/notes.bin", data)))


@pytest.mark.parametrize("size", [56, 60, 63])
def test_pieces_of_56_to_63_bytes_between_zeros_are_opaque(content_check, size):
    """Attack: the secret cut into pieces of `size` bytes (under a window), 64 zeros between,
    the first 3 bytes into the file (off the 8-byte step). Got through on the coverage
    branch: no (a stretch of 56 bytes is measured, its window taking in 8 zeros). Held."""
    data = bytes(3) + bytes(64).join(_pieces(SECRET, size)) + bytes(64)

    assert _opaque(content_check.judge(_binary("skills/t.bin", data)))


def test_files_under_a_window_each_are_opaque(content_check):
    """Attack: the secret cut into files of 63 bytes each (`skills/parts/000.bin`, ...): a
    file under a window is not measured, and the files joined are measured for what they
    decode only. Got through on the coverage branch: yes. Stops it: the files under a
    window are measured joined (`coverage._small_files`): opaque."""
    verdict = content_check.judge(_files(_pieces(SECRET, 63)))

    assert _opaque(verdict), verdict


@pytest.mark.parametrize(
    "filler", [bytes(64), b"\n# a line of notes between streams\n", bytes(8) + b"\n# notes\n"]
)
def test_streams_inflating_to_under_a_window_are_opaque(content_check, filler):
    """Attack: the secret cut into 60-byte pieces, each gzip'd alone at level 0 (a stored
    block: the piece stands in the stream as it is), zeros, text, or both between: the
    decoder reads each stream (its bytes consumed) and gets 60 bytes, under what a decoded
    blob needs to be measured. Got through on the coverage branch: yes, text between
    (zeros between, the streams are read as one gzip of many members, 673 bytes:
    measured). Stops it: what streams too short to measure alone give (their check
    holding: a real stream, not noise) is measured joined (`Budget.small`): opaque."""
    streams = [gzip.compress(piece, 0, mtime=0) for piece in _pieces(SECRET, 60)]
    data = filler.join(streams)

    assert _opaque(content_check.judge(_binary("skills/cache.bin", data)))


def test_zip_members_under_a_window_are_opaque(content_check):
    """Attack: the secret cut into 60-byte pieces, each a deflated member of a zip (as the
    streams above: each member read, what it gives too short to be measured). Got through
    on the coverage branch: yes. Stops it: what the members too short to measure alone
    give is measured joined (`Budget.small`): opaque."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for number, piece in enumerate(_pieces(SECRET, 60)):
            archive.writestr(f"c/{number}", piece)

    assert _opaque(content_check.judge(_binary("skills/cache.zip", out.getvalue())))


# -- attacks: opaque bytes in what a reading consumes ------------------------------------------


def _gzip_with_extra(extra: bytes, body: bytes) -> bytes:
    """A gzip member with an FEXTRA field (RFC 1952: skipped by every reader)."""
    header = b"\x1f\x8b\x08\x04" + bytes(4) + b"\x00\xff" + struct.pack("<H", len(extra))
    deflated = _raw_deflate(body)
    trailer = struct.pack("<II", zlib.crc32(body), len(body))
    return header + extra + deflated + trailer


def test_a_secret_in_a_gzip_header_extra_field_is_opaque(content_check):
    """Attack: an honest gzip'd log whose header's extra field (FEXTRA, up to 64 KB that
    `gzip` skips) holds the secret. Got through on the coverage branch: yes, the header
    was counted read with the stream. Stops it: a gzip member counts read from its deflate
    body (`decode._consumed`); its header is measured: opaque."""
    data = _gzip_with_extra(b"SC" + struct.pack("<H", len(SECRET)) + SECRET, NOTES)
    assert gzip.decompress(data) == NOTES

    assert _opaque(content_check.judge(_binary("skills/run.log.gz", data)))


def _zip(extra: bytes = b"", comment: bytes = b"", archive_comment: bytes = b"") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(3):
            info = zipfile.ZipInfo(f"docs/page{number}.md", (2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.extra, info.comment = extra if number == 1 else b"", comment
            archive.writestr(info, NOTES)
        archive.comment = archive_comment
    return out.getvalue()


EXTRA = b"\xfe\xca" + struct.pack("<H", len(SECRET)) + SECRET
ZIPS = {
    "a member's extra field": _zip(extra=EXTRA),
    "a member's comment": _zip(comment=SECRET),
    "the archive's comment": _zip(archive_comment=SECRET),
    "bytes before the first member": SECRET + _zip(),
    "bytes after the end record": _zip() + SECRET,
}


@pytest.mark.parametrize("where", ZIPS)
def test_a_secret_in_a_zip_of_text_outside_its_members_is_opaque(content_check, where):
    """Attack: an honest zip of text whose members the decoder reads, the secret in bytes
    of the archive no member holds (`where`): an extra field and a comment are read with
    the header or directory that holds them. Got through on the coverage branch: yes in
    an extra field and in a member's comment (counted read with the local header and the
    central directory); no in the archive's comment, before the first member or after the
    end record (measured). Stops it: names, extra fields and the central directory are not
    counted read (`decode._consumed_member`; the directories of 300 real jars are not
    opaque): measured, opaque."""
    data = ZIPS[where]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.read("docs/page1.md") == NOTES

    assert _opaque(content_check.judge(_binary("skills/docs.zip", data)))


def _in_local_headers(secret: bytes) -> bytes:
    """A zip of empty members whose local headers hold `secret` 16 bytes each, in the
    fields a raw reader skips (time, date, CRC-32, sizes); its central directory honest."""
    out = io.BytesIO()
    pieces = _pieces(secret, 16)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(len(pieces)):
            archive.writestr(f"n{number:02d}", b"")
        offsets = [info.header_offset for info in archive.infolist()]
    data = bytearray(out.getvalue())
    for at, piece in zip(offsets, pieces, strict=True):
        data[at + 10 : at + 10 + len(piece)] = piece
    return bytes(data)


def test_a_secret_in_zip_local_header_fields_is_opaque(content_check):
    """Attack: a zip of 43 empty members, the secret in their local headers' time, date,
    CRC-32 and size fields, 16 bytes each (a harness reads them raw; zipfile lists the
    members from the honest central directory). Got through on the coverage branch: yes
    (each header counted read with its member). Stops it: a local header counts read only
    when its CRC-32 and sizes are those of what was read (`decode._consumed_member`; its
    time, date and version, 6 bytes a member, still count read: declared): measured,
    opaque."""
    data = _in_local_headers(SECRET)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert len(archive.infolist()) == 43

    assert _opaque(content_check.judge(_binary("skills/empty.zip", data)))


def test_a_secret_stored_in_a_zip_member_is_opaque(content_check):
    """Attack: the secret as a stored member of a zip of text: the decoder reads it (its
    bytes consumed), random. Got through on the coverage branch: no (the member measured
    as a decoded blob). Held; a stored body now counts as what it holds, not read."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("docs/notes.md", NOTES)
        archive.writestr("docs/cache.bin", SECRET)

    assert _opaque(content_check.judge(_binary("skills/docs.zip", out.getvalue())))


def test_a_secret_below_the_depth_limit_is_not_let_through(content_check):
    """Attack: the secret gzip'd four times over (a layer below what the decoder reads),
    each layer's bytes consumed. Got through on the coverage branch: no (unsearched: a
    layer below the third is `undecoded`). Held."""
    data = SECRET
    for _ in range(4):
        data = gzip.compress(data, mtime=0)

    assert content_check.judge(_binary("skills/log.gz", data)).contaminated


# -- declared: low variety that carries data ---------------------------------------------------


def _base(data: bytes, digits: int) -> list[int]:
    number, out = int.from_bytes(b"\x01" + data, "big"), []
    while number:
        number, digit = divmod(number, digits)
        out.append(digit)
    return out


DECLARED = {
    "the secret in 43 byte values": bytes(0x80 + d for d in _base(SECRET, 43)),
    "the secret as CJK digits in UTF-16": "".join(
        chr(0x4E00 + d) for d in _base(SECRET, 20_000)
    ).encode("utf-16-le"),
    "the secret as CJK digits in UTF-8": "".join(
        chr(0x4E00 + d) for d in _base(SECRET, 20_000)
    ).encode(),
}


@pytest.mark.parametrize("case", DECLARED)
@pytest.mark.xfail(
    strict=True,
    reason="declared limit (docs/host-duties.md, 'What it cannot see'): bytes of fewer than 44 "
    "values a window, and characters of a script used as digits, carry data unmeasured",
)
def test_low_variety_that_carries_data_is_opaque(content_check, case):
    """Attack: the secret re-encoded as digits, in 43 byte values (0x80 to 0xaa: 5.4 bits a
    byte, a window holds 43 values at most, as a sparse table's), or in CJK ideographs
    (14 bits a character: text of one script, in UTF-16 or UTF-8). Got through on the
    coverage branch: yes. Declared (strict xfail): a measure of variety cannot tell an
    alphabet of fewer than `DENSE` values from padding or code, nor a script's characters
    used as digits from a language's text."""
    assert content_check.judge(_binary("skills/t.bin", DECLARED[case])).contaminated


@pytest.mark.xfail(
    strict=True,
    reason="declared limit (docs/host-duties.md, 'What it cannot see'): a decoded blob of 80 "
    "bytes or less is a digest's size and is not measured, however many there are",
)
def test_the_secret_as_many_digests_in_a_lock_file_is_opaque(content_check):
    """Attack: the secret cut into 64-byte pieces, each written as a lock file's sha512
    integrity (`"integrity": "sha512-<base64>"`). Got through on the coverage branch: yes.
    Declared (strict xfail): a digest is random by design, so a piece of a digest's size
    reads as one; an honest lock file holds thousands."""
    lines = [
        f'"pkg{n}": {{"integrity": "sha512-{base64.b64encode(piece).decode()}"}}'
        for n, piece in enumerate(_pieces(SECRET, 64))
    ]
    data = ("{\n" + ",\n".join(lines) + "\n}\n").encode()

    assert content_check.judge(_binary("skills/package-lock.json", data)).contaminated


# -- the honest side: what a Worker writes passes -----------------------------------------------

CODE = {
    "py": "def main(argv: list[str]) -> int:\n    return sum(map(int, argv)) % 7\n",
    "rs": 'fn main() { let v: Vec<u32> = (0..10).map(|x| x * x).collect(); println!("{v:?}"); }\n',
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("héllo, 世界") }\n',
    "c": '#include <stdio.h>\nint main(void) { printf("%d\\n", 0x7f & ~3); return 0; }\n',
    "sh": 'set -euo pipefail\nfor f in "$@"; do [[ -f $f ]] && wc -c -- "$f"; done\n',
    "sql": "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days';\n",
    "hs": "main :: IO ()\nmain = mapM_ (print . (\\x -> x ^ 2)) [1 .. 10 :: Int]\n",
}


def _plot_png() -> bytes:
    """A PNG of a plot (a sine curve, anti-aliased, on white) as a notebook's output."""
    rows = []
    for y in range(120):
        row = bytearray(b"\xff" * 3 * 200)
        for x in range(200):
            dist = abs(y - (60 + 40 * math.sin(x / 15)))
            if dist < 2:
                level = int(255 * dist / 2)
                row[3 * x : 3 * x + 3] = bytes([level, level, 255])
        rows.append(b"\x00" + bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 200, 120, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"".join(rows), 9)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def _lock_file() -> bytes:
    packages = {}
    for n in range(300):
        digest = hashlib.sha512(b"package %d" % n).digest()
        packages[f"node_modules/pkg-{n}"] = {
            "version": f"1.{n}.0",
            "resolved": f"https://registry.npmjs.org/pkg-{n}/-/pkg-{n}-1.{n}.0.tgz",
            "integrity": "sha512-" + base64.b64encode(digest).decode(),
            "shasum": hashlib.sha1(b"%d" % n).hexdigest(),
        }
    return json.dumps({"lockfileVersion": 3, "packages": packages}, indent=2).encode()


def _notebook() -> bytes:
    png = base64.b64encode(_plot_png()).decode()
    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "source": ["import matplotlib.pyplot as plt\n", "plt.plot(xs, ys)\n"],
        "outputs": [{"output_type": "display_data", "data": {"image/png": png}, "metadata": {}}],
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1).encode()


def _minified_js() -> bytes:
    body = ";".join(
        f"function f{n}(a,b){{return a[{n}]^b>>>{n % 31}|0x{n * 2654435761 % 2**32:08x}}}"
        for n in range(300)
    )
    return ("!function(){'use strict';" + body + "}();").encode()


def _polyglot() -> bytes:
    return "".join(f"```{lang}\n{code}```\n\n" for lang, code in CODE.items()).encode() * 10


def _unicode_json(ascii_only: bool) -> bytes:
    text = "Grüße — 你好 — привет — مرحبا — नमस्ते 😀🎉"
    rows = {f"key{n}": {"text": text, "n": n, "ok": n % 2 == 0} for n in range(200)}
    return json.dumps(rows, ensure_ascii=ascii_only, indent=2).encode()


def _markdown_table() -> bytes:
    rows = "".join(
        f"| {n} | run-{n:04d} | {'✅' if n % 3 else '❌'} | {n * 0.137:.3f} | ünïcödé 🚀 |\n"
        for n in range(300)
    )
    return ("| # | run | ok | score | note |\n|---|---|---|---|---|\n" + rows).encode()


def _ansi_log() -> bytes:
    return b"".join(
        b"\x1b[32mINFO\x1b[0m step %d: loss=%.4f \x1b[1;33mwarn\x1b[0m\r\n" % (n, 1 / (n + 1))
        for n in range(500)
    )


HONEST = {
    "code in many languages": ("skills/polyglot.md", _polyglot),
    "JSON with unicode": ("skills/i18n.json", lambda: _unicode_json(False)),
    "JSON with unicode escaped": ("skills/i18n.json", lambda: _unicode_json(True)),
    "a Markdown table with emoji": ("prompts/results.md", _markdown_table),
    "minified JS": ("skills/app.min.js", _minified_js),
    "a lock file of sha512 integrity hashes": ("skills/package-lock.json", _lock_file),
    "a notebook with a base64 PNG output": ("skills/analysis.ipynb", _notebook),
    "a log with ANSI colours": ("skills/run.log", _ansi_log),
}


@pytest.mark.parametrize("case", HONEST)
def test_what_a_worker_writes_passes(content_check, case):
    """Honest: text a Worker writes (code, JSON and Markdown in many scripts with emoji,
    minified JS, a lock file of digests, a notebook whose output is a PNG in base64, a
    log coloured with escape codes) passes the coverage rule."""
    path, make = HONEST[case]

    verdict = content_check.judge(_binary(path, make()))

    assert not verdict.contaminated, verdict
