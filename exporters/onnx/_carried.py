"""Dtypes that onnxruntime cannot compute or hold, carried in a wider ONNX type.

``float4_e2m1fn``, ``float6_e2m3fn``, ``float6_e3m2fn`` and ``float8_e8m0fnu`` are carried
in float32, ``int4`` in int8 and ``uint4`` in uint8: a value of one of them is an ONNX
tensor of its carrier holding exactly the value (each value of these dtypes is a value of
its carrier). ONNX has FLOAT4E2M1, FLOAT8E8M0, INT4 and UINT4, but onnxruntime 1.31-1.32
has no Cast kernel for float4 and none for float8e8m0 below opset 24, and int4 tensors are
packed two to a byte, which numpy cannot hand to onnxruntime; float6 is not an ONNX type.

What each op computes in the carrier rounds back to the carried dtype as ml_dtypes (the
numpy reference) converts from float32, in float32 arithmetic that is exact:

* float4/float6: to nearest, ties to even (ONNX's Round), subnormals included; beyond the
  largest value saturating to it (these types have no infinity); NaN becomes -0.0.
* float8_e8m0fnu (powers of two 2**-127..2**127, and NaN): to the nearer power of two, a tie
  (1.5 * 2**k) up; below 2**-127 to 2**-127; zero, negatives, infinities, NaN and values
  that round past 2**127 to NaN.
* int4/uint4: modulo 16 (two's complement), as integer conversions wrap.

The model's inputs and outputs of these dtypes are carrier tensors; ``run()`` and
``Session`` convert numpy arrays of the dtype to and from them (the model's metadata lists
them under :data:`CARRIED_KEY`).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np
from onnx import TensorProto

from graphdsl.dtypes import DType

if TYPE_CHECKING:
    from exporters.onnx._builder import Builder, V

__all__ = ["CARRIED_KEY", "CARRIER", "carried_io", "round_into"]

T = DType
CARRIER: dict[DType, DType] = {
    T.float4_e2m1fn: T.float32,
    T.float6_e2m3fn: T.float32,
    T.float6_e3m2fn: T.float32,
    T.float8_e8m0fnu: T.float32,
    T.int4: T.int8,
    T.uint4: T.uint8,
}
# metadata_props key of the model: JSON {"inputs": {name: dtype}, "outputs": {name: dtype}}
CARRIED_KEY = "graphdsl.carried"


def round_into(b: Builder, v: V, to: DType) -> V:
    """``v`` (any dtype) converted to carried dtype ``to``: a tensor of ``to``'s carrier."""
    if to.is_integer:
        return _wrap_int(b, v, to)
    xf = v if v.dtype is T.float32 else b.cast(v, T.float32)  # ml_dtypes rounds via float32
    if to is T.float8_e8m0fnu:
        return _round_e8m0(b, xf)
    return _round_small(b, xf, to)


def _round_small(b: Builder, x: V, to: DType) -> V:
    """float4/float6: Round(x / q) * q, q the spacing of ``to`` at |x| (a power of two, so
    the division and product are exact), saturated at the largest value; NaN -> -0.0."""
    f = T.float32
    info = ml_dtypes.finfo(to.np)  # type: ignore[no-untyped-call]
    p = int(info.nmant)  # mantissa bits after the point
    emin = int(math.log2(float(info.tiny)))  # smallest normal exponent
    emax = math.floor(math.log2(float(info.max)))
    mag = b.node("Abs", [x.name], f)
    q = b.scalar(2.0 ** (emin - p), f)
    for k in range(emin + 1, emax + 1):
        at = b.node("GreaterOrEqual", [mag.name, b.scalar(2.0**k, f).name], T.bool)
        q = _where(b, at, b.scalar(2.0 ** (k - p), f), q)
    steps = b.node("Round", [b.node("Div", [x.name, q.name], f).name], f)
    r = b.node("Mul", [steps.name, q.name], f)
    top = float(info.max)
    r = b.node("Max", [b.node("Min", [r.name, b.scalar(top, f).name], f).name,
                       b.scalar(-top, f).name], f)  # fmt: skip
    # NaN -> -0.0: +0.0 there (a Where's first branch loses a -0.0's sign in onnxruntime; its
    # second copies exactly), times -1 there and 1 elsewhere
    nan = b.node("IsNaN", [x.name], T.bool)
    zeroed = _where(b, nan, b.scalar(0.0, f), r)
    sign = _where(b, nan, b.scalar(-1.0, f), b.scalar(1.0, f))
    out = b.node("Mul", [zeroed.name, sign.name], f)
    return type(x)(out.name, to)


