"""A file's texts as a reader of it could recover them: plain, unescaped, and every blob in
it decoded (base64, base32 and base32hex in either case, Ascii85 and base85, uuencode, hex
with or without separators, `\\x` escapes, lists of character codes in any of those bases, bits
in zero-width characters or in spaces and tabs, a
whole text as one long number in decimal, octal, binary or hex, digit separators and all,
UTF-16, EBCDIC) and decompressed (gzip, zlib, bzip2, xz, zip, raw deflate, legacy and raw
lzma; a PNG's image, its IDAT chunks joined; a tar archive read as it is; a gzip or zlib
stream or a zip member that fails only its checksum inflated raw, as a harness can), to a
bounded depth and size, so a decompression bomb costs at most `MAX_DECODED_BYTES`.

Each text is a `View`: the file, the chain of encodings that led to it (`gzip+base64`), and
its lines, each numbered by the line of the file it came from (a decoded blob's lines all
carry the lines of the blob).
"""

from __future__ import annotations

import base64
import binascii
import bz2
import codecs
import contextlib
import hashlib
import html
import io
import lzma
import quopri
import re
import unicodedata
import zipfile
import zlib
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from urllib.parse import unquote_to_bytes

from flashrsi_dagster.contamination.coverage import DIGEST

MAX_DEPTH = 3
"""Encodings nested in one another, at most (base64 of gzip of base64 is 3)."""
MAX_DECODED_BYTES = 4 << 20
"""Bytes decoded or decompressed per snapshot, at most: what is past it is not searched."""
MAX_REWORK_BYTES = 64 * MAX_DECODED_BYTES
"""Bytes decoded or hashed again per snapshot for nothing new, at most (`Budget.again`): past
it, the file being read ends unsearched. 256 MB: an honest archive reads its members again in
each reading of its file (a 3 MB `.npz` 4 MB), a stream of many members charges its length
once (`Budget.joined`); a zip of 1,024 members of one 1.5 MB body, 4.6 GB."""
CIPHERS = ("reversed", "rot13")
"""Views of the plain text only: the two cheapest ciphers a table could be written in."""
MIN_BLOB = 24
"""Shorter base64 or hex runs are not decoded (identifiers, short hashes, words)."""

_BASE64 = re.compile(rb"[A-Za-z0-9+/_\-]{%d,}={0,2}" % MIN_BLOB)
"""Standard or URL-safe (one class: a URL-safe run cut at its first `-` or `_` decodes to
nothing; `_base64` picks the alphabet by the characters the run holds)."""
_HEX = re.compile(rb"(?:[0-9a-fA-F]{2}){%d,}" % (MIN_BLOB // 2))
_ESCAPED_BYTES = re.compile(rb"(?:\\x[0-9a-fA-F]{2}){8,}")
_BASE32 = re.compile(rb"[A-Z2-7]{%d,}={0,6}|[a-z2-7]{%d,}={0,6}" % (MIN_BLOB, MIN_BLOB))
_BASE32HEX = re.compile(rb"[0-9A-V]{%d,}={0,6}|[0-9a-v]{%d,}={0,6}" % (MIN_BLOB, MIN_BLOB))
"""Base32 in either case, in its standard and its extended hex alphabet (RFC 4648)."""
_SEPARATED_HEX = re.compile(
    rb"[0-9a-fA-F]{2}([^0-9a-fA-F\s])[0-9a-fA-F]{2}(?:\1[0-9a-fA-F]{2}){%d,}" % MIN_BLOB
)
"""Hex with a separator between its bytes, as `bytes.hex(":")` writes it."""
_ASCII85 = re.compile(rb"<~(.{%d,}?)~>" % MIN_BLOB, re.DOTALL)
_NUMBER = rb"-?(?:0[xX][0-9a-fA-F]{1,6}|0[oO][0-7]{1,8}|0[bB][01]{1,21}|[0-9]{1,7}(?:\.0+)?)"
_CODE_SEPARATOR = rb"\s*[,;:|/.\-]\s*|\s+"
_NUMBERS = re.compile(rb"%s(?:(?:%s)%s){%d,}" % (_NUMBER, _CODE_SEPARATOR, _NUMBER, MIN_BLOB - 1))
"""A list of character codes (`[73, 103, 110, ...]`, `0x49, 0x67`, `0o111`, `0b1001001`,
`73 103 110` as an array prints, `073` zero-padded; each in quotes too, read squeezed;
joined by `|`, `:`, `/`, `.` or `-` as well, as floats `73.0` as a float array lists them,
or negated): `chr` of each, in decimal and, when its digits allow, in octal and binary."""
_CODE = re.compile(rb"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+(?:\.0+(?![0-9]))?")
"""One code of such a list, its sign and a float's `.0` left out."""
_GROUPED = re.compile(
    rb"(?<![\w.])(0[xXoObB])?[0-9a-fA-F]{1,8}([_,'.:\- ])[0-9a-fA-F]{1,8}"
    rb"(?:\2[0-9a-fA-F]{1,8}){4,}(?![\w.])"
)
"""A long number with digit separators (`f"{n:_}"`, `f"{n:,}"`, `0x_4967_6e6f`,
`bytes.hex("-", 4)`): read with its separators dropped, in each base its digits allow."""
_BASE85 = re.compile(rb"[0-9A-Za-z!#$%%&()*+\-;<=>?@^_`{|}~]{%d,}" % (2 * MIN_BLOB))
"""Base85 (`base64.b85encode`, git's alphabet) without markers: read only when it decodes to
text or to a compressed stream (many code tokens are made of these characters too)."""
_ASCII85_BARE = re.compile(rb"[!-uz]{%d,}" % (2 * MIN_BLOB))
"""Ascii85 without its `<~ ~>` (`base64.a85encode`'s default), read on the same terms."""
_DIGITS = re.compile(rb"(?<![\w.])(0[bBoO])?([0-9]{30,%d})(?![\w.])" % (1 << 20))
"""A long number: a text as one integer (`int.from_bytes(text.encode(), "big")`, printed in
decimal, `oct`, `bin`), or a string of octal byte codes or of bits. Read when it is text."""
_UU_LINE = re.compile(rb"[\x21-\x60][\x20-\x60]*")
_RUNS = re.compile("[^\x00-\x08\x0b-\x1f\x7f-\x9f\ufffd]{4,}")
"""Printable runs in a blob that is not text as a whole (at least a label's length)."""
_JOINS = re.compile(rb"[\"'`]\s*\+\s*[\"'`]")
_SQUEEZE = re.compile(rb"[\s'\"`\\]+")
_BACKSLASH = re.compile(
    r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|([0-7]{1,3})"
    r"|N\{([A-Za-z0-9 -]{1,88})\}|(.))",
    re.DOTALL,
)
_CHR = re.compile(
    r"\bchr\(\s*(0[xX][0-9a-fA-F]{1,6}|0[oO][0-7]{1,8}|0[bB][01]{1,21}|[0-9]{1,7})\s*\)"
)
"""A character written as a call (`chr(73) + chr(103) + ...`): the text built at run time."""
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"PK\x03\x04", "zip"),
    (b"\x78\x9c", "zlib"),
    (b"\x78\x01", "zlib"),
    (b"\x78\xda", "zlib"),
    (b"\x78\x5e", "zlib"),
)


@dataclass(frozen=True)
class View:
    file: str
    encoding: str
    lines: list[tuple[int, str]]


@dataclass
class Budget:
    """What may still be decoded in one snapshot, and the blobs decoded already."""

    left: int = MAX_DECODED_BYTES
    rework: int = MAX_REWORK_BYTES
    """What may still be decoded or hashed again for nothing new: bytes known already (a
    zip's thousand members of one body, a stream's members read joined) are not charged to
    `left`, but reading them is work all the same (gigabytes, for a few KB of file)."""
    seen: set[bytes] = field(default_factory=set)
    rests: dict[tuple[int, bytes], list[tuple[bytes, int]]] = field(default_factory=dict)
    """The rests of streams read joined (`joined`), by their length and first bytes: each a
    stream and where in it the rest starts."""
    cut: bool = False
    """Something was left undecoded for want of budget: what it holds was not searched."""
    consumed: dict[bytes, None] = field(default_factory=dict)
    """The bytes of each stream and archive member read (`coverage`: they are accounted for
    wherever they lie)."""
    decoded: list[bytes] = field(default_factory=list)
    small: list[bytes] = field(default_factory=list)
    """What each stream or archive member too short for `coverage` to measure alone gave (a
    table encrypted, cut into gzip streams or zip members of 60 bytes each, passed): measured
    joined (streams whose check holds: a magic in noise inflates to a few bytes of noise)."""
    """The binary blobs decoded or decompressed, in order (`coverage` measures what no
    reading of them consumed)."""

    def take(self, data: bytes, cost: int | None = None, *, unpacking: bool = False) -> bool:
        """Whether `data` is new (known by the digest of all its bytes: a decoy of the same
        start and length is not the same), charging `cost` (its length) to what is left.
        A stream taken to be unpacked (`unpacking`) is known apart from the same bytes taken
        as what an outer stream held: one digest for both read a zip in a zip, or a gzip
        stream in bzip2, as unpacked already, and its table went unsearched."""
        cost = len(data) if cost is None else cost
        if unpacking and self._read_joined(data):
            self.again(cost)
            return False
        digest = _digest(data, unpacking)
        if digest in self.seen:  # read again: what it would cost new is charged as rework
            self.again(cost)
            return False
        if cost > self.left:
            self.cut = True
            return False
        self.seen.add(digest)
        self.left -= cost
        return True

    def joined(self, stream: bytes, starts: list[int]) -> None:
        """The rests of `stream` from each of `starts` (where a member read joined behind
        another begins), taken to be unpacked: read from there, each gives part of what was
        read. Each member of a bgzip file (a `.vcf.gz`) was read again with all that follows
        it, past the budget: unsearched (round 20). Known by their bytes, `stream` kept and
        charged once as rework: a digest of each rest hashed 1.7 GB for 1,000 members of
        3.5 KB (quadratic), and 8 GB for 1,000 tiny ones in front of 4 MB."""
        if starts:
            self.again(len(stream))
        for start in starts:
            rest = (len(stream) - start, stream[start : start + _REST_KEY])
            self.rests.setdefault(rest, []).append((stream, start))

    def _read_joined(self, data: bytes) -> bool:
        """Whether `data` is the rest of a stream read joined, compared byte for byte."""
        known = self.rests.get((len(data), bytes(data[:_REST_KEY])), ())
        return any(stream.startswith(data, start) for stream, start in known)

    def again(self, work: int) -> None:
        """Charge `work` (bytes decoded or hashed that gave nothing new) to `rework`; past
        it, the file ends unsearched (`Reworked`, caught by `views`): a zip of 1,024
        members of one 1.5 MB body of zeros was inflated 1.5 GB and hashed as much, for
        1.5 MB of file, charged nothing."""
        self.rework -= work
        if self.rework < 0:
            self.cut = True
            raise Reworked


