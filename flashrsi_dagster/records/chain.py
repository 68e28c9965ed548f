"""The integrity chain of an experiment folder: every file the framework wrote, in order, each
entry hashing the one before, and the check of a folder against it.

    records/chain.jsonl   one JSON line per framework write, appended and fsynced
    records/chain.head    `<seq> <hash>` of the last entry: the anchor, rewritten in place

An entry is `{seq, at, op, path, prev, hash}` plus what its `op` needs; every path is relative
to the experiment folder:

- `write` (`sha256`, `size`): `path` was replaced whole and now holds exactly these bytes.
- `append` (`sha256`, `size`): a line was appended; the digest is of the whole file after it.
- `move` (`source`): `source` was renamed to `path`.   - `remove`: `path` was deleted.
- `revert` (`reverts`): the entry just before never took effect (its writer died first).

`hash` is the sha256 of the entry's canonical JSON without `hash`; that JSON holds `prev`, the
hash of the entry before (64 zeros for the first), so each hash covers the whole history.

Covered: `run_meta.json`, everything under `records/` and under `dagster/` (the IO manager's
derived values: the UI shows them, so they must not be quietly rewritten either). A file there
that no entry accounts for is refused, except the chain's own two files and the temp files of
atomic writes (`.<name>.*tmp`). Not covered: `snapshots/` (git: the chained records name each
snapshot by its content hash), `logs/` (diagnostics) and the home's `.dagster/` (Dagster's own).

Threat model. The chain has no secret: the hash is public. It detects changed, missing, added
or truncated files by anything that does not also rewrite the chain *and* its head
consistently; a chain rewritten from scratch (however consistent) while the head is left alone;
and any rewrite at all while a framework process that used the chain is still running (it
remembers the last entry it saw). An actor who can write the home, reads this module and
rewrites records, chain and head together while no framework process runs is not detected.
Keeping agents out of the home is the jail's job (DESIGN.md, "Confinement"); the chain is the
tripwire when that fails, and the record of what the framework itself wrote.

Crash semantics (see `journal.py` for the writer): at most the last entry is in flight, in one
of the states `in_flight` allows; nothing else is accepted, so the crash window lets nobody
choose content. The one thing indistinguishable from a crash is rolling back the last entry's
file to its previous (chained) state, after which the framework redoes that write.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

CHAIN = "records/chain.jsonl"
HEAD = "records/chain.head"
GENESIS = "0" * 64
COVERED = ("run_meta.json", "records", "dagster")
OPS = {"write", "append", "move", "remove", "revert"}
_TYPES = {"seq": int, "size": int, "reverts": int}
"""Entry fields that are not strings (None fields are left out of a line)."""
_CHUNK = 1 << 20


class IntegrityError(RuntimeError):
    """An experiment folder that does not match its chain; `problems` name each file."""

    HEADER = "the experiment's records fail their integrity check:"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join([self.HEADER, *(f"  {p}" for p in self.problems)]))

    @classmethod
    def from_message(cls, message: str) -> IntegrityError:
        """Rebuilt from its text (as a Dagster step failure carries it)."""
        lines = message.split(cls.HEADER, 1)[-1].splitlines()
        return cls([line.strip() for line in lines if line.strip()])


@dataclass(frozen=True)
class FileState:
    sha256: str
    size: int


def state_of(path: Path) -> FileState | None:
    """What a file holds now (None when there is no file)."""
    digest, size = hashlib.sha256(), 0
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return FileState(digest.hexdigest(), size)


def _canonical(fields: dict) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True, kw_only=True)
class Entry:
    seq: int
    op: str
    path: str
    sha256: str | None = None
    size: int | None = None
    source: str | None = None
    reverts: int | None = None
    at: str
    prev: str
    hash: str = ""

    @property
    def state(self) -> FileState | None:
        return FileState(self.sha256, self.size) if self.sha256 and self.size is not None else None

    def fields(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None and k != "hash"}

    def sealed(self) -> Entry:
        return replace(self, hash=hashlib.sha256(_canonical(self.fields())).hexdigest())

    def line(self) -> bytes:
        """In field order, for people; the hash is over the sorted form, for machines."""
        line = json.dumps({**self.fields(), "hash": self.hash}, separators=(",", ":"))
        return line.encode() + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> Entry:
        """An entry from its line; ValueError when it is not one, or its hash is wrong."""
        try:
            fields = json.loads(line)
            entry = cls(**fields)
        except (TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a chain entry ({exc})") from None
        wrong = [k for k, v in fields.items() if not isinstance(v, _TYPES.get(k, str))]
        if wrong:
            raise ValueError(f"{', '.join(wrong)} of the wrong type")
        if entry.sealed().hash != entry.hash:
            raise ValueError("its hash does not match its content")
        if entry.op not in OPS or not _relative(entry.path):
            raise ValueError(f"bad op {entry.op!r} or path {entry.path!r}")
        if entry.op in ("write", "append") and entry.state is None:
            raise ValueError(f"a {entry.op} without sha256 and size")
        if entry.op == "move" and not (entry.source and _relative(entry.source)):
            raise ValueError("a move without a source")
        return entry


def _relative(path: str) -> bool:
    parts = Path(path).parts
    return bool(parts) and not Path(path).is_absolute() and ".." not in parts


_NEVER = object()
"""A path no entry had named yet (as opposed to one the framework removed)."""


@dataclass
class Replay:
    """The chain applied in order: what each file the framework wrote must hold now.

    `files` maps a path to its state (None: removed or moved away); `versions` keeps each
    path's states since it was last replaced whole, for messages that say what is missing."""

    files: dict[str, FileState | None] = field(default_factory=dict)
    versions: dict[str, list[tuple[int, FileState | None]]] = field(default_factory=dict)
    last: Entry | None = None
    before: Entry | None = None
    """The entry before the last."""
    before_last: dict[str, tuple] = field(default_factory=dict)
    """The states the last entry replaced: what undoes it."""

    def apply(self, entry: Entry) -> None:
        """Apply the next entry; ValueError when it does not follow the last one."""
        expected = (self.last.seq + 1, self.last.hash) if self.last else (1, GENESIS)
        if (entry.seq, entry.prev) != expected:
            raise ValueError(f"it does not follow entry {expected[0] - 1}")
        if entry.op == "revert":
            if self.last is None or entry.reverts != self.last.seq or self.last.op == "revert":
                raise ValueError("it reverts an entry other than the one before it")
            undo, self.before_last = self.before_last, {}
        else:
            undo = self._prior(entry)
            self.before_last = undo
        for path, (state, versions) in self._changes(entry, undo).items():
            if state is _NEVER:
                self.files.pop(path, None)
                self.versions.pop(path, None)
            else:
                self.files[path], self.versions[path] = state, versions
        self.before, self.last = self.last, entry

    def expected(self, path: str) -> FileState | None:
        return self.files.get(path)

    def prior(self, path: str) -> FileState | None:
        """What `path` held before the last entry (its state now if the entry left it alone)."""
        state = self.before_last.get(path, (self.files.get(path),))[0]
        return None if state is _NEVER else state

    def paths(self, entry: Entry) -> list[str]:
        return [entry.path, entry.source] if entry.op == "move" and entry.source else [entry.path]

    def _prior(self, entry: Entry) -> dict[str, tuple]:
        return {
            p: (self.files.get(p, _NEVER), list(self.versions.get(p, [])))
            for p in self.paths(entry)
        }

    def _changes(self, entry: Entry, undo: dict[str, tuple]) -> dict[str, tuple]:
        if entry.op == "revert":
            return undo
        if entry.op == "write":
            return {entry.path: (entry.state, [(entry.seq, entry.state)])}
        if entry.op == "append":
            versions = [*self.versions.get(entry.path, []), (entry.seq, entry.state)]
            return {entry.path: (entry.state, versions)}
        if entry.op == "remove":
            return {entry.path: (None, [(entry.seq, None)])}
        moved = self.files.get(entry.source or "")
        return {
            entry.path: (moved, [(entry.seq, moved)]),
            entry.source or "": (None, [(entry.seq, None)]),
        }


