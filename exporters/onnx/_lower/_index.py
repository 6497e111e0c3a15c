"""Index arithmetic computed in the model: the position tables the lowerings need (window
taps, causal masks, block and scatter indices, resize sources and weights) built from ONNX
Range and broadcasting, so that exporting a graph never makes a constant of its data's size
(issue 30). Integer tables are int64 and exact; each equals, entry for entry, the numpy
table graphdsl's reference computes (graphdsl/ops/_windows.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import T
from graphdsl.ops._windows import interpolation_taps

__all__ = ["IntLike", "Taps", "arange", "conv_taps", "cubic_taps", "flat_taps", "linear_taps",
           "nearest_taps", "on_axis", "size_op", "size_v", "tap_counts",
           "transposed_taps"]  # fmt: skip


IntLike = int | V
"""A size known when the graph is exported (an int) or only at run time (a 0-d int64 V)."""


def size_v(b: Builder, n: IntLike) -> V:
    """``n`` as a 0-d int64 value of the model."""
    return b.scalar(n, T.int64) if isinstance(n, int) else n


def size_op(b: Builder, op: str, x: IntLike, y: IntLike) -> IntLike:
    """``x op y`` for op Add, Sub, Mul, Div (of non-negative sizes: it floors) or Max: an int
    when both are, else a node."""
    if isinstance(x, int) and isinstance(y, int):
        return {"Add": x + y, "Sub": x - y, "Mul": x * y, "Max": max(x, y),
                "Div": x // y if y else 0}[op]  # fmt: skip
    return b.node(op, [size_v(b, x).name, size_v(b, y).name], T.int64)


def arange(b: Builder, n: IntLike, start: IntLike = 0, step: IntLike = 1) -> V:
    """``start, start + step, ...``: ``n`` int64 values, one Range. A step of 0 goes as 1:
    it makes one value or none, which any step gives (a run-time step must be >= 0: Range
    refuses a zero delta, so it takes max(step, 1))."""
    if isinstance(step, int):
        step = step or 1
    else:
        step = b.node("Max", [step.name, b.scalar(1, T.int64).name], T.int64)
    stop = size_op(b, "Add", start, size_op(b, "Mul", n, step))
    return b.node("Range", [size_v(b, v).name for v in (start, stop, step)], T.int64)


def on_axis(b: Builder, v: V, axis: int, rank: int) -> V:
    """The 1-D ``v`` along ``axis`` of a value of ``rank`` dimensions (size 1 on the others),
    to broadcast against the others' tables."""
    others = [a for a in range(rank) if a != axis]
    return b.node("Unsqueeze", [v.name, b.int64s(others)], v.dtype) if others else v


def _outer(b: Builder, op: str, rows: V, cols: V) -> V:
    """(len(rows), len(cols)): ``rows[o] op cols[j]``."""
    return b.node(op, [on_axis(b, rows, 0, 2).name, cols.name], T.int64)


def _all(b: Builder, conds: list[V]) -> V:
    out = conds[0]
    for c in conds[1:]:
        out = b.node("And", [out.name, c.name], T.bool)
    return out


class Taps(NamedTuple):
    """An int64 table of positions (``shape``), -1 where a tap falls outside the input; and
    whether any does (known when the graph is exported)."""

    v: V
    shape: tuple[int, int]
    outside: bool


def _outside(b: Builder, pos: V, conds: list[V], shape: tuple[int, int]) -> Taps:
    if not conds:
        return Taps(pos, shape, False)
    return Taps(b.select(_all(b, conds), pos, b.scalar(-1, T.int64)), shape, True)