class Reworked(Exception):
    """The snapshot's rework allowance (`MAX_REWORK_BYTES`) is spent: the file being read
    ends here, unsearched, never clean."""


_REST_KEY = 64
"""Bytes of a rest read joined it is looked up by, with its length."""


def _digest(data: bytes | memoryview, unpacking: bool) -> bytes:
    hashed = hashlib.sha1(b"unpack:" if unpacking else b"")
    hashed.update(data)
    return hashed.digest()


def views(file: str, data: bytes, budget: Budget) -> Iterator[View]:
    """Every text of `file` (bytes `data`), the plain one first; those up to where the
    rework allowance ran out (`Reworked`), the budget then `cut`."""
    with contextlib.suppress(Reworked):
        yield from _views(file, data, "plain", (1, data.count(b"\n") + 1), 0, budget)


def _views(file, data: bytes, encoding: str, span, depth: int, budget: Budget) -> Iterator[View]:
    whole = span if encoding != "plain" else None
    text = data.decode("utf-8", "replace")
    lines = _numbered(text, whole)
    yield View(file, encoding, lines)
    if encoding == "plain":
        yield View(file, CIPHERS[0], [(n, line[::-1]) for n, line in reversed(lines)])
        rotated = _rot13(text).splitlines()  # rot13 keeps every line break where it is
        yield View(file, CIPHERS[1], [(n, r) for (n, _), r in zip(lines, rotated, strict=True)])
        if (read := _ebcdic(data)) is not None and budget.take(read):
            yield from _views(file, read, "ebcdic", span, depth + 1, budget)
        if not data.isascii() and (inflated := _headerless(data, budget)) is not None:
            for read, kind in _readings(*inflated[:2], budget):
                yield from _views(file, read, kind, span, depth + 1, budget)
    escaped = text
    for _ in range(2):  # a JSON string inside a Python string is escaped twice
        if "\\" not in escaped:
            break
        escaped = unescape(escaped)
        yield View(file, _join("escaped", encoding), _numbered(escaped, whole))
    if "chr(" in text:
        yield View(file, _join("chr()", encoding), _numbered(_CHR.sub(_chr, text), whole))
    web = text
    for _ in range(2):  # escaped twice: `html.escape` of `&#105;`, `quote(quote(text))`
        if ("&" not in web and "%" not in web) or (read := _unquote(html.unescape(web))) == web:
            break
        web = read
        yield View(file, _join("url/html", encoding), _numbered(web, whole))
    if depth >= MAX_DEPTH:
        # a fourth layer is not read, nor let through: it would hide anything
        blobs = _blobs(data, text, whole, budget)
        if any(any(_unpacked(blob, budget, kind == "bytes")) for blob, kind, _ in blobs):
            budget.cut = True
        return
    for blob, kind, blob_span in _blobs(data, text, whole, budget):
        for inner, inner_kind in _unpacked(blob, budget, viewed=kind == "bytes"):
            name = _join(inner_kind, _join(kind, encoding))
            yield from _views(file, inner, name, blob_span, depth + 1, budget)


_ROT13 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


def _rot13(text: str) -> str:
    """`codecs.encode(text, "rot13")`, through UTF-8 bytes: the codec looks every character
    up in a mapping one by one (seconds for a binary file's text); ASCII letters are single
    bytes in UTF-8, and no other character's bytes are ASCII."""
    return text.encode("utf-8", "surrogatepass").translate(_ROT13).decode("utf-8", "surrogatepass")


_PERCENT_RUN = re.compile(r"(?:%[0-9a-fA-F]{2})+")


def _unquote(text: str) -> str:
    """`urllib.parse.unquote(text)`, each run of `%XX` decoded as UTF-8 (errors replaced) in
    one regex pass: `unquote` cuts a text at every non-ASCII character and decodes each ASCII
    piece through a generator, seconds for a binary file's views. The same text: an ASCII
    character ends any UTF-8 sequence, so decoding the runs alone reads as decoding them
    with the characters between."""
    if "%" not in text:
        return text
    return _PERCENT_RUN.sub(
        lambda run: unquote_to_bytes(run.group()).decode("utf-8", "replace"), text
    )


def _chr(match: re.Match) -> str:
    code = match.group(1)
    value = int(code, 0) if code[:2].lower() in ("0x", "0o", "0b") else int(code)
    return chr(value) if value < 0x110000 else ""


def _join(outer: str, inner: str) -> str:
    if not outer:
        return inner
    return outer if inner == "plain" else f"{outer}+{inner}"


def _numbered(text: str, whole: tuple[int, int] | None) -> list[tuple[int, str]]:
    if whole is not None:  # a decoded blob: every line of it is the blob's line
        return [(whole[0], line) for line in text.splitlines()]
    return list(enumerate(text.splitlines(), start=1))


def unescape(text: str) -> str:
    """Backslash escapes as Python and JSON write them (`\\n`, `\\x41`, `\\u00e9`, surrogate
    pairs `\\ud83d\\ude00`, octal, `\\N{NAME}`); an unknown escape keeps its character."""

    def one(match: re.Match) -> str:
        u4, u8, x2, octal, name, other = match.groups()
        if u4 or u8 or x2:
            return chr(int(u4 or u8 or x2, 16)) if int(u4 or u8 or x2, 16) < 0x110000 else ""
        if octal:
            return chr(int(octal, 8))
        if name:  # Python's `\N{LATIN SMALL LETTER A}`
            with contextlib.suppress(KeyError):
                return unicodedata.lookup(name)
            return ""
        return _SIMPLE.get(other, other)

    decoded = _BACKSLASH.sub(one, text)
    return decoded.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _blobs(
    data: bytes, text: str, whole, budget: Budget
) -> Iterator[tuple[bytes, str, tuple[int, int]]]:
    """Encoded runs in the file, each decoded, with the lines it spans. Runs are looked for in
    the bytes as they are and squeezed (quotes, whitespace and `+` dropped), so that a blob
    split over lines or string pieces is found whole."""
    squeezed_data = _SQUEEZE.sub(b"", _JOINS.sub(b"", data))
    for source, squeezed in ((data, False), (squeezed_data, True)):
        for match in _BASE64.finditer(source):
            wordy = _wordy(match.group())
            for decoded in _base64(match.group(), squeezed):
                if not wordy or _packed(decoded) or _as_text(decoded) is not None:
                    # measured when its alphabet is base64's: a run of hex or of base36
                    # digits (an id) decodes to noise, and is measured in its own reading
                    _audited(budget, decoded, not squeezed and len(set(match.group())) >= 44)
                    yield decoded, "base64", _span(data, source, match, whole, squeezed)
        for match in _HEX.finditer(source):
            raw, span = (
                bytes.fromhex(match.group().decode()),
                _span(data, source, match, whole, squeezed),
            )
            _audited(budget, raw, not squeezed)
            yield raw, "hex", span
            if source[max(match.start() - 2, 0) : match.start()] in (b"0x", b"0X"):
                yield raw[::-1], "number", span  # `hex(int.from_bytes(data, "little"))`
    # codes kept as strings (`['49', '6e', ...]`, `['73', '103', ...]`) read squeezed
    everything = whole or (1, data.count(b"\n") + 1)
    for blob, kind, _ in _code_lists(squeezed_data, everything):
        yield blob, kind, everything
    for match in _SEPARATED_HEX.finditer(squeezed_data):
        yield _separated_hex(match.group()), "hex", everything
    for match in _ESCAPED_BYTES.finditer(data):
        raw = codecs.escape_decode(match.group())[0]
        _audited(budget, raw)
        yield raw, "escaped bytes", _span(data, data, match, whole, False)
    spans = _TextSpans.of(data)
    latin = spans.read(_unescaped_latin) if "\\" in text else b""
    for reading in (text, unescape(text)) if "\\" in text else (text,):
        yield from _two_symbol_bits(reading, everything)
    for blob, kind, span in _other_alphabets(data, whole):
        _audited(budget, blob, kind in _AUDITED)
        yield blob, kind, span
    if latin:  # an Ascii85 run is full of backslashes a string literal escapes
        yield from _other_alphabets(latin, everything)
    if data.startswith(_PNG) and (image := _png_image(data, budget)) is not None:
        yield image, "png", everything
    # a reading the same as the bytes (or as another reading) finds the same streams: once
    readings = dict.fromkeys((data, latin, *_latin_readings(data, spans), *_web_bytes(data, spans)))
    for blob in readings:
        for offset in _magic_offsets(blob, budget) if blob else ():
            yield blob[offset:], "bytes", everything


