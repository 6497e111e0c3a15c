"""Lowerings of reductions: wrapping integer sums (MatMul with ones) and products (Scan),
exact int64/uint64 max and min, NaN-propagating float max and min, ONNX's identities over
empty sets (clamped to the dtype's range where computed wider), mean's NaN for empty sets;
any and all in uint8, var and std as the reference's two passes, logsumexp composed (max
shifted: onnxruntime's ReduceLogSumExp is wrong where a slice starts with -inf)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import (
    LOWER,
    Lowering,
    SymbolicDims,
    T,
    register,
)
from exporters.onnx._types import storage, type_name
from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Symbol
from graphdsl.shapes import Dim


def _axes(node: Symbol) -> tuple[int, ...]:
    axes: tuple[int, ...] = node.attrs["axis"]
    return axes


def _keepdims(node: Symbol) -> int:
    return int(bool(node.attrs.get("keepdims")))


def _sizes(node: Symbol, axes: Sequence[int]) -> list[int | str]:
    """The sizes of the reduced axes of ``node``'s first operand."""
    shape = node.inputs[0].shape
    return [shape[a] for a in axes]


def _reduce_axes(
    b: Builder, onnx_op: str, x: V, axes: tuple[int, ...], keep: int, sizes: Sequence[Dim]
) -> V:
    cd = b.compute_dtype(onnx_op, x.dtype, narrow_in_f32=True)
    r = b.reduce(onnx_op, b.cast(x, cd), axes, cd, keep, sizes)
    return b.cast(r, x.dtype)


def _extremum(onnx_op: str) -> Lowering:
    # Over an empty set ONNX gives the compute dtype's identity (-inf, or the lowest integer
    # for ReduceMax), which the reference gives in the value's own dtype: a value computed
    # in a wider dtype is clamped to its own dtype's range first (exact for non-empty sets).
    lowest = onnx_op == "ReduceMax"

    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x = args[0]
        axes = _axes(node)
        if not axes:
            return x
        keep = _keepdims(node)
        sizes = _sizes(node, axes)
        d = storage(x.dtype)
        if d is T.bool:  # onnxruntime's bool ReduceMax/Min fail on an empty set
            return b.cast(_reduce_axes(b, onnx_op, b.cast(x, T.uint8), axes, keep, sizes), T.bool)
        if d is T.uint32:  # exact in float64; int64 ReduceMax/Min are wrong on onnxruntime 1.31
            r = _reduce_axes(b, onnx_op, b.cast(x, T.float64), axes, keep, sizes)
            return b.cast(_clamp(b, r, d, lowest), x.dtype)
        if d in (T.int64, T.uint64):
            xi = b.cast(x, T.int64)
            offset = b.scalar(np.iinfo(np.int64).min, T.int64)
            if d is T.uint64:  # order-preserving map: u - 2**63 (a wrapping add of INT64_MIN)
                xi = b.elementwise("Add", [xi, offset])
            init = np.iinfo(np.int64).min if lowest else np.iinfo(np.int64).max
            take = "Less" if lowest else "Greater"
            r = _scan_reduce(b, node, xi, axes, keep, take, init)
            if d is T.uint64:
                r = b.elementwise("Sub", [r, offset])
            return b.cast(r, x.dtype)
        if x.dtype.kind is not Kind.float:
            cd = b.compute_dtype(onnx_op, x.dtype, narrow_in_f32=True)
            r = b.reduce(onnx_op, b.cast(x, cd), axes, cd, keep, _sizes(node, axes))
            return b.cast(_clamp(b, r, d, lowest) if cd is not d else r, x.dtype)
        r = _reduce_axes(b, onnx_op, x, axes, keep, _sizes(node, axes))
        if b.exact:
            r = _zero_sign(b, x, r, axes, keep, lowest, sizes)
        # onnxruntime's ReduceMax/Min skip NaN; numpy propagates it
        nan = b.cast(b.node("IsNaN", [b.cast(x, T.float32 if x.dtype in NARROW else x.dtype).name],
                            T.bool), T.uint8)  # fmt: skip
        any_nan = _reduce_axes(b, "ReduceMax", nan, axes, keep, _sizes(node, axes))
        return b.select(b.cast(any_nan, T.bool), b.scalar(np.nan, x.dtype), r)

    return lower


