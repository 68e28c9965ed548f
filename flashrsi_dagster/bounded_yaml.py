"""YAML from users and agents, with aliases bounded: the one safe loader of the project.

An alias (`*a`) repeats the node its anchor (`&a`) names without copying it, so nine levels
of nine aliases each describe 9**9 nodes in a few hundred bytes. PyYAML shares the repeated
node, but every walk over the result (validation, serialisation, an equality test) expands it:
`flashrsi validate` spun for minutes on such a file. Here the nodes that aliases add are
counted before anything is built, and a document whose aliases add more than
`MAX_ALIAS_NODES` is refused; a few anchors shared by a config still load. A document in
which an alias refers to its own anchor (a cycle, infinite once expanded) is refused too.

Nesting and size are bounded as well (`MAX_DEPTH`, `MAX_NODES`): PyYAML composes and
constructs recursively, so `[[[[...` a hundred thousand deep, a few hundred kilobytes without
one alias, raised `RecursionError` (no `YAMLError`: every caller's handler missed it, and a
Worker's edit of a protected YAML crashed the host's check instead of being refused); and a
flat list of millions of values, within a snapshot's 10 MB file bound, held that check for
minutes.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIAS_NODES = 10_000
"""Nodes that aliases may add to a document once expanded."""
MAX_ALIAS_CHARS = 1_000_000
"""Characters that aliases may add to a document's scalars once expanded: nine thousand
aliases of one 100 KB string, within the node bound, made a 137 KB config that `validate`
spent minutes and gigabytes writing out (red-team round 19)."""
MAX_DEPTH = 100
"""Collections nested in one another; a config needs a handful, Python's stack ~300."""
MAX_NODES = 100_000
"""Nodes of one document: a config or a script holds thousands; a Worker's 10 MB protected
YAML of `[1,1,1,...` holds millions, and PyYAML took over a minute a megabyte on a busy host."""


class AliasBombError(yaml.MarkedYAMLError):
    """A document whose aliases expand beyond the bound; a `YAMLError`, so every caller's
    handler for invalid YAML reports it with the file it was reading."""


def _expanded_size(root: yaml.Node) -> tuple[int, int, yaml.Node | None]:
    """Nodes of the document once aliases are expanded, its distinct nodes, and the first
    node (innermost) whose expansion alone passes the bound (in nodes, or in the characters
    of its scalars), or a node on a cycle."""
    sizes: dict[int, tuple[int, int]] = {}  # a node's expansion: its nodes, its characters
    distinct_chars = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done:
            if id(node) in open_nodes:
                return 0, 0, node  # reached again before it was sized: a cycle
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(id(node))
        own = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
        distinct_chars += own
        nodes = 1 + sum(sizes[id(child)][0] for child in children)
        chars = own + sum(sizes[id(child)][1] for child in children)
        sizes[id(node)] = nodes, chars
        if nodes - len(sizes) > MAX_ALIAS_NODES or chars - distinct_chars > MAX_ALIAS_CHARS:
            return nodes, len(sizes), node
    return sizes[id(root)][0], len(sizes), None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def check_aliases(node: yaml.Node | None) -> None:
    """Raise `AliasBombError` if aliases in the document under `node` expand too far."""
    if node is None:
        return
    expanded, distinct, culprit = _expanded_size(node)
    if culprit is None and expanded - distinct <= MAX_ALIAS_NODES:
        return
    where = culprit or node
    if expanded == 0:
        problem = "an alias (`*name`) refers to its own anchor: the document never ends"
    else:
        problem = (
            f"aliases (`*name`) expand this document beyond {MAX_ALIAS_NODES} repeated nodes "
            f"or {MAX_ALIAS_CHARS} repeated characters (an anchor bomb?); write the values "
            "out or use fewer aliases"
        )
    raise AliasBombError(problem=problem, problem_mark=where.start_mark)


class NestingError(yaml.MarkedYAMLError):
    """A document nested deeper than `MAX_DEPTH`, or of more than `MAX_NODES` nodes; a
    `YAMLError`, as `AliasBombError`."""


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing documents whose aliases expand too far or that nest
    too deep."""

    _depth = 0
    _nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        self._nodes += 1
        if self._depth >= MAX_DEPTH or self._nodes > MAX_NODES:
            problem = (
                f"collections nested more than {MAX_DEPTH} deep; flatten the document"
                if self._depth >= MAX_DEPTH
                else f"more than {MAX_NODES} values in one document; split or shorten it"
            )
            raise NestingError(problem=problem, problem_mark=self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        check_aliases(node)
        return node


def safe_load(stream: str | bytes) -> Any:
    """`yaml.safe_load`, with aliases bounded (`AliasBombError`, a `yaml.YAMLError`)."""
    return yaml.load(stream, Loader=BoundedSafeLoader)