def _round_e8m0(b: Builder, x: V) -> V:
    """float8_e8m0fnu: q = 2**floor(log2 x) (Log's estimate, corrected by one comparison each
    way against exact powers of two), then q or 2q as x / q is below 1.5 or not."""
    f = T.float32
    lo, hi = 2.0**-127, 2.0**127
    valid = b.node(
        "And",
        [b.node("Greater", [x.name, b.scalar(0.0, f).name], T.bool).name,
         b.node("Less", [x.name, b.scalar(np.inf, f).name], T.bool).name],
        T.bool,
    )  # fmt: skip
    xs = _where(b, valid, x, b.scalar(1.0, f))  # keep Log finite (x > 0 there: no -0.0)
    xs = b.node("Max", [xs.name, b.scalar(lo, f).name], f)  # below 2**-127: 2**-127
    e = b.node(
        "Floor", [b.node("Mul", [b.node("Log", [xs.name], f).name,
                                 b.scalar(1 / math.log(2), f).name], f).name], f
    )  # fmt: skip
    two = b.scalar(2.0, f)
    q = b.node("Pow", [two.name, e.name], f)
    q = _where(b, b.node("Greater", [q.name, xs.name], T.bool),
               b.node("Mul", [q.name, b.scalar(0.5, f).name], f), q)  # fmt: skip
    up = b.node("Mul", [q.name, two.name], f)
    q = _where(b, b.node("LessOrEqual", [up.name, xs.name], T.bool), up, q)
    ratio = b.node("Div", [xs.name, q.name], f)
    r = _where(b, b.node("GreaterOrEqual", [ratio.name, b.scalar(1.5, f).name], T.bool),
               b.node("Mul", [q.name, two.name], f), q)  # fmt: skip
    over = b.node("Greater", [r.name, b.scalar(hi, f).name], T.bool)
    bad = b.node("Or", [b.node("Not", [valid.name], T.bool).name, over.name], T.bool)
    out = _where(b, bad, b.scalar(np.nan, f), r)
    return type(x)(out.name, T.float8_e8m0fnu)


def _where(b: Builder, cond: V, x: V, y: V) -> V:
    """A float32 Where of values without -0.0 in ``x`` (the same node in every export mode:
    Builder.select repairs a -0.0 its first branch loses only where exact=True)."""
    return b.node("Where", [cond.name, x.name, y.name], x.dtype)


def _wrap_int(b: Builder, v: V, to: DType) -> V:
    """int4/uint4: the value modulo 16 (int4: shifted into -8..7), computed in int32 (a
    conversion to int32 wraps modulo 2**32, which keeps the residue modulo 16)."""
    i = T.int32
    x = b.cast(v, i) if v.dtype is not i else v
    if to is T.int4:
        x = b.node("Add", [x.name, b.scalar(8, i).name], i)
    m = b.node("Mod", [x.name, b.scalar(16, i).name], i)  # fmod=0: the divisor's sign
    if to is T.int4:
        m = b.node("Sub", [m.name, b.scalar(8, i).name], i)
    carrier = b.node("Cast", [m.name], CARRIER[to], "cast", to=_ONNX_INT[to])
    return type(v)(carrier.name, to)


_ONNX_INT = {T.int4: TensorProto.INT8, T.uint4: TensorProto.UINT8}  # their carriers


def carried_io(metadata: dict[str, str]) -> tuple[dict[str, DType], dict[str, DType]]:
    """The model's carried inputs and outputs by name (from its metadata)."""
    text = metadata.get(CARRIED_KEY)
    if not text:
        return {}, {}
    table = json.loads(text)
    return (
        {n: DType(d) for n, d in table.get("inputs", {}).items()},
        {n: DType(d) for n, d in table.get("outputs", {}).items()},
    )
