"""The engine is plain Python: importing it never imports Dagster."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import flashrsi_dagster

# The thin Dagster layer; everything else is engine.
DAGSTER_LAYER = {"assets", "resources", "jobs", "sensors", "definitions"}


def _engine_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(flashrsi_dagster.__path__, "flashrsi_dagster.")
        if info.name.split(".")[1] not in DAGSTER_LAYER
    ]


def test_engine_modules_do_not_import_dagster():
    modules = _engine_modules()
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dagster'))\n"
    )

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert "flashrsi_dagster.snapshots.store" in modules
    assert result.stdout.strip() == "[]"
