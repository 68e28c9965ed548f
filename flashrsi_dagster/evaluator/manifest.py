"""The evaluator's digest manifest: recorded before the first evaluation, verified before each.

`records/evaluator/manifest.json` (through the integrity chain) holds the sha256 of every
evaluator file (`files.py` says which) and one digest of the sealed test split's tasks, which
names none of them. A changed module or verifier file is refused by name. A changed data file
is handed back: the caller checks it task by task (`sets.py`) and then records the new bytes
as an amendment; the first manifest and every amendment stay in the chain.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.evaluator.files import Role, digest, located, shown
from flashrsi_dagster.records import Record


class EvaluatorChanged(RuntimeError):
    """An evaluator file or a recorded task differs from what the experiment recorded."""


class Amendment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: datetime
    files: list[str] = Field(description="Data files whose new bytes were recorded.")
    reason: str


class EvaluatorManifest(Record):
    kind: Literal["evaluator_manifest"] = "evaluator_manifest"
    files: dict[str, str] = Field(
        description="Path -> sha256 of every evaluator file; the framework's own files relative "
        "to the folder holding the package, so a moved installation still matches."
    )
    roles: dict[str, Role] = Field(description="Path -> module, verifier or data.")
    sealed_test: str | None = Field(
        None, description="One digest of the test split's (id, content) pairs; names no task."
    )
    amendments: list[Amendment] = Field(default_factory=list)


def build(paths: dict[Path, Role], sealed_test: str | None) -> EvaluatorManifest:
    files, roles = {}, {}
    for path, role in paths.items():
        value = digest(path)
        if value is None:
            raise EvaluatorChanged(f"evaluator file {shown(path)} does not exist")
        files[shown(path)], roles[shown(path)] = value, role
    return EvaluatorManifest(files=files, roles=roles, sealed_test=sealed_test)


def changed_data(manifest: EvaluatorManifest, now: dict[Path, Role]) -> list[str]:
    """The data files whose bytes differ from the manifest (to be checked task by task).
    A module or verifier file that changed, vanished or appeared raises `EvaluatorChanged`
    naming it."""
    data = []
    for path, value in manifest.files.items():
        if digest(located(path)) == value:
            continue
        if manifest.roles[path] != "data":
            raise EvaluatorChanged(_changed(path, manifest.roles[path]))
        data.append(path)
    for path, role in now.items():
        if shown(path) in manifest.files:
            continue
        if role != "data":
            raise EvaluatorChanged(
                f"{shown(path)} is a new {role} file of the evaluator, not in the manifest "
                "recorded at the experiment's start; the evaluator is fixed for an experiment"
            )
        data.append(shown(path))
    return data


def amended(manifest: EvaluatorManifest, paths: list[str], reason: str) -> EvaluatorManifest:
    files, roles = dict(manifest.files), dict(manifest.roles)
    for path in paths:
        value = digest(located(path))
        if value is None:
            files.pop(path, None)
            roles.pop(path, None)
        else:
            files[path], roles[path] = value, "data"
    entry = Amendment(at=datetime.now(UTC), files=paths, reason=reason)
    return manifest.model_copy(
        update={"files": files, "roles": roles, "amendments": [*manifest.amendments, entry]}
    )


def _changed(path: str, role: str) -> str:
    what = {"module": "scoring module", "verifier": "verifier file"}.get(role, role)
    state = "was removed" if not located(path).exists() else "changed"
    return (
        f"the evaluator changed: {what} {path} {state} since the experiment "
        "recorded it; no evaluation runs against a different checker (restore the file, or "
        "start a new experiment)"
    )
