"""Quantization: ``quantize``, ``dequantize`` and ``qmatmul`` (a matmul with a quantized
weight), as ONNX's QuantizeLinear and DequantizeLinear (opset 21) define them, for int8 and
uint8 (graphdsl has no int4/uint4 dtypes).

A quantized value q of dtype int8 or uint8 stands for the reals (q - zero_point) * scale. The
scale is per tensor (a scalar or one element), per channel (1-D, as long as ``axis``) or
blocked (``block_size`` consecutive elements along ``axis`` share one: the scale has the
value's rank, ceil(n / block_size) along ``axis`` and the value's sizes elsewhere). The zero
point, if given, has the scale's shape and the quantized dtype; else it is 0.

The type rules keep the mixed dtypes apart, explicitly. The quantized operand and its zero
point are int8 or uint8 and never promote: the op converts q to reals by its own formula, so
no cast of q into float is ever inserted. The float operands (x and scale of quantize and
qmatmul; the scale of dequantize) promote together under the graph's policy and must join to
float32, float16 or bfloat16, the scale types ONNX allows; a scale given as a Python number
joins as a literal (alone, in dequantize, it is a float32). So the only casts
``implicit_cast`` inserts for these ops are those of that join, which ``explain()`` words as
it does for any op.

float16 and bfloat16 compute in float32, as onnxruntime's kernels do (measured on 1.32):
quantize divides in float32 (one rounding), then rounds half to even; (q - zero_point) *
scale is exact in float32 for every int8/uint8 q and float16/bfloat16 scale, so dequantize
rounds once, to the scale's dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, DTypeError, Kind, dtype
from graphdsl.ops._define import Operand, Symbol, define, op, promote, types_str
from graphdsl.policies import Policy
from graphdsl.shapes import Shape, ShapeError, dim_repr, format_shape, normalize_axis
from graphdsl.types import OpTypeError, TensorType

__all__ = ["dequantize", "qmatmul", "quantize"]

QUANTIZED = (DType.int8, DType.uint8)
SCALE_DTYPES = (DType.float32, DType.float16, DType.bfloat16)


def quantize(
    x: Operand,
    scale: Operand,
    zero_point: Operand | None = None,
    dtype: DType | str = DType.int8,
    axis: int | None = None,
    block_size: int | None = None,
) -> Symbol:
    """saturate(round(x / scale) + zero_point) in ``dtype`` (int8 or uint8), as ONNX's
    QuantizeLinear: the division in float32 (float16/bfloat16 operands widen exactly),
    rounding half to even, the zero point added, then clamped to the dtype's range; NaN
    gives the dtype's lowest value (onnxruntime's kernel; ONNX leaves it open).

    ``scale`` is a scalar (per tensor), 1-D along ``axis`` (per channel), or blocked along
    ``axis`` with ``block_size`` (see the module's doc); ``zero_point`` has its shape and
    the dtype ``dtype``. x and scale are floating and promote together; the result has x's
    shape.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("q", input_types={"x": gd.TensorType(gd.float32, (2, 4))})
    >>> x, = g.inputs
    >>> scale = np.array([0.5, 2.0], np.float32)
    >>> q = gd.ops.quantize(x, scale, np.array([0, 10], np.int8), axis=0)
    >>> q.type
    TensorType(int8[2, 4])
    >>> g.output(q)
    >>> x = np.array([[0.25, 0.75, -1.0, 1000.0], [5.0, -3.0, np.nan, -np.inf]], np.float32)
    >>> gd.evaluate(g, {"x": x})[0]  # 0.5 and 1.5 round to even: 0 and 2
    array([[   0,    2,   -2,  127],
           [  12,    8, -128, -128]], dtype=int8)
    """
    args = (x, scale) if zero_point is None else (x, scale, zero_point)
    return op("quantize", *args, dtype=dtype, axis=axis, block_size=block_size)


def dequantize(
    q: Operand,
    scale: Operand,
    zero_point: Operand | None = None,
    axis: int | None = None,
    block_size: int | None = None,
) -> Symbol:
    """(q - zero_point) * scale, as ONNX's DequantizeLinear: q is int8 or uint8, the result
    has the scale's dtype (float32, float16 or bfloat16) and q's shape.

    ``scale`` is a scalar (per tensor), 1-D along ``axis`` (per channel), or blocked along
    ``axis`` with ``block_size`` (see the module's doc); ``zero_point`` has its shape and
    q's dtype. The product is exact in float32 and rounds once to the scale's dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("dq", input_types={"q": gd.TensorType(gd.uint8, (2, 4))})
    >>> q, = g.inputs
    >>> scale = np.array([[0.5, 2.0], [1.0, 0.25]], np.float16)  # blocks of 2 along axis 1
    >>> w = gd.ops.dequantize(q, scale, np.array([[128, 0], [0, 8]], np.uint8), 1, 2)
    >>> w.type
    TensorType(float16[2, 4])
    >>> g.output(w)
    >>> gd.evaluate(g, {"q": np.array([[0, 255, 1, 2], [3, 4, 8, 255]], np.uint8)})[0]
    array([[-64.  ,  63.5 ,   2.  ,   4.  ],
           [  3.  ,   4.  ,   0.  ,  61.75]], dtype=float16)
    """
    args = (q, scale) if zero_point is None else (q, scale, zero_point)
    return op("dequantize", *args, axis=axis, block_size=block_size)


def qmatmul(
    x: Operand,
    q_weight: Operand,
    scale: Operand,
    zero_point: Operand | None = None,
    axis: int | None = -1,
    block_size: int | None = None,
) -> Symbol:
    """x @ dequantize(q_weight, scale, zero_point, axis, block_size): a float x (of rank >= 1,
    last dimension K) times a quantized [K, N] weight, with per-output-channel scales by
    default (``axis=-1``: ``scale`` is 1-D of N); ``axis=None`` takes one scale, and
    ``block_size`` blocks of K (``axis=0``) or of N share one.

    x and scale promote together (float32, float16 or bfloat16): the weight dequantizes to
    that dtype (rounded once), and the product is a matmul in it (narrow floats accumulate in
    float32 and round once, as ``matmul``). The ONNX export keeps the weight int8/uint8:
    DequantizeLinear of the stored weight, then MatMul.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("qmm", input_types={"x": gd.TensorType(gd.float32, ("batch", 3))})
    >>> x, = g.inputs
    >>> w = np.array([[1, -2], [0, 127], [-128, 4]], np.int8)
    >>> y = gd.ops.qmatmul(x, w, np.array([0.5, 0.25], np.float32))
    >>> y.type
    TensorType(float32[batch, 2])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.array([[1.0, 2.0, 0.5]], np.float32)})[0]
    array([[-31.5,  63.5]], dtype=float32)
    """
    args = (x, q_weight, scale) if zero_point is None else (x, q_weight, scale, zero_point)
    return op("qmatmul", *args, axis=axis, block_size=block_size)


# ---------------------------------------------------------------------------- rules


def _float_dtype(p: Policy, name: str, floats: Sequence[tuple[str, TensorType]],
                 types: Sequence[TensorType]) -> DType:  # fmt: skip
    """The dtype the float operands ``floats`` ((role, type) pairs) compute in: their join
    under ``p``, which must be float32, float16 or bfloat16. A Python number among them is
    a literal (ints too); alone, it is a float32."""
    for role, t in floats:
        if t.dtype.kind is not Kind.float and not (t.ambiguous and t.dtype.is_integer):
            raise OpTypeError(
                f"operand types {types_str(types)} (in argument order): {name}'s {role} must "
                f"be floating (float32, float16 or bfloat16), but it is {t.dtype.name}; cast "
                "it first (gd.ops.cast)"
            )
    c = promote(p, [t for _, t in floats])
    if c.dtype in SCALE_DTYPES:
        return c.dtype
    if c.ambiguous:  # literals only: ONNX's scale type
        return DType.float32
    roles = " and ".join(role for role, _ in floats)
    joined = f"promote to {c.dtype.name}" if len(floats) > 1 else f"is {c.dtype.name}"
    raise OpTypeError(
        f"operand types {types_str(types)} (in argument order): {name}'s {roles} {joined} "
        f"under policy {p.name!r}, but ONNX's quantization computes in float32, float16 or "
        f"bfloat16 only; cast the {roles} to float32 first (gd.ops.cast)"
    )


def _quantized(name: str, role: str, t: TensorType, types: Sequence[TensorType]) -> DType:
    if t.dtype not in QUANTIZED or t.ambiguous:
        fix = (
            "to quantize floats, use gd.ops.quantize"
            if t.dtype.is_float
            else "quantize the values first (gd.ops.quantize), or cast them (gd.ops.cast)"
        )
        raise OpTypeError(
            f"operand types {types_str(types)} (in argument order): {name}'s {role} must be "
            f"int8 or uint8 (graphdsl has no int4/uint4), but it is {t}; {fix}"
        )
    return t.dtype


def _zero_point(name: str, zp: TensorType | None, want: DType, types: Sequence[TensorType]) -> None:
    """A zero point is of the quantized dtype; a Python int takes it (checked to fit)."""
    if zp is None or zp.dtype is want or (zp.ambiguous and zp.dtype.is_integer):
        return
    other = name == "quantize" and zp.dtype in QUANTIZED
    raise OpTypeError(
        f"operand types {types_str(types)} (in argument order): {name}'s zero_point is "
        f"{zp.dtype.name}, but it must have the quantized dtype {want.name}; give it as "
        f"{want.name} (or a Python int)" + (f", or pass dtype=gd.{zp.dtype.name}" if other else "")
    )


def _scale_layout(
    name: str, shape: Shape, scale: TensorType, zp: TensorType | None, attrs: dict[str, Any]
) -> None:
    """Check the scale's and zero point's shapes against the quantized value's ``shape`` for
    per-tensor, per-axis or blocked quantization; normalize ``axis`` and ``block_size``."""
    axis, block = attrs.get("axis"), attrs.get("block_size")
    s = format_shape(shape)
    if block is not None and (isinstance(block, bool) or not isinstance(block, int) or block < 1):
        raise ShapeError(f"{name}: block_size must be a positive int or None, got {block!r}")
    if axis is None:
        if block is not None:
            raise ShapeError(
                f"{name}: block_size={block} needs the axis its blocks run along; pass axis="
            )
        if scale.shape not in ((), (1,)):
            raise ShapeError(
                f"{name}: without an axis the scale is one number (per tensor), but it has "
                f"shape {format_shape(scale.shape)}; for per-channel scales pass axis="
            )
        if zp is not None and zp.shape not in ((), (1,)):
            raise ShapeError(
                f"{name}: the zero point has shape {format_shape(zp.shape)}, but a per-tensor "
                "scale takes one zero point (a scalar)"
            )
        attrs["axis"] = None
        return
    axis = normalize_axis(axis, len(shape))
    if block is None:
        want: Shape = (shape[axis],)
        what = f"per-channel scales along axis {axis} of {s}"
    else:
        n = shape[axis]
        if not isinstance(n, int):
            raise ShapeError(
                f"{name}: blocks along axis {axis} of {s} need a static size there, not "
                f"{dim_repr(n)}"
            )
        want = (*shape[:axis], math.ceil(n / block), *shape[axis + 1 :])
        what = f"blocks of {block} along axis {axis} of {s} (ceil({n} / {block}) there)"
    for role, t in (("scale", scale), ("zero point", zp)):
        if t is not None and t.shape != want:
            raise ShapeError(
                f"{name}: {what} need a {role} of shape {format_shape(want)}, got "
                f"{format_shape(t.shape)}"
            )
    attrs["axis"], attrs["block_size"] = axis, block


def _quantize_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, scale = types[0], types[1]
    zp = types[2] if len(types) > 2 else None
    try:
        to = dtype(attrs.get("dtype", DType.int8))
    except DTypeError as e:
        raise OpTypeError(f"quantize: dtype: {e}") from None
    if to not in QUANTIZED:
        raise OpTypeError(
            f"quantize to int8 or uint8 (graphdsl has no int4/uint4), not {to.name}; pass "
            "dtype=gd.int8 or dtype=gd.uint8"
        )
    attrs["dtype"] = to
    c = _float_dtype(p, "quantize", [("x", x), ("scale", scale)], types)
    _zero_point("quantize", zp, to, types)
    _scale_layout("quantize", x.shape, scale, zp, attrs)
    in_dtypes = (c, c) if zp is None else (c, c, to)
    return in_dtypes, TensorType(to, x.shape)


def _dequantize_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    q, scale = types[0], types[1]
    zp = types[2] if len(types) > 2 else None
    qd = _quantized("dequantize", "q", q, types)
    c = _float_dtype(p, "dequantize", [("scale", scale)], types)
    _zero_point("dequantize", zp, qd, types)
    _scale_layout("dequantize", q.shape, scale, zp, attrs)
    in_dtypes = (qd, c) if zp is None else (qd, c, qd)
    return in_dtypes, TensorType(c, q.shape)


def _qmatmul_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, w, scale = types[0], types[1], types[2]
    zp = types[3] if len(types) > 3 else None
    qd = _quantized("qmatmul", "weight", w, types)
    c = _float_dtype(p, "qmatmul", [("x", x), ("scale", scale)], types)
    _zero_point("qmatmul", zp, qd, types)
    if w.rank != 2 or x.rank == 0:
        raise ShapeError(
            f"qmatmul takes an x of rank >= 1 and a [K, N] weight, got {x} and {w}; "
            "reshape them (a batched weight: dequantize it and use matmul)"
        )
    if x.shape[-1] != w.shape[0]:
        raise ShapeError(
            f"qmatmul of shapes {format_shape(x.shape)} and {format_shape(w.shape)}: x's last "
            f"dimension {x.shape[-1]} must equal the weight's first {w.shape[0]} (K); "
            "transpose the weight?"
        )
    _scale_layout("qmatmul", w.shape, scale, zp, attrs)
    in_dtypes = (c, qd, c) if zp is None else (c, qd, c, qd)
    return in_dtypes, TensorType(c, (*x.shape[:-1], w.shape[1]))


# ---------------------------------------------------------------------------- references


def _along(v: np.ndarray, shape: tuple[int, ...], axis: int | None, block: int | None) -> Any:
    """A scale or zero point ``v`` broadcastable against a value of ``shape``: one number,
    one per index of ``axis``, or each block's repeated ``block`` times (the last block cut
    to the axis' size)."""
    if axis is None:
        return v.reshape(())
    if block is None:
        return v.reshape((-1,) + (1,) * (len(shape) - axis - 1))
    cut = [slice(None)] * len(shape)
    cut[axis] = slice(0, shape[axis])
    return np.repeat(v, block, axis=axis)[tuple(cut)]


