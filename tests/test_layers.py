"""The layers, read from the source's import statements: an algorithm is one folder that no
other algorithm imports; the shared Dagster package names no algorithm; nothing imports back
up the layers; no two modules import each other, however indirectly; Dagster's private
modules are reached through one adapter, checked against one Dagster version."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import dagster

from flashrsi_dagster.algorithms import registry
from flashrsi_dagster.orchestration import dagster_internals

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flashrsi_dagster"
DATA = {"harness", "tasks"}
"""Folders of agent harnesses and Harbor tasks: data the framework copies, not its code."""
BUILT_IN = sorted(registry.ALGORITHMS)


@cache
def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        if DATA & set(rel.parts):
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        modules[".".join(parts)] = path
    return modules


def _target(node: ast.ImportFrom | ast.Import, module: str) -> list[str]:
    """The project modules an import statement loads (`from a import b`: `a.b` when that is
    a module, else `a`)."""
    known = _modules()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = module.split(".")[: len(module.split(".")) - node.level + 1]
            if _modules()[module].name != "__init__.py":
                anchor = anchor[:-1]
            base = ".".join([*anchor, base] if base else anchor)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    found = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


@cache
def _imports(module: str) -> frozenset[str]:
    """What `module` imports when it runs: at import time or deferred in a function (a lazy
    import still closes a circle), not what only a type checker reads."""
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    return frozenset(
        target
        for node in _run_time(tree.body)
        for target in _target(node, module)
        if target != module
    )


def _run_time(body: list[ast.AST]):
    """The import statements of `body`, at any depth, outside `if TYPE_CHECKING:` blocks."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _run_time(list(ast.iter_child_nodes(node)))


def _algorithm_of(module: str) -> str | None:
    """The built-in algorithm whose folder holds `module`."""
    parts = module.split(".")
    if parts[1:2] == ["algorithms"] and len(parts) > 2 and parts[2] in BUILT_IN:
        return parts[2]
    return None


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[1:2] and parts[1] in {"orchestration", "deployment", "definitions", "cli"}:
        return parts[1]
    if _algorithm_of(module):
        return "algorithm defs" if parts[3:4] == ["defs"] else "algorithm"
    return "engine"


ALLOWED = {
    "engine": {"engine", "algorithm"},
    "algorithm": {"engine", "algorithm"},
    "orchestration": {"engine", "orchestration"},
    "algorithm defs": {"engine", "algorithm", "orchestration", "algorithm defs"},
    "deployment": {"engine", "orchestration", "deployment"},
    "definitions": {"deployment"},
    "cli": {"engine", "orchestration", "deployment"},
}
"""Which layers each may import. The engine reaches an algorithm only through the registry
(by name, at run time); the Dagster layer's shared pieces, the deployment and the command
line only through the registry too; an algorithm's `defs` sit on the shared Dagster pieces."""


def _offences(rule) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module in _modules()
        for target in _imports(module)
        if rule(module, target)
    )


def test_no_algorithm_imports_another():
    def other_algorithm(module: str, target: str) -> bool:
        mine, theirs = _algorithm_of(module), _algorithm_of(target)
        return theirs is not None and mine != theirs and _layer(module) != "engine"

    assert "flashrsi_dagster.algorithms.evolver.run" in _modules()
    assert _offences(other_algorithm) == []


def test_no_import_goes_up_the_layers_or_across_to_an_algorithm():
    """Only an algorithm's own folder imports its modules; the engine, the shared Dagster
    package and the deployment find it through the registry."""

    def upward(module: str, target: str) -> bool:
        layer, into = _layer(module), _layer(target)
        if into in {"algorithm", "algorithm defs"} and _algorithm_of(target) != _algorithm_of(
            module
        ):
            return not _simulator_policy_reads_markers(module, target)
        return into not in ALLOWED[layer]

    assert _offences(upward) == []


def _simulator_policy_reads_markers(module: str, target: str) -> bool:
    """The offline model's policy for an algorithm reads that algorithm's instruction markers
    (plain constants), so that the simulator follows the real instructions."""
    policy = module.startswith("flashrsi_dagster.offline_model.policies.")
    return policy and target.endswith(".markers") and _layer(target) == "algorithm"


def test_no_two_modules_import_each_other_even_indirectly_or_lazily():
    graph = {m: _imports(m) for m in _modules()}
    circles = [c for c in _strongly_connected(graph) if len(c) > 1]

    assert circles == []


def _strongly_connected(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively (the graph has ~500 modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}

    assert [c for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]


def test_dagsters_private_modules_are_reached_through_one_adapter():
    adapter = "flashrsi_dagster.orchestration.dagster_internals"
    private = sorted(
        {
            module
            for module, path in _modules().items()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            and any(
                name.startswith("dagster._")
                for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                + [a.name for a in node.names]
            )
        }
    )

    assert private == [adapter]


def test_the_adapter_was_checked_against_the_installed_dagster():
    """Dagster's private modules change without notice: an upgrade fails here until every
    name in `dagster_internals` is checked again and `CHECKED_AGAINST` moved."""
    assert dagster.__version__ == dagster_internals.CHECKED_AGAINST


def test_each_algorithm_is_one_folder_declared_by_one_registry_line():
    for name in BUILT_IN:
        entry = registry.entry(name)
        folder = PACKAGE / "algorithms" / name
        config = entry.load("config")

        assert entry.package == registry.ALGORITHMS[name]
        assert config.model_fields["name"].annotation.__args__ == (name,)
        assert entry.load("engine").name == name
        assert entry.load("definitions").name == name
        for model in entry.policies:
            assert callable(entry.policy(model))
        assert (folder / "defs" / "assets.py").is_file()
        assert (folder / "config.py").is_file()