def conv_taps(b: Builder, n: int, k: int, stride: int, dilation: int, lo: int, out: int) -> Taps:
    """(out, k): tap j of window o reads input o * stride + j * dilation - lo (an axis of
    ``n`` padded by ``lo`` before)."""
    pos = _outer(b, "Add", arange(b, out, -lo, stride), arange(b, k, 0, dilation))
    conds = []
    if out > 0 and k > 0:
        if lo > 0:
            conds.append(b.node("GreaterOrEqual", [pos.name, b.scalar(0, T.int64).name], T.bool))
        if (out - 1) * stride + (k - 1) * dilation - lo >= n:
            conds.append(b.node("Less", [pos.name, b.scalar(n, T.int64).name], T.bool))
    return _outside(b, pos, conds, (out, k))


def transposed_taps(
    b: Builder, n: int, k: int, stride: int, dilation: int, lo: int, out: int
) -> Taps:  # fmt: skip
    """(out, k): output o of a transposed convolution gets input i through tap j where i *
    stride + j * dilation = o + lo, if that i is whole and in [0, n)."""
    num = _outer(b, "Sub", arange(b, out, lo), arange(b, k, 0, dilation))
    i = b.node("Div", [num.name, b.scalar(stride, T.int64).name], T.int64) if stride > 1 else num
    conds = []
    for j in range(k if out > 0 else 0):  # num over o is the interval [first, first + out)
        first = lo - j * dilation
        whole = stride == 1 or (out == 1 and first % stride == 0)
        if first < 0 or first + out - 1 > (n - 1) * stride or not whole:
            zero = b.scalar(0, T.int64).name
            conds = [
                b.node("GreaterOrEqual", [num.name, zero], T.bool),
                b.node("Less", [num.name, b.scalar(n * stride, T.int64).name], T.bool),
            ]
            if stride > 1:
                rest = b.node("Mod", [num.name, b.scalar(stride, T.int64).name], T.int64)
                conds.append(b.node("Equal", [rest.name, zero], T.bool))
            break
    return _outside(b, i, conds, (out, k))


def flat_taps(b: Builder, taps: Sequence[Taps], spatial: Sequence[int]) -> Taps:
    """Per output and tap, the flat position in an array of ``spatial`` size, -1 where the
    tap falls outside it: (*O, K) from ``taps[i]`` (O_i, K_i), the position along axis i."""
    nd = len(spatial)
    flat: V | None = None
    outside: V | None = None
    for i, t in enumerate(taps):  # t: (O_i, K_i), broadcast to (*O, *K)
        placed = b.node("Unsqueeze", [t.v.name, b.int64s(
            [a for a in range(2 * nd) if a not in (i, nd + i)])], T.int64)  # fmt: skip
        stride = math.prod(spatial[i + 1 :])
        term = placed if stride == 1 else b.node("Mul", [placed.name, b.scalar(
            stride, T.int64).name], T.int64)  # fmt: skip
        flat = term if flat is None else b.node("Add", [flat.name, term.name], T.int64)
        if t.outside:
            neg = b.node("Less", [placed.name, b.scalar(0, T.int64).name], T.bool)
            outside = neg if outside is None else b.node("Or", [outside.name, neg.name], T.bool)
    assert flat is not None
    if outside is not None:
        flat = b.select(outside, b.scalar(-1, T.int64), flat)
    outs, ks = [t.shape[0] for t in taps], [t.shape[1] for t in taps]
    shape = (math.prod(outs), math.prod(ks))
    return Taps(b.node("Reshape", [flat.name, b.int64s([*outs, shape[1]])], T.int64), shape,
                outside is not None)  # fmt: skip


def tap_counts(
    b: Builder, k: int, stride: int, dilation: int, out: int, lo: int, hi: int
) -> V:  # fmt: skip
    """(out,): how many of window o's ``k`` taps, at o * stride + j * dilation of a padded
    axis, lie in [lo, hi) (graphdsl.ops._windows.tap_counts)."""
    at = _outer(b, "Add", arange(b, out, 0, stride), arange(b, k, 0, dilation))
    conds = [b.node("Less", [at.name, b.scalar(hi, T.int64).name], T.bool)]
    if lo > 0:
        conds.append(b.node("GreaterOrEqual", [at.name, b.scalar(lo, T.int64).name], T.bool))
    inside = b.cast(_all(b, conds), T.int64)
    return b.node("ReduceSum", [inside.name, b.int64s([1])], T.int64, keepdims=0)