_AUDITED = ("base32", "base32hex", "hex", "ascii85", "uuencode")
"""The other alphabets whose blobs `coverage` measures: read one way (a list of codes, bits,
a bare base85 run are read many ways, each but one noise; docs/host-duties.md)."""


def _audited(budget: Budget, blob: bytes, audited: bool = True) -> None:
    """`blob` handed to `coverage` to measure, when `audited`: a reading of the file as it
    is (squeezed, a base64 run is decoded at four alignments, three of them noise)."""
    if audited:
        budget.decoded.append(blob)


_PNG = b"\x89PNG\r\n\x1a\n"
_DRAWN = (b"IHDR", b"PLTE", b"tRNS", b"IEND")
"""A PNG's chunks besides its image that a viewer draws it from, the first of each: the
palette (768 bytes at most) is structure. Others (a profile, text) are measured as bytes."""


def _png_image(data: bytes, budget: Budget) -> bytes | None:
    """A PNG's image: the data of its IDAT chunks joined, one zlib stream of any window (an
    encoder cuts it into chunks of 8 KB; a small one's header is often not `78 ..`),
    inflated within the budget; then the chunks a viewer draws it from (`_DRAWN`: the image,
    its palette) are consumed (`coverage`). None when its stream does not end, or past the
    budget (`cut`)."""
    chunks: dict[bytes, list[tuple[int, int]]] = {}
    at = len(_PNG)
    while at + 12 <= len(data):
        end = at + 12 + int.from_bytes(data[at : at + 4], "big")
        chunks.setdefault(data[at + 4 : at + 8], []).append((at, end))
        at = end
    engine = zlib.decompressobj()
    try:
        stream = b"".join(data[a + 8 : e - 4] for a, e in chunks.get(b"IDAT", ()))
        image = engine.decompress(stream, budget.left)
    except zlib.error:
        return None
    budget.cut |= not engine.eof and len(image) >= budget.left  # pixels past the budget
    if not engine.eof or not budget.take(image):
        return None
    drawn = (data[a:e] for kind in _DRAWN for a, e in chunks.get(kind, ())[:1] or ())
    budget.consumed.update(dict.fromkeys(drawn))
    budget.consumed.update(dict.fromkeys(data[a:e] for a, e in chunks[b"IDAT"]))
    _audited(budget, image)
    return image


_LETTERS = re.compile(rb"[A-Za-z]+=*")
WORDY = 64
"""Runs of letters alone longer than this are read as base64 or base32 only when they decode
to text or to a compressed stream: prose with its whitespace squeezed out is such a run, and
what it decodes to is noise. Real encoded data of that length holds a digit or a `+`, `/`
(base64) or `2-7` (base32) all but surely: (52/64)^64 < 2e-6."""


_TWO_SYMBOLS = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u180e\u034f\u00ad \t]{64,}")
"""A run of invisible characters (zero-width space, non-joiner, joiner, word joiner, marks,
soft hyphen) or of spaces and tabs, long enough to hold 8 bytes as bits, one character a bit:
zero-width steganography, whitespace steganography. The `letters` form drops such characters
between letters; a run of them alone is read as binary."""
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u180e\u034f\u00ad]+")
_REVERSED_BITS = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))


