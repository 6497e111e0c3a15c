"""Common-subexpression elimination: one node per (op, operands, attributes) and per constant."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.graph import Graph, Symbol
from graphdsl.passes.rewrite import Rewriter

__all__ = ["cse"]

_MAX_CONST_BYTES = 1 << 16


def _attr_key(v: Any) -> Hashable:
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _attr_key(x)) for k, x in v.items()))
    if isinstance(v, (DType, int, str)) or v is None:
        return (type(v).__name__, v)
    if isinstance(v, (float, complex)):
        return (type(v).__name__, repr(v))  # keeps 0.0 and -0.0 apart; nan equals nan
    return (type(v).__name__, v)


def _key(node: Symbol, args: tuple[Symbol, ...]) -> Hashable | None:
    attrs = node.attrs
    if node.op == "constant":
        arr = attrs["value"]
        if arr.nbytes > _MAX_CONST_BYTES:
            return None  # large constants are compared by identity only
    akey = _attr_key(attrs) if attrs else ()
    return (node.op, tuple(map(id, args)), akey, node.type, node.in_dtypes)


def cse(graph: Graph) -> Graph:
    """A copy of ``graph`` where structurally identical nodes are merged."""
    rw = Rewriter(graph)
    seen: dict[Hashable, Symbol] = {}
    for node in graph.nodes:
        if node.op == "input":
            continue
        args = tuple(rw.map[id(i)] for i in node.inputs)
        key = _key(node, args)
        hit = seen.get(key) if key is not None else None
        if hit is not None:
            rw.map[id(node)] = hit
            continue
        new = rw.copy_node(node, args)
        if key is not None:
            seen[key] = new
    return rw.finish()
