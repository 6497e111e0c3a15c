"""MAX's control flow over graphdsl's (``graphdsl.max.ops``): ``cond``, ``while_loop`` and
``call`` (of a subgraph).

graphdsl types a ``cond``'s results as the joins of its branches' types and a loop's
variables as the least fixed point of its body; MAX asks each branch to give ``out_types``
and each loop variable to keep its type, so these check that graphdsl's types are those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import graphdsl.ops as gd
from graphdsl.graph import Graph, Symbol
from graphdsl.max._common import _value
from graphdsl.max._graph import TensorValue, _tv
from graphdsl.max._types import TensorType, UnsupportedError
from graphdsl.types import OpTypeError


def cond(
    pred: Any,
    out_types: Iterable[TensorType] | None,
    then_fn: Callable[[], Any],
    else_fn: Callable[[], Any],
) -> list[TensorValue]:
    """``then_fn()`` where the bool scalar ``pred`` holds, else ``else_fn()``; each branch
    returns values of ``out_types`` (graphdsl's ``cond``: ONNX ``If``)."""
    if out_types is None:
        raise UnsupportedError(
            "cond: out_types=None (branches run for their side effects) is not supported by "
            "graphdsl, whose branches return values; give out_types and return them"
        )
    want = list(out_types)
    got = gd.cond(_value(pred, "cond"), then_fn, else_fn)
    results = got if isinstance(got, list) else [got]
    if len(results) != len(want):
        raise OpTypeError(
            f"cond: the branches return {len(results)} values and out_types lists "
            f"{len(want)}; return one value per out type"
        )
    for k, (r, t) in enumerate(zip(results, want, strict=True)):
        if r.dtype is not t.dtype or list(r.shape) != t.shape:
            raise OpTypeError(
                f"cond: result {k} is {r.type} (the join of the branches' results) but "
                f"out_types[{k}] is {t}; MAX asks both branches to give the out type: cast "
                "in the branch"
            )
    return [_tv(r) for r in results]


def while_loop(
    initial_values: Any, predicate: Callable[..., Any], body: Callable[..., Any]
) -> list[TensorValue]:
    """``while predicate(*v): v = body(*v)`` from ``v = initial_values``; each loop variable
    keeps its type (graphdsl's ``while_loop``: ONNX ``Loop``)."""
    values = [initial_values] if isinstance(initial_values, Symbol) else list(initial_values)
    got = gd.while_loop(values, predicate, body)
    results = got if isinstance(got, list) else [got]
    for k, (v, r) in enumerate(zip(values, results, strict=True)):
        if isinstance(v, Symbol) and (r.dtype is not v.dtype or r.shape != v.shape):
            raise OpTypeError(
                f"while_loop: loop variable {k} starts as {v.type} but the body makes it "
                f"{r.type}; MAX keeps each loop variable's type: cast in the body"
            )
    return [_tv(r) for r in results]


def call(graph: Graph, *args: Any, prefix: str = "") -> list[TensorValue]:
    """The results of subgraph ``graph`` (``Graph.add_subgraph``) on ``args``, as a list
    (graphdsl's ``call``: one ONNX local function, called once per call). ``prefix``
    names a subgraph's weights in MAX; a graphdsl subgraph has none (weights are
    arguments), so only ``""`` is accepted."""
    if prefix:
        raise UnsupportedError(
            f"call: prefix={prefix!r} names the weights of a subgraph in MAX; a graphdsl "
            "subgraph reads only its inputs: pass the weights as arguments, without a prefix"
        )
    got = gd.call(graph, *[_value(a, "call") for a in args])
    return [_tv(r) for r in (got if isinstance(got, list) else [got])]
