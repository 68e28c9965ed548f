"""The search: a candidate's files against the secret index, judged by the thresholds.

What is evidence (each rule names a way a harness can carry answers; none is a word alone):

- `verbatim`: a run of at least `LONG` characters (normal form) of one task's input or
  reference material (a solution, a test file, a patch) that no other task shares;
- `paired`: a whole input with its own task's answer within `PAIR_WINDOW` characters (a
  text -> label table, one row is enough);
- `input`: whole inputs of `MANY` tasks or more, wherever they are (pieces across files count
  when together they cover the input);
- `fragments`: a run of `GRAM`+ characters that only one task's input holds, from `FEW`
  tasks or more (a table keyed by the first words of each text);
- `digest`: a digest of an input (any `hashlib` hash, crc32 or adler32; in hex, or its first
  `DIGEST_PREFIX` digits, in base64, as a decimal integer of 8 digits or more, or as raw
  bytes, its first `RAW_PREFIX`): a
  table keyed by hashes.
- `undecoded`: encoded or compressed data past the decoding budget (a stream that inflates to
  more, a blob too large, a layer below the third): what it holds cannot be searched, so it
  is not let through.
- `opaque`: bytes that look compressed or encrypted (in a file, or in a blob it decodes)
  that no reading consumed (`coverage`): what they hold cannot be searched, so it is not
  let through.
- `unread`: more changed bytes than the check reads (`MAX_JUDGED_BYTES`): a search costs
  seconds per megabyte (tens of seconds for a megabyte of digits, each run read as a number in
  three bases), so a candidate of 100 MB would stall the host for half an hour; not searched,
  and so not let through.

A label alone, or a word of a text (`injection`, `benign`, a keyword rule), is never evidence.
Only what the candidate added is judged: a match the baseline (the seed) already holds is
not its Worker's doing.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from itertools import accumulate

from flashrsi_dagster.contamination import coverage
from flashrsi_dagster.contamination.decode import (
    CIPHERS,
    MAX_DECODED_BYTES,
    MAX_DEPTH,
    MAX_REWORK_BYTES,
    Budget,
    View,
    unescape,
    views,
)
from flashrsi_dagster.contamination.index import (
    DIGEST_PREFIX,
    GRAM,
    MIN_INPUT,
    RAW_PREFIX,
    SecretIndex,
)
from flashrsi_dagster.contamination.normalise import FORMS, Stream

LONG = 48
MAX_JUDGED_BYTES = 4 << 20
"""Bytes of a candidate's changed files one verdict searches, at most (`unread` past it). Kept
at 4 MB with the faster search: a code tree still costs seconds a megabyte, and a random
binary much past 3 MB spends the decoding budget on the magics it holds (docs/host-duties.md)."""
MANY = 3
FEW = 5
"""Tasks whose own fragments (shared with no other task) make a `fragments` hit."""
PAIR_WINDOW = 40
COVERED = 0.95
"""The part of an input its matches must cover to count as the whole input."""
RULES = {
    "verbatim": f"a verbatim run of {LONG}+ characters of one task's input or reference",
    "paired": "a task's input beside its answer",
    "input": f"the whole inputs of {MANY} or more tasks",
    "fragments": f"fragments only one task's input holds, of {FEW} or more tasks",
    "digest": "a digest of a task's input",
    "undecoded": f"more encoded or compressed data than the check decodes "
    f"({MAX_DECODED_BYTES >> 20} MB, {MAX_DEPTH} layers deep, "
    f"{MAX_REWORK_BYTES >> 20} MB decoded again): unsearched",
    "unread": f"more changed bytes than the check reads ({MAX_JUDGED_BYTES >> 20} MB): unsearched",
}
_HEX_TOKEN = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{8,160}(?![0-9a-fA-F])")
"""A digest in hex, or in decimal (a crc32 has up to 10 digits, a sha512 up to 155)."""
_B64_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{22,86}")
"""A digest in base64 (16 to 64 bytes, padding dropped)."""


@dataclass(frozen=True)
class Match:
    entry: int
    start: int
    end: int
    """The matched part of the secret, in normal form."""
    file: str
    encoding: str
    lines: tuple[int, int]
    stream: Stream = field(repr=False, compare=False)
    at: tuple[int, int] = field(compare=False)
    """The matched part of the stream."""


@dataclass(frozen=True)
class Found:
    """One piece of evidence: a rule, a task (by number in the index) and where."""

    rule: str
    task: int
    secret: str
    file: str
    encoding: str
    lines: tuple[int, int]
    chars: int


@dataclass
class Scan:
    matches: list[Match] = field(default_factory=list)
    digests: list[Found] = field(default_factory=list)
    cut: bool = False
    """Some encoded data was left undecoded (`Budget.cut`)."""
    opaque: list[str] = field(default_factory=list)
    """A reason per file that holds bytes no reading accounts for (`coverage`)."""


def scan(files: Mapping[str, bytes], index: SecretIndex) -> Scan:
    """Every match of every file's views, and the files it could not read whole."""
    found, budget = Scan(), Budget()
    blobs: dict[str, list[bytes]] = {}
    for path in sorted(files):
        decoded, small = len(budget.decoded), len(budget.small)
        for view in views(path, files[path], budget):
            _search(found, view, index)
        # a file's name is content too: a harness can list its folder and read a table there
        for view in _name_views(path, budget):
            _search(found, replace(view, encoding=_join(NAME, view.encoding)), index)
        names = " ".join([*path.split("/"), *_joined_names(path)])
        found.digests += _digests(View(path, NAME, [(1, names)]), index)
        found.digests += _raw_digests(path, files[path], index)
        blobs[path] = [files[path], *budget.decoded[decoded:], b"".join(budget.small[small:])]
    if len(files) > 1:
        decoded = len(budget.decoded)
        found.matches += _joined(files, index, budget, _coverage(found.matches))
        blobs[JOINED] = [b"", *budget.decoded[decoded:]]  # each file's bytes: measured alone
    found.cut = budget.cut
    found.opaque = coverage.unaccounted(blobs, budget.consumed)
    return found


