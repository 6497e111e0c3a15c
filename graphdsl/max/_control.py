"""MAX's control flow over graphdsl's (``graphdsl.max.ops``): ``cond``, ``while_loop`` and
``call`` (of a subgraph).

graphdsl types a ``cond``'s results as the joins of its branches' types and a loop's
variables as the least fixed point of its body; MAX asks each branch to give ``out_types``
and each loop variable to keep its type, so these check that graphdsl's types are those.
A ``cond`` without results (``out_types=None``) runs its branches for their effect on
buffers: both are traced, and each buffer takes the branch's value that ``pred`` picks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import graphdsl.ops as gd
from graphdsl.dtypes import DType as CoreDType
from graphdsl.graph import Graph, Symbol
from graphdsl.max._buffer import BufferValue
from graphdsl.max._common import _value
from graphdsl.max._errors import refuse
from graphdsl.max._types import TensorType, UnsupportedError
from graphdsl.max._value import TensorValue, current_graph, device_of, maxop, note_effect
from graphdsl.max._value import tv as _tv
from graphdsl.types import OpTypeError


def _symbols(result: Any, what: str) -> list[Symbol]:
    if result is None:
        return []
    items = [result] if isinstance(result, (TensorValue, Symbol)) else list(result)
    return [_value(r, what) for r in items]


@maxop("cond")
def cond(
    pred: Any,
    out_types: Iterable[TensorType] | None,
    then_fn: Callable[[], Any],
    else_fn: Callable[[], Any],
) -> list[TensorValue]:
    """``then_fn()`` where the bool scalar ``pred`` holds, else ``else_fn()``; each branch
    returns values of ``out_types`` (graphdsl's ``cond``: ONNX ``If``). With
    ``out_types=None`` the branches return nothing: both are traced, and each buffer they
    store into takes the value of the branch ``pred`` picks (``where``)."""
    p = _value(pred, "cond")
    if p.dtype is not CoreDType.bool or p.rank != 0:
        raise OpTypeError(f"cond: the predicate must be a bool scalar, got {p.type}")
    if out_types is None:
        return _effects_only(p, then_fn, else_fn)
    want = list(out_types)
    got = gd.cond(p, lambda: _symbols(then_fn(), "cond"), lambda: _symbols(else_fn(), "cond"))
    results = got if isinstance(got, list) else [got]
    if len(results) != len(want):
        raise OpTypeError(
            f"cond: the branches return {len(results)} values and out_types lists "
            f"{len(want)}; return one value per out type"
        )
    out = [_tv(r, t.device) for r, t in zip(results, want, strict=True)]
    for k, (r, t) in enumerate(zip(out, want, strict=True)):
        if r.type != t:
            raise OpTypeError(
                f"Results don't match expected types: cond: result {k} is {r.type} (the join "
                f"of the branches' results) but out_types[{k}] is {t}; MAX asks both branches "
                "to give the out type (it keeps the out type): cast in the branch"
            )
    return out


def _effects_only(
    pred: Symbol, then_fn: Callable[[], Any], else_fn: Callable[[], Any]
) -> list[Any]:
    graph = current_graph()
    buffers = list(graph._buffers.values())
    before = [b.current for b in buffers]
    then_fn()
    after_then = [b.current for b in buffers]
    for b, v in zip(buffers, before, strict=True):
        b.current = v
    else_fn()
    for b, t, v in zip(buffers, after_then, before, strict=True):
        if t is not v or b.current is not v:
            b.current = gd.where(pred, t, b.current)
    return []


@maxop("while_loop")
def while_loop(
    initial_values: Any, predicate: Callable[..., Any], body: Callable[..., Any]
) -> list[TensorValue]:
    """``while predicate(*v): v = body(*v)`` from ``v = initial_values``; each loop variable
    keeps its type (graphdsl's ``while_loop``: ONNX ``Loop``). MAX needs at least one loop
    variable."""
    values = (
        [initial_values]
        if isinstance(initial_values, (TensorValue, Symbol))
        else list(initial_values)
    )
    if not values:
        raise ValueError("While loops must have at least one iteration value.")
    devices = [device_of(v) for v in values]

    def wrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*symbols: Symbol) -> Any:
            got = fn(*[_tv(s, d) for s, d in zip(symbols, devices, strict=True)])
            items = _symbols(got, "while_loop")
            return items[0] if len(items) == 1 and isinstance(got, (TensorValue, Symbol)) else items

        return call

    got = gd.while_loop([_value(v, "while_loop") for v in values], wrapped(predicate),
                        wrapped(body))  # fmt: skip
    results = got if isinstance(got, list) else [got]
    out = [_tv(r, d) for r, d in zip(results, devices, strict=True)]
    for k, (v, r) in enumerate(zip(values, out, strict=True)):
        start = _tv(_value(v, "while_loop"), devices[k])
        if r.type != start.type:
            raise OpTypeError(
                f"Results don't match expected types: while_loop: loop variable {k} starts as "
                f"{start.type} but the body makes it {r.type}; MAX keeps each loop variable's "
                "type: cast in the body"
            )
    return out


@maxop("call", one_device=False)
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
    core = getattr(graph, "core_graph", graph)  # graphdsl's graph under a MAX Graph
    buffers = [a for a in args if isinstance(a, BufferValue)]  # (their current values go in)
    values = [a.current if isinstance(a, BufferValue) else _value(a, "call") for a in args]
    params = core.inputs
    if len(values) != len(params):
        names = ", ".join(p.attrs.get("name", "?") for p in params)
        refuse(f"Expected {len(params)} args to call {core.name!r}, got {len(values)}",
               f"(graphdsl: its inputs are {names})")  # fmt: skip
    for k, (v, p) in enumerate(zip(values, params, strict=True)):
        if v.dtype != p.dtype or v.rank != p.rank:  # (graphdsl's call checks the shapes)
            refuse(f"Argument {k} of call to {core.name!r} has wrong type: expected "
                   f"{p.type}, got {v.type}", "(graphdsl: cast or reshape it first)")  # fmt: skip
    got = gd.call(core, *values)
    if core.__dict__.get("_effects"):  # the callee orders effects: so does the call
        note_effect(None)
    where = getattr(core, "device_of", None)  # each result on its subgraph output's device
    got = got if isinstance(got, list) else [got]
    out = [_tv(r, where(o) if where else None) for r, o in zip(got, core.outputs, strict=True)]
    if buffers and len(getattr(core, "_buffers", {})) == len(buffers):
        # the callee's outputs end with its buffer inputs' final values: the caller's
        # buffers take them, in order
        n = len(out) - len(buffers)
        for buffer, final in zip(buffers, out[n:], strict=True):
            buffer.current = final.symbol
        out = out[:n]
    return out
