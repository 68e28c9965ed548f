"""Where a text (or bytes) holds one of a set of fixed-width keys, found at C speed.

The search asks, for every position of every view of a file, whether the `GRAM` characters
there are a shingle of the index (and, in a binary file, whether the 8 bytes there start a
digest): a dictionary look-up per position in Python cost about 9 s of the 30 s an honest
3 MB binary took, read in its dozen views. Here every window's polynomial hash is computed
at once (numpy, which pandas and scipy bring; one multiply-add per character of the width)
and compared with the keys' hashes; only the positions whose hash is a key's are returned,
for the caller to look up exactly as before. Equal windows hash equal, so no position holding
a key is missed: a collision only adds a position the exact look-up then passes over.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import numpy as np

_BASE = np.uint64(0x9E3779B97F4A7C15)
"""An odd 64-bit multiplier (the golden ratio's): arithmetic wraps modulo 2^64."""
SHORT = 256
"""Fewer positions than this are looked up one by one."""
CHUNK = 1 << 18
"""Positions hashed at once: bounds the arrays (a few MB) whatever the text's length."""


class Keys:
    """A set of keys of one width (all `str` or all `bytes`), by their windows' hashes."""

    def __init__(self, keys: Collection[str | bytes], width: int) -> None:
        """`keys`: a set or a mapping's keys, kept as it is (not copied) for the look-ups of
        short texts; a key of another width is in no window."""
        self.width, self.keys = width, keys
        fitting = [key for key in keys if len(key) == width]
        parts, batch = [np.zeros(0, np.uint64)], max(CHUNK // width, 1)
        for at in range(0, len(fitting), batch):  # a few MB of codes at a time
            table = np.stack([_codes(key) for key in fitting[at : at + batch]])
            hashes = np.zeros(len(table), np.uint64)
            for column in range(width):
                hashes *= _BASE
                hashes += table[:, column]
            parts.append(hashes)
        self.hashes = np.unique(np.concatenate(parts))

    def positions(
        self, data: str | bytes, first: int = 0, last: int | None = None
    ) -> Iterator[int]:
        """The positions p in [first, last) (`last` at most the last window's start + 1),
        in order, whose window `data[p : p + width]` may be a key: every one that is."""
        end_of_data = len(data) - self.width + 1
        last = end_of_data if last is None else min(last, end_of_data)
        if not len(self.hashes):
            return
        if last - first < SHORT:  # a decoded blob's few characters: numpy's set-up costs more
            width, keys = self.width, self.keys
            yield from (p for p in range(first, last) if data[p : p + width] in keys)
            return
        for start in range(first, last, CHUNK):
            end = min(start + CHUNK, last)
            codes = _codes(data[start : end + self.width - 1])
            count = end - start
            hashes = np.zeros(count, np.uint64)
            for column in range(self.width):
                hashes *= _BASE
                hashes += codes[column : column + count]
            at = np.minimum(np.searchsorted(self.hashes, hashes), len(self.hashes) - 1)
            yield from (start + np.flatnonzero(self.hashes[at] == hashes)).tolist()


def _codes(data: str | bytes) -> np.ndarray:
    """Each character's code point (each byte's value), as 64-bit integers. A lone surrogate
    (`chr(0xD800)` in a decoded text) is kept as its code, as Python compares it."""
    if isinstance(data, str):
        raw = np.frombuffer(data.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    else:
        raw = np.frombuffer(data, dtype=np.uint8)
    return raw.astype(np.uint64)