JOINED = "(files joined in path order)"
"""The file of a view of every file's bytes end to end, nothing between them: a table cut into
many small files, each piece shorter than a shingle, or a compressed stream cut in two files,
that a harness reads back in order (a separator would break the stream)."""


def _joined(files: Mapping[str, bytes], index: SecretIndex, budget: Budget, covered):
    """The matches of the files joined that no single file's view holds already. In the
    joined text's own readings (plain, reversed, rot13: each line a line of one file or two)
    a shingle that lies within one file was searched in that file's views, so only those
    that cross a seam between two files are looked up (and extended as far as they go)."""
    joined, seen = Scan(), b"".join(files[path] for path in sorted(files))
    seams = _seams(files)
    for view in views(JOINED, seen, budget):
        for form in FORMS:
            stream = Stream.of(view.lines, form)
            near = _near(stream, seams) if view.encoding in ("plain", *CIPHERS) else None
            joined.matches += _matches(stream, form, view, index, near)
    return [m for m in joined.matches if not _within(covered.get(m.entry, ()), m.start, m.end)]


def _seams(files: Mapping[str, bytes]) -> set[int]:
    """The lines of the joined text on either side of where one file ends and the next
    begins (one line when a file does not end with a line break), numbered as its views
    number them: the text decoded (a file's bytes as the joined whole decodes them) and cut
    by `str.splitlines`. Counted by `\\n` alone, every seam of files ended by `\\r`, a form
    feed or U+2028 was taken to be on the first line, and a table cut into such files was
    never searched (round 21)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pieces = [decoder.decode(files[path]) for path in sorted(files)]
    text = "".join(pieces) + decoder.decode(b"", final=True)
    breaks = list(accumulate(map(len, text.splitlines(keepends=True))))
    seams = set()
    for at in accumulate(map(len, pieces[:-1]), initial=0):
        line = bisect_right(breaks, at) + 1  # the line the next file's first character is on
        seams.update((line - 1, line))
    return seams


def _near(stream: Stream, lines: set[int]) -> list[tuple[int, int]]:
    """The positions of `stream` a shingle touching one of `lines` can start at, as ranges."""
    spans: list[tuple[int, int]] = []
    ends = (*stream.starts[1:], len(stream.text))[: len(stream.starts)]
    for start, end, number in zip(stream.starts, ends, stream.numbers, strict=True):
        if number not in lines:
            continue
        first, last = max(start - GRAM + 1, 0), min(end + GRAM, len(stream.text))
        if spans and first <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], last))
        else:
            spans.append((first, last))
    return spans


NAME = "file name"
"""The encoding of a view of a file's path (its folders and name), not of its bytes."""


