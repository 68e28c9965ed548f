"""The secrets of a benchmark's whole task pool, indexed for the search: fixed-length shingles
of every input and reference in normal form (`normalise`), and the digests of every input.

A shingle is `GRAM` characters; one is kept every `STEP` characters of a secret (and at its
start and end), so any common run of `GRAM + STEP - 1` characters or more, and any whole
input, shares a kept shingle with the secret: the scan then extends it both ways. An input is
indexed in its letters-and-digits form too (`FORMS`), as an entry of its own.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from flashrsi_dagster.benchmarks.base import Secret
from flashrsi_dagster.contamination.normalise import FORMS, letters, normalise
from flashrsi_dagster.contamination.windows import Keys

GRAM = 16
STEP = 8
MIN_INPUT = 16
"""Inputs shorter than this (in normal form) are too common to tell a task by."""
DIGEST_PREFIX = 8
"""Hex digits of a digest's prefix that still name an input: 32 bits, a crc32's width (a table
keyed by `sha256(text).hexdigest()[:8]` is as good as one keyed by the whole digest; a stray
match among the pool's digests is about one in 10^5 to 10^6 per hex token)."""
RAW_PREFIX = 8
"""Bytes of a raw digest that name an input (64 bits: no stray match among a file's bytes)."""
HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s")
HASHES += ("sha3_224", "sha3_256", "sha3_384", "sha3_512")
SHAKE_BYTES = 64
"""Bytes of a `shake_128` / `shake_256` digest indexed: a shorter one is its prefix (a key
`shake_128(text).hexdigest(8)` is found by its first `DIGEST_PREFIX` digits)."""
BLAKE2_SIZES = {"blake2b": (8, 16, 20, 32), "blake2s": (8, 16, 20)}
"""`digest_size`s of blake2 other than the default (a different hash each, not a prefix):
the common ones; others are a documented limit."""
HELD_OUT = "held_out"
"""The split of a task outside train and dev: the sealed test, or the pool outside the
splits. Such a task is never named (nor told apart from the other held-out ones)."""


@dataclass(frozen=True)
class Entry:
    task: int
    """The task's number in `SecretIndex.tasks`."""
    kind: str
    name: str
    text: str
    """The secret in its form."""
    form: str = "normal"


@dataclass
class SecretIndex:
    tasks: list[tuple[str, str]] = field(default_factory=list)
    """(task id, split) per task."""
    entries: list[Entry] = field(default_factory=list)
    grams: dict[str, dict[str, list[tuple[int, int]]]] = field(
        default_factory=lambda: {form: {} for form in FORMS}
    )
    """Form -> shingle -> (entry, offset) pairs."""
    answers: dict[int, list[str]] = field(default_factory=dict)
    """Task -> its answers in both forms (a label)."""
    digests: dict[str, int] = field(default_factory=dict)
    """Hex digest (and its prefix) of an input -> task."""
    raw_digests: dict[bytes, int] = field(default_factory=dict)
    """The first `RAW_PREFIX` bytes of an input's digest, as bytes (`md5(text).digest()`) ->
    task; a 32-bit checksum is too short to tell apart from other bytes."""
    _holders: dict[str, int] = field(default_factory=dict)
    _keys: dict[str, Keys] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        secrets: Iterable[tuple[str, list[Secret]]],
        splits: Mapping[str, str],
        prompts: Mapping[str, str] | None = None,
    ) -> SecretIndex:
        """`secrets`: (task id, its secrets) over the whole pool; `splits`: the split of each
        train and dev task id (every other task is held out); `prompts`: each task's whole
        instruction, as the agent gets it, indexed by its digests only (a harness can key a
        table by the digest of what it is given, template and all; its text is searched as
        the task's input already)."""
        index, prompts = cls(), prompts or {}
        for task_id, found in secrets:
            number = len(index.tasks)
            index.tasks.append((task_id, splits.get(task_id, HELD_OUT)))
            for secret in found:
                index._add(number, secret)
            if task_id in prompts:
                index._add_digests(number, prompts[task_id], normalise(prompts[task_id]))
        return index

    def data(self) -> tuple:
        """The index as plain data (`contamination.cache`), read back by `of_data`."""
        entries = [(e.task, e.kind, e.name, e.text, e.form) for e in self.entries]
        return self.tasks, entries, self.grams, self.answers, self.digests, self.raw_digests

    @classmethod
    def of_data(cls, data: tuple) -> SecretIndex:
        tasks, entries, grams, answers, digests, raw_digests = data
        entries = [Entry(*entry) for entry in entries]
        return cls(tasks, entries, grams, answers, digests, raw_digests)

    def _add(self, task: int, secret: Secret) -> None:
        text = normalise(secret.text)
        if secret.kind == "answer":
            forms = {text, letters(secret.text)} - {""}
            self.answers.setdefault(task, []).extend(sorted(forms))
            return
        if secret.kind == "input":
            self._add_digests(task, secret.text, text)
        self._enter(Entry(task, secret.kind, secret.name, text))
        if secret.kind == "input" and (bare := letters(secret.text)) != text:
            self._enter(Entry(task, secret.kind, secret.name, bare, "letters"))

    def _add_digests(self, task: int, raw_text: str, normal: str) -> None:
        for digest in _digests(raw_text, normal):
            self.digests.setdefault(digest, task)
            self.digests.setdefault(digest[:DIGEST_PREFIX], task)
            raw = bytes.fromhex(digest)
            for b64 in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
                self.digests.setdefault(b64.decode().rstrip("="), task)
            # as an integer, as `zlib.crc32(...)` or `int(hexdigest, 16)` give it
            self.digests.setdefault(str(int(digest, 16)), task)
            if len(raw) > RAW_PREFIX:
                self.raw_digests.setdefault(raw[:RAW_PREFIX], task)

    def _enter(self, entry: Entry) -> None:
        text = entry.text
        if len(text) < GRAM:
            return
        number, grams = len(self.entries), self.grams[entry.form]
        self.entries.append(entry)
        offsets = {*range(0, len(text) - GRAM + 1, STEP), len(text) - GRAM}
        for offset in sorted(offsets):
            grams.setdefault(text[offset : offset + GRAM], []).append((number, offset))

    def gram_keys(self, form: str) -> Keys:
        """The shingles of `form`, for finding where a text holds one (made once, on first
        use: the index is complete by then)."""
        if form not in self._keys:
            self._keys[form] = Keys(self.grams[form], GRAM)
        return self._keys[form]

    def raw_keys(self) -> Keys:
        """The raw digests' prefixes, for finding where a file's bytes hold one."""
        if "raw" not in self._keys:
            self._keys["raw"] = Keys(self.raw_digests, RAW_PREFIX)
        return self._keys["raw"]

    def holders(self, fragment: str) -> int:
        """How many tasks' secrets hold `fragment` (a normal-form text): a fragment several
        tasks share (a test script's boilerplate) tells no task apart."""
        if fragment not in self._holders:
            self._holders[fragment] = len({e.task for e in self.entries if fragment in e.text})
        return self._holders[fragment]


