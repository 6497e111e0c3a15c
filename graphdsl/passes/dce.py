"""Dead-code elimination: drop nodes no output depends on (inputs always stay)."""

from __future__ import annotations

from graphdsl.graph import Graph
from graphdsl.passes.rewrite import Rewriter

__all__ = ["dce"]


def dce(graph: Graph) -> Graph:
    """A copy of ``graph`` with only the nodes reachable from its outputs."""
    rw = Rewriter(graph)
    for node in graph.used():
        if node.op != "input":
            rw.copy_node(node)
    return rw.finish()