def _name_views(path: str, budget: Budget) -> Iterator[View]:
    """The views of a file's path whole, then the decoded views of its names one a line:
    base64's alphabet holds `/`, so in the whole path an encoded name runs on from its
    folders' names, and a stream's magic (`H4sI`, gzip's) is no longer at a quantum's start."""
    yield from views(path, path.encode(), budget)
    for view in views(path, path.replace("/", "\n").encode(), budget):
        if view.encoding not in ("plain", *CIPHERS):  # the plain names: read in the path
            yield view


def _joined_names(path: str, most: int = 4) -> list[str]:
    """Runs of up to `most` consecutive names of `path` joined with nothing between them: a
    digest cut by a path separator, as git names a loose object (`ab/cdef…`), read whole.
    (Each name is read alone beside them: base64's alphabet holds `/`, so in the whole path a
    digest's base64 as a file's name is one token with its folders, and matches nothing.)"""
    names = path.split("/")
    return [
        "".join(names[at : at + n]) for n in range(2, most + 1) for at in range(len(names) - n + 1)
    ]


def _join(outer: str, inner: str) -> str:
    return outer if inner == "plain" else f"{inner}+{outer}"


def _search(found: Scan, view: View, index: SecretIndex) -> None:
    for form in FORMS:
        found.matches += _matches(Stream.of(view.lines, form), form, view, index)
    if not view.encoding.startswith(CIPHERS) and not view.encoding.endswith(CIPHERS):
        found.digests += _digests(view, index)  # a digest is not written reversed


def _raw_digests(path: str, data: bytes, index: SecretIndex) -> Iterator[Found]:
    """Digests kept as bytes (`md5(text).digest()` as a key): in the file's bytes (a pickle,
    a binary file) or in its bytes literals (`b'\\x8f;...'`, unescaped)."""
    forms = [data] if not data.isascii() else []
    if b"\\x" in data:
        text = unescape(data.decode("utf-8", "replace"))
        forms.append(text.encode("latin-1", "replace"))
    for form in forms:
        digests, width = index.raw_digests, RAW_PREFIX
        for at in index.raw_keys().positions(form):
            task = digests.get(form[at : at + width])
            if task is not None:
                line = data.count(b"\n", 0, at) + 1
                lines = (line, line) if form is data else (1, data.count(b"\n") + 1)
                yield Found("digest", task, "input", path, "bytes", lines, 0)