def _digests(raw: str, normal: str) -> set[str]:
    """Hex digests of the input's forms: every hash `hashlib` guarantees (`shake` at a length
    whose prefixes are the shorter ones, blake2 at its common sizes too), and the checksums
    crc32 and adler32 (8 digits: a match of those, at
    one in 4 * 10^9 per token and form, is still evidence)."""
    words = raw.strip().casefold().split()
    forms = {raw, raw.strip(), raw.strip().casefold(), raw.strip().lower(), normal}
    # upper-cased, and as a line read from a file or stdin (its newline kept)
    forms |= {raw.strip().upper(), raw.rstrip("\n") + "\n"}
    # the words joined by one space, alone or stripped of punctuation, and the letters alone:
    # the keys a harness normalising its input first would hash
    forms |= {" ".join(words), " ".join(re.findall(r"[^\W_]+", raw.casefold())), letters(raw)}
    found = set()
    for form in filter(None, forms):
        data = form.encode("utf-8")
        found |= {hashlib.new(name, data).hexdigest() for name in HASHES}
        found |= {hashlib.new(n, data).hexdigest(SHAKE_BYTES) for n in ("shake_128", "shake_256")}
        found |= {
            hashlib.new(name, data, digest_size=size).hexdigest()
            for name, sizes in BLAKE2_SIZES.items()
            for size in sizes
        }
        found |= {f"{zlib.crc32(data):08x}", f"{zlib.adler32(data):08x}"}
    return found