def _two_symbol_bits(text: str, span) -> Iterator[tuple[bytes, str, tuple[int, int]]]:
    """Each such run, and every invisible character of the text end to end (a table whose
    keys are cut into string pieces, a byte each), read as bits in its two commonest
    characters (a third, a separator, left out), each as 0 and as 1, most or least
    significant bit first."""
    runs = [match.group() for match in _TWO_SYMBOLS.finditer(text)]
    if len(hidden := "".join(_INVISIBLE.findall(text))) >= 64:
        runs.append(hidden)
    for run in runs:
        symbols = [symbol for symbol, _ in Counter(run).most_common(2)]
        if len(symbols) != 2:
            continue
        for zero in symbols:
            bits = "".join("0" if c == zero else "1" for c in run if c in symbols)
            bits = bits[: len(bits) // 8 * 8]
            data = int(bits, 2).to_bytes(len(bits) // 8, "big")
            yield data, "bits", span
            yield data.translate(_REVERSED_BITS), "bits", span


def _wordy(run: bytes) -> bool:
    return len(run) > WORDY and _LETTERS.fullmatch(run) is not None


_QUOTED_PRINTABLE = re.compile(rb"=[0-9A-F]{2}")
_CHAR_REF = re.compile(r"&#([xX][0-9a-fA-F]{1,6}|[0-9]{1,7});")


def _char(match: re.Match) -> str:
    code = match.group(1)
    value = int(code[1:], 16) if code[0] in "xX" else int(code)
    return chr(value) if value < 0x110000 else "\ufffd"


def _web_bytes(data: bytes, spans: _TextSpans) -> tuple[bytes, ...]:
    """Bytes escaped for the web or mail, read back as bytes (a compressed stream in
    `quote_from_bytes`, `&#x8b;` character references, quoted-printable): the text views
    read them as UTF-8, which a stream is not. Read in the file's text spans; in a file
    that is not UTF-8, in its escaped runs too, raw bytes kept (`_in_escaped_runs`): a
    stream's bytes from 0x80 up left raw among its escapes cut it into spans too short to
    be read, and `unquote_to_bytes(data)` passes them through (round 21)."""
    readings = []
    if b"%" in data:
        readings.append((_PERCENT, unquote_to_bytes, unquote_to_bytes))
    if b"&#" in data:  # by code, not `html.unescape`: it maps &#x80;-&#x9f; as cp1252 does
        readings.append((_CHAR_REF_BYTES, _char_refs, partial(_char_refs, codec="latin-1")))
    if _QUOTED_PRINTABLE.search(data):
        readings.append((_QUOTED_PRINTABLE, quopri.decodestring, quopri.decodestring))
    if len(readings) > 1:  # nested, one kind in the other's (`%3D8B`), in either order
        either = re.compile(b"|".join(escape.pattern for escape, _, _ in readings))
        raws = [raw for _, _, raw in readings]
        composed = [partial(_composed, order) for order in (raws, raws[::-1])]
        readings += [(either, reading, reading) for reading in composed]
    found = [spans.read(reading) for _, reading, _ in readings]
    if not spans.whole:
        found += [_in_escaped_runs(data, escape, raw) for escape, _, raw in readings]
    return tuple(found)


def _composed(readings: list[Callable[[bytes], bytes]], data: bytes) -> bytes:
    """`data` read with each of `readings` in turn: a stream's bytes escaped as `%XX` and
    `=XX` in turn, `quopri.decodestring(unquote_to_bytes(data))`, read by each alone, kept
    the other's escapes and no magic (round 22)."""
    for reading in readings:
        data = reading(data)
    return data


_PERCENT = re.compile(rb"%[0-9a-fA-F]{2}")
_CHAR_REF_BYTES = re.compile(_CHAR_REF.pattern.encode())


def _char_refs(span: bytes, codec: str = "utf-8") -> bytes:
    """`span` (text in `codec`: latin-1 keeps a raw byte as it is) with its character
    references read as the bytes they name."""
    return _CHAR_REF.sub(_char, span.decode(codec)).encode("latin-1", "replace")


def _unescaped_latin(span: bytes, codec: str = "utf-8") -> bytes:
    """`span` (text in `codec`) unescaped, the bytes its escapes name kept as bytes."""
    return unescape(span.decode(codec)).encode("latin-1", "replace")


_HEX_ESCAPE = re.compile(rb"\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}")
"""An escape that names a byte or a character by its code (`\\x8b`, a protocol-0 pickle's
`\\u000a`): one in about 10^7 random bytes, one in a few bytes of an escaped stream."""
_ESCAPED_NEAR = 256
"""Bytes between two such escapes of one escaped run, at most, and read on either side."""


def _latin_unescaped(data: bytes) -> bytes:
    """A file that is not UTF-8 read as latin-1 and unescaped in its escaped runs (a str's
    repr in a latin-1 file, a protocol-0 pickle), its other bytes as they are: random bytes
    hold `\\` and a character after it every few hundred bytes, and unescaping them changed
    every member of a zip of random bytes, each read and charged again."""
    return _in_escaped_runs(data, _HEX_ESCAPE, partial(_unescaped_latin, codec="latin-1"))


def _in_escaped_runs(data: bytes, escape: re.Pattern, reading: Callable[[bytes], bytes]):
    """`data` read with `reading` in its runs of `escape` (8 or more, each within
    `_ESCAPED_NEAR` bytes of the next, and that many bytes on either side), its other bytes
    as they are."""
    runs: list[list[int]] = []
    for match in escape.finditer(data):
        if runs and match.start() - runs[-1][1] <= _ESCAPED_NEAR:
            runs[-1][1], runs[-1][2] = match.end(), runs[-1][2] + 1
        else:
            runs.append([match.start(), match.end(), 1])
    pieces, at = [], 0
    for start, end, count in runs:
        if count < 8 and not _unhides_magic(data, start, end, reading):
            continue
        start, end = max(start - _ESCAPED_NEAR, at), end + _ESCAPED_NEAR
        pieces += [data[at:start], reading(data[start:end])]
        at = end
    return b"".join([*pieces, data[at:]])


def _unhides_magic(data: bytes, start: int, end: int, reading: Callable[[bytes], bytes]):
    """Whether a run of fewer than 8 escapes, read, shows a compressor's magic its bytes
    hide: `%1F%8B%08%00` and the rest of a gzip stream raw, which `unquote_to_bytes(data)`
    gives whole, hid the stream from every reading (round 22)."""
    window = data[max(start - 8, 0) : end + 8]
    read = reading(window)
    return any(magic in read and magic not in window for magic, _ in _MAGIC)


def _latin_readings(data: bytes, spans: _TextSpans) -> tuple[bytes, ...]:
    """Bytes kept as the text they are in latin-1: in a UTF-8 file
    (`write_text(data.decode("latin-1"))`, a pickle's protocol-2 bytes, whose opcodes around
    them are not UTF-8), and escaped in a binary one (a protocol-0 pickle's `\\u000a`). In a
    file that is not UTF-8, the first is read in its text spans, the second in its escaped
    runs (`_latin_unescaped`)."""
    if data.isascii():
        return ()
    readings = [spans.read(lambda span: span.decode("utf-8").encode("latin-1", "replace"))]
    if b"\\" in data and spans.whole:
        readings.append(_unescaped_latin(data, codec="latin-1"))
    elif b"\\" in data:
        readings.append(_latin_unescaped(data))
    return tuple(readings)


_TEXT_SPAN = re.compile(f"[^\\udc80-\\udcff]{{{MIN_BLOB},}}")
"""A run of valid UTF-8 (in the bytes decoded with `surrogateescape`, a byte that is not
UTF-8 is a lone surrogate), long enough to hold an escaped blob."""
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class _TextSpans:
    """A file's bytes cut into its text (runs of valid UTF-8, at least `MIN_BLOB` bytes) and
    what lies between. A reading that undoes a text's escaping (latin-1 kept as UTF-8, `\\`,
    `%XX`, `&#..;`, `=XX`) is applied to the text spans and leaves the bytes between as they
    are: read through the whole file's text, each byte that is not UTF-8 became `?` or
    U+FFFD, so every stored member of a zip of random bytes (a `.npz`) differed from the
    file's own, and was read and charged again in each reading (a 512 KB `.npz` was
    unsearched). A text file is one span: read as before."""

    pieces: tuple[tuple[str, bool], ...]
    """The file's bytes as `surrogateescape` text, piece by piece; whether each is text."""
    whole: bool
    """The file is UTF-8 text end to end."""

    @classmethod
    def of(cls, data: bytes) -> _TextSpans:
        decoded = data.decode("utf-8", "surrogateescape")
        if not _NOT_UTF8.search(decoded):
            return cls(((decoded, True),), whole=True)
        pieces, at = [], 0
        for match in _TEXT_SPAN.finditer(decoded):
            pieces += [(decoded[at : match.start()], False), (match.group(), True)]
            at = match.end()
        pieces.append((decoded[at:], False))
        return cls(tuple(piece for piece in pieces if piece[0]), whole=False)

    def read(self, reading: Callable[[bytes], bytes]) -> bytes:
        """The file read with `reading` in its text spans, its other bytes as they are."""
        return b"".join(
            reading(piece.encode("utf-8")) if text else piece.encode("utf-8", "surrogateescape")
            for piece, text in self.pieces
        )


def _other_alphabets(data: bytes, whole) -> Iterator[tuple[bytes, str, tuple[int, int]]]:
    """Base32 and Ascii85 runs, hex with separators, lists of character codes, and UTF-16 (a
    file or blob whose every other byte is zero)."""
    decoders = (
        (_BASE32, "base32", lambda run: base64.b32decode(_padded(run), casefold=True)),
        (_BASE32HEX, "base32hex", lambda run: base64.b32hexdecode(_padded(run), casefold=True)),
        (
            _SEPARATED_HEX,
            "hex",
            _separated_hex,
        ),
        (_ASCII85, "ascii85", lambda run: base64.a85decode(run[2:-2])),
    )
    for pattern, kind, decode in decoders:
        for match in pattern.finditer(data):
            try:
                decoded = decode(match.group().rstrip(b"="))
            except (binascii.Error, ValueError, OverflowError):
                continue
            if _wordy(match.group()) and not _packed(decoded) and _as_text(decoded) is None:
                continue
            yield decoded, kind, _span(data, data, match, whole, False)
    yield from _code_lists(data, whole)
    yield from _bare_alphabets(data, whole)
    yield from _uuencoded(data, whole)
    if data.count(b"\0") * 4 >= len(data) > 0:
        body = data[2:] if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else data
        for codec in ("utf-16-le", "utf-16-be"):
            text = body[: len(body) // 2 * 2].decode(codec, "replace")
            yield text.encode("utf-8", "replace"), "utf-16", whole or (1, text.count("\n") + 1)


def _code_lists(data: bytes, whole) -> Iterator[tuple[bytes, str, tuple[int, int]]]:
    """Lists of character codes, each read in every base its digits allow."""
    for match in _NUMBERS.finditer(data):
        for decoded in _char_codes(match.group()):
            yield decoded, "char codes", _span(data, data, match, whole, False)


def _bare_alphabets(data: bytes, whole) -> Iterator[tuple[bytes, str, tuple[int, int]]]:
    """Base85 and Ascii85 without markers, and long numbers: their alphabets are common
    characters, so what they decode to is kept only when it is text or a compressed stream
    (a code token read as base85 is noise, and is not charged to the budget)."""
    decoders = (
        (_BASE85, "base85", lambda m: _quoted(base64.b85decode, m.group())),
        (_ASCII85_BARE, "ascii85", lambda m: _quoted(base64.a85decode, m.group())),
        (_DIGITS, "number", _numbers),
        (_GROUPED, "number", _grouped),
    )
    for pattern, kind, decode in decoders:
        for match in pattern.finditer(data):
            try:
                found = decode(match)
            except (binascii.Error, ValueError, OverflowError):
                continue
            for decoded in found:
                # a number is read both ways: `int.from_bytes(data, "little")` reverses it
                readings = (decoded, decoded[::-1]) if kind == "number" else (decoded,)
                for reading in readings:
                    if _packed(reading) or _as_text(reading) is not None:
                        yield reading, kind, _span(data, data, match, whole, False)


def _quoted(decode: Callable[[bytes], bytes], run: bytes) -> list[bytes]:
    """The run decoded as it is and without the quotes around it (quotes are letters of
    these alphabets, so the run of a string literal takes its quotes in)."""
    found = []
    for candidate in dict.fromkeys((run, run.strip(b"'\"`"), run[1:-1])):
        with contextlib.suppress(binascii.Error, ValueError, OverflowError):
            found.append(decode(candidate))
    return found


def _numbers(match: re.Match) -> list[bytes]:
    """A run of digits read as each number it could be: an integer in its base (decimal, or
    the `0b`/`0o` it names, or octal or binary digits alone), and octal byte codes."""
    prefix, run = (match.group(1) or b"").lower(), match.group(2)
    bases = {b"0b": [2], b"0o": [8]}.get(prefix) or [10]
    if not prefix and not run.strip(b"01"):
        bases.append(2)
    if not prefix and not run.strip(b"01234567"):
        bases.append(8)
    found = [_to_bytes(_integer(run, base)) for base in bases]
    if not prefix and len(run) % 3 == 0 and not run.strip(b"01234567"):
        codes = [int(run[at : at + 3], 8) for at in range(0, len(run), 3)]
        if max(codes) < 256:
            found.append(bytes(codes))
    return found


def _grouped(match: re.Match) -> list[bytes]:
    """A number written with digit separators, in the base its prefix names, else in each
    base its digits allow (hex always: `bytes.hex(sep, n)` groups bytes)."""
    prefix = (match.group(1) or b"").lower()
    run = re.sub(rb"[^0-9a-fA-F]", b"", match.group()[len(prefix) :])
    bases = {b"0x": [16], b"0o": [8], b"0b": [2]}.get(prefix) or [*_bases(run), 16]
    return [_to_bytes(_integer(run, base)) for base in dict.fromkeys(bases)]


def _bases(run: bytes) -> list[int]:
    """The bases whose digits `run` is written in alone: decimal, octal, binary."""
    digits = set(run)
    return [
        b
        for b, allowed in ((10, b"0123456789"), (8, b"01234567"), (2, b"01"))
        if digits <= set(allowed)
    ]


def _integer(run: bytes, base: int) -> int:
    """`int(run, base)` past Python's 4300-digit limit on decimal strings, piece by piece."""
    if base != 10:
        return int(run, base)
    value, step = 0, 4000
    for at in range(0, len(run), step):
        piece = run[at : at + step]
        value = value * 10 ** len(piece) + int(piece)
    return value


def _to_bytes(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def _uuencoded(data: bytes, whole) -> Iterator[tuple[bytes, str, tuple[int, int]]]:
    """Runs of uuencoded lines (`codecs.encode(data, "uu")`, `binascii.b2a_uu`), each line
    in or out of a string literal, decoded and joined."""
    run: list[bytes] = []
    first = 0
    for number, line in enumerate([*data.split(b"\n"), b""], start=1):
        decoded = _uu_line(line.strip(b"\r"))
        if decoded is not None:
            first = first if run else number
            run.append(decoded)
            continue
        if len(run) >= 2 and sum(map(len, run)) >= MIN_BLOB:
            yield b"".join(run), "uuencode", whole or (first, number - 1)
        run = []


def _uu_line(line: bytes) -> bytes | None:
    """One uuencoded line (its length character first), quotes around it allowed; None when
    it is no such line."""
    body = line.lstrip(b" \t'\"")
    if not body or not _UU_LINE.fullmatch(body.rstrip(b"'\",)]")):
        return None
    size = (body[0] - 32) & 63
    if not size or len(body) < 1 + (size + 2) // 3 * 4 - 2:
        return None
    for candidate in (body, body.rstrip(b"'\",)]")):
        with contextlib.suppress(binascii.Error):
            return binascii.a2b_uu(candidate)
    return None


def _separated_hex(run: bytes) -> bytes:
    return bytes.fromhex(re.sub(rb"[^0-9a-fA-F]", b"", run).decode())


def _padded(run: bytes) -> bytes:
    return run + b"=" * (-len(run) % 8)


def _char_codes(run: bytes) -> list[bytes]:
    """`chr` of each code, read in decimal and in each base all the unprefixed codes allow
    (`0x`, `0o`, `0b` codes keep theirs); one past Unicode is a stray character, not a
    reason to read none."""
    codes = [code.split(b".")[0] for code in _CODE.findall(run)]
    plain = b"".join(c for c in codes if not c[1:2].isalpha())
    found = []
    for base in [10, *(b for b in _bases(plain) if b != 10)]:
        try:
            numbers = [int(c, 0) if c[1:2].isalpha() else int(c, base) for c in codes]
        except ValueError:
            continue
        text = "".join(chr(n) if n < 0x110000 else "\ufffd" for n in numbers)
        found.append(text.encode("utf-8", "surrogatepass"))
        if max(numbers) < 256:  # byte values (`list(gzip.compress(data))`), not characters
            found.append(bytes(numbers))
    return found


def _base64(run: bytes, squeezed: bool) -> Iterator[bytes]:
    """The run decoded; squeezed, at each of the four alignments (a neighbouring word may
    have stuck to its front)."""
    altchars = b"-_" if b"-" in run or b"_" in run else None
    for start in range(4) if squeezed else (0,):
        body = run[start:].rstrip(b"=")
        body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
        try:
            yield base64.b64decode(body + b"=" * (-len(body) % 4), altchars=altchars)
        except (binascii.Error, ValueError):
            continue


def _span(data: bytes, source: bytes, match: re.Match, whole, squeezed: bool):
    if whole is not None:
        return whole
    if squeezed:  # positions of the squeezed bytes are not the file's: the whole file
        return (1, len(_newlines(data)) + 1)
    breaks, start = _newlines(source), match.start()
    first = bisect_left(breaks, start) + 1
    return (first, first + bisect_left(breaks, match.end()) - bisect_left(breaks, start))


@lru_cache(maxsize=4)
def _newlines(data: bytes) -> list[int]:
    """Where `data`'s newlines are, found once per file (or reading of it): counting them
    from the file's start for each blob took seconds in a tree of code, many runs a file."""
    return [match.start() for match in re.finditer(b"\n", data)]


MAX_MAGIC_OFFSETS = 1024
"""Places in one reading of a file where a compressor's magic starts that are tried as a
stream, at most (random bytes hold a two-byte magic once in 16 K places: a 4 MB binary about
330); a reading of more is unsearched (`cut`). The first 16 alone were tried: sixteen decoy
magics hid the stream behind them (round 18). A zip is read from its first local header
alone: that reading finds every later one (`_local`), and a reading from inside a stored
member met its outer archive's central directory, every offset shifted (a fat jar's nested
jars made it unsearched; round 18)."""
_ZIP_OFFSETS = 1


def _magic_offsets(blob: bytes, budget: Budget) -> list[int]:
    """The places in `blob` a stream opens at (`_opens`), in order."""
    offsets: set[int] = set()
    for magic, kind in _MAGIC:
        at, found = blob.find(magic), 0
        while at >= 0 and len(offsets) <= MAX_MAGIC_OFFSETS:
            if kind == "zip" and found == _ZIP_OFFSETS:
                break
            if _opens(blob, at, kind):
                offsets.add(at)
                found += 1
            at = blob.find(magic, at + 1)
    if len(offsets) > MAX_MAGIC_OFFSETS:
        budget.cut = True  # a harness finds the stream after any number of decoys
    return sorted(offsets)[:MAX_MAGIC_OFFSETS]


_WINDOW = 4096
"""Bytes of a stream `_opens` reads, at most (a gzip header's name and comment included)."""


def _opens(blob: bytes, at: int, kind: str) -> bool:
    """Whether a stream could start at `at`: its decompressor takes its first `_WINDOW`
    bytes without error (a gzip or zlib stream's deflate body read raw, as `_unchecked` reads
    one whose checksum fails), or gives a shingle's length (`index.GRAM`, 16) before it fails
    (`_salvaged`). A magic in text or random bytes by chance fails within a few bytes, and
    reading it whole would find nothing: trying every one, and charging each to the budget,
    made honest notes full of `x^` (a zlib header) and a 4 MB photo unsearched (round
    19)."""
    if kind == "zip":
        return True
    window = blob[at : at + _WINDOW]
    if kind in _TRAILERS:
        window = window[_body(window, kind) :]
        make: Callable = lambda: zlib.decompressobj(-zlib.MAX_WBITS)  # noqa: E731
    else:
        make = _ENGINES[kind]
    try:
        make().decompress(window, _WINDOW)
    except _FAILURES:
        return len(_salvaged(make, window, _WINDOW)[0]) >= 16
    return True


def _unpacked(blob: bytes, budget: Budget, viewed: bool = False) -> Iterator[tuple[bytes, str]]:
    """The blob decompressed (by its magic), or as it is when it reads as text; what a
    stream decompresses to is kept only when it is text or compressed again (a bomb of
    zeros is neither). A decoded blob led by a magic is read as bytes too, unless its bytes
    are the file's own (`viewed`): a harness slices a table from behind a magic that starts
    no stream, from past a stream's end, from a zip's comment (round 17)."""
    for magic, kind in _MAGIC:
        if blob.startswith(magic):
            for inner in _decompress(blob, kind, budget):
                _audited(budget, inner)  # what a stream a magic names holds: measured
                yield from _readings(inner, kind, budget)
            if not viewed and (readable := _readable(blob)) and budget.take(readable):
                yield readable, ""
            if not viewed:
                yield from _embedded(blob, budget)
            return
    if _as_text(blob) is None and (inflated := _headerless(blob, budget)) is not None:
        yield from _readings(*inflated[:2], budget)
        if inflated[2]:  # text: the blob was that stream (noise, then a table: maybe not)
            return
    readable = _readable(blob)
    if readable and budget.take(readable):
        yield readable, ""
    yield from _embedded(blob, budget)


def _readings(inner: bytes, kind: str, budget: Budget) -> Iterator[tuple[bytes, str]]:
    """What a decompressed blob gives the next layer: itself when packed, else what reads
    as text in it (`_readable`); and, read from there, a stream that opens past its start
    (`_stream_start`), as a packed one is read whole."""
    readable = inner if _packed(inner) else _readable(inner)
    if readable:
        yield readable, kind
    start = _stream_start(inner, budget)
    if start is not None and budget.take(tail := inner[start:]):
        yield tail, _join("bytes", kind)


def _stream_start(blob: bytes, budget: Budget) -> int | None:
    """The first place past its start where a stream opens in a decompressed blob that is
    not text (`_magic_offsets`), a zip's first local header whatever central directory
    follows (a streaming reader reads from there). Such a blob was read for its printable
    runs alone: a zipapp kept in a zip hid the zip in it (round 19); a text read with its
    NULs dropped is not the blob, and a gzip stream in 40 KB of text lost its NULs, and the
    table (round 21). A zip there was read only when no central directory followed it or
    one put a member at a local header: a streamed zip before a stray end signature, or
    before a central directory of one entry pointing nowhere, was never read (round 22)."""
    if _packed(blob) or _as_text(blob) == blob:
        return None
    return next((at for at in _magic_offsets(blob, budget) if at), None)


def _embedded(blob: bytes, budget: Budget) -> Iterator[tuple[bytes, str]]:
    """The streams in a decoded blob that is not text, each unpacked in this layer as one
    at its start is (a byte in front of a gzip stream or a zip, base64'd, hid it; round
    19); a packed one's too (an empty gzip member and a byte in front of the table's, a
    tar holding a gzip member, read from their start alone; round 20), and a text's whose
    NULs its reading drops (`_stream_start`)."""
    if not _packed(blob) and _as_text(blob) == blob:
        return
    for at in _magic_offsets(blob, budget):
        if at:
            yield from _unpacked(blob[at:], budget, viewed=True)


_RAW_LZMA2 = [{"id": lzma.FILTER_LZMA2}]
_RAW_LZMA1 = [{"id": lzma.FILTER_LZMA1}]
"""`lzma.compress(data, format=lzma.FORMAT_RAW, filters=...)` with the default settings: no
header says which, so the defaults are what a harness would decode it with."""
_HEADERLESS = (
    ("deflate", lambda: zlib.decompressobj(-zlib.MAX_WBITS)),
    ("zlib", zlib.decompressobj),
    ("lzma", lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE)),
    ("raw lzma2", lambda: lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=_RAW_LZMA2)),
    ("raw lzma", lambda: lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=_RAW_LZMA1)),
)


def _headerless(blob: bytes, budget: Budget) -> tuple[bytes, str, bool] | None:
    """A compressed stream whose start no magic of `_MAGIC` names: raw deflate
    (`zlib.compress(d, wbits=-15)`), zlib with a smaller window (a header other than `78 ..`),
    the legacy `.lzma` format, a raw LZMA or LZMA2 stream: what it gives, its kind, and
    whether it is text. Kept when it decompresses to text without an error (ended or not: a
    reader is not told; bytes that are no such stream seldom take their whole length), else
    for its printable runs (noise in front of a table, sliced off: round 21; ended or not:
    one sync-flushed, never finished, was dropped, round 22; a blob whose stream is not
    text may hold more, read on). A stream past the budget is `cut`."""
    limit, runs = budget.left, None
    if limit <= 0 or len(blob) < 8:
        return None
    for kind, make in _HEADERLESS:
        if kind == "zlib" and (blob[0] & 0x0F != 8 or (blob[0] << 8 | blob[1]) % 31):
            continue
        if kind == "lzma" and blob[0] > 224:  # the properties byte: at most (4*5+4)*9+8
            continue
        try:
            data, eof, used = _stream(make(), memoryview(blob), limit)
        except _HEADERLESS_FAILURES:
            continue
        if len(data) >= limit and not eof:
            budget.cut |= _as_text(data[:4096]) is not None  # a real stream, past the budget
            continue
        # one that takes all its bytes without an error gives a reader what it holds, ended
        # or not (a raw deflate stream sync-flushed, never finished; round 21)
        more, whole, used = _following(make, memoryview(blob)[used:], limit - len(data), used)
        read, text = data + more, _as_text(data + more) is not None
        budget.cut |= text and not whole  # text, then past what can be read
        if text and budget.take(read):
            budget.consumed[blob[:used]] = None
            return read, kind, True
        if runs is None:  # noise and a table in one stream, sliced off, ended or not
            runs = read, kind, whole  # (random bytes fail every kind within their length)
    if runs and _readable(runs[0]) and budget.take(runs[0]):
        budget.cut |= not runs[2]  # (noise read as a stream: its bytes not accounted for)
        return runs[0], runs[1], False
    return None


_HEADERLESS_FAILURES = (zlib.error, lzma.LZMAError, EOFError, ValueError)


def _following(make: Callable, rest: memoryview, left: int, used: int) -> tuple[bytes, bool, int]:
    """The streams of a headerless kind right after one, each read by a new decompressor
    from where the last one ended, as `lzma.decompress` reads `.lzma` streams and a harness's
    loop over `unused_data` reads zlib or deflate ones (a table cut into 12-character `.lzma`
    streams was read a first piece alone; round 20); up to the first that fails or does not
    end (trailing bytes: those readers stop there too). What they gave, whether all of it
    was read within `left` bytes and `MAX_MEMBERS` streams, and where the last one read
    ended (`used`, the bytes read before `rest`, and those read since)."""
    out: list[bytes] = []
    for _ in range(MAX_MEMBERS):
        if not len(rest) or left <= 0:  # (zlib reads a limit of 0 as none)
            return b"".join(out), not len(rest), used
        try:
            data, eof, taken = _stream(make(), rest, left)
        except _HEADERLESS_FAILURES:
            return b"".join(out), True, used
        out.append(data)
        if not eof:  # cut short: what it gave is what a harness's loop has
            return b"".join(out), len(data) < left, used + taken
        left -= len(data)
        rest, used = rest[taken:], used + taken
    return b"".join(out), not len(rest), used


def _packed(blob: bytes) -> bool:
    """Compressed again, or a tar archive (its members' bytes sit in it as they are)."""
    return any(blob.startswith(m) for m, _ in _MAGIC) or blob[257:262] == b"ustar"


def _readable(blob: bytes) -> bytes | None:
    """What a reader of a decoded blob could take as text: the blob, NULs dropped (so UTF-16
    and UTF-32 of ASCII read plain), when it is text; else its printable runs, one a line (a
    table followed or laced with stray bytes a harness cuts off before decoding); None when
    it holds none (an image, a bomb of zeros)."""
    if (narrow := _as_text(blob)) is not None:
        return narrow
    text = blob.replace(b"\0", b"").decode("utf-8", "replace")
    if (read := _ebcdic(blob)) is not None:
        return read
    runs = _RUNS.findall(text)
    return "\n".join(runs).encode("utf-8", "surrogatepass") if runs else None


def _as_text(blob: bytes) -> bytes | None:
    """The blob, NULs dropped (UTF-16 and UTF-32 of ASCII read plain), when it is text."""
    narrow = blob.replace(b"\0", b"")
    text = narrow.decode("utf-8", "replace")
    return narrow if text and _mostly_printable(text, "\ufffd") else None


_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Characters that are never printable (a subset of those `str.isprintable` refuses)."""
_LAYOUT = str.maketrans("", "", "\n\r\t")


def _mostly_printable(text: str, also_not: str = "") -> bool:
    """Whether 90% or more of `text`'s characters are printable (or a newline, a tab), none
    of `also_not`. Decoded garbage is refused by counting control characters in C first, and
    plain text accepted by one `isprintable` call: the per-character count (slow) is left for
    the few texts in between."""
    refused = sum(map(text.count, also_not))
    if not refused and text.translate(_LAYOUT).isprintable():
        return True
    if refused + len(_CONTROLS.findall(text)) > 0.1 * len(text):
        return False
    printable = sum((ch.isprintable() and ch not in also_not) or ch in "\n\r\t" for ch in text)
    return printable >= 0.9 * len(text)


def _ebcdic(data: bytes) -> bytes | None:
    """The bytes read as EBCDIC (`cp500`: every EBCDIC code page has the same letters and
    digits), as UTF-8, when they are text so and not UTF-8 text already: a one-line stdlib
    codec, as cheap to hide a table in as rot13."""
    if data.isascii():
        return None
    with contextlib.suppress(UnicodeDecodeError):
        data.decode("utf-8")
        return None
    text = data.decode("cp500")
    return text.encode("utf-8") if _mostly_printable(text) else None


def _decompress(blob: bytes, kind: str, budget: Budget) -> Iterator[bytes]:
    """The blob decompressed as a stream of `kind` (its members read joined), or a zip's
    members, each within the budget."""
    limit = budget.left
    if limit <= 0:  # spent (and zlib reads a limit of 0 as none)
        budget.cut = True
        return
    if not budget.take(blob, cost=min(len(blob), 4096), unpacking=True):
        return  # this stream was read (what it inflates to is charged below)
    try:
        if kind == "zip":
            yield from _zip_members(blob, budget)
            return
        starts: list[int] = []
        data, whole = _members(blob, kind, limit, starts)
        if len(data) <= DIGEST and _checked(blob[: starts[-1]], kind, data):
            budget.small.append(data)  # too short to measure alone: joined (`Budget.small`)
        _consumed(blob, starts, budget)
        budget.joined(blob, starts[1:])  # read from there, a member gives part of `data`
    except (
        OSError,
        EOFError,
        ValueError,
        IndexError,
        zlib.error,
        lzma.LZMAError,
        zipfile.BadZipFile,
    ):
        return
    if not whole:
        budget.cut = True  # more than the budget: what lies past it (padding, then a table?)
    if data and budget.take(data):
        yield data


def _consumed(blob: bytes, starts: list[int], budget: Budget) -> None:
    """The bytes of each member `_members` read (`starts`, then where it stopped), a gzip
    member's from its deflate body: its header's extra field, name and comment are bytes
    no reader reads (the table, encrypted, in an extra field passed as read)."""
    ends = starts[1:]
    for at, end in zip(starts, ends, strict=False):
        gzip_header = blob[at : at + 2] == b"\x1f\x8b"
        body = at + _body(memoryview(blob)[at:end], "gzip") if gzip_header else at
        budget.consumed[blob[body:end]] = None
    starts.pop()


MAX_ZIP_MEMBERS = 1024
"""Members of one zip read, at most (a vendored wheel holds hundreds; their bytes are bounded
by the budget anyway); an archive of more is unsearched (`cut`)."""


def _zip_members(blob: bytes, budget: Budget) -> Iterator[bytes]:
    """A zip archive's members (`MAX_ZIP_MEMBERS` at most), each within the budget, read
    from their bodies as a harness inflates them (`_zip_member`): those its central directory
    lists, then those only a streaming reader finds, from their local headers (`_local`)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except NotImplementedError:
        # A version past what zipfile reads, in a central directory it otherwise parses: a
        # harness reads its members anyway (they are deflated as any other's), so what they
        # hold is unsearched, not absent (it was an exception: no verdict at all).
        budget.cut = True
        return
    except zipfile.BadZipFile:  # no central directory: a streaming reader still reads it
        archive = None
    members = []
    if archive is not None:
        with archive:
            members = [_Member.of(info) for info in archive.infolist()]
        members += _by_local_method(blob, members)
    listed = {m.at for m in members}
    stored = [m for m in members[: MAX_ZIP_MEMBERS + 1] if m.method == zipfile.ZIP_STORED]
    inside = [_stored_body(blob, m) for m in stored]
    members += _local(blob, listed, inside)
    if len(members) > MAX_ZIP_MEMBERS:  # the rest unread: the table in the 65th passed (at 64)
        budget.cut = True
    # entries alike at one local header give the same bytes: read once (round 17's
    # "overlapping files", 1,000 entries of one body, read it 1,000 times, 300 MB)
    for member in dict.fromkeys(members[:MAX_ZIP_MEMBERS]):
        try:
            data, end = _zip_member(blob, member, budget.left + 1)
        except (OSError, EOFError, ValueError, IndexError, zlib.error, lzma.LZMAError):
            data = None  # a body that does not inflate: what follows it may
        if data is None and (not member.listed or blob[member.at : member.at + 4] != _LOCAL):
            # a stray signature in a body, most likely: no member a reader finds; or a
            # central entry at no local header, which zipfile refuses too (the central
            # directory of a zip read from inside another's stored member, its offsets
            # shifted, made every honest zip holding a stored jar unsearched; round 18)
            continue
        if data is None or len(data) > budget.left:
            # encrypted, another method, broken, or past the budget: the candidate is
            # rejected as unsearched already, and members sharing one body (a bomb of
            # overlapping entries) would each be inflated to the budget again
            budget.cut = True
            return
        _consumed_member(blob, member, end, budget, data)
        if len(data) <= DIGEST:  # too short to measure alone: joined (`Budget.small`)
            budget.small.append(data)
        if budget.take(data):
            yield data


@dataclass(frozen=True)
class _Member:
    """Where a zip member's local header is, and what a reader takes from its headers."""

    at: int
    flags: int
    method: int
    size: int
    """The compressed size its headers claim (a stored body's length)."""
    listed: bool
    """Named by the central directory (else found by its local header's signature)."""

    @classmethod
    def of(cls, info: zipfile.ZipInfo) -> _Member:
        return cls(info.header_offset, info.flag_bits, info.compress_type, info.compress_size, True)


_LOCAL = b"PK\x03\x04"


def _by_local_method(blob: bytes, members: list[_Member]) -> list[_Member]:
    """Listed members read again by the method their local header names where it is not
    their central entry's, as a streaming reader (`bsdtar -xf -`, a harness's own loop)
    reads them: an LZMA body its central entry called stored was read as raw bytes, the
    table in it unsearched (round 22). Unlisted: one that does not read is skipped."""
    found = []
    for member in members:
        local = _le(blob, member.at + 8, 2)
        if blob[member.at : member.at + 4] == _LOCAL and local != member.method:
            found.append(replace(member, method=local, listed=False))
    return found


def _stored_body(blob: bytes, member: _Member) -> tuple[int, int]:
    """Where a listed stored member's body lies: a local header's signature inside it is
    that member's bytes (a nested jar's, in a fat jar), read as its data and unpacked from
    there, no member of this archive (1,200 such made an honest fat jar unsearched; round
    18). Its extent is the shorter of what its local header and its central entry claim: a
    streaming reader goes by the first, and found the table's member behind a body of one
    byte that the central entry claimed ran past it (round 21); a local header's size of 0
    with a data descriptor is no claim."""
    at = member.at
    start = at + 30 + _le(blob, at + 26, 2) + _le(blob, at + 28, 2)
    local = _le(blob, at + 18, 4)
    described = _le(blob, at + 6, 2) & 8 and not local
    return start, start + (member.size if described else min(member.size, local))


def _local(blob: bytes, listed: set[int], skipped: list[tuple[int, int]]) -> Iterator[_Member]:
    """The members a streaming reader (`unzip -`, Java's ZipInputStream, a harness's own
    loop) finds from their local headers, whatever the central directory says: one whose
    central entry points nowhere (past the end, inside another body) hid the table from a
    check that followed the central directory alone (round 17). `MAX_ZIP_MEMBERS` + 1 at
    most (more makes the archive unsearched). A signature in a stored body (`skipped`: the
    listed ones', then each found's) is that member's bytes, read as its data: not counted."""
    at, found = blob.find(_LOCAL), 0
    while found <= MAX_ZIP_MEMBERS:
        if at < 0 or at + 30 > len(blob):
            return
        past = max((end for start, end in skipped if start <= at < end), default=None)
        if past is not None:  # a stored body's bytes: jump over them, as a reader does
            at = blob.find(_LOCAL, past)
            continue
        if at not in listed:  # a listed one's body is where its central entry says
            flags, method = _le(blob, at + 6, 2), _le(blob, at + 8, 2)
            member = _Member(at, flags, method, size=_le(blob, at + 18, 4), listed=False)
            if method == zipfile.ZIP_STORED:  # what is skipped is what is read as its data
                skipped.append(_stored_body(blob, member))
            yield member
            found += 1
        at = blob.find(_LOCAL, at + 4)


def _checked(stream: bytes, kind: str, data: bytes) -> bool:
    """Whether `stream` ends with the check of the end of `data` (its last member's CRC-32
    and size, or Adler-32), or is of a kind whose magic noise does not start (bzip2, xz):
    a real stream, not a magic's two bytes in noise that inflate to a few bytes of it."""
    if kind == "gzip":  # (zeros after a member are read past: its end is among them)
        end = len(stream.rstrip(b"\0"))
        return any(_gzip_trailer(stream[:at], data) for at in range(end, end + 9))
    if kind == "zlib":
        adler = int.from_bytes(stream[-4:], "big")
        return any(zlib.adler32(data[at:]) == adler for at in range(len(data) + 1))
    return kind in ("bzip2", "xz")


def _gzip_trailer(stream: bytes, data: bytes) -> bool:
    crc, size = _le(stream, len(stream) - 8, 4), _le(stream, len(stream) - 4, 4)
    return len(stream) >= 8 and size <= len(data) and zlib.crc32(data[len(data) - size :]) == crc


def _consumed_member(blob: bytes, member: _Member, end: int, budget: Budget, data: bytes) -> None:
    """A read member's local header fields and compressed body, as `coverage` counts them
    read. Not its name and extra field, nor the central directory's names, extra fields and
    comments: bytes no reader reads (the table, encrypted, in an extra field or an entry's
    comment passed as read); measured as any bytes are (300 real jars' directories are
    not opaque). Nor a stored body: its bytes are what it holds, measured as they are (once
    read, it accounted for itself as a decoded blob). Its header's CRC-32 and sizes only
    when they are what was read (or zeros, a data descriptor's): a raw reader skips them
    (the table, 16 bytes in each of 43 empty members' headers, passed as read). (Its time,
    date and version, 6 bytes a member no reader checks, count read with it: declared.)"""
    body = member.at + 30 + _le(blob, member.at + 26, 2) + _le(blob, member.at + 28, 2)
    checked = zlib.crc32(data).to_bytes(4, "little") + (end - body).to_bytes(4, "little")
    if blob[member.at + 14 : member.at + 26] in (
        bytes(12),
        checked + len(data).to_bytes(4, "little"),
    ):
        budget.consumed[blob[member.at : member.at + 30]] = None
    if member.method != zipfile.ZIP_STORED:
        budget.consumed[blob[body:end]] = None


def _le(blob: bytes, at: int, width: int) -> int:
    return int.from_bytes(blob[at : at + width], "little")


_ENGINES: dict[str, Callable] = {
    "gzip": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS),
    "zlib": zlib.decompressobj,
    "bzip2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
}
MAX_MEMBERS = 1024
"""Streams of one kind read end to end, at most (one per member)."""