# ---------------------------------------------------------------------------- resize


def _den(b: Builder, n_out: IntLike) -> V:
    """2 n_out, the half-pixel coordinate's denominator (at least 1: an empty output at run
    time has no coordinates, and onnxruntime's integer Div refuses a zero divisor even
    then)."""
    den = size_op(b, "Mul", 2, n_out)
    return size_v(b, den) if isinstance(den, int) else size_v(b, size_op(b, "Max", den, 1))


def nearest_taps(b: Builder, n_in: IntLike, n_out: IntLike) -> V:
    """(n_out,): graphdsl.ops._windows.nearest_indices in the model: ceil(num / (2 n_out))
    for num = (2 o + 1) n_in - 2 n_out, which is floor(((2 o + 1) n_in - 1) / (2 n_out)) (a
    non-negative numerator: Div's truncation floors it), at most n_in - 1."""
    num = arange(b, n_out, size_op(b, "Sub", n_in, 1), size_op(b, "Mul", 2, n_in))
    return b.node("Div", [num.name, _den(b, n_out).name], T.int64)


def _clamped(b: Builder, floor: V, first: int, count: int, n_in: IntLike) -> V:
    """(n_out * count,): floor + first .. floor + first + count - 1 per output, clamped to
    the input, flattened."""
    idx = _outer(b, "Add", floor, arange(b, count, first))
    last = size_v(b, size_op(b, "Sub", n_in, 1))
    idx = b.node("Clip", [idx.name, b.scalar(0, T.int64).name, last.name], T.int64)
    return b.node("Reshape", [idx.name, b.int64s([-1])], T.int64)


def _float64(b: Builder, n: IntLike) -> V:
    return b.scalar(float(n), T.float64) if isinstance(n, int) else b.cast(n, T.float64)


def linear_taps(b: Builder, n_in: IntLike, n_out: IntLike) -> tuple[V, V]:
    """Bilinear's (indices (n_out * 2,), float64 weights (n_out, 2)) in the model:
    floor(src), floor(src) + 1 with weights 1 - t and t, t = r / (2 n_out) a quotient of exact
    integers, rounded once as float(Fraction) is (graphdsl.ops._windows.interpolation_taps)."""
    # src = num / (2 n_out), num = (2 o + 1) n_in - n_out, clamped at 0 (PyTorch's rule)
    den = _den(b, n_out)
    num = arange(b, n_out, size_op(b, "Sub", n_in, n_out), size_op(b, "Mul", 2, n_in))
    num = b.node("Max", [num.name, b.scalar(0, T.int64).name], T.int64)
    floor = b.node("Div", [num.name, den.name], T.int64)
    rest = b.node("Mod", [num.name, den.name], T.int64)
    parts = []
    for r in (b.node("Sub", [den.name, rest.name], T.int64), rest):
        w = b.node("Div", [b.cast(r, T.float64).name, _float64(b, den).name], T.float64)
        parts.append(b.node("Unsqueeze", [w.name, b.int64s([1])], T.float64).name)
    return _clamped(b, floor, 0, 2, n_in), b.node("Concat", parts, T.float64, axis=1)


# Keys' cubic (a = -3/4) of |z| = m / D, times 4 D^3: an integer polynomial in m and D (Horner
# in m), for |z| <= 1 and for 1 <= |z| <= 2 (both give 0 at |z| = 1 and at 2)
_NEAR = (5, -9, 0, 4)  # 5 m^3 - 9 m^2 D + 4 D^3
_FAR = (-3, 15, -24, 12)  # -3 m^3 + 15 m^2 D - 24 m D^2 + 12 D^3


