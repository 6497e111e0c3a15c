"""Graphs nested in nodes: the branches of ``cond``, the predicate and body of
``while_loop``, the subgraph a ``call`` runs (graphdsl/ops/control.py builds them).

A node holding graphs keeps them in its ``regions`` attribute, one :class:`Region` each,
with its position among its op's results in ``index`` (an op with several results is
several nodes sharing one ``regions`` tuple). The passes, the verifier, the printer, the
evaluator and the exporter treat every such node alike through this record: which of the
node's operands each graph's inputs take, and the dtypes its outputs take in the node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from graphdsl.dtypes import DType

if TYPE_CHECKING:
    from graphdsl.graph import Graph

__all__ = ["Region", "regions_of", "walk"]


class Region(NamedTuple):
    """A graph nested in a node.

    ``role``: ``"then"``, ``"else"``, ``"predicate"``, ``"body"`` or ``"call"``.
    ``args``: the node's operands (by position) that the graph's inputs take, in input order.
    ``results``: the dtypes of its outputs in the node; the ``implicit_cast`` pass casts each
    output to it inside the graph (a branch's result to the join of the branches' types).
    """

    role: str
    graph: Graph
    args: tuple[int, ...]
    results: tuple[DType, ...]


def regions_of(attrs: dict[str, Any]) -> tuple[Region, ...]:
    """The graphs nested in a node with attributes ``attrs`` (none for most ops)."""
    regions: tuple[Region, ...] = attrs.get("regions", ()) if attrs else ()
    return regions


def walk(graph: Graph) -> Iterator[Graph]:
    """``graph`` and every graph nested in it, each once, outermost first."""
    seen: set[int] = set()
    todo = [graph]
    while todo:
        g = todo.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        yield g
        for node in g.nodes:
            for r in regions_of(node.attrs):
                todo.append(r.graph)
