"""Graphs nested in nodes, for the ops that hold them (graphdsl/ops/control.py): tracing a
Python function into a nested graph, and running nested graphs on numpy arrays (the
reference).

Each op with nested graphs registers in :data:`RESULTS` the function that computes all its
results at once (an op with several results is several nodes: one run serves them all).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.graph import Graph
from graphdsl.ops._convert import cast_array
from graphdsl.ops._define import Operand, Symbol, op, run_node
from graphdsl.regions import Region, regions_of
from graphdsl.shapes import ShapeError
from graphdsl.types import IndexRangeError, OpTypeError, TensorType

__all__ = [
    "RESULTS",
    "Results",
    "broadcast",
    "in_dtypes",
    "position",
    "results_of",
    "run_graph",
    "run_region",
    "trace",
    "union",
]

Results = Operand | Sequence[Operand]
# op name -> (attributes, operands in the op's operand dtypes, bound dimensions) -> results
RESULTS: dict[str, Callable[[dict[str, Any], list[np.ndarray], dict[str, int]], list[Any]]] = {}


# ---------------------------------------------------------------------------- tracing


def trace(
    g: Graph, role: str, fn: Callable[..., Results], types: Sequence[TensorType]
) -> tuple[Graph, list[Symbol]]:
    """Run ``fn`` on new inputs of ``types`` in a graph nested in ``g``; its results, as
    values of that graph (those of the graphs around it captured, Python scalars literals)."""
    sub = g.nested(role, [(f"v{k}", t) for k, t in enumerate(types)])
    with sub.tracing():
        got = fn(*sub.inputs)
    items = list(got) if isinstance(got, (list, tuple)) else [got]
    if not items:
        raise OpTypeError(f"{role} returned no values; return at least one")
    outs = []
    for k, v in enumerate(items):
        if isinstance(v, Symbol):
            outs.append(sub.capture(v, role))
        elif isinstance(v, (bool, int, float, complex, np.generic)):
            outs.append(sub.scalar(v.item() if isinstance(v, np.generic) else v))
        elif isinstance(v, np.ndarray):
            outs.append(sub.constant(v))
        else:
            raise OpTypeError(
                f"{role} returned {v!r} (of type {type(v).__name__}) as its result {k}; return "
                "Symbols, Python scalars or numpy arrays"
            )
    return sub, outs


def union(groups: Sequence[Sequence[Symbol]]) -> list[Symbol]:
    """The values of ``groups``, each once (by identity), in order of first appearance."""
    out: list[Symbol] = []
    seen: set[int] = set()
    for group in groups:
        for v in group:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def position(values: list[Symbol], v: Symbol) -> int:
    return next(k for k, u in enumerate(values) if u is v)


def broadcast(v: Symbol, shape: tuple[int | str, ...]) -> Symbol:
    return v if v.shape == shape else op("broadcast_to", v, shape=tuple(shape))


# ---------------------------------------------------------------------------- running


def in_dtypes(values: Sequence[Any], dtypes: Sequence[DType]) -> list[Any]:
    return [cast_array(np.asarray(v), d) for v, d in zip(values, dtypes, strict=True)]


def run_region(r: Region, operands: Sequence[np.ndarray], dims: dict[str, int]) -> list[Any]:
    """Run the graph of ``r`` on the node's ``operands`` (those at ``r.args``)."""
    return run_graph(r.graph, [operands[i] for i in r.args], dims)


def run_graph(graph: Graph, args: Sequence[np.ndarray], dims: dict[str, int]) -> list[Any]:
    """Evaluate a nested graph on ``args`` (in its input order); its outputs, literals as
    Python values (each use converts them). Symbolic dimensions keep the sizes ``dims``
    bound around it."""
    env: dict[int, Any] = {id(s): cast_array(np.asarray(a), s.dtype)
                           for s, a in zip(graph.inputs, args, strict=True)}  # fmt: skip
    groups: dict[tuple[int, tuple[int, ...]], list[Any]] = {}
    for node in graph.used():
        if node.op == "input":
            continue
        if node.op in ("literal", "constant"):
            env[id(node)] = np.asarray(node.attrs["value"])
            continue
        values = [env[id(i)] for i in node.inputs]
        try:
            if regions_of(node.attrs):  # the results of its op, once for all its nodes
                key = (id(node.attrs["regions"]), tuple(id(i) for i in node.inputs))
                hit = groups.get(key)
                if hit is None:
                    hit = groups[key] = results_of(node, values, dims)
                env[id(node)] = hit[node.attrs["index"]]
            else:
                env[id(node)] = run_node(node, values, dims)
        except ShapeError as e:
            raise ShapeError(f"{node.op} (at {node.loc}): {e}") from None
        except IndexRangeError as e:
            raise IndexRangeError(f"{node.op} (at {node.loc}): {e}") from None
    return [env[id(o)] for o in graph.outputs]


def results_of(node: Symbol, values: Sequence[np.ndarray], dims: dict[str, int]) -> list[Any]:
    """Every result of the op of ``node`` (a node holding graphs), in its result dtypes:
    one run for the several nodes of an op with several results."""
    args = [cast_array(np.asarray(v), d) for v, d in zip(values, node.in_dtypes, strict=True)]
    return RESULTS[node.op](node.attrs, args, dims)
