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
    node (innermost) whose expansion alone passes the bound, or a node on a cycle."""
    sizes: dict[int, int] = {}
    limit = MAX_ALIAS_NODES
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
        sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
        if sizes[id(node)] - len(sizes) > limit:
            return sizes[id(node)], len(sizes), node
    return sizes[id(root)], len(sizes), None


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
            "(an anchor bomb?); write the values out or use fewer nested aliases"
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