def _zero_sign(
    b: Builder, x: V, r: V, axes: tuple[int, ...], keep: int, lowest: bool, sizes: Sequence[Dim]
) -> V:
    """``r`` with a zero result signed as IEEE 754-2019 orders zeros (-0.0 < +0.0): the max of
    a set holding +0.0 is +0.0, its min -0.0 if it holds one (onnxruntime keeps whichever
    zero its order of accumulation meets first). Exact: r + 0.0 turns -0.0 into +0.0 and
    changes nothing else, and a factor of 1 or -1 gives the zero its sign."""
    f = T.float32 if x.dtype in NARROW else storage(x.dtype)
    xf, rf, zero = b.cast(x, f), b.cast(r, f), b.scalar(0.0, f)
    sign = b.signbit(xf)
    wanted = b.node("Not", [sign.name], T.bool) if lowest else sign  # max: +0.0; min: -0.0
    is_zero = b.node("Equal", [xf.name, zero.name], T.bool)
    has = b.cast(b.node("And", [is_zero.name, wanted.name], T.bool), T.uint8)
    found = b.cast(_reduce_axes(b, "ReduceMax", has, axes, keep, sizes), T.bool)
    if lowest:
        found = b.node("Not", [found.name], T.bool)  # max: -0.0 where no +0.0 was found
    r_zero = b.node("Equal", [rf.name, zero.name], T.bool)
    negative = b.cast(b.node("And", [r_zero.name, found.name], T.bool), f)
    factor = b.node(
        "Sub",
        [b.scalar(1.0, f).name, b.node("Mul", [negative.name, b.scalar(2.0, f).name], f).name],
        f,
    )
    positive = b.node("Add", [rf.name, zero.name], f)
    return b.cast(b.node("Mul", [positive.name, factor.name], f), r.dtype)


def _clamp(b: Builder, r: V, d: DType, lowest: bool) -> V:
    """``r`` (of a wider dtype) raised to ``d.min`` (``lowest``) or lowered to ``d.max``."""
    bound = b.scalar(d.min if lowest else d.max, r.dtype)
    out = b.elementwise("Less" if lowest else "Greater", [r, bound], result_bool=True)
    return b.select(out, bound, r)


LOWER["max"] = _extremum("ReduceMax")
LOWER["min"] = _extremum("ReduceMin")


