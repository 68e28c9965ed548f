"""The beacon guard, a free prune before any run: a candidate that changes Python must place
an activation beacon — a call `activation_beacon("<mechanism>")` on the code path its
mechanism takes — in the lines it adds, so Gate-b can later tell whether the mechanism ever
fired. A Python edit without one is refused (blocked_l1); edits to prompts and other files
need none. A name is what the runtime records (MiniAgent's `runtime/beacon.py`, into the
trajectory's `metadata["beacons"]`): 1 to 64 characters of letters, digits, `_`, `.`, `:`
and `-`.

The diff says which lines each file gains (its `+++` headers unquoted as git quotes them);
each Python file is then read as Python reads it — its declared encoding (UTF-8 only), a
lone carriage return as a line break, tokens — so a beacon in a comment or a string is no
beacon, and code hidden from a plain text reading (after a carriage return inside a comment,
behind a UTF-7 coding cookie) is still code. Nothing is imported or run.

Honest limit (as the SOP's implementation says of its own): the guard proves a beacon was
added, not that it sits inside the mechanism's trigger; an unconditional beacon makes Gate-b
a no-op, and promotion then rests on the full-set win alone."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable

NAME = re.compile(r"[\w.:-]{1,64}")
Source = Callable[[str], bytes | None]
"""The new version's bytes of a path the diff names (None: the path is gone)."""

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,\d+)? @@")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
}


def gained(diff: str) -> dict[str, set[int]]:
    """Per file of a unified diff (`git diff` output), the numbers of the lines its new
    version gains (lines as git counts them: split at `\\n` only)."""
    out: dict[str, set[int]] = {}
    current: str | None = None
    header, number = False, 0
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            current, header = None, True
        elif header and line.startswith("+++ "):
            current = _header_path(line[4:])
            if current is not None:
                out.setdefault(current, set())
        elif line.startswith("@@"):
            header = False
            match = _HUNK.match(line)
            number = int(match["start"]) if match else 0
        elif current is not None and not header:
            if line.startswith("+"):
                out[current].add(number)
                number += 1
            elif line.startswith(" "):
                number += 1
    return out


def _header_path(text: str) -> str | None:
    """The path of a `+++` header: C-quoted when git quotes it (non-ASCII, `"`, `\\`, control
    characters), followed by a tab when it holds a space; None for `/dev/null`."""
    if text.startswith('"') and text.count('"') >= 2:
        text = _unquote(text[1 : text.rindex('"')])
    elif text.endswith("\t"):
        text = text[:-1]
    if text == "/dev/null":
        return None
    return text[2:] if text.startswith("b/") else text


def _unquote(body: str) -> str:
    out, i = bytearray(), 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            if body[i + 1] in "01234567":
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1]) & 0xFF))
            i += 2
            continue
        out += body[i].encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


class _Unreadable(ValueError):
    """A file the guard cannot read as Python does."""


def _python(data: bytes) -> tuple[list[tokenize.TokenInfo], list[range]]:
    """The file's tokens as Python reads it, and per git line (0-based) the Python lines
    it spans (a lone carriage return inside a git line is a line break for Python)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise _Unreadable(str(exc)) from None
    if encoding not in ("utf-8", "utf-8-sig"):
        raise _Unreadable(f"it declares the source encoding {encoding}; only UTF-8 is read")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"it is not UTF-8: {exc.reason}") from None
    spans, start = [], 1
    for line in text.split("\n"):
        breaks = line.removesuffix("\r").count("\r")
        spans.append(range(start, start + breaks + 1))
        start += breaks + 1
    source = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise _Unreadable(f"it does not tokenize as Python: {exc}") from None
    return tokens, spans


def beacon_calls(tokens: list[tokenize.TokenInfo]) -> dict[int, str]:
    """Python line -> the beacon name of a call `activation_beacon("<name>")` starting there
    (a plain string literal with a well-formed name; comments and strings hold no calls)."""
    calls = {}
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.COMMENT)]
    for i, tok in enumerate(significant):
        if tok.type != tokenize.NAME or tok.string != "activation_beacon":
            continue
        call = significant[i + 1 : i + 4]
        shape = [(t.type, t.string if t.type == tokenize.OP else "") for t in call]
        if shape != [(tokenize.OP, "("), (tokenize.STRING, ""), (tokenize.OP, ")")]:
            continue
        try:
            name = ast.literal_eval(call[1].string)
        except (ValueError, SyntaxError):
            continue
        if isinstance(name, str) and NAME.fullmatch(name):
            calls[tok.start[0]] = name
    return calls


def _added(data: bytes, lines: set[int]) -> tuple[bool, set[str]]:
    """Whether the git lines `lines` of the file hold code, and the beacons called there."""
    tokens, spans = _python(data)
    added = {p for n in lines if 0 < n <= len(spans) for p in spans[n - 1]}
    code = any(t.start[0] in added for t in tokens if t.type not in _NOT_CODE)
    return code, {name for line, name in beacon_calls(tokens).items() if line in added}


def _python_files(diff: str, source: Source):
    """(path, whether its added lines hold code, their beacons, why it is unreadable)."""
    for path, lines in gained(diff).items():
        if not path.endswith(".py") or not lines:
            continue
        data = source(path)
        if data is None:
            yield path, True, set(), "it is no file of the candidate"
            continue
        try:
            code, names = _added(data, lines)
        except _Unreadable as exc:
            yield path, True, set(), str(exc)
            continue
        yield path, code, names, None


def beacon_names(diff: str, source: Source) -> set[str]:
    """The beacons the diff's added Python lines call (what Gate-b looks for)."""
    return {name for _, _, names, _ in _python_files(diff, source) for name in names}


def beacon_refusal(diff: str, source: Source) -> str | None:
    """Why the candidate is refused, or None: every changed Python file that gains code must
    gain a beacon call among those lines (a comment or a string mentioning one does not
    count), and must read as UTF-8 Python tokens."""
    missing, unreadable = [], []
    for path, code, names, problem in _python_files(diff, source):
        if problem is not None:
            unreadable.append(f"{path} ({problem})")
        elif code and not names:
            missing.append(path)
    if unreadable:
        return f"beacon guard: cannot read {', '.join(unreadable)}"
    if not missing:
        return None
    return (
        f"beacon guard: {', '.join(missing)} gain(s) code without an activation beacon; add "
        '`activation_beacon("<mechanism>")` where the new mechanism acts (a name of 1 to 64 '
        "letters, digits, '_', '.', ':' or '-')"
    )


COMPILED = (".so", ".pyd")
"""Python in a form the guard cannot read: extension modules, which `import` prefers over the
`.py` beside them (bytecode never enters a snapshot: the store leaves `*.pyc` out)."""


def compiled_refusal(changed: list[str]) -> str | None:
    """Why a candidate that adds or changes compiled Python is refused, or None (`changed`:
    `<status> <path>` per file, as the candidate's node keeps them)."""
    found = [
        path
        for status, path in (entry.split(" ", 1) for entry in changed)
        if status != "D" and path.endswith(COMPILED)
    ]
    if not found:
        return None
    return (
        f"beacon guard: {', '.join(found)} is compiled Python, which carries no readable "
        "activation beacon; change the source instead"
    )
