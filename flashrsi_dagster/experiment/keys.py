"""Candidate keys: `r<NNN>.<slot>`, how one candidate of one round is named in partitions,
run keys and logs (`r003.c0`). The round comes first so that keys sort and read by round.
Kept to what Dagster accepts in a partition key (no `|`, `,`, `[`, `]`)."""

from __future__ import annotations

import re

_SLOT = r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}"
_CANDIDATE_KEY = re.compile(rf"r(?P<round>\d{{3,}})\.(?P<slot>{_SLOT})")


def candidate_key(k: int, slot: str) -> str:
    key = f"r{k:03d}.{slot}"
    parse_candidate_key(key)  # refuse anything Dagster would silently drop
    return key


def parse_candidate_key(key: str) -> tuple[int, str]:
    match = _CANDIDATE_KEY.fullmatch(key)
    if match is None:
        raise ValueError(f"not a candidate key: {key!r} (expected r<NNN>.<slot>, e.g. r003.c0)")
    return int(match["round"]), match["slot"]


MAX_NAME = 80
"""An experiment name's length limit (`ExperimentSection.name`)."""
NIGHTLY = re.compile(r"(?P<base>.+)-nightly-(?P<date>\d{8})")
"""How the nightly schedule names its experiments."""


def nightly_name(base: str, stamp: str) -> str:
    """The night's experiment of config `base`: `<base>-nightly-<YYYYMMDD>`, the base cut
    so that the name stays within the limit (a long base must not fail every night)."""
    suffix = f"-nightly-{stamp}"
    return f"{base[: MAX_NAME - len(suffix)]}{suffix}"
