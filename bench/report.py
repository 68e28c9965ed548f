"""Where every benchmark script leaves its JSON report: `bench/out/<name>.json` (git-ignored)."""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"


def save(name: str, report: dict) -> Path:
    path = OUT / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nJSON report: {path}")
    return path
