"""Constant folding: evaluate nodes whose operands are all constants (small results only)."""

from __future__ import annotations

import numpy as np

from graphdsl.graph import Graph, Symbol, TensorType
from graphdsl.passes.rewrite import Rewriter
from graphdsl.shapes import num_elements

__all__ = ["fold_constants"]

MAX_FOLDED_ELEMENTS = 1 << 16


def _all_constant(args: tuple[Symbol, ...]) -> bool:
    for a in args:  # noqa: SIM110 - a loop avoids all()'s generator on the export hot path
        if a.op != "constant":
            return False
    return True


def _small_inputs(args: tuple[Symbol, ...]) -> bool:
    # folding reads every input; huge constants (max over 2 GiB) are left to run time
    return all(a.attrs["value"].size <= MAX_FOLDED_ELEMENTS for a in args)


def _small(shape: tuple[int | str, ...]) -> bool:
    size = num_elements(shape)
    return size is not None and size <= MAX_FOLDED_ELEMENTS


def fold_constants(graph: Graph) -> Graph:
    """A copy of ``graph`` with constant-only subgraphs replaced by their values.

    Folding uses the reference interpreter's own op implementations, so a folded graph
    computes exactly what the unfolded one does. Nodes whose result or any input has more
    than ``MAX_FOLDED_ELEMENTS`` elements are left to run time.
    """
    from graphdsl.evaluate import run_node

    rw = Rewriter(graph)
    for node in graph.nodes:
        if node.op == "input":
            continue
        args = tuple([rw.map[id(i)] for i in node.inputs])
        if args and _all_constant(args) and _small(node.shape) and _small_inputs(args):
            value = run_node(node, [np.asarray(a.attrs["value"]) for a in args], {})
            rw.map[id(node)] = rw.add(
                "constant", (), {"value": value}, TensorType(node.dtype, node.shape), (), node.loc
            )
        else:
            rw.copy_node(node, args)
    return rw.finish()