def read_chain(data: bytes) -> tuple[Replay, list[bytes], str | None]:
    """Replay a chain file's bytes: (replay, complete lines, the first problem or None).

    A last line without its newline is ignored: a crash tore it before the entry was whole,
    and a writer only acts after its entry is whole."""
    replay, lines = Replay(), data.split(b"\n")[:-1]
    for number, line in enumerate(lines, start=1):
        try:
            replay.apply(Entry.parse(line))
        except ValueError as exc:
            return replay, lines, f"{CHAIN}: entry {number} broken: {exc}"
    return replay, lines, None


def read_head(path: Path) -> tuple[int, str] | None:
    try:
        seq, digest = path.read_text().split()
        return int(seq), digest
    except (FileNotFoundError, ValueError):
        return None


def head_line(entry: Entry) -> bytes:
    """Fixed width, so rewriting it in place never leaves a longer old tail behind."""
    return f"{entry.seq:012d} {entry.hash}\n".encode()


def in_flight(replay: Replay, head: tuple[int, str] | None) -> str:
    """How the last entry may stand after a crash, given the head: "done" (head on it; its
    files new, or as before it, or an append torn), "not begun" (head one behind: the writer
    died before touching the file, so it must be as before), or "refused" (anything else)."""
    last = replay.last
    if last is None:
        return "done" if head is None else "refused"
    if last.seq == 1 and head is None:
        return "not begun"  # the very first entry, its head not yet written
    if head == (last.seq, last.hash):
        return "done"
    before = replay.before
    if before is not None and head == (before.seq, before.hash):
        return "not begun"
    return "refused"


def walk(root: Path) -> Iterator[str]:
    """Every file under the covered parts of `root`, relative, chain and scratch left out."""
    for part in COVERED:
        top = root / part
        if top.is_file() or top.is_symlink():
            yield part
            continue
        for folder, _, files in os.walk(top):
            for name in files:
                rel = (Path(folder) / name).relative_to(root).as_posix()
                if rel not in (CHAIN, HEAD) and not _is_scratch(name):
                    yield rel


def _is_scratch(name: str) -> bool:
    """Temp files of atomic writes (`.<name>.XXXX.tmp`), renamed into place or left by a crash."""
    return name.startswith(".") and name.endswith(".tmp")
