"""Admission, before a child is scored: does it load, and can it still edit? Loading is the
host's check on the files (every Python file byte-compiles, every YAML and JSON file parses:
nothing of the child is run); editing is the shared editing check
(`algorithms/editing_check`), run by the child's own harness. A low score is never a reason
to refuse: stepping stones stay."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from flashrsi_dagster.algorithms.dgm.markers import log_name
from flashrsi_dagster.snapshots.guard import HISTORY_DIR


def load_problems(checkout: Path) -> list[str]:
    """What in the checkout does not load, one line per file (none: it loads)."""
    problems = []
    for path in sorted(p for p in checkout.rglob("*") if p.is_file()):
        relative = path.relative_to(checkout).as_posix()
        if relative.startswith(f"{HISTORY_DIR}/"):
            continue
        problem = _problem(path)
        if problem is not None:
            problems.append(f"{relative}: {problem}")
    return problems


def _problem(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix not in (".py", ".yaml", ".yml", ".json"):
        return None
    try:
        text = path.read_text(encoding="utf-8")
        if suffix == ".py":
            compile(text, str(path), "exec", dont_inherit=True)  # compiled, never executed
        elif suffix == ".json":
            json.loads(text)
        else:
            yaml.safe_load(text)
    except (SyntaxError, ValueError, yaml.YAMLError) as exc:
        return f"does not load ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"
    return None


def write_logs(folder: Path, trajectories: list) -> Path:
    """The improver's own evaluation logs: one JSON per train task (as recorded, redacted),
    in a folder lent to it read-only."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)  # the jail user reads it (a scratch folder is 0700)
    for trajectory in trajectories:
        path = folder / f"{log_name(trajectory.task_id)}.json"
        text = json.dumps(trajectory.model_dump(mode="json"), indent=1, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")  # a throwaway copy: no journal
        os.chmod(path, 0o644)
    return folder
