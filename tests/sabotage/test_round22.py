"""scratch"""

from __future__ import annotations

import gzip
import zlib

import pytest

from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON
from tests.sabotage.test_round19 import FILLER
from tests.sabotage.test_round20 import _streamed_member
from tests.sabotage.test_round21 import NOISE, _raw_deflate, _files, ROWS


def test_unended_noisy(content_check):
    data = _raw_deflate(NOISE + TABLE_JSON, zlib.Z_SYNC_FLUSH)
    verdict = content_check.judge(_binary("skills/t.bin", data))
    assert verdict.contaminated, verdict


def test_unended_noisy_lzma(content_check):
    import lzma
    data = lzma.compress(NOISE + TABLE_JSON, format=lzma.FORMAT_ALONE)[:-20]
    verdict = content_check.judge(_binary("skills/t.bin", data))
    assert verdict.contaminated, verdict


def _gz_header_hidden(n):
    gz = gzip.compress(TABLE_JSON, mtime=0)
    gz = gz[:4] + b"\xff\xff\xff\xff" + gz[8:]
    return gz


@pytest.mark.parametrize("form", ["pct", "qp", "ref", "bs"])
def test_escaped_magic(content_check, form):
    gz = _gz_header_hidden(4)
    if form == "pct":
        data = b"%1F%8B%08%00" + gz[4:]
    elif form == "qp":
        data = b"=1F=8B=08=00" + gz[4:]
    elif form == "bs":
        data = b"\\x1f\\x8b\\x08\\x00" + gz[4:]
    else:
        data = b"&#31;&#139;&#8;&#0;" + gz[4:]
    verdict = content_check.judge(_binary("skills/t.dat", data))
    assert verdict.contaminated, verdict


def test_streamed_zip_then_eocd_decoy(content_check):
    z = _streamed_member(b"t.json", _raw_deflate(TABLE_JSON))
    data = gzip.compress(FILLER[:20000] + z + b"PK\x05\x06" + FILLER[:20000], mtime=0)
    verdict = content_check.judge(_binary("skills/t.bin", data))
    assert verdict.contaminated, verdict


def test_streamed_zip_then_eocd_decoy_bz(content_check):
    import bz2
    z = _streamed_member(b"t.json", _raw_deflate(TABLE_JSON))
    data = bz2.compress(NOISE[:300] + z + b"PK\x05\x06" + NOISE[:300])
    verdict = content_check.judge(_binary("skills/t.bin", data))
    assert verdict.contaminated, verdict


import struct
import zipfile
import lzma as _lzma


def _local(name, method, body, csize, usize, crc, extra=b"", flags=0):
    return struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 45, flags, method, 0, 0, crc, csize, usize, len(name), len(extra)) + name + extra + body


def test_zip64_stored_size_hides(content_check):
    x = b"X"
    extra = struct.pack("<HHQQ", 1, 16, 1, 1)
    first = _local(b"a.txt", 0, x, 0xFFFFFFFF, 0xFFFFFFFF, zlib.crc32(x), extra)
    deflated = _raw_deflate(TABLE_JSON)
    table = _local(b"t.json", 8, deflated, len(deflated), len(TABLE_JSON), zlib.crc32(TABLE_JSON))
    verdict = content_check.judge(_binary("skills/t.zip", first + table))
    assert verdict.contaminated, verdict


def test_local_method_differs(content_check):
    import io
    lz = {"id": _lzma.FILTER_LZMA1}
    props = _lzma._encode_filter_properties(lz)
    body = struct.pack("<BBH", 9, 20, len(props)) + props + _lzma.compress(TABLE_JSON, format=_lzma.FORMAT_RAW, filters=[lz])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        info = zipfile.ZipInfo("t.bin")
        z.writestr(info, body, compress_type=zipfile.ZIP_STORED)
    data = bytearray(buf.getvalue())
    data[8:10] = struct.pack("<H", 14)  # local header: LZMA
    verdict = content_check.judge(_binary("skills/t.zip", bytes(data)))
    assert verdict.contaminated, verdict


def test_seams_crlf_and_empties(content_check):
    contents = {"skills/a0.txt": b"hello there, notes\r"}
    pieces = [ROWS[at : at + 12] for at in range(0, len(ROWS), 12)]
    for i, piece in enumerate(pieces):
        contents[f"skills/p{i:04d}a.txt"] = b"\n" + piece + b"\r"
        contents[f"skills/p{i:04d}b.txt"] = b""
    verdict = content_check.judge(_files(contents))
    assert verdict.contaminated, verdict


def test_rework_spent_early(content_check):
    from tests.sabotage.test_round16 import _zip
    bomb = _zip([(f"m{n}", bytes(3 << 19)) for n in range(1024)])
    def edit(folder):
        _binary("skills/a.zip", bomb)(folder)
        _binary("skills/z.gz", gzip.compress(TABLE_JSON, mtime=0))(folder)
    verdict = content_check.judge(edit)
    assert verdict.contaminated, verdict


def _mixed_escapes(stream):
    out = []
    for i, c in enumerate(stream):
        out.append((b"%%%02X" if i % 2 else b"=%02X") % c)
    return b"".join(out)


def test_mixed_escapes_ascii(content_check):
    import quopri
    from urllib.parse import unquote_to_bytes
    gz = gzip.compress(TABLE_JSON, mtime=0)
    data = _mixed_escapes(gz)
    assert quopri.decodestring(unquote_to_bytes(data)) == gz
    verdict = content_check.judge(_binary("skills/t.dat", data))
    assert verdict.contaminated, verdict


def test_mixed_escapes_raw_high(content_check):
    import quopri
    from urllib.parse import unquote_to_bytes
    gz = gzip.compress(TABLE_JSON, mtime=0)
    data = b"".join(bytes([c]) if c >= 0x80 else ((b"%%%02X" if i % 2 else b"=%02X") % c) for i, c in enumerate(gz))
    assert quopri.decodestring(unquote_to_bytes(data)) == gz
    verdict = content_check.judge(_binary("skills/t.dat", data))
    assert verdict.contaminated, verdict


def test_headerless_text_then_gzip_in_base64(content_check):
    import base64
    from tests.sabotage.test_round17 import _in_code
    blob = _raw_deflate(b"just some notes about the weather today, nothing else " * 4) + gzip.compress(TABLE_JSON, mtime=0)
    verdict = content_check.judge(_in_code("runtime/x.py", blob))
    assert verdict.contaminated, verdict
