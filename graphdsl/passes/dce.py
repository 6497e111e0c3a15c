"""Dead-code elimination: drop nodes no output depends on (inputs always stay)."""

from __future__ import annotations

from graphdsl.graph import Graph
from graphdsl.passes.rewrite import Rewriter

__all__ = ["dce"]


def dce(graph: Graph) -> Graph:
    """A copy of ``graph`` with only the nodes reachable from its outputs.

    >>> import graphdsl as gd
    >>> g = gd.Graph("d", input_types={"x": gd.float32})
    >>> x, = g.inputs
    >>> unused = x * 3
    >>> g.output(x + 1)
    >>> print(gd.passes.dce(g))
    graph d(%x: float32[]) {
      %0: int32?[] = literal 1
      %1: float32[] = add %x, %0
      return %1
    }
    """
    rw = Rewriter(graph)
    for node in graph.used():
        if node.op != "input":
            rw.copy_node(node)
    return rw.finish()