@register("mean")
def _mean(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    if not axes:
        return x
    sizes = _sizes(node, axes)
    if all(isinstance(n, int) and n > 0 for n in sizes):
        rank = node.inputs[0].rank
        cd = b.compute_dtype("ReduceMean", x.dtype, narrow_in_f32=True)
        spatial = sorted(axes)
        first = spatial == list(range(2, rank))  # (N, C, *spatial)
        last = spatial == list(range(1, rank - 1))  # (N, *spatial, C): transposed to the above
        channels = node.inputs[0].shape[1 if first else rank - 1]
        # (onnxruntime's GlobalAveragePool refuses an empty axis but N: a channel count that
        # may be 0 takes ReduceMean; found by the fuzzer, a top_k of k = 0 then a mean)
        pool = isinstance(channels, int) and channels > 0
        if rank >= 3 and (first or last) and pool and b.target.has("GlobalAveragePool",
                                                                   type_name(cd)):
            # the same sum and division, which onnxruntime runs in its blocked NCHWc layout
            # after a convolution (its transpose optimizer cancels a channels-last model's
            # transposes to and from channels first)
            xc = b.cast(x, cd)
            if last:
                xc = b.node("Transpose", [xc.name], cd, perm=[0, rank - 1, *range(1, rank - 1)])
            r = b.node("GlobalAveragePool", [xc.name], cd)
            if not keep:
                r = b.node("Reshape", [r.name, b.int64s([0, 0])], cd)
            elif last:
                r = b.node("Transpose", [r.name], cd, perm=[0, *range(2, rank), 1])
            return b.cast(r, x.dtype)
        return _reduce_axes(b, "ReduceMean", x, axes, keep, _sizes(node, axes))
    # ONNX's ReduceMean of an empty set is 0; the reference's is NaN (numpy's): multiply by
    # n / n, which is 1 (exact) unless the reduced element count n is 0 at run time
    cd = b.compute_dtype("ReduceMean", x.dtype, narrow_in_f32=True)
    r = b.reduce("ReduceMean", b.cast(x, cd), axes, cd, keep, sizes)
    shape = b.node("Shape", [b.cast(x, cd).name], T.int64).name
    count = b.node("Squeeze", [_dims_product(b, shape, axes)], T.int64)  # a scalar: the
    n = b.cast(count, cd)  # product must not raise a rank-0 result's rank
    one_or_nan = b.node("Div", [n.name, n.name], cd)
    return b.cast(b.node("Mul", [r.name, one_or_nan.name], cd), x.dtype)


def _dims_product(b: Builder, shape: str, axes: Sequence[int]) -> str:
    """A 1-element int64 tensor: the product of ``shape``'s dimensions at ``axes`` (a chain
    of Mul: the CUDA provider has no int64 ReduceProd)."""
    parts = [b.node("Slice", [shape, b.int64s([a]), b.int64s([a + 1])], T.int64).name
             for a in axes]  # fmt: skip
    if not parts:
        return b.int64s([1])
    product = parts[0]
    for part in parts[1:]:
        product = b.node("Mul", [product, part], T.int64).name
    return product


def _move_axes_last(b: Builder, x: V, rank: int, axes: tuple[int, ...]) -> tuple[V, str]:
    """Transpose reduced axes to the end and flatten them: (..., K); also the kept shape."""
    kept = [i for i in range(rank) if i not in axes]
    perm = kept + list(axes)
    xt = b.node("Transpose", [x.name], x.dtype, perm=perm) if perm != list(range(rank)) else x
    shape = b.node("Shape", [xt.name], T.int64).name
    kept_shape = b.node("Slice", [shape, b.int64s([0]), b.int64s([len(kept)])], T.int64).name
    # the reduced size explicitly: a -1 cannot be inferred when other dimensions are 0
    size = _dims_product(b, shape, range(len(kept), rank))
    flat_shape = b.node("Concat", [kept_shape, size], T.int64, axis=0).name
    # allowzero: a reduced size of 0 is 0 elements (Reshape would copy the input's dimension
    # there: x of shape (2, 0, 3) summed over all axes was reshaped to (2,), and failed)
    return b.node("Reshape", [xt.name, flat_shape], x.dtype, allowzero=1), kept_shape


@register("sum")
def _sum(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    if not axes:
        return x
    if x.dtype.kind is Kind.float:
        return _reduce_axes(b, "ReduceSum", x, axes, keep, _sizes(node, axes))
    # Integers wrap in numpy; ONNX ReduceSum saturates (and int64 goes through double).
    # A MatMul with a ones vector in int64 wraps exactly; the cast back wraps to the type.
    acc = T.int64
    xi = b.cast(x, acc)
    if not (b.target.has("MatMul", "INT64") or b.target.falls_back("MatMul", "INT64")):
        # no MatMul here or behind the target: a ReduceSum (exact below the limits)
        r = b.reduce("ReduceSum", xi, axes, acc, keep, _sizes(node, axes))
        return b.cast(r, x.dtype)
    # (CUDA has no integer MatMul and its int64 ReduceSum saturates, as the CPU's does: the
    # MatMul runs on the CPU provider, in a CUDA session)
    rank = node.inputs[0].rank
    # (..., K): as it is for a sum over the last axis (a row count, a mask's length)
    flat = xi if tuple(axes) == (rank - 1,) else _move_axes_last(b, xi, rank, axes)[0]
    k = b.node("Shape", [flat.name], T.int64, start=-1).name
    # ones (K, 1), not (K,): onnxruntime 1.31's MatMul of an empty left operand and a 1-D
    # right one fails ("left operand cannot broadcast on dim 0"); the 2-D one works
    k1 = b.node("Concat", [k, b.int64s([1])], T.int64, axis=0).name
    ones = b.node("Expand", [b.scalar(1, acc).name, k1], acc)
    total = b.elementwise("MatMul", [flat, ones], bits=True)
    total = b.node("Squeeze", [total.name, b.int64s([-1])], acc)
    if keep:
        total = b.node("Unsqueeze", [total.name, b.int64s(axes)], acc)
    return b.cast(total, x.dtype)


@register("prod")
def _prod(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    if not axes:
        return x
    if x.dtype.kind is Kind.float:
        r = _reduce_axes(b, "ReduceProd", x, axes, keep, _sizes(node, axes))
        if b.exact and b.target.quirk("prod_zero_sign"):
            r = _product_sign(b, x, r, axes, keep, _sizes(node, axes))
        return r
    # Integer products wrap in numpy; ONNX ReduceProd saturates. Scan multiplies exactly.
    r = _scan_reduce(b, node, b.cast(x, T.int64), axes, keep, "Mul", 1)
    return b.cast(r, x.dtype)


def _product_sign(
    b: Builder, x: V, r: V, axes: tuple[int, ...], keep: int, sizes: Sequence[Dim]
) -> V:
    """``r``, a product of ``x`` whose zero the target signs +0.0 always, with the zero signed
    as the reference's: negative where an odd number of factors is (-0.0 and -inf
    included); the count is a sum of int32 sign bits, exact."""
    f = _float(x)
    xf, rf = b.cast(x, f), b.cast(r, f)
    negatives = b.cast(b.signbit(xf), T.int32)
    count = b.reduce("ReduceSum", negatives, axes, T.int32, keep, sizes)
    odd = b.node("Equal", [b.node("Mod", [count.name, b.scalar(2, T.int32).name], T.int32).name,
                           b.scalar(1, T.int32).name], T.bool)  # fmt: skip
    zero = b.node("Equal", [rf.name, b.scalar(0.0, f).name], T.bool)
    negative_zero = b.node("And", [zero.name, odd.name], T.bool)
    return b.cast(b.select(negative_zero, b.scalar(-0.0, f), rf), x.dtype)


def _scan_reduce(
    b: Builder, node: Symbol, x: V, axes: tuple[int, ...], keep: int, op: str, init: int
) -> V:
    """Fold ``op`` over the reduced axes of an int64 value with a Scan, exactly.

    ``op`` is "Mul" (acc * x), or "Less"/"Greater" (take x where acc op x: max/min).
    """
    from onnx import helper

    from exporters.onnx._types import onnx_type

    acc = T.int64
    rank = node.inputs[0].rank
    flat, kept_shape = _move_axes_last(b, x, rank, axes)
    nd = rank - len(axes)
    front = b.node("Transpose", [flat.name], acc, perm=[nd, *range(nd)])
    start = b.node("Expand", [b.scalar(init, acc).name, kept_shape], acc)
    # onnxruntime's Scan fails on zero iterations (an empty reduced axis): one more step
    # with the identity makes at least one and changes nothing
    first = b.node("Unsqueeze", [start.name, b.int64s([0])], acc)
    front = b.node("Concat", [first.name, front.name], acc, axis=0)
    if op == "Mul":
        body_nodes = [helper.make_node("Mul", ["acc_in", "x_i"], ["acc_out"])]
    else:
        body_nodes = [helper.make_node(op, ["acc_in", "x_i"], ["take"]),
                      helper.make_node("Where", ["take", "x_i", "acc_in"],
                                       ["acc_out"])]  # fmt: skip
    body_nodes.append(helper.make_node("Identity", ["acc_out"], ["scan_out"]))
    t = onnx_type(acc)
    body = helper.make_graph(
        body_nodes,
        f"scan_{op.lower()}",
        [helper.make_tensor_value_info("acc_in", t, None),
         helper.make_tensor_value_info("x_i", t, None)],
        [helper.make_tensor_value_info("acc_out", t, None),
         helper.make_tensor_value_info("scan_out", t, None)],
    )  # fmt: skip
    out = b.fresh("scan")
    scan = helper.make_node(
        "Scan", [start.name, front.name], [out, b.fresh("scan_seq")], num_scan_inputs=1, body=body
    )
    b.nodes.add().CopyFrom(scan)
    total = V(out, acc)
    if keep:
        total = b.node("Unsqueeze", [total.name, b.int64s(axes)], acc)
    return total


# ---------------------------------------------------------------- any, all


def _truth(onnx_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, axes, keep = args[0], _axes(node), _keepdims(node)  # x: bool (by truth value)
        if not axes:
            return x
        # in uint8, as max and min of bool do (onnxruntime's bool ReduceMax/Min fail on an
        # empty set): the identities 0 and 255 there are any's False and all's True
        sizes = _sizes(node, axes)
        return b.cast(_reduce_axes(b, onnx_op, b.cast(x, T.uint8), axes, keep, sizes), T.bool)

    return lower


LOWER["any"] = _truth("ReduceMax")
LOWER["all"] = _truth("ReduceMin")


# ---------------------------------------------------------------- var, std, logsumexp


def _float(x: V) -> DType:
    """The dtype a float reduction computes in: float32 for narrow floats, else its own."""
    return T.float32 if x.dtype in NARROW else storage(x.dtype)


def _count(b: Builder, node: Symbol, x: V, axes: tuple[int, ...]) -> int | V:
    """The number of reduced elements: an int, or an int64 scalar computed from the shape
    where a reduced dimension is symbolic."""
    sizes = [node.inputs[0].shape[a] for a in axes]
    if all(isinstance(n, int) for n in sizes):
        return math.prod(int(n) for n in sizes)
    shape = b.node("Shape", [x.name], T.int64).name
    return b.node("Squeeze", [_dims_product(b, shape, axes)], T.int64)


def _moment(root: bool) -> Lowering:
    # the reference's two passes, step by step: sum / n, the squared deviations, their sum,
    # divided by max(n - correction, 0) (each step correctly rounded; only the order of the
    # sums may differ); float16/bfloat16 compute in float32 and round once
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, axes, keep = args[0], _axes(node), _keepdims(node)
        f = _float(x)
        xf = b.cast(x, f)
        n = _count(b, node, xf, axes)
        c = node.attrs["correction"]
        mean = xf  # no axes: each element is its own mean
        if axes:
            total = b.reduce("ReduceSum", xf, axes, f, 1, _sizes(node, axes))
            count = b.scalar(float(n), f) if isinstance(n, int) else b.cast(n, f)
            mean = b.node("Div", [total.name, count.name], f)
        d = b.node("Sub", [xf.name, mean.name], f)
        squares = b.node("Mul", [d.name, d.name], f)
        if axes:
            squares = b.reduce("ReduceSum", squares, axes, f, keep, _sizes(node, axes))
        if isinstance(n, int):
            free = b.scalar(n - c if n > c else 0, f)
        else:  # n - correction in float64 first, as Python computes it, then rounded
            diff = b.node("Sub", [b.cast(n, T.float64).name, b.scalar(float(c), T.float64).name],
                          T.float64)  # fmt: skip
            zero = b.scalar(0.0, T.float64)
            free = b.cast(b.node("Max", [diff.name, zero.name], T.float64), f)
        r = b.node("Div", [squares.name, free.name], f)
        if root:
            r = b.node("Sqrt", [r.name], f)
        return b.cast(r, x.dtype)

    return lower


LOWER["var"] = _moment(root=False)
LOWER["std"] = _moment(root=True)


@register("logsumexp")
def _logsumexp(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # Composed: onnxruntime 1.32's ReduceLogSumExp does not shift a slice whose first element
    # is -inf (measured: [-inf, -200] gives -inf in float32, [-inf, -800] in float64, where
    # -200 and -800 are right). m + log(sum(exp(x - m))) with m the maximum, 0 where m is
    # infinite, as the reference; ReduceMax skips NaN, but a NaN still makes the sum NaN
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    f = _float(x)
    xf = b.cast(x, f)
    sizes = _sizes(node, axes)
    m = b.reduce("ReduceMax", xf, axes, f, 1, sizes) if axes else xf
    infinite = b.node("IsInf", [m.name], T.bool)
    shift = b.node("Where", [infinite.name, b.scalar(0.0, f).name, m.name], f)
    e = b.node("Exp", [b.node("Sub", [xf.name, shift.name], f).name], f)
    s = b.reduce("ReduceSum", e, axes, f, keep, sizes) if axes else e
    if axes and not keep:
        shift = b.node("Squeeze", [shift.name, b.int64s(axes)], f)
    r = b.node("Add", [b.node("Log", [s.name], f).name, shift.name], f)
    return b.cast(r, x.dtype)