def _dequantized(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """(q - zero_point) * scale in float32 (exact for float16/bfloat16 scales) from
    [q, scale] or [q, scale, zero_point]."""
    q, scale = args[0], args[1]
    axis, block = attrs["axis"], attrs.get("block_size")
    v = q.astype(np.float32)
    if len(args) > 2:
        v = v - _along(args[2].astype(np.float32), q.shape, axis, block)
    with np.errstate(all="ignore"):  # (a huge or infinite scale gives inf, or NaN times 0)
        return np.asarray(v * _along(scale.astype(np.float32), q.shape, axis, block))


def _quantize_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0].astype(np.float32)  # (float16 and bfloat16 come widened)
    axis, block = attrs["axis"], attrs.get("block_size")
    to = out.dtype
    with np.errstate(all="ignore"):
        v = np.rint(x / _along(args[1].astype(np.float32), x.shape, axis, block))
        if len(args) > 2:
            v = v + _along(args[2].astype(np.float32), x.shape, axis, block)
        v = np.clip(v, to.min, to.max)
    return np.where(np.isnan(v), to.min, v).astype(to.np)


def _dequantize_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return _dequantized(args, attrs)  # (apply_op rounds it to the scale's dtype)


def _qmatmul_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    w = _dequantized(args[1:], attrs)
    if out.dtype is not DType.float32:  # the weight in the scale's dtype, rounded once
        w = w.astype(out.dtype.np).astype(np.float32)
    with np.errstate(all="ignore"):
        return np.asarray(np.matmul(args[0], w))


define(quantize, _quantize_rule, _quantize_impl,
       "floating x and scale (float32/float16/bfloat16); int8/uint8 result")  # fmt: skip
define(dequantize, _dequantize_rule, _dequantize_impl,
       "int8/uint8 q; float32/float16/bfloat16 scale")  # fmt: skip
define(qmatmul, _qmatmul_rule, _qmatmul_impl,
       "floating x and scale (float32/float16/bfloat16); int8/uint8 weight")  # fmt: skip