def _cubic_weights(b: Builder, rest: V, den: V) -> V:
    """(n_out, 4) float64: Keys' weights of taps floor(src) - 1 .. floor(src) + 2, for src's
    fraction t = rest / den, evaluated as N / (4 den^3) with N the integer polynomial of
    |z| = m / den (m = rest + den, rest, den - rest, 2 den - rest), computed in float64: every
    step is exact, so the weight is rounded once (as the reference's float(Fraction)), while
    the terms (at most 84 den^3) are below 2^53: for outputs of up to 16384 elements; past
    that, the rounding of its six steps leaves a weight within 2^-46 of the reference's."""
    d = b.cast(den, T.float64)
    r = b.cast(rest, T.float64)
    d2 = b.node("Mul", [d.name, d.name], T.float64)
    d3 = b.node("Mul", [d2.name, d.name], T.float64)
    d_2 = b.node("Add", [d.name, d.name], T.float64)
    ms = [b.node("Add", [r.name, d.name], T.float64), r,
          b.node("Sub", [d.name, r.name], T.float64),
          b.node("Sub", [d_2.name, r.name], T.float64)]  # fmt: skip
    scale = b.node("Mul", [b.scalar(4.0, T.float64).name, d3.name], T.float64)
    parts = []
    for m, coef in zip(ms, (_FAR, _NEAR, _NEAR, _FAR), strict=True):
        c3, c2, c1, c0 = (b.scalar(float(c), T.float64).name for c in coef)
        acc = b.node("Mul", [c3, m.name], T.float64)  # ((c3 m + c2 D) m + c1 D^2) m + c0 D^3
        for c, power in ((c2, d), (c1, d2)):
            acc = b.node("Add", [acc.name, b.node("Mul", [c, power.name], T.float64).name],
                         T.float64)  # fmt: skip
            acc = b.node("Mul", [acc.name, m.name], T.float64)
        acc = b.node("Add", [acc.name, b.node("Mul", [c0, d3.name], T.float64).name], T.float64)
        w = b.node("Div", [acc.name, scale.name], T.float64)
        parts.append(b.node("Unsqueeze", [w.name, b.int64s([1])], T.float64).name)
    return b.node("Concat", parts, T.float64, axis=1)


def cubic_taps(b: Builder, n_in: IntLike, n_out: IntLike) -> tuple[V, V]:
    """Bicubic's (indices (n_out * 4,), float64 weights (n_out, 4)): floor(src) - 1 ..
    floor(src) + 2 computed in the model. For sizes known at export the weights (Keys' cubic
    of src's fraction, exact as fractions) repeat every n_out / gcd(n_in, n_out) outputs (src
    grows by the whole number n_in / gcd over them): one period of them is a constant, tiled
    in the model. (Only coprime sizes make that period the whole output.) For symbolic sizes
    they are computed in the model (:func:`_cubic_weights`)."""
    # floor(num / (2 n_out)) = (num + 2 n_out) // (2 n_out) - 1, num + 2 n_out > 0 (Div floors)
    den = _den(b, n_out)
    shifted = arange(b, n_out, size_op(b, "Add", n_in, n_out), size_op(b, "Mul", 2, n_in))
    floor = b.node("Sub", [b.node("Div", [shifted.name, den.name], T.int64).name,
                           b.scalar(1, T.int64).name], T.int64)  # fmt: skip
    idx = _clamped(b, floor, -1, 4, n_in)
    if not (isinstance(n_in, int) and isinstance(n_out, int)):
        return idx, _cubic_weights(b, b.node("Mod", [shifted.name, den.name], T.int64), den)
    period = n_out // math.gcd(n_in, n_out)
    table = interpolation_taps(n_in, n_out, "bicubic", rows=period)[1]
    w = b.const(np.ascontiguousarray(table), T.float64, "weights")
    if period < n_out:
        w = b.node("Tile", [w.name, b.int64s([n_out // period, 1])], T.float64)
    return idx, w
