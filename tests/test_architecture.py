"""Architecture rules: the engine never imports Dagster; temp folders come from one place; the
sealed test split is reached by the finalize steps alone."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import flashrsi_dagster

DAGSTER_PACKAGES = ("orchestration", "deployment", "definitions")
"""The Dagster layer: the shared pieces, where runs execute, the entry point; and each
algorithm's own `defs` package. Everything else is engine."""


def _is_dagster_layer(module: str) -> bool:
    parts = module.split(".")[1:]
    in_algorithm_defs = parts[:1] == ["algorithms"] and parts[2:3] == ["defs"]
    return parts[0] in DAGSTER_PACKAGES or in_algorithm_defs


def _engine_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(flashrsi_dagster.__path__, "flashrsi_dagster.")
        if not _is_dagster_layer(info.name)
    ]


def test_only_the_dagster_layer_imports_dagster():
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
    assert "flashrsi_dagster.algorithms.evolver.views" in modules
    assert result.stdout.strip() == "[]"


PACKAGE = Path(flashrsi_dagster.__file__).parent
NOT_FRAMEWORK = {"harness", "tasks"}
"""Folders of agent harnesses and Harbor tasks: snapshot and task data, not framework code."""
TEMP_FOLDER = re.compile(r"tempfile\.(mkdtemp|TemporaryDirectory|gettempdir)\(")


def _framework_sources() -> dict[str, str]:
    sources = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if not NOT_FRAMEWORK & set(rel.parts[:-1]):
            sources[rel.as_posix()] = path.read_text(encoding="utf-8")
    return sources


def test_every_temp_folder_of_the_framework_comes_from_scratch():
    """So that one sweep finds whatever a killed process left behind (see scratch.py)."""
    sources = _framework_sources()
    offenders = [
        rel for rel, text in sources.items() if TEMP_FOLDER.search(text) and rel != "scratch.py"
    ]

    assert "algorithms/meta_harness/run.py" in sources
    assert offenders == []


RESOURCES = re.compile(r"^\s*(?:from|import)\s+flashrsi_dagster\.orchestration\.resources", re.M)


def test_assets_do_not_import_resources():
    """Assets reach their resources through the context (`required_resource_keys`): the
    resources may build on the assets' partitions, never the other way round."""
    sources = _framework_sources()
    assets = [rel for rel in sources if re.fullmatch(r"algorithms/\w+/defs/\w+\.py", rel)]
    offenders = [rel for rel in assets if RESOURCES.search(sources[rel])]

    assert "algorithms/meta_harness/defs/assets.py" in assets
    assert offenders == []


def test_the_code_location_does_not_import_scipy_stats():
    """`scipy.stats` alone takes ~0.6 s to import, in every run worker the UI starts: the
    statistics use `scipy.special` and integers; only tests compare them with scipy.stats."""
    script = (
        "import sys\n"
        "import flashrsi_dagster.definitions, flashrsi_dagster.stats\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))\n"
    )

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


FINALIZE_PATH = {
    "algorithms/searching.py": {"Searching.unseal_test", "Searching.test_once"},
    "algorithms/evolver/endings.py": {"unseal_retention"},
    "algorithms/stop/run.py": {"Stop.sealed_test"},
}
"""Where `unseal_test` may be named: `Searching.unseal_test` (the one call of
`Splits.unseal_test`, open on the sealed test's turn only) and the finalize steps that score
the test split with it (every algorithm's `test_once`, the Evolver's retention report,
STOP's sealed test of the promoted improver's returned solutions)."""
SEALED = {"unseal_test", "_sealed", "_test"}
"""`Splits`' way to its test tasks, and the private parts behind it."""


def _named_where(tree: ast.AST, names: set[str]) -> list[str]:
    """Each place a name of `names` is used (called, read as an attribute, passed, spelled as a
    string for `getattr`), as the qualified name of the function or class around it."""
    found: list[str] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = (*scope, node.name)
        used = (
            (isinstance(node, ast.Attribute) and node.attr in names)
            or (isinstance(node, ast.Name) and node.id in names)
            or (isinstance(node, ast.Constant) and node.value in names)
        )
        if used:
            found.append(".".join(scope) or "<module>")
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, ())
    return found


def test_only_the_finalize_path_reaches_the_test_split():
    """The test split's tasks come out of `Splits` in one place, which the finalize steps
    alone call; everything else counts them (`test_size`), asks of an id it holds
    (`test_ids`) or has them compared (`check_disjoint`)."""
    offenders = []
    for rel, text in _framework_sources().items():
        if rel == "benchmarks/splits.py":
            continue  # where they are kept
        allowed = FINALIZE_PATH.get(rel, set())
        tree = ast.parse(text)
        offenders += [f"{rel}: {w}" for w in _named_where(tree, SEALED) if w not in allowed]

    assert offenders == []


def test_the_finalize_path_rule_sees_a_call_wherever_it_is():
    tree = ast.parse(
        "class A:\n"
        "    def f(self):\n"
        "        return load().unseal_test()\n"
        "g = lambda s: getattr(s, 'unseal_test')\n"
        "def h(s):\n"
        "    return s._sealed()\n"
    )

    assert _named_where(tree, SEALED) == ["A.f", "<module>", "h"]
