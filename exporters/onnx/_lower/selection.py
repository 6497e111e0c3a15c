"""Lowerings of selection ops: native ArgMax/ArgMin (with the first NaN made the extreme),
one TopK for both results of a ``top_k``, ``argsort`` as a TopK over the whole axis, and
CumSum (integers in a wider or same-width type, where sums wrap alike; narrow floats in
float32, rounded once).

Measured on onnxruntime 1.32's CPU provider (tests/test_selection_ops.py pins each):
ArgMax/ArgMin return the first index of the extreme, -0.0 and +0.0 tie, but NaN is skipped
unless it comes first; TopK orders NaN as the largest value and breaks ties by the lower
index (for every k, both directions), as the reference does; CumSum adds in order, as
numpy does, but its exclusive sums add from +0.0 (ONNX's reference shifts the inclusive
ones: the sum of a lone -0.0 is -0.0).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

import numpy as np
from onnx import helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._types import storage
from graphdsl.dtypes import Kind
from graphdsl.graph import Symbol

_INT64_MIN = int(np.iinfo(np.int64).min)

# (input value, k (None: the whole axis), axis, largest) -> (values, indices), per export:
# the two nodes of one top_k become one ONNX TopK
_TOPK: WeakKeyDictionary[Builder, dict[tuple[str, int | None, int, int], tuple[V | None, V]]] = (
    WeakKeyDictionary()
)


def _ordered(b: Builder, x: V, onnx_op: str) -> V:
    """``x`` in a dtype with a kernel for ``onnx_op`` whose order is ``x``'s, exactly."""
    if storage(x.dtype) is T.uint64:
        # no wider type: u - 2**63 (a wrapping add of INT64_MIN) maps uint64's order onto
        # int64's (compute_dtype raises where the target has no int64 kernel for the op)
        b.compute_dtype(onnx_op, T.int64)
        xi = b.cast(x, T.int64)
        return b.elementwise("Add", [xi, b.scalar(_INT64_MIN, T.int64)])
    return b.cast(x, b.compute_dtype(onnx_op, x.dtype, narrow_in_f32=True))


def _arg_extremum(onnx_op: str) -> None:
    @register(onnx_op.lower())
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x = args[0]
        axis, keep = int(node.attrs["axis"]), int(bool(node.attrs.get("keepdims")))
        key = _ordered(b, x, onnx_op)
        found = b.node(onnx_op, [key.name], T.int64, axis=axis, keepdims=keep,
                       select_last_index=0)  # fmt: skip
        if x.dtype.kind is not Kind.float:
            return found
        # onnxruntime skips NaN (argmax of [1, nan, 3] is 2; measured), numpy returns the
        # first NaN: where a slice holds one, the first index of IsNaN's maximum (as 0.0 and
        # 1.0 in the key's dtype, which has the ArgMax kernel)
        nan = b.cast(b.node("IsNaN", [key.name], T.bool), key.dtype)
        first = b.node("ArgMax", [nan.name], T.int64, axis=axis, keepdims=keep,
                       select_last_index=0)  # fmt: skip
        has = b.node("ReduceMax", [nan.name, b.int64s([axis])], key.dtype, keepdims=keep)
        return b.select(b.cast(has, T.bool), first, found)


_arg_extremum("ArgMax")
_arg_extremum("ArgMin")


def _top_k(
    b: Builder, x: V, k: int | None, axis: int, largest: int, rank: int
) -> tuple[V | None, V]:
    """One ONNX TopK (sorted) of ``k`` elements (the whole axis when None, its size read at
    run time): the values, in the dtype TopK ran in, and the int64 indices. Cached, so that
    the second result of a top_k (or an argsort of the same order) reuses the node."""
    cache = _TOPK.setdefault(b, {})
    hit = cache.get((x.name, k, axis, largest))
    if hit is not None:
        return hit
    if x.dtype.kind is Kind.float:  # on every target: see _total_order_top_k
        hit = _total_order_top_k(b, x, k, axis, largest, rank)
        cache[(x.name, k, axis, largest)] = hit
        return hit
    key = _ordered(b, x, "TopK")
    values, indices = _topk_node(b, key, _count(b, key, axis, k), axis, largest)
    hit = cache[(x.name, k, axis, largest)] = (values, indices)
    return hit


def _count(b: Builder, x: V, axis: int, k: int | None) -> str:
    """TopK's k: ``k``, or the size of ``axis`` at run time."""
    if k is None:
        return b.node("Shape", [x.name], T.int64, start=axis, end=axis + 1).name
    return b.int64s([k])


def _topk_node(b: Builder, key: V, count: str, axis: int, largest: int) -> tuple[V, V]:
    values, indices = b.fresh("topk_values"), b.fresh("topk_indices")
    n = b.nodes.add()
    n.CopyFrom(helper.make_node(
        "TopK", [key.name, count], [values, indices], axis=axis, largest=largest, sorted=1
    ))  # fmt: skip
    ctx = getattr(b.context, "op", None)
    if ctx is not None:
        n.name = f"{ctx} at {getattr(b.context, 'loc', '')}/{values}"
    return V(values, key.dtype), V(indices, T.int64)


