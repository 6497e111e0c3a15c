"""The standard pass pipeline: implicit_cast, fold_constants, cse, dce."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from graphdsl.graph import Graph
from graphdsl.passes.cse import cse
from graphdsl.passes.dce import dce
from graphdsl.passes.fold import fold_constants
from graphdsl.passes.implicit_cast import implicit_cast

__all__ = ["DEFAULT_PASSES", "Pass", "run_passes"]

Pass = Callable[[Graph], Graph]

DEFAULT_PASSES: tuple[Pass, ...] = (implicit_cast, fold_constants, cse, dce)


def run_passes(
    graph: Graph, passes: Sequence[Pass] = DEFAULT_PASSES, *, verify: bool = False
) -> Graph:
    """Run ``passes`` in order; with ``verify=True`` check the graph after each one.

    >>> import graphdsl as gd
    >>> g = gd.Graph("p", input_types={"x": gd.float32})
    >>> g.output(g.inputs[0] * (g.scalar(2) + 1))
    >>> print(gd.passes.run_passes(g, verify=True))
    graph p(%x: float32[]) {
      %0: float32[] = constant 3.0
      %1: float32[] = mul %x, %0
      return %1
    }
    """
    from graphdsl.verify import verify as check

    explicit = False
    first = graph
    for p in passes:
        previous, graph = graph, p(graph)
        if previous is not first and previous is not graph:
            previous.release()  # an intermediate nobody else holds: free it now
        explicit = explicit or p is implicit_cast
        if verify:
            check(graph, explicit_casts=explicit)
    return graph