def _members(blob: bytes, kind: str, limit: int, starts: list[int]) -> tuple[bytes, bool]:
    """The stream decompressed, and every stream of its kind right after it, as
    `gzip.decompress`, `bz2.decompress` and `lzma.decompress` read them, and zlib streams as a
    harness's loop over `unused_data` does (sixteen empty members in front of a table, or a
    table cut into a member a row, read whole); and whether all of it was read within
    `limit` bytes and `MAX_MEMBERS` members. Each member's start is added to `starts`, then
    where the reading stopped (the bytes it consumed end there)."""
    out: list[bytes] = []
    view, at, left, member = memoryview(blob), 0, limit, kind
    for _ in range(MAX_MEMBERS):
        starts.append(at)
        try:
            data, eof, used = _stream(_ENGINES[member](), view[at:], left)
        except _FAILURES:
            data, eof, used = _recovered(view[at:], member, left)
        out.append(data)
        left -= len(data)
        at += used
        if not eof:
            starts.append(at)
            return b"".join(out), left > 0
        if member == "gzip":  # zeros pad a member: the gzip module skips them (round 20)
            at = _ZEROS.match(blob, at).end()
        more = member = _next_member(bytes(view[at : at + 8]), kind)
        if not more or left <= 0:
            starts.append(at)
            return b"".join(out), left > 0 or not more
    starts.append(at)
    return b"".join(out), False