def _total_order_top_k(
    b: Builder, x: V, k: int | None, axis: int, largest: int, rank: int
) -> tuple[V | None, V]:
    """TopK of floats ordered as the reference orders them (NaN largest, -0.0 == +0.0, ties
    to the lower index), on a key that no TopK kernel orders otherwise: finite, without
    NaN or signed zeros. CUDA's bitonic TopK compares NaN as equal to everything and pads
    with the lowest (highest) finite value, which sorts above -inf and comes back as an
    index past the axis; onnxruntime 1.31's CPU TopK does not order NaN last either
    (_targets.py's CUDA_QUIRKS).

    Narrower floats: one TopK of a float64 key, where -inf is -1e300, +inf 1e300 and NaN
    2e300 (every finite value of float32 and narrower lies between). float64 has no room
    for them: two passes, each stable (TopK breaks ties by position): the finite values
    (infinities and NaN as 0.0) by value, then that arrangement by class (-inf, finite,
    +inf, NaN; reversed for the largest first) with the position as the tie-break, as
    unique integers. No values: _gathered takes them from x where they are wanted."""
    d = storage(x.dtype)
    f = T.float64
    xf = b.cast(x, f)
    if d is not T.float64:
        key = xf
        for value, to in ((-np.inf, -1e300), (np.inf, 1e300)):
            hit = b.node("Equal", [key.name, b.scalar(value, f).name], T.bool)
            key = b.node("Where", [hit.name, b.scalar(to, f).name, key.name], f)
        nan = b.node("IsNaN", [xf.name], T.bool)
        key = b.node("Where", [nan.name, b.scalar(2e300, f).name, key.name], f)
        key = b.node("Add", [key.name, b.scalar(0.0, f).name], f)
        _, indices = _topk_node(b, key, _count(b, key, axis, k), axis, largest)
    else:
        special = b.node("Or", [b.node("IsNaN", [xf.name], T.bool).name,
                                b.node("IsInf", [xf.name], T.bool).name], T.bool)  # fmt: skip
        finite = b.node("Where", [special.name, b.scalar(0.0, f).name, xf.name], f)
        finite = b.node("Add", [finite.name, b.scalar(0.0, f).name], f)
        _, first = _topk_node(b, finite, _count(b, finite, axis, None), axis, largest)
        y = b.node("GatherElements", [xf.name, first.name], f, axis=axis)

        def flag(v: V) -> V:
            return b.cast(v, T.int64)

        nan = flag(b.node("IsNaN", [y.name], T.bool))
        pinf = flag(b.node("Equal", [y.name, b.scalar(np.inf, f).name], T.bool))
        ninf = flag(b.node("Equal", [y.name, b.scalar(-np.inf, f).name], T.bool))
        two_nan = b.node("Add", [nan.name, nan.name], T.int64)
        if largest:  # NaN 0, +inf 1, finite 2, -inf 3
            cls = b.node("Sub", [b.node("Add", [b.scalar(2, T.int64).name, ninf.name],
                                        T.int64).name,
                                 b.node("Add", [pinf.name, two_nan.name], T.int64).name],
                         T.int64)  # fmt: skip
        else:  # -inf 0, finite 1, +inf 2, NaN 3
            cls = b.node("Sub", [b.node("Add", [b.scalar(1, T.int64).name,
                                                b.node("Add", [pinf.name, two_nan.name],
                                                       T.int64).name], T.int64).name,
                                 ninf.name], T.int64)  # fmt: skip
        n = b.node("Shape", [xf.name], T.int64, start=axis, end=axis + 1)
        size = b.node("Squeeze", [n.name, b.int64s([0])], T.int64)
        pos = b.node("Range", [b.const(0, T.int64).name, size.name, b.const(1, T.int64).name],
                     T.int64)  # fmt: skip
        if axis != rank - 1:  # positions along the axis, broadcast over the later axes
            pos = b.node("Unsqueeze", [pos.name, b.int64s(list(range(1, rank - axis)))],
                         T.int64)  # fmt: skip
        order = b.node("Add", [b.node("Mul", [cls.name, size.name], T.int64).name, pos.name],
                       T.int64)  # fmt: skip
        _, within = _topk_node(b, order, _count(b, order, axis, k), axis, 0)
        indices = b.node("GatherElements", [first.name, within.name], T.int64, axis=axis)
    return None, indices


def _gathered(b: Builder, x: V, indices: V, axis: int) -> V:
    """``x``'s values at ``indices`` along ``axis`` (NaN payloads and zero signs kept)."""
    moved = b.cast(x, b.compute_dtype("GatherElements", x.dtype, bits=True))
    values = b.node("GatherElements", [moved.name, indices.name], moved.dtype, axis=axis)
    return b.cast(values, x.dtype)