def _matches(
    stream: Stream, form: str, view: View, index: SecretIndex, near: list | None = None
) -> Iterator[Match]:
    """The stream's matches, each run extended as far as it goes; its shingles starting in
    `near`'s ranges alone when given."""
    text, grams, reached = stream.text, index.grams[form], {}
    encoding = view.encoding if form == "normal" else f"{form}+{view.encoding}"
    spans = near if near is not None else [(0, len(text))]
    keys = index.gram_keys(form)  # the positions that may hold a shingle, found in C
    for p in (p for first, last in spans for p in keys.positions(text, first, last)):
        pairs = grams.get(text[p : p + GRAM])
        if not pairs:
            continue
        for entry, offset in pairs:
            key = (entry, p - offset)
            if reached.get(key, -1) > p:
                continue  # inside a run this alignment already extended over
            secret = index.entries[entry].text
            start, end, at = _extend(text, secret, p, offset)
            reached[key] = at[1]
            yield Match(entry, start, end, view.file, encoding, stream.lines(*at), stream, at)


def _extend(text: str, secret: str, p: int, offset: int):
    back = 0
    while back < min(p, offset) and text[p - back - 1] == secret[offset - back - 1]:
        back += 1
    ahead = GRAM
    limit = min(len(text) - p, len(secret) - offset)
    while ahead < limit and text[p + ahead] == secret[offset + ahead]:
        ahead += 1
    return offset - back, offset + ahead, (p - back, p + ahead)


_B85_TOKEN = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{20,80}")
_A85_TOKEN = re.compile(r"[!-u]{20,82}")
"""A digest in base85 or Ascii85 (16 to 64 bytes; the quotes of a string literal are letters of
Ascii85, so they are stripped too), read back to hex."""


def _digests(view: View, index: SecretIndex) -> Iterator[Found]:
    for number, line in _with_tokens(view.lines):
        hexes = [t.lower() for t in _HEX_TOKEN.findall(line)]
        # a pickled or marshalled string's length byte may be a hex digit (`8` before 56)
        hexes += [t[1:] for t in hexes if len(t) % 2]
        tokens = hexes + _B64_TOKEN.findall(line)
        tasks = [index.digests.get(t, index.digests.get(t[:DIGEST_PREFIX])) for t in tokens]
        # whole digests only: a long identifier decodes as base85 too, to random bytes
        tasks += [index.digests.get(hexed) for hexed in _other_digests(line)]
        for task in tasks:
            if task is not None:
                yield Found("digest", task, "input", view.file, view.encoding, (number, number), 0)