_ZEROS = re.compile(rb"\0*")
_CHUNK = 1 << 16


def _stream(engine, stream: memoryview, limit: int) -> tuple[bytes, bool, int]:
    """One stream from `stream`'s start, fed `_CHUNK` bytes at a time (fed whole, its
    `unused_data` copied all that followed it, each member again: a thousand tiny members in
    front of 4 MB took minutes; round 19): what it gave (at most `limit` bytes), whether it
    ended, and the bytes it took."""
    out, left = [], limit
    for at in range(0, max(len(stream), 1), _CHUNK):
        piece = stream[at : at + _CHUNK]
        data = engine.decompress(piece, left)  # `max_length`: positional in all four
        out.append(data)
        left -= len(data)
        if engine.eof:
            return b"".join(out), True, at + len(piece) - len(engine.unused_data)
        if left <= 0:
            break
    return b"".join(out), False, len(stream)


def _next_member(rest: bytes, kind: str) -> str | None:
    """The kind of the stream that starts `rest` which a reader of streams of `kind` end to
    end takes next, if any: its magic, or any zlib header (the table cut into zlib streams of
    12 characters, each read alone, was never a shingle long; round 19); after gzip or zlib,
    either (`zlib.decompressobj(47)` takes both headers), and after xz a legacy `.lzma`
    header too (`lzma.decompress` tells the two apart at each stream): streams of two kinds
    in turn were each read alone (round 21)."""
    if kind in _TRAILERS:
        zlib_header = len(rest) >= 2 and rest[0] & 0x0F == 8 and (rest[0] << 8 | rest[1]) % 31 == 0
        return "gzip" if rest.startswith(b"\x1f\x8b") else "zlib" if zlib_header else None
    if kind == "xz" and len(rest) >= 8 and rest[0] <= 224:  # `.lzma`'s properties byte
        return kind  # (its decompressor, `FORMAT_AUTO`, reads either)
    return kind if rest.startswith(next(m for m, k in _MAGIC if k == kind)) else None