def selected(b: Builder, node: Symbol, x: V, largest: int) -> V:
    """``top_k``'s (``largest`` 1) or ``bottom_k``'s (0) result of ``node`` on ``x``."""
    rank = node.inputs[0].rank
    axis = int(node.attrs["axis"]) % rank
    values, indices = _top_k(b, x, int(node.attrs["k"]), axis, largest, rank)
    if node.attrs["result"] == "indices":
        return indices
    if values is None:  # (floats: TopK ran on a key; the values are x's at the indices)
        return _gathered(b, x, indices, axis)
    if storage(x.dtype) is T.uint64:  # back from the order-preserving map of _ordered
        values = b.elementwise("Sub", [values, b.scalar(_INT64_MIN, T.int64)])
    return b.cast(values, x.dtype)  # (exact: TopK ran in x's dtype or a widening of it)


@register("top_k")
def _top_k_lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return selected(b, node, args[0], 1)


@register("argsort")
def _argsort(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # TopK over the whole axis: ties go to the lower index in both directions, NaN is the
    # largest value (measured): numpy's stable argsort when ascending
    rank = node.inputs[0].rank
    axis = int(node.attrs["axis"]) % rank
    n = node.inputs[0].shape[axis]
    largest = 0 if node.attrs["ascending"] else 1
    return _top_k(b, args[0], n if isinstance(n, int) else None, axis, largest, rank)[1]


@register("cumsum")
def _cumsum(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # CumSum has int32/int64/float/double kernels: narrower integers add in int32 (uint32 in
    # int64, uint64 as int64 bits), where sums wrap alike modulo 2**bits, and the cast back
    # wraps; float16/bfloat16 add in float32 and round once, as the reference does
    x = args[0]
    cd = b.compute_dtype("CumSum", x.dtype, narrow_in_f32=True, bits=True)
    axis = int(node.attrs["axis"])
    exclusive, reverse = int(node.attrs["exclusive"]), int(node.attrs["reverse"])
    shift = exclusive and x.dtype.kind is Kind.float
    xc = b.cast(x, cd)
    # CUDA's reverse sums add in forward order and start from +0.0 (CUDA_QUIRKS): reversed
    # with Slice around a forward sum, and the zero sign of an all -0.0 prefix put back
    ordered = x.dtype.kind is Kind.float and b.target.quirk("cumsum_order")
    flip = reverse and ordered
    if flip:
        xc = _reversed(b, xc, axis)
    r = b.node("CumSum", [xc.name, b.scalar(axis, T.int64).name], cd,
               exclusive=0 if shift else exclusive, reverse=0 if flip else reverse)  # fmt: skip
    if ordered and b.exact:
        r = _negative_zero_prefix(b, xc, r, axis)
    if flip:
        r = _reversed(b, r, axis)
    if shift:
        r = _shifted(b, r, axis, reverse)
    return b.cast(r, x.dtype)


def _reversed(b: Builder, x: V, axis: int) -> V:
    big = np.iinfo(np.int64).max
    return b.node("Slice", [x.name, b.int64s([-1]), b.int64s([-big]), b.int64s([axis]),
                            b.int64s([-1])], x.dtype)  # fmt: skip


def _negative_zero_prefix(b: Builder, x: V, r: V, axis: int) -> V:
    """Running sums ``r`` of ``x`` from +0.0, with -0.0 where every term so far is -0.0 (the
    reference's sums start from the first term)."""
    f = x.dtype
    zero = b.scalar(0.0, f)
    inv = b.node("Div", [b.scalar(1.0, f).name, x.name], f)
    negative_zero = b.node("And", [b.node("Equal", [x.name, zero.name], T.bool).name,
                                   b.node("Less", [inv.name, zero.name], T.bool).name],
                           T.bool)  # fmt: skip
    other = b.cast(b.node("Not", [negative_zero.name], T.bool), T.int32)
    seen = b.node("CumSum", [other.name, b.scalar(axis, T.int64).name], T.int32)
    all_negative_zero = b.node("Equal", [seen.name, b.scalar(0, T.int32).name], T.bool)
    return b.select(all_negative_zero, b.scalar(-0.0, f), r)


def _shifted(b: Builder, r: V, axis: int, reverse: int) -> V:
    """Inclusive running sums ``r`` shifted by one along ``axis`` after a +0.0: exclusive sums
    as ONNX's reference CumSum computes them. onnxruntime's exclusive sums add from +0.0
    (measured: [-0.0, -0.0] gives [0.0, +0.0], the reference [0.0, -0.0])."""
    big = np.iinfo(np.int64).max

    def part(start: int, end: int) -> V:
        ends = b.int64s([end])
        return b.node("Slice", [r.name, b.int64s([start]), ends, b.int64s([axis])], r.dtype)

    # a +0.0 slab of one element along the axis (none when the axis is empty)
    edge = part(-1, big) if reverse else part(0, 1)
    true = b.const(np.asarray(True), T.bool)
    zero = b.node("Where", [true.name, b.scalar(0.0, r.dtype).name, edge.name], r.dtype)
    rest = part(1, big) if reverse else part(0, -1)
    ordered = [rest, zero] if reverse else [zero, rest]
    return b.node("Concat", [v.name for v in ordered], r.dtype, axis=axis)
