"""Snapshots as commits in one git repository per experiment.

Layout under the store root (a bare repository)::

    <root>/                 bare git repo; every snapshot is a commit under refs/snapshots/<id>
      checkouts/<key>.index git index of each checkout folder (stat cache for fast commits)
      checkouts/<key>.base  snapshot id that checkout started from
      tmp/                  temporary indexes of commits in progress, named for the process
                            (`index-<host>-<pid>-<random>`)
      store.lock            held while the repository is made and while a seed is made

A snapshot id is its commit sha. The commit message holds a subject line and, after a blank
line, a JSON document with the full message, metadata, creation time and the components.

Several processes, on one machine or on several sharing the folder over a POSIX path, may
write at once (candidates of one round side by side): objects are content-addressed and
written by git itself; each ref is created by `git update-ref` with "must not exist yet" as
its old value (git's own lock file, created exclusively); every temporary index is private
to its process, and the leftovers of dead processes are swept only by the host that ran them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import git

from flashrsi_dagster.records.atomic import open_own
from flashrsi_dagster.records.json_values import from_json_value, to_json_value
from flashrsi_dagster.records.redaction import REDACTED, Redactor
from flashrsi_dagster.scratch import process_space
from flashrsi_dagster.snapshots.components import COMPONENTS_FILE, Components
from flashrsi_dagster.snapshots.guard import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
    IGNORED_DIRS,
    IGNORED_SUFFIXES,
    Entry,
    Refusal,
    path_problem,
    scan,
)
from flashrsi_dagster.snapshots.protection import (
    PROTECTED_KIND,
    mark_protected,
    protected_changes,
)

_REF_PREFIX = "refs/snapshots/"
_ORIGIN_PREFIX = "refs/origins/"
"""A fork's lineage root from another store: kept (nothing prunes it), never a snapshot."""
_IDENTITY = {
    "GIT_AUTHOR_NAME": "FlashRSI",
    "GIT_AUTHOR_EMAIL": "flashrsi@localhost",
    "GIT_COMMITTER_NAME": "FlashRSI",
    "GIT_COMMITTER_EMAIL": "flashrsi@localhost",
    # Isolate from the user's git config: filters, hooks or autocrlf there could alter bytes.
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
_DIFF_OPTIONS = ("--no-color", "--no-renames", "--no-ext-diff", "--no-textconv")
_EXCLUDES = [f":(exclude,glob)**/{name}/**" for name in sorted(IGNORED_DIRS)] + [
    f":(exclude,glob)**/*{suffix}" for suffix in IGNORED_SUFFIXES
]

_PROTECT = ("-c", "core.protectHFS=true", "-c", "core.protectNTFS=true")
"""The path checks git makes on macOS and Windows, made here too (`_git`)."""
_INVALID_PATH = re.compile(r"error: invalid path '(.*)'$", re.MULTILINE)
"""How `git add` names a path it refuses (`verify_path`)."""


class SnapshotError(RuntimeError):
    """A snapshot operation that cannot proceed (unknown id, bad folder, bad seed)."""


@dataclass(frozen=True)
class Snapshot:
    id: str
    parent_id: str | None
    tree: str
    created: datetime
    message: str
    metadata: dict[str, Any] = field(default_factory=dict)
    components: Components = field(default_factory=lambda: Components({}))

    @property
    def short_id(self) -> str:
        return self.id[:12]


@dataclass(frozen=True)
class ChangedPath:
    status: Literal["A", "M", "D", "T"]
    """Added, modified, deleted, or type changed (e.g. file <-> symlink, exec bit)."""
    path: str


@dataclass(frozen=True)
class DiffStats:
    files: int
    insertions: int
    deletions: int
    binary_files: int


@dataclass(frozen=True)
class EditOutcome:
    """What became of an edited checkout: a new child snapshot, a no-op, or a refusal."""

    status: Literal["committed", "noop", "refused"]
    parent_id: str
    snapshot: Snapshot | None = None
    changed: tuple[ChangedPath, ...] = ()
    refusals: tuple[Refusal, ...] = ()

    @property
    def protected(self) -> tuple[Refusal, ...]:
        """The refusals for evaluator-protected paths (see `snapshots.protection`)."""
        return tuple(r for r in self.refusals if r.kind == PROTECTED_KIND)

    @property
    def reason(self) -> str | None:
        if self.status == "noop":
            return "the edit changed no declared file (tree identical to the parent)"
        if self.status == "refused":
            return "; ".join(refusal.render() for refusal in self.refusals)
        return None


class SnapshotStore:
    """Creates, commits and checks out immutable harness snapshots in a git repository."""

    def __init__(
        self,
        root: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
        secret_filter: Redactor | None = None,
    ) -> None:
        """`secret_filter` (default: secret-named environment variables) redacts messages and
        metadata, and refuses any file whose bytes, name or symlink target hold a secret value
        it knows, plain or in a simple encoding (see `records.encodings`): a harness must never
        carry credentials into the store. `max_file_bytes` caps each file, `max_total_bytes`
        all files of one snapshot together."""
        self.root = Path(root).resolve()
        self.max_file_bytes = max_file_bytes
        self.max_total_bytes = max_total_bytes
        self._redactor = secret_filter if secret_filter is not None else Redactor()
        # The needles (every encoding of every secret) are compiled once, here.
        self._secrets = self._redactor.scanner if self._redactor.knows_secrets else None
        if self.made_at(self.root):
            self._repo = git.Repo(self.root)
        else:
            # None yet, or another process is making it right now: `git init` writes HEAD
            # before the rest, so only the lock, and checkouts/ made last, say it is done.
            self.root.mkdir(parents=True, exist_ok=True)
            with self._locked():
                self._repo = self._init()
        (self.root / "tmp").mkdir(exist_ok=True)
        _sweep_orphans(self.root / "tmp")
        self._cache: dict[str, Snapshot] = {}

    def _init(self) -> git.Repo:
        if (self.root / "HEAD").exists():  # made by another process, or before checkouts/ was
            repo = git.Repo(self.root)
        else:
            repo = git.Repo.init(self.root, bare=True)
            with repo.config_writer() as config:
                config.set_value("core", "autocrlf", "false")
                config.set_value("gc", "auto", "0")
        (self.root / "checkouts").mkdir(exist_ok=True)
        return repo

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The store's own lock (`store.lock`), across processes and threads."""
        fd = open_own(self.root / "store.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock

    # -- creating snapshots -------------------------------------------------------------

    def create_seed(
        self,
        source_dir: Path,
        components: Components | None = None,
        *,
        message: str = "seed",
        metadata: Mapping[str, Any] | None = None,
    ) -> Snapshot:
        """Capture the declared files of `source_dir` as a root snapshot.

        Without `components`, `<source_dir>/components.yaml` declares them. Capturing the same
        files and components again returns the existing seed instead of a second root, from
        any process: the look-up and the commit hold the store's lock.
        """
        source_dir = Path(source_dir).resolve()
        if not source_dir.is_dir():
            raise SnapshotError(f"harness folder does not exist: {source_dir}")
        if components is None:
            components = Components.from_file(source_dir / COMPONENTS_FILE)
        entries, refusals = self._scan(source_dir, components, strict=False)
        if refusals:
            problems = "; ".join(r.render() for r in self._safe(refusals))
            raise SnapshotError(f"cannot capture harness {source_dir}: {problems}")
        if not entries:
            raise SnapshotError(
                f"harness {source_dir} has no file matching its components "
                f"({components.describe()})"
            )
        leaks = self._leaks(source_dir, [e.path for e in entries])
        if leaks:
            raise SnapshotError(f"cannot capture harness {source_dir}: {leaks[0].render()}")
        with self._temp_index() as index:
            self._git(
                "add",
                "--force",
                "--",
                *(e.path for e in entries),
                index=index,
                work_tree=source_dir,
            )
            tree = self._git("write-tree", index=index)
        with self._locked():
            for known in self.history():
                same = known.tree == tree and known.components == components
                if known.parent_id is None and same:
                    return known
            return self._commit(tree, None, message, metadata, components)

    def commit_child(
        self,
        parent: Snapshot | str,
        checkout: Path,
        *,
        message: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EditOutcome:
        """Commit an edited checkout as a child of `parent`, or say why not."""
        parent = self.get(parent)
        checkout = Path(checkout).resolve()
        if not checkout.is_dir():
            raise SnapshotError(f"checkout folder does not exist: {checkout}")
        components = parent.components
        protected = components.protected or ()
        _, refusals = self._scan(checkout, components, strict=True)
        if refusals:
            refusals = mark_protected(refusals, protected)
            return EditOutcome("refused", parent.id, refusals=self._safe(refusals))
        template = self._checkout_index(checkout, parent.id)
        with self._temp_index(template) as index:
            if not index.exists():
                self._git("read-tree", parent.tree, index=index)
            # Secrets are looked for before `git add`, so a refused edit writes no object.
            leaks = self._leaks(checkout, self._edited_paths(index, checkout))
            if leaks:
                return EditOutcome("refused", parent.id, refusals=tuple(leaks))
            refused = self._add_all(checkout, index)
            if refused:
                return EditOutcome("refused", parent.id, refusals=self._safe(refused))
            tree = self._git("write-tree", index=index)
            if tree == parent.tree:
                return EditOutcome("noop", parent.id)
            touched = self._protected_touched(protected, parent.tree, tree)
            if touched:
                return EditOutcome("refused", parent.id, refusals=self._safe(touched))
            child = self._commit(tree, parent.id, message, metadata, components)
            self._remember_checkout(checkout, index, child.id)
        return EditOutcome("committed", parent.id, child, tuple(self.changed_paths(parent, child)))

    def _add_all(self, checkout: Path, index: Path) -> list[Refusal]:
        """`git add` of the whole checkout; the paths git itself refuses as invalid, as
        refusals. Git's rules are wider than the guard's name list: `.git` in another case
        or with trailing dots or spaces, `git~1` (its NTFS short name), a `.gitmodules`
        link in any spelling; a Worker writing one must not end the experiment's step in
        an exception."""
        try:
            self._git(
                "add", "--all", "--force", "--", ".", *_EXCLUDES, index=index, work_tree=checkout
            )
        except SnapshotError as failed:
            paths = _INVALID_PATH.findall(str(failed))
            if not paths:
                raise
            reason = "a path git refuses (its own metadata in another spelling, or unsafe)"
            return [Refusal(path, reason) for path in dict.fromkeys(paths)]
        return []

    def _protected_touched(self, protected: tuple[str, ...], old: str, new: str) -> list[Refusal]:
        """The refusals for changes between two trees that touch a protected entry."""
        if not protected:
            return []
        changed = self._changes(old, new)
        return protected_changes(
            protected, changed, partial(self._blob, old), partial(self._blob, new)
        )

    def _blob(self, tree: str, path: str) -> bytes | None:
        try:
            item = git.Tree(self._repo, bytes.fromhex(tree), path="") / path
        except KeyError:
            return None
        return item.data_stream.read() if item.type == "blob" else None

    def _scan(
        self, folder: Path, components: Components, *, strict: bool
    ) -> tuple[list[Entry], list[Refusal]]:
        return scan(
            folder,
            components.declares,
            max_file_bytes=self.max_file_bytes,
            max_total_bytes=self.max_total_bytes,
            strict=strict,
        )

    def _edited_paths(self, index: Path, checkout: Path) -> list[str]:
        """Files that differ from `index` (by git's stat cache) or are new; only needed when
        there are secrets to look for."""
        if self._secrets is None:
            return []
        listing = self._git(
            "ls-files",
            "--modified",
            "--others",
            "-z",
            "--",
            ".",
            *_EXCLUDES,
            index=index,
            work_tree=checkout,
        )
        return [path for path in listing.split("\0") if path]

    def _leaks(self, folder: Path, paths: list[str]) -> list[Refusal]:
        """The paths whose name, symlink target or bytes hold a known secret, plain or encoded.
        The refusal names the path (secrets in it redacted) and the encoding, never the value."""
        if self._secrets is None:
            return []
        refusals = []
        for path in paths:
            found = self._leak_in(folder / path, path)
            if found is not None:
                where, encoding = found
                reason = (
                    f"{where} holds the value of a secret ({encoding}); credentials never "
                    "enter a snapshot, plain or encoded"
                )
                refusals.append(Refusal(self._secrets.sub(REDACTED, path), reason, kind="secret"))
        return refusals

    def _leak_in(self, item: Path, path: str) -> tuple[str, str] | None:
        assert self._secrets is not None
        if not os.path.lexists(item):
            return None  # deleted in the edit: nothing of it enters the snapshot
        if encoding := self._secrets.find(path.encode("utf-8", "surrogateescape")):
            return "its name", encoding
        if item.is_symlink():
            target = os.readlink(item).encode("utf-8", "surrogateescape")
            encoding = self._secrets.find(target)
            return ("its symlink target", encoding) if encoding else None
        if item.is_file() and (encoding := self._secrets.find(item.read_bytes())):
            return "its content", encoding
        return None

    def _safe(self, refusals: list[Refusal]) -> tuple[Refusal, ...]:
        """Refusals whose paths and reasons (which may quote a symlink target) hold no secret."""
        if self._secrets is None:
            return tuple(refusals)
        scrub = self._secrets.sub
        return tuple(
            Refusal(scrub(REDACTED, r.path), scrub(REDACTED, r.reason), r.kind) for r in refusals
        )

    def _commit(
        self,
        tree: str,
        parent_id: str | None,
        message: str,
        metadata: Mapping[str, Any] | None,
        components: Components,
    ) -> Snapshot:
        created = datetime.now(UTC)
        message = self._redactor.text(message)
        metadata = self._redactor.value(to_json_value(dict(metadata or {})))
        if self._secrets is not None:
            message = self._secrets.sub(REDACTED, message)
            metadata = _scrubbed(metadata, partial(self._secrets.sub, REDACTED))
        document = {
            "message": message,
            "metadata": metadata,
            "created": created.isoformat(),
            "components": components.to_dict(),
        }
        subject = message.strip().splitlines()[0] if message.strip() else "snapshot"
        body = f"{subject}\n\n{json.dumps(document, sort_keys=True, ensure_ascii=False)}\n"
        parents = ["-p", parent_id] if parent_id else []
        sha = self._git("commit-tree", tree, *parents, stdin=body)
        self._create_ref(sha)
        return self.get(sha)

    def _create_ref(self, sha: str) -> None:
        """`refs/snapshots/<sha>`, through git's own ref locking; the old value "" means it
        must not exist yet. The same commit made twice (same tree, parent, message and
        time) is one snapshot: a ref already on `sha` is kept."""
        ref = f"{_REF_PREFIX}{sha}"
        try:
            self._git("update-ref", ref, sha, "")
        except SnapshotError as refused:
            try:
                there = self._git("rev-parse", "--verify", "--quiet", ref)
            except SnapshotError:
                raise refused from None
            if there != sha:
                raise

    # -- reading snapshots --------------------------------------------------------------

    @staticmethod
    def made_at(root: Path) -> bool:
        """Whether a store was made at `root` (opening one there makes it otherwise)."""
        return (Path(root) / "checkouts").is_dir()

    def get(self, snapshot: Snapshot | str) -> Snapshot:
        """Look a snapshot up by id (or unique id prefix of at least 7 characters)."""
        if isinstance(snapshot, Snapshot):
            return snapshot
        if snapshot in self._cache:
            return self._cache[snapshot]
        sha = self._resolve(snapshot)
        if sha not in self._cache:
            self._cache[sha] = self._parse(self._repo.commit(sha))
        return self._cache[sha]

    def _resolve(self, ref: str) -> str:
        # hex first: a 40-character path (`../` thirteen times, `.`) exists as a file name
        if len(ref) < 7 or not all(c in "0123456789abcdef" for c in ref):
            raise SnapshotError(f"not a snapshot id: {ref!r}")
        if len(ref) == 40 and (self.root / _REF_PREFIX / ref).exists():
            return ref
        matches = [sha for sha in self._ids() if sha.startswith(ref)]
        if len(matches) != 1:
            found = "no snapshot" if not matches else f"{len(matches)} snapshots"
            raise SnapshotError(f"{found} with id {ref!r} in {self.root}")
        return matches[0]

    def _ids(self) -> list[str]:
        listing = self._git("for-each-ref", "--format=%(objectname)", _REF_PREFIX)
        return listing.split()

    @staticmethod
    def _parse(commit: git.Commit) -> Snapshot:
        _, _, body = commit.message.partition("\n\n")
        document = json.loads(body)
        return Snapshot(
            id=commit.hexsha,
            parent_id=commit.parents[0].hexsha if commit.parents else None,
            tree=commit.tree.hexsha,
            created=datetime.fromisoformat(document["created"]),
            message=document["message"],
            metadata=from_json_value(document["metadata"]),
            components=Components.parse(document["components"]),
        )

    def history(self) -> list[Snapshot]:
        """Every snapshot, oldest first."""
        return sorted((self.get(sha) for sha in self._ids()), key=lambda s: (s.created, s.id))

    def parent_ids(self) -> dict[str, str | None]:
        """Every snapshot's id and its parent's (None for a seed), in one git call: the
        explorer's tree of a thousand candidates needs only these, not each commit parsed."""
        listing = self._git("for-each-ref", "--format=%(objectname) %(parent)", _REF_PREFIX)
        found: dict[str, str | None] = {}
        for line in listing.splitlines():
            sha, _, parents = line.partition(" ")
            found[sha] = parents.split()[0] if parents.strip() else None
        return found

    def lineage(self, snapshot: Snapshot | str) -> list[str]:
        """The snapshot's id and its ancestors' ids, itself first, the seed last."""
        ids, current = [], self.get(snapshot)
        while True:
            ids.append(current.id)
            if current.parent_id is None:
                return ids
            current = self.get(current.parent_id)

    def read_file_at(self, snapshot: Snapshot | str, path: str) -> bytes:
        problem = path_problem(path)
        if problem:
            raise SnapshotError(f"{path!r}: {problem}")
        snap = self.get(snapshot)
        try:
            blob = self._repo.commit(snap.id).tree / path
        except KeyError:
            raise SnapshotError(f"{path} is not in snapshot {snap.short_id}") from None
        if blob.type != "blob":
            raise SnapshotError(f"{path} is a folder in snapshot {snap.short_id}, not a file")
        return blob.data_stream.read()

    def files(self, snapshot: Snapshot | str) -> dict[str, bytes]:
        """Every file of the snapshot and its bytes (a symlink's are its target), read from
        the repository: nothing is checked out."""
        tree = git.Tree(self._repo, bytes.fromhex(self.get(snapshot).tree), path="")
        return {
            item.path: item.data_stream.read() for item in tree.traverse() if item.type == "blob"
        }

    def keep_root(self, other: SnapshotStore, commit: str) -> None:
        """Fetch `commit` of `other` (its snapshot, or a root it keeps itself) into this store
        as `refs/origins/<commit>`: a fork's lineage root, which its candidates are judged
        against (`root_files`), though it is none of this store's snapshots."""
        found = other._git("for-each-ref", "--format=%(refname)", _REF_PREFIX + commit)
        source = found or _ORIGIN_PREFIX + commit
        self._git(
            "fetch", "--quiet", "--no-tags", str(other.root), f"{source}:{_ORIGIN_PREFIX}{commit}"
        )

    def root_files(self, commit: str) -> dict[str, bytes]:
        """Every file of a kept lineage root (`keep_root`) and its bytes."""
        sha = self._git("rev-parse", "--verify", "--quiet", f"{_ORIGIN_PREFIX}{commit}^{{tree}}")
        tree = git.Tree(self._repo, bytes.fromhex(sha), path="")
        return {
            item.path: item.data_stream.read() for item in tree.traverse() if item.type == "blob"
        }

    def changed_paths(self, a: Snapshot | str, b: Snapshot | str) -> list[ChangedPath]:
        return self._changes(self.get(a).id, self.get(b).id)

    def _changes(self, a: str, b: str) -> list[ChangedPath]:
        """Changed paths between two commits or trees."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b)
        fields = out.split("\0")
        return [
            ChangedPath(status, path)  # type: ignore[arg-type]
            for status, path in zip(fields[0::2], fields[1::2], strict=False)
            if status
        ]

    def diff(self, a: Snapshot | str, b: Snapshot | str) -> str:
        """Unified diff from `a` to `b` (binary files are named, not dumped). Bytes that are
        not UTF-8 come back as lone surrogates (`surrogateescape`)."""
        return self._git("diff", *_DIFF_OPTIONS, self.get(a).id, self.get(b).id, strip=False)

    def diff_command(self, a: Snapshot | str, b: Snapshot | str) -> str:
        """The shell command that prints `diff(a, b)`, for a reader who wants it whole."""
        ids = (self.get(a).id, self.get(b).id)
        return shlex.join(["git", f"--git-dir={self.root}", "diff", *_DIFF_OPTIONS, *ids])

    def diff_stats(self, a: Snapshot | str, b: Snapshot | str) -> DiffStats:
        out = self._git("diff", "--numstat", "--no-renames", self.get(a).id, self.get(b).id)
        insertions = deletions = binary = files = 0
        for line in out.splitlines():
            added, removed, _ = line.split("\t", 2)
            files += 1
            if added == "-":
                binary += 1
            else:
                insertions, deletions = insertions + int(added), deletions + int(removed)
        return DiffStats(files, insertions, deletions, binary)

    # -- checkouts ----------------------------------------------------------------------

    def check_out(self, snapshot: Snapshot | str, dest: Path) -> Path:
        """Write the snapshot's files to `dest` (new or empty), bytes and exec bits exact."""
        snap = self.get(snapshot)
        dest = Path(dest).resolve()
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise SnapshotError(f"checkout destination must be a new or empty folder: {dest}")
        dest.mkdir(parents=True, exist_ok=True)
        with self._temp_index() as index:
            self._git("read-tree", "--reset", "-u", snap.tree, index=index, work_tree=dest)
            self._remember_checkout(dest, index, snap.id)
        return dest

    def forget_checkout(self, checkout: Path) -> None:
        """Drop the cached index of a checkout folder that is about to be deleted."""
        key = self._checkout_key(Path(checkout).resolve())
        for suffix in (".index", ".base"):
            (self.root / "checkouts" / f"{key}{suffix}").unlink(missing_ok=True)

    @staticmethod
    def _checkout_key(checkout: Path) -> str:
        return hashlib.sha256(str(checkout).encode()).hexdigest()[:24]

    def _checkout_index(self, checkout: Path, parent_id: str) -> Path | None:
        """The checkout's cached index, if it was made from `parent_id`: git then re-hashes
        only the files whose stat changed, which keeps large harnesses cheap to commit."""
        key = self._checkout_key(checkout)
        base = self.root / "checkouts" / f"{key}.base"
        index = self.root / "checkouts" / f"{key}.index"
        if base.exists() and index.exists() and base.read_text().strip() == parent_id:
            return index
        return None

    def _remember_checkout(self, checkout: Path, index: Path, snapshot_id: str) -> None:
        key, folder = self._checkout_key(checkout), self.root / "checkouts"
        # Each file replaced whole, so a reader never takes a half-copied index; the copy is
        # made under tmp/, named as a temp index is, so a crash leaves it to the sweep.
        with self._temp_index(index) as copy:
            os.replace(copy, folder / f"{key}.index")
        with self._temp_index() as copy:
            copy.write_text(snapshot_id)
            os.replace(copy, folder / f"{key}.base")

    # -- git plumbing -------------------------------------------------------------------

    def _temp_index(self, template: Path | None = None) -> _TempIndex:
        return _TempIndex(self.root / "tmp", template)

    def _git(
        self,
        *args: str,
        index: Path | None = None,
        work_tree: Path | None = None,
        stdin: str | None = None,
        strip: bool = True,
    ) -> str:
        env = dict(_IDENTITY)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        # Git protects `.git` from HFS+'s ignored characters (`.git\u200c` is `.git` there)
        # only on macOS by default: on Linux it committed such a tree, which GitPython then
        # refuses to read (every later read of the snapshot raised). Both protections, always.
        command = ["git", *_PROTECT, f"--git-dir={self.root}"]
        if work_tree is not None:
            command.append(f"--work-tree={work_tree}")
        # git reads stdin from a real file descriptor, so input goes through a temp file.
        with tempfile.TemporaryFile() if stdin is not None else nullcontext() as stream:
            if stream is not None:
                stream.write(stdin.encode("utf-8"))
                stream.seek(0)
            try:
                return self._repo.git.execute(
                    [*command, *args], env=env, istream=stream, strip_newline_in_stdout=strip
                )
            except git.GitCommandError as exc:
                raise SnapshotError(f"git {args[0]} failed: {exc.stderr.strip()}") from exc


class _TempIndex:
    """A private git index file, copied from `template` when given, removed on exit."""

    def __init__(self, folder: Path, template: Path | None) -> None:
        # git refuses an empty index file, so only the name is reserved here.
        self.path = folder / f"index-{process_space()}-{os.getpid()}-{os.urandom(6).hex()}"
        if template is not None:
            shutil.copyfile(template, self.path)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)
        Path(f"{self.path}.lock").unlink(missing_ok=True)


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    """A JSON value with `scrub` applied to every string in it, mapping keys included."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(key): _scrubbed(item, scrub) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item, scrub) for item in value]
    return value


def _sweep_orphans(tmp: Path) -> None:
    """Remove temporary indexes left by processes of this host (and pid namespace) that died
    mid-commit; another host's are its own to sweep (its pids mean nothing here)."""
    here = process_space()
    for entry in tmp.iterdir():
        parts = entry.name.split("-")
        if len(parts) < 4 or parts[1] != here or not parts[2].isdigit():
            continue
        if not _alive(int(parts[2])):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
