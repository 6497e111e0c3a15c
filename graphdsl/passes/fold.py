"""Constant folding: evaluate nodes whose operands are all constants (small results only)."""

from __future__ import annotations

from graphdsl.graph import Graph
from graphdsl.passes.rewrite import MAX_FOLDED_ELEMENTS, Rewriter

__all__ = ["MAX_FOLDED_ELEMENTS", "fold_constants"]


def fold_constants(graph: Graph) -> Graph:
    """A copy of ``graph`` with constant-only subgraphs replaced by their values.

    Folding uses the reference interpreter's own op implementations, so a folded graph
    computes exactly what the unfolded one does. Nodes whose result or any input has more
    than ``MAX_FOLDED_ELEMENTS`` elements are left to run time, and so are those whose
    result would take more bytes than their constant operands (folding never grows a model:
    an int8 weight cast to float32 stays an int8 constant and a cast), unless it is tiny
    (``graphdsl.passes.rewrite.foldable`` says which).

    >>> import graphdsl as gd
    >>> g = gd.Graph("f")
    >>> g.output(gd.ops.sqrt(g.constant([4.0, 9.0], gd.float32)) + 1)
    >>> print(gd.passes.dce(gd.passes.fold_constants(gd.passes.implicit_cast(g))))
    graph f() {
      %0: float32[2] = constant [3.0, 4.0]
      return %0
    }
    """
    return Rewriter(graph, fold=True).copy_all()
