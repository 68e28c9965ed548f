"""Checking an experiment folder against its chain: every covered file, the chain's links, its
head, and (inside a framework process) the last entry that process saw. See `chain.py`."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.records.chain import (
    CHAIN,
    HEAD,
    Entry,
    FileState,
    Replay,
    in_flight,
    read_chain,
    read_head,
    state_of,
    walk,
)

FileId = tuple[int, int]
"""(device, inode) of a chain file: another one in its place is a file replaced, not edited."""


@dataclass(frozen=True)
class Anchor:
    """The last entry a live process wrote or read: its seq (as the process's replay has
    it), its line, the byte of the chain its line ends at, and the chain file it was in."""

    seq: int
    line: bytes
    end: int
    file: FileId | None = None


def problems_of(root: Path, anchor: Anchor | None = None) -> list[str]:
    """Every problem of the folder at `root`, one line each naming the file; [] if it verifies."""
    root = Path(root)
    chain = root / CHAIN
    if not chain.exists() or chain.stat().st_size == 0:
        unchained = unchained_problem(root)
        return [unchained] if unchained else []
    with open(chain, "rb") as handle:
        data, now = handle.read(), file_id(handle.fileno())
    replay, lines, broken = read_chain(data)
    if broken:
        return [broken]
    problems = anchor_problem(data, lines, anchor, now)
    head = read_head(root / HEAD)
    stance = in_flight(replay, head)
    if stance == "refused":
        problems.append(_head_problem(head, replay))
    if problems:
        return problems
    for rel in sorted(set(replay.files) | set(walk(root))):
        problem = file_problem(root, rel, replay, stance)
        if problem:
            problems.append(problem)
    return problems


def unchained_problem(root: Path) -> str | None:
    """A folder with covered files but no chain entries: refused, whatever the files say."""
    present = sorted(walk(root))
    if not present:
        return None
    return (
        f"{CHAIN}: missing or empty, yet {len(present)} covered file(s) exist, e.g. "
        f"{present[0]} (written before records were chained, or the chain was deleted)"
    )


def file_problem(root: Path, rel: str, replay: Replay, stance: str = "done") -> str | None:
    """What is wrong with one file, or None when it holds what the chain allows (`stance`
    from `in_flight`, or "settled" when no entry may be in flight any more)."""
    actual = state_of(root / rel)
    allowed = _allowed(rel, replay, stance)
    if actual in allowed or _torn(root / rel, rel, replay, stance):
        return None
    versions = replay.versions.get(rel)
    if rel not in replay.files or versions is None:
        return f"{rel}: added outside the chain"
    seq, last = versions[-1][0], replay.last
    if stance == "not begun" and last and last.seq == seq and actual == replay.expected(rel):
        return (
            f"{rel}: changed by chain entry {last.seq}, which {HEAD} does not cover: the chain "
            "was extended outside the framework"
        )
    if actual is None:
        return f"{rel}: record missing (the framework wrote it at chain entry {seq})"
    if replay.files[rel] is None:
        return f"{rel}: added outside the chain (the framework removed it at chain entry {seq})"
    earlier = [i for i, (_, state) in enumerate(versions) if state == actual]
    if earlier:
        since = len(versions) - 1 - earlier[-1]
        return (
            f"{rel}: truncated: the last {since} appended line(s) are missing (it holds what "
            f"chain entry {versions[earlier[-1]][0]} recorded, not chain entry {seq})"
        )
    return f"{rel}: content changed since the framework wrote it (chain entry {seq})"


def _allowed(rel: str, replay: Replay, stance: str) -> list[FileState | None]:
    """The states `rel` may hold: its last one, unless the last entry may be in flight."""
    last = replay.last
    if stance == "settled" or last is None or last.op == "revert" or rel not in replay.paths(last):
        return [replay.expected(rel)]  # a revert changes no file: nothing of it is in flight
    if stance == "not begun":
        return [replay.prior(rel)]
    return [replay.expected(rel), replay.prior(rel)]


def _torn(path: Path, rel: str, replay: Replay, stance: str) -> bool:
    """An append the crash cut short: the old file, then part of the line without its end."""
    last = replay.last
    if stance != "done" or last is None or last.op != "append" or last.path != rel:
        return False
    before, after = replay.prior(rel), replay.expected(rel)
    old_size = before.size if before else 0
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if not (after and old_size < len(data) < after.size) or b"\n" in data[old_size:]:
        return False
    return before is None or hashlib.sha256(data[:old_size]).hexdigest() == before.sha256


def anchor_problem(
    data: bytes, lines: list[bytes], anchor: Anchor | None, now: FileId | None = None
) -> list[str]:
    """The chain's `lines` (of `data`, the file `now`) must still hold the entry a live
    process last wrote or read."""
    if anchor is None:
        return []
    if len(lines) >= anchor.seq and lines[anchor.seq - 1] + b"\n" == anchor.line:
        return []
    return [rewritten(anchor, data, now)]


def rewritten(anchor: Anchor, data: bytes, now: FileId | None) -> str:
    """The refusal of a chain that no longer holds `anchor` where this process left it, with
    what it holds instead (`anchor_detail`), for whoever has to find out why."""
    return (
        f"{CHAIN}: entry {anchor.seq} is not the one this process wrote or read: the chain "
        f"was rewritten while the experiment ran ({anchor_detail(data, anchor, now)})"
    )


def anchor_detail(data: bytes, anchor: Anchor, now: FileId | None) -> str:
    """What the chain holds (`data`, all of it) where the anchor's line should end, and what
    it holds last; `now`: the chain file there now, if known. Names entries (seq, op, path,
    time, hash), never their files' content."""
    line, end = anchor.line, anchor.end
    start = end - len(line)
    here = data[start:end] if len(data) >= end else b""
    found = data.find(line)
    parts = [
        f"expected {_entry_summary(line)} at bytes {start}-{end}",
        f"the chain now: {len(data)} bytes, there: {_entry_summary(here) if here else 'nothing'}",
        f"its last line: {_entry_summary(_last_line(data))}",
        "the expected line is " + (f"at byte {found}" if found >= 0 else "nowhere in it"),
    ]
    if anchor.seq != _seq_of(line):
        parts.append(f"this process's replay ends at entry {anchor.seq}, not at its last line")
    if now is not None and anchor.file is not None and now != anchor.file:
        parts.append(f"the chain file was replaced: (device, inode) {anchor.file}, now {now}")
    return "; ".join(parts)


def file_id(fd: int) -> FileId:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _last_line(data: bytes) -> bytes:
    complete = data[: data.rfind(b"\n") + 1]
    return complete[complete.rfind(b"\n", 0, len(complete) - 1) + 1 :]


def _seq_of(line: bytes) -> int | None:
    try:
        return Entry.parse(line).seq
    except ValueError:
        return None


def _entry_summary(line: bytes) -> str:
    if not line:
        return "no line"
    try:
        e = Entry.parse(line)
    except ValueError as exc:
        return f"{len(line)} bytes that are no entry ({exc}): {line[:80]!r}"
    return f"entry {e.seq} ({e.op} {e.path} at {e.at}, hash {e.hash[:12]}…)"


def _head_problem(head: tuple[int, str] | None, replay: Replay) -> str:
    last: Entry | None = replay.last
    ends = f"entry {last.seq}" if last else "no entry"
    if head is None:
        return f"{HEAD}: missing or unreadable, while {CHAIN} ends at {ends}"
    return (
        f"{HEAD}: names entry {head[0]} ({head[1][:12]}…), but {CHAIN} ends at {ends}: the "
        "chain was rewritten or extended outside the framework"
    )
