"""The model catalog a run's CLI reads (`model_catalog_json`): the role's model, and with it
the tools the CLI offers.

The CLI knows the models in the catalog it ships; any other model id (a model behind another
OpenAI-compatible endpoint, the offline simulator's) gets fallback metadata, under which the
CLI offers no `apply_patch` tool at all. So every run gets a catalog of exactly the role's
model: the bundled entry when the CLI ships one, else the bundled entry of its standard tool
set (the shell, the freeform `apply_patch`, no code mode) under the role's model id.
"""

from __future__ import annotations

import copy
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.codex_cli.install import CodexInstall
from flashrsi_dagster.environments.confinement import BASE_ENV
from flashrsi_dagster.scratch import scratch_dir

_lock = threading.Lock()
_bundled: dict[Path, list[dict[str, Any]]] = {}
_TIMEOUT = 60.0


class CatalogError(RuntimeError):
    """The CLI's bundled catalog cannot be read."""


def catalog_for(install: CodexInstall, model: str, *, apply_patch: bool = True) -> dict[str, Any]:
    """The one-model catalog of a run; without `apply_patch`, the model is offered none."""
    models = bundled_models(install)
    entry = next((m for m in models if m.get("slug") == model), None)
    if entry is None:
        entry = {**_standard(models), "slug": model, "display_name": model, "visibility": "hide"}
    entry = copy.deepcopy(entry)
    if not apply_patch:
        entry["apply_patch_tool_type"] = None
    return {"models": [entry]}


def bundled_models(install: CodexInstall) -> list[dict[str, Any]]:
    """`codex debug models --bundled`, once per binary: the framework's own pinned CLI asked
    for data, with an empty home and no network."""
    with _lock:
        if install.binary not in _bundled:
            _bundled[install.binary] = _read_bundled(install)
        return _bundled[install.binary]


def _read_bundled(install: CodexInstall) -> list[dict[str, Any]]:
    with scratch_dir("codex-catalog-") as home:
        done = subprocess.run(
            [str(install.binary), "debug", "models", "--bundled"],
            env={**BASE_ENV, "HOME": str(home), "CODEX_HOME": str(home)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
        )
    try:
        models = json.loads(done.stdout)["models"]
    except (ValueError, KeyError, TypeError):
        stderr = done.stderr.decode(errors="replace")[-500:]
        raise CatalogError(
            f"`codex debug models --bundled` gave no catalog (exit {done.returncode}): {stderr}"
        ) from None
    return [m for m in models if isinstance(m, dict)]


def _standard(models: list[dict[str, Any]]) -> dict[str, Any]:
    """The bundled entry with the standard tool set: freeform `apply_patch`, no code mode."""
    for entry in models:
        if entry.get("tool_mode") is None and entry.get("apply_patch_tool_type") == "freeform":
            return entry
    raise CatalogError("the CLI's bundled catalog has no model with the standard tool set")