_TRAILERS = {"gzip": 8, "zlib": 4}
"""The checksum (and length) after a stream's deflate body."""


def _recovered(stream: memoryview, kind: str, limit: int) -> tuple[bytes, bool, int]:
    """A stream its decompressor refuses, read as a harness still reads it: a gzip or zlib
    stream whose check fails read raw (`_unchecked`); one that fails midway read up to the
    failure (`_salvaged`). What it holds, whether it ended, and the bytes it took."""
    if kind in _TRAILERS:
        with contextlib.suppress(zlib.error):
            return _unchecked(stream, kind, limit)
        start = _body(stream, kind)
        raw = lambda: zlib.decompressobj(-zlib.MAX_WBITS)  # noqa: E731
        data, eof, used = _salvaged(raw, stream[start:], limit)
        return data, eof, start + used
    return _salvaged(_ENGINES[kind], stream, limit)


_HEADER = 1 << 16
"""Bytes of a gzip stream its header (a name, a comment) is looked for in, at most."""
_PIECE = 256
"""Bytes of a failing stream `_salvaged` feeds its decompressor at a time."""
_FAILURES = (zlib.error, OSError, lzma.LZMAError, EOFError)


def _salvaged(make: Callable, stream, limit: int) -> tuple[bytes, bool, int]:
    """What a stream that fails midway gives a reader that reads it a piece at a time
    (`gzip.open(path).read(n)`, `readline()`, `decompressobj().decompress(chunk)`): all it
    decompressed before the byte that fails, at most `limit` bytes; fed `_PIECE` bytes at a
    time, then the failing piece again a byte at a time. Decompressed in one call, it raised
    at the failure and kept nothing: a table in front of a break hid (round 19). Whether it
    ended (no: a failure is no end), and the bytes it took (those before the failure)."""
    data, failed = _fed(make(), stream, limit, 0, _PIECE)
    if failed is not None:
        data, failed = _fed(make(), stream[: failed + _PIECE], limit, failed, 1)
    return data, False, len(stream) if failed is None else failed


