"""Common-subexpression elimination: one node per (op, operands, attributes) and per constant."""

from __future__ import annotations

from graphdsl.graph import Graph
from graphdsl.passes.rewrite import Rewriter

__all__ = ["cse"]


def cse(graph: Graph) -> Graph:
    """A copy of ``graph`` where structurally identical nodes are merged.

    Constants merge by value (up to 64 KiB; larger ones only when they are the same node),
    and a float attribute or literal compares by its text, so 0.0 and -0.0 stay apart.

    >>> import graphdsl as gd
    >>> g = gd.Graph("c", input_types={"x": gd.float32})
    >>> x, = g.inputs
    >>> g.output(gd.ops.exp(x) + gd.ops.exp(x))
    >>> print(gd.passes.dce(gd.passes.cse(g)))
    graph c(%x: float32[]) {
      %0: float32[] = exp %x
      %1: float32[] = add %0, %0
      return %1
    }
    """
    return Rewriter(graph, cse=True).copy_all()
