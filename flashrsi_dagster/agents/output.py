"""What the framework reads back of a run's own output files."""

from __future__ import annotations

import os
from pathlib import Path


def file_tail(path: Path, chars: int) -> str:
    """The last `chars` characters of a file a run wrote (its stderr, say), read from its
    end: a run can make the file any size. No file is no text."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4 * chars))
            return handle.read().decode(errors="replace")[-chars:]
    except FileNotFoundError:
        return ""
