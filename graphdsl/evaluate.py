"""The numpy reference interpreter: the semantics every backend must reproduce.

Integer + - * wrap; ``//`` floors and ``%`` takes the divisor's sign; integer ``//`` and
``%`` by zero give 0; float16, bfloat16 and float8 ops compute in float32 and round to
their dtype after every op (reductions included: accumulate in float32, round once);
float -> integer casts truncate and saturate (NaN -> 0).

>>> import numpy as np, graphdsl as gd
>>> g = gd.Graph("e", input_types={"x": gd.TensorType(gd.int8, (3,))})
>>> x, = g.inputs
>>> g.output(x * 2, x // 0)
>>> gd.evaluate(g, {"x": np.array([100, -7, 3], np.int8)})
[array([-56, -14,   6], dtype=int8), array([0, 0, 0], dtype=int8)]
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from graphdsl.graph import Graph, GraphError, Symbol
from graphdsl.inputs import bind_inputs
from graphdsl.ops._convert import cast_array
from graphdsl.ops._define import apply_op, check_computable, run_node
from graphdsl.ops._nested import results_of
from graphdsl.regions import regions_of
from graphdsl.shapes import ShapeError
from graphdsl.types import IndexRangeError, TensorType
from graphdsl.verify import verify
from graphdsl.weights import WeightError, Weights, as_weights, check_weights, declared_weights

__all__ = ["apply_op", "evaluate", "run_node"]


def evaluate(
    graph: Graph,
    inputs: Mapping[str, Any] | Sequence[Any],
    *,
    weights: Weights | str | os.PathLike[str] | Mapping[str, Any] | None = None,
) -> list[np.ndarray]:
    """Run ``graph`` on numpy arrays; returns one array per output, in output order.

    ``inputs`` is a dict by input name or a list in input order; each array must have the
    input's dtype and shape (symbolic dimensions bind to the first size seen). ``weights``
    binds the graph's weights (:meth:`~graphdsl.Graph.weight`): a ``.npz`` or
    ``.safetensors`` path, :func:`~graphdsl.load_weights`, or a dict of arrays; each is
    checked against its declaration and read (memory-mapped) when it is used.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("f", input_types={"x": gd.TensorType(gd.int8, ("n",))})
    >>> x, = g.inputs
    >>> g.output(x * 2, x // 3)
    >>> gd.evaluate(g, {"x": np.array([100, -7], np.int8)})  # int8 wraps; // floors
    [array([-56, -14], dtype=int8), array([33, -3], dtype=int8)]
    """
    # a graphdsl.max Graph: the graphdsl graph underneath (whose inputs are symbols)
    graph = getattr(graph, "core_graph", graph)
    if not graph.outputs:
        raise GraphError(f"graph {graph.name!r} has no outputs: call g.output(...) first")
    verify(graph, check_types=False)  # a corrupted graph (a cycle) fails here, not in numpy
    check_computable(graph)  # max-graph's bool arithmetic: typed as max.graph types it, only
    arrays, dims = bind_inputs(graph, inputs)
    declared = declared_weights(graph)
    bound = _bind_weights(graph, declared, weights)
    env: dict[int, np.ndarray] = {id(s): a for s, a in zip(graph.inputs, arrays, strict=True)}
    groups: dict[tuple[int, tuple[int, ...]], list[np.ndarray]] = {}
    for node in graph.used():
        if node.op == "input":
            continue
        if node.op == "weight":
            env[id(node)] = bound.array(node.attrs["name"], node.dtype)
            continue
        if regions_of(node.attrs):  # cond, while_loop, call: one run for all their results
            key = (id(node.attrs["regions"]), tuple(id(i) for i in node.inputs))
            hit = groups.get(key)
            if hit is None:
                hit = groups[key] = _run_all(node, env, dims)
            env[id(node)] = hit[node.attrs["index"]]
            continue
        env[id(node)] = _run(node, env, dims)
    return [
        cast_array(env[id(o)], o.dtype) if o.op == "literal" else env[id(o)] for o in graph.outputs
    ]


def _bind_weights(
    graph: Graph,
    declared: Mapping[str, TensorType],
    weights: Weights | str | os.PathLike[str] | Mapping[str, Any] | None,
) -> Weights:
    if weights is None:
        weights = {}
        if declared:
            raise WeightError(
                f"graph {graph.name!r} declares weights {_names(declared)}: pass their data "
                "(evaluate(g, inputs, weights=...): a .npz or .safetensors path, "
                "gd.load_weights(...), or a dict of arrays)"
            )
    bound = as_weights(weights)
    check_weights(graph, bound, declared)
    return bound


def _names(declared: Mapping[str, TensorType]) -> str:
    return ", ".join(repr(n) for n in declared)


def _run_all(node: Symbol, env: dict[int, np.ndarray], dims: dict[str, int]) -> list[np.ndarray]:
    try:
        return results_of(node, [env[id(i)] for i in node.inputs], dims)
    except ShapeError as e:
        raise ShapeError(f"{node.op} (at {node.loc}): {e}") from None
    except IndexRangeError as e:
        raise IndexRangeError(f"{node.op} (at {node.loc}): {e}") from None


def _run(node: Symbol, env: dict[int, np.ndarray], dims: dict[str, int]) -> np.ndarray:
    if node.op == "literal":
        # kept at Python precision: each use converts it once, to the dtype it takes there
        return np.asarray(node.attrs["value"])
    if node.op == "constant":
        return np.asarray(node.attrs["value"])
    try:
        return run_node(node, [env[id(i)] for i in node.inputs], dims)
    except ShapeError as e:  # a size the static types leave open, wrong for these inputs
        raise ShapeError(f"{node.op} (at {node.loc}): {e}") from None
    except IndexRangeError as e:  # an index the data puts outside its axis
        raise IndexRangeError(f"{node.op} (at {node.loc}): {e}") from None