def _with_tokens(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines that hold a token a digest could be (in order): the others yield nothing,
    and a binary file's view has tens of thousands of them (five `findall`s a line cost
    seconds). The tokens are found in all the lines joined by newlines, a few scans in C: no
    token holds a newline, and each pattern reads one at a line's ends as it reads the line's
    start or end."""
    joined = "\n".join(line for _, line in lines)
    if joined.count("\n") != max(len(lines) - 1, 0):  # a line held a newline: all of them
        return lines
    starts = list(accumulate((len(line) + 1 for _, line in lines[:-1]), initial=0))
    held = {
        bisect_right(starts, match.start()) - 1
        for pattern in (_HEX_TOKEN, _B64_TOKEN, _B85_TOKEN, _A85_TOKEN)
        for match in pattern.finditer(joined)
    }
    return [lines[at] for at in sorted(held)]


def _other_digests(line: str) -> list[str]:
    """The line's tokens read as a digest in base32 or base85 / Ascii85, in hex (a key
    `b32encode(md5(text).digest())`)."""
    found = []
    decoders = [
        (_B64_TOKEN, lambda t: base64.b32decode(t + "=" * (-len(t) % 8), casefold=True)),
        (_B85_TOKEN, base64.b85decode),
        (_A85_TOKEN, base64.a85decode),
    ]
    for pattern, decode in decoders:
        for token in pattern.findall(line):
            # a string literal's quotes (and the `:` or `,` after it) may have stuck to it
            for run in dict.fromkeys((token, token.strip("'\":,"), token[1:-1], token[1:-2])):
                with contextlib.suppress(ValueError):  # binascii.Error is one
                    if 16 <= len(raw := decode(run)) <= 64:
                        found.append(raw.hex())
    return found


def unread(files: Mapping[str, bytes]) -> list[str]:
    """The rule `files` break by their size alone (none when the check reads them)."""
    return [RULES["unread"]] if sum(map(len, files.values())) > MAX_JUDGED_BYTES else []


def judge(candidate: Scan, baseline: Scan, index: SecretIndex) -> tuple[list[Found], list[str]]:
    """The evidence in `candidate` that `baseline` does not hold, and the rules it breaks."""
    old = _coverage(baseline.matches)
    new = [m for m in candidate.matches if not _within(old.get(m.entry, ()), m.start, m.end)]
    known = {(d.task, d.file) for d in baseline.digests}
    found = [d for d in candidate.digests if (d.task, d.file) not in known]
    found += _verbatim(new, index)
    found += _paired(new, index)
    inputs = list(_whole_inputs(new, index))
    if len({f.task for f in inputs}) >= MANY:
        found += inputs
    fragments = list(_fragments(new, index))
    if len({f.task for f in fragments}) >= FEW:
        found += fragments
    broken = [RULES[rule] for rule in RULES if any(f.rule == rule for f in found)]
    if candidate.cut:  # a table past 4 MB of padding in one gzip stream would pass unread
        broken.append(RULES["undecoded"])
    broken += candidate.opaque  # a table in bytes no reading knows would pass unread
    return found, broken


def _coverage(matches: Iterable[Match]) -> dict[int, list[tuple[int, int]]]:
    covered: dict[int, list[tuple[int, int]]] = {}
    for m in matches:
        covered.setdefault(m.entry, []).append((m.start, m.end))
    return covered


def _within(spans: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start and end <= b for a, b in spans)


def _found(rule: str, m: Match, index: SecretIndex) -> Found:
    entry = index.entries[m.entry]
    return Found(rule, entry.task, entry.name, m.file, m.encoding, m.lines, m.end - m.start)


def _verbatim(matches: list[Match], index: SecretIndex) -> Iterator[Found]:
    for m in matches:
        long = m.end - m.start >= LONG
        if long and index.holders(index.entries[m.entry].text[m.start : m.end]) <= 1:
            yield _found("verbatim", m, index)


def _paired(matches: list[Match], index: SecretIndex) -> Iterator[Found]:
    for m in matches:
        entry = index.entries[m.entry]
        answers = index.answers.get(entry.task)
        if entry.kind != "input" or not answers or not _whole(m, entry.text):
            continue
        text, (start, end) = m.stream.text, m.at
        near = text[max(0, start - PAIR_WINDOW) : start] + "\0" + text[end : end + PAIR_WINDOW]
        if any(answer in near for answer in answers):
            yield _found("paired", m, index)


def _fragments(matches: list[Match], index: SecretIndex) -> Iterator[Found]:
    """A match in an input that no other task's secrets share: it names its task, as the
    key of a table (`text.startswith(...)`) would."""
    for m in matches:
        entry = index.entries[m.entry]
        if entry.kind == "input" and index.holders(entry.text[m.start : m.end]) <= 1:
            yield _found("fragments", m, index)


def _whole(m: Match, secret: str) -> bool:
    return len(secret) >= MIN_INPUT and (m.end - m.start) >= COVERED * len(secret)


def _whole_inputs(matches: list[Match], index: SecretIndex) -> Iterator[Found]:
    """One piece of evidence per input whose matches, together, cover it (its largest
    match names where)."""
    by_entry: dict[int, list[Match]] = {}
    for m in matches:
        if index.entries[m.entry].kind == "input":
            by_entry.setdefault(m.entry, []).append(m)
    for entry, found in by_entry.items():
        secret = index.entries[entry].text
        covered = bytearray(len(secret))
        for m in found:
            covered[m.start : m.end] = b"\1" * (m.end - m.start)
        if len(secret) >= MIN_INPUT and sum(covered) >= COVERED * len(secret):
            largest = max(found, key=lambda m: m.end - m.start)
            yield _found("input", largest, index)
