"""The standard pass pipeline: implicit_cast, fold_constants, cse, dce.

``run_passes`` runs passes one after another, each copying the graph; ``canonicalize``
gives the standard pipeline's result in one sweep (what the exporter lowers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from graphdsl.graph import Graph
from graphdsl.passes.cse import cse
from graphdsl.passes.dce import dce
from graphdsl.passes.fold import fold_constants
from graphdsl.passes.implicit_cast import implicit_cast, make_casts_explicit
from graphdsl.passes.rewrite import Rewriter, drop_dead

__all__ = ["DEFAULT_PASSES", "Pass", "canonicalize", "run_passes"]

Pass = Callable[[Graph], Graph]

DEFAULT_PASSES: tuple[Pass, ...] = (implicit_cast, fold_constants, cse, dce)
"""The passes :func:`run_passes` runs by default, in order: ``implicit_cast``,
``fold_constants``, ``cse``, ``dce`` (:func:`canonicalize` gives the same graph in one
sweep)."""


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


def canonicalize(graph: Graph) -> Graph:
    """implicit_cast, fold_constants, cse and dce in one sweep; ``graph`` is unchanged.

    Each cast and constant the implicit_cast rewrite makes, and each node it copies, is
    folded and merged as it is added, then the dead nodes are dropped: the same graph
    ``run_passes(graph)`` gives, without three intermediate copies.

    >>> import graphdsl as gd
    >>> g = gd.Graph("c", input_types={"x": gd.float32, "n": gd.int16})
    >>> x, n = g.inputs
    >>> g.output(x * (g.scalar(2) + 1) + n + n)
    >>> print(gd.passes.canonicalize(g))
    graph c(%x: float32[], %n: int16[]) {
      %0: float32[] = constant 3.0
      %1: float32[] = mul %x, %0
      %2: float32[] = cast %n, to=float32
      %3: float32[] = add %1, %2
      %4: float32[] = add %3, %2
      return %4
    }
    """
    return drop_dead(make_casts_explicit(graph, Rewriter(graph, fold=True, cse=True)))