def _fed(engine, stream, limit: int, start: int, piece: int) -> tuple[bytes, int | None]:
    """`stream` decompressed, its first `start` bytes at once, then `piece` bytes at a time,
    until it fails, ends or gives `limit` bytes: what it gave, and where the piece that
    failed starts (None when none did)."""
    starts = [*([0] if start else []), *range(start, len(stream), piece)]
    out, left = [], limit
    for at, end in zip(starts, [*starts[1:], len(stream)], strict=False):  # none: empty
        try:
            data = engine.decompress(stream[at:end], left)
        except _FAILURES:
            return b"".join(out), at
        out.append(data)
        left -= len(data)
        if left <= 0 or engine.eof:
            break
    return b"".join(out), None


def _unchecked(stream: memoryview, kind: str, limit: int) -> tuple[bytes, bool, int]:
    """A gzip or zlib stream whose check fails (its CRC-32 or Adler-32 zeroed), read as a
    harness reads it: its deflate body inflated raw, the trailer skipped. What it holds,
    whether it ended, and the bytes it took, its trailer's too."""
    start = _body(stream, kind)
    data, eof, used = _stream(zlib.decompressobj(-zlib.MAX_WBITS), stream[start:], limit)
    return data, eof, start + used + _TRAILERS[kind]


def _body(stream, kind: str) -> int:
    """Where a gzip or zlib stream's deflate body starts (a zlib header's preset dictionary
    id skipped); a gzip header is looked for in its first `_HEADER` bytes, then, past them
    (a name of 70 KB: the gzip module reads any; round 20), in all of `stream`; a header
    longer than `stream` (a name past `_WINDOW`) ends at its end."""
    head = bytes(stream[:_HEADER])
    if kind == "zlib":
        return 2 + (4 if head[1] & 0x20 else 0)
    with contextlib.suppress(ValueError, IndexError):  # no NUL ends its name, no flags
        return _gzip_body(head)
    with contextlib.suppress(ValueError, IndexError):
        return _gzip_body(bytes(stream)) if len(stream) > len(head) else len(stream)
    return len(stream)


def _gzip_body(stream: bytes) -> int:
    """Where a gzip member's deflate body starts (RFC 1952: after the optional extra field,
    name, comment and header CRC its flags announce)."""
    flags, at = stream[3], 10
    if flags & 4:
        at += 2 + int.from_bytes(stream[at : at + 2], "little")
    for flag in (8, 16):
        if flags & flag:
            at = stream.index(b"\0", at) + 1
    return at + (2 if flags & 2 else 0)


_ZIP_ENGINES: dict[int, Callable] = {
    zipfile.ZIP_DEFLATED: lambda: zlib.decompressobj(-zlib.MAX_WBITS),
    zipfile.ZIP_BZIP2: bz2.BZ2Decompressor,
}


def _zip_member(blob: bytes, info: _Member, limit: int) -> tuple[bytes | None, int]:
    """A zip member's bytes, at most `limit`, as a harness reads them: its body (the local
    header says where it starts) inflated raw to its end, whatever size and CRC-32 the
    headers claim (a deflate or bzip2 body to its stream's end, past the claimed compressed
    size). zipfile stops at the claimed size and checks the CRC-32 of that much: a
    member claiming its first 2 bytes (their CRC-32 given) hid the rest, and a bomb claiming
    2 bytes was inflated whole in memory. None for an encrypted member or another method.
    And where in `blob` what was read of its body ends."""
    if info.flags & 1:
        return None, info.at
    at = info.at
    names = int.from_bytes(blob[at + 26 : at + 28], "little")
    extra = int.from_bytes(blob[at + 28 : at + 30], "little")
    start = at + 30 + names + extra
    rest = memoryview(blob)[start:]
    body = bytes(rest[: info.size])
    if info.method == zipfile.ZIP_STORED:
        return body[:limit], start + len(body)
    # deflate and bzip2 streams mark their own end: read to it, not to the claimed compressed
    # size (a member claiming 12 bytes of its body hid the rest; round 17)
    make = _ZIP_ENGINES.get(info.method)
    if info.method == zipfile.ZIP_LZMA:  # a version, the properties' size, them
        size = int.from_bytes(body[2:4], "little")
        lzma1 = lzma._decode_filter_properties(lzma.FILTER_LZMA1, body[4 : 4 + size])  # type: ignore[attr-defined]
        make = partial(lzma.LZMADecompressor, lzma.FORMAT_RAW, filters=[lzma1])
        start, rest = start + 4 + size, memoryview(body)[4 + size :]
    if make is None:
        return None, at
    try:
        engine = make()
        data = engine.decompress(rest, limit)
        return data, start + len(rest) - len(engine.unused_data if engine.eof else b"")
    except _FAILURES:
        if blob[at : at + 4] != _LOCAL:
            raise  # a central entry at no local header: no member a reader finds
        # a reader has what the body gave before its break (a streamed one: round 20)
        data, _, used = _salvaged(make, rest, limit)
        return data, start + used


__all__ = ["CIPHERS", "Budget", "View", "unescape", "views"]
