"""Quantization: ``quantize``, ``dequantize`` and ``qmatmul`` (a matmul with a quantized
weight), as ONNX's QuantizeLinear and DequantizeLinear (opset 21) define them, for int8,
uint8, int4 and uint4; and ``quantize_weights``, a numpy helper that quantizes a float weight
for ``qmatmul`` (no graph).

A quantized value q of dtype int8, uint8, int4 or uint4 stands for the reals
(q - zero_point) * scale. The scale is per tensor (a scalar or one element), per channel
(1-D, as long as ``axis``) or blocked (``block_size`` consecutive elements along ``axis``
share one: the scale has the value's rank, ceil(n / block_size) along ``axis`` and the
value's sizes elsewhere). The zero point, if given, has the scale's shape and the quantized
dtype; else it is 0.

The type rules keep the mixed dtypes apart, explicitly. The quantized operand and its zero
point are int8, uint8, int4 or uint4 and never promote: the op converts q to reals by its
own formula, so no cast of q into float is ever inserted. The float operands (x and scale of
quantize and qmatmul; the scale of dequantize) promote together under the graph's policy and
must join to float32, float16 or bfloat16, the scale types ONNX allows; a scale given as a
Python number joins as a literal (alone, in dequantize, it is a float32). So the only casts
``implicit_cast`` inserts for these ops are those of that join, which ``explain()`` words as
it does for any op.

float16 and bfloat16 compute in float32, as onnxruntime's kernels do (measured on 1.32):
quantize divides in float32 (one rounding), then rounds half to even; q - zero_point is exact
(at most 9 bits) and its product with the scale rounds once: in float32 for a float32 scale
(the product of a 9-bit integer and a 24-bit scale may need 33 bits), exactly in float32 for
a float16 or bfloat16 scale, then once to the scale's dtype. onnxruntime's DequantizeLinear
gives those same bits for every quantized dtype here (measured on 1.31 and 1.32).
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

__all__ = ["dequantize", "qmatmul", "quantize", "quantize_weights"]

QUANTIZED = (DType.int8, DType.uint8, DType.int4, DType.uint4)
SCALE_DTYPES = (DType.float32, DType.float16, DType.bfloat16)


def quantize(
    x: Operand,
    scale: Operand,
    zero_point: Operand | None = None,
    dtype: DType | str = DType.int8,
    axis: int | None = None,
    block_size: int | None = None,
) -> Symbol:
    """saturate(round(x / scale) + zero_point) in ``dtype`` (int8, uint8, int4 or uint4), as
    ONNX's QuantizeLinear: the division in float32 (float16/bfloat16 operands widen exactly),
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
    """(q - zero_point) * scale, as ONNX's DequantizeLinear: q is int8, uint8, int4 or uint4,
    the result has the scale's dtype (float32, float16 or bfloat16) and q's shape.

    ``scale`` is a scalar (per tensor), 1-D along ``axis`` (per channel), or blocked along
    ``axis`` with ``block_size`` (see the module's doc); ``zero_point`` has its shape and
    q's dtype. The product rounds once: in float32 for a float32 scale, else exactly in
    float32, then to the scale's dtype.

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
    float32 and round once, as ``matmul``). The ONNX export keeps the weight in its dtype
    (a constant int4/uint4 weight as an INT4/UINT4 initializer): DequantizeLinear of the
    stored weight, then MatMul; ``export(exact=False)`` makes a constant 4-bit weight in
    blocks of K onnxruntime's MatMulNBits (exporters/onnx/_lower/nbits.py states its bound).
    :func:`quantize_weights` makes such a weight from a float one.

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


def quantize_weights(
    w: Any,
    dtype: DType | str = "int4",
    block_size: int | None = 32,
    axis: int = 0,
    symmetric: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Quantize a float weight with numpy (no graph): ``(q, scale, zero_point)`` for
    ``gd.ops.qmatmul(x, q, scale, zero_point, axis=axis, block_size=block_size)``, which
    then computes x @ w with w dequantized, (q - zero_point) * scale.

    ``w`` is a float array ([K, N] for qmatmul: in features along axis 0, as x @ w), taken
    as float32 (every float dtype but float64 converts exactly; float64 rounds to nearest);
    it must be finite. ``block_size`` consecutive entries along ``axis`` share a scale, the
    last block cut short where ``block_size`` does not divide the axis (the default: blocks
    of 32 along K); ``block_size=None`` gives one scale per index of ``axis`` (per channel:
    ``axis=1`` for the output channels of a [K, N] weight). ``scale`` is float32 in the
    layout the quantization ops take (module doc); ``q`` and the zero point are arrays of
    ``dtype`` (int4, uint4, int8 or uint8; ml_dtypes' types for the 4-bit ones).

    Each block's scale and zero point, from its smallest entry ``lo`` and largest ``hi``
    (both taken with 0, so that 0 is represented exactly), over the dtype's range
    [qmin, qmax] ([-8, 7] for int4, [0, 15] for uint4):

    - ``symmetric=True`` (int4 or int8 only): scale = max(-lo, hi) / qmax (7 for int4),
      computed in float64 and rounded to nearest float32; no zero point (None). q lies in
      [-qmax, qmax]: the lowest value (-8, -128) is never used, the grid is symmetric.
    - ``symmetric=False`` (any of the four dtypes; uint4 is the usual one): scale =
      (hi - lo) / (qmax - qmin), computed and rounded so too; zero point =
      round(qmin - lo / scale) in float64, half to even, clipped to [qmin, qmax].

    A block whose scale is 0 (all zeros, or entries so small that the scale underflows
    float32) takes scale 1. Then q = clip(round(w / scale) + zero_point, qmin, qmax), the
    division in float32 and rounding half to even: exactly what ``gd.ops.quantize(w, scale,
    zero_point, dtype, axis, block_size)`` computes (the same numpy reference). So each entry,
    dequantized, lies within scale / 2 of w, up to a few float32 roundings of the scale and
    quotient.

    >>> import numpy as np, graphdsl as gd
    >>> w = np.array([[0.35, -1.4], [0.2, 0.7], [-0.7, 0.0], [0.1, 3.5]], np.float32)
    >>> q, scale, zp = gd.ops.quantize_weights(w, block_size=2)  # int4, blocks of 2 rows
    >>> q.dtype, q.tolist(), zp
    (dtype(int4), [[7, -7], [4, 4], [-7, 0], [1, 7]], None)
    >>> scale  # max |w| / 7 per block and column
    array([[0.05, 0.2 ],
           [0.1 , 0.5 ]], dtype=float32)
    >>> g = gd.Graph("lin", input_types={"x": gd.TensorType(gd.float32, ("batch", 4))})
    >>> g.output(gd.ops.qmatmul(g.inputs[0], q, scale, zp, axis=0, block_size=2))
    >>> deq = gd.evaluate(g, {"x": np.eye(4, dtype=np.float32)})[0]  # the weight it uses
    >>> deq.round(4)  # 0.7 / 0.2 = 3.5 rounds to 4 (half to even): 0.8
    array([[ 0.35, -1.4 ],
           [ 0.2 ,  0.8 ],
           [-0.7 ,  0.  ],
           [ 0.1 ,  3.5 ]], dtype=float32)
    """
    to = _weight_dtype(dtype, symmetric)
    arr = np.asarray(w)
    try:
        wd = _as_dtype(arr.dtype)
    except DTypeError:
        wd = None
    if wd is None or wd.kind is not Kind.float:
        raise TypeError(
            f"quantize_weights: w must be a float array, got dtype {arr.dtype}; convert it "
            "(np.asarray(w, np.float32))"
        )
    if arr.ndim == 0:
        raise ShapeError("quantize_weights: w must have at least one dimension, got a scalar")
    ax = normalize_axis(axis, arr.ndim)
    if block_size is not None and (
        isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1
    ):
        raise ShapeError(
            f"quantize_weights: block_size must be a positive int or None, got {block_size!r}"
        )
    with np.errstate(over="ignore"):
        x = arr.astype(np.float32)
    if not np.all(np.isfinite(x)):
        raise ValueError(
            "quantize_weights: w holds NaN or infinite values (after its conversion to "
            "float32), which no scale represents; replace them first"
        )
    lo, hi = _block_range(x, ax, block_size)
    qmin, qmax = float(to.min), float(to.max)
    if symmetric:
        scale = (np.maximum(-lo, hi) / qmax).astype(np.float32)
    else:
        scale = ((hi - lo) / (qmax - qmin)).astype(np.float32)
    scale[scale == 0] = 1
    zp = None
    if not symmetric:
        z = np.clip(np.rint(qmin - lo / scale.astype(np.float64)), qmin, qmax)
        zp = z.astype(to.np)
    attrs = {"axis": ax, "block_size": block_size}
    args = [x, scale] if zp is None else [x, scale, zp]
    q = _quantize_impl(args, attrs, TensorType(to, x.shape))
    return q, scale, zp


_as_dtype = dtype  # (quantize_weights' parameter ``dtype`` hides the function)


def _weight_dtype(d: DType | str, symmetric: bool) -> DType:
    try:
        to = _as_dtype(d)
    except DTypeError as e:
        raise TypeError(f"quantize_weights: dtype: {e}") from None
    if to not in QUANTIZED:
        raise TypeError(
            f"quantize_weights: dtype must be int4, uint4, int8 or uint8, not {to.name}"
        )
    if symmetric and to.kind is not Kind.signed:
        raise ValueError(
            f"quantize_weights: symmetric quantization needs a signed dtype (int4 or int8), "
            f"not {to.name}: pass symmetric=False for {to.name} (with a zero point), or "
            "dtype='int4'"
        )
    return to


def _block_range(x: np.ndarray, axis: int, block: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Each block's (or channel's) smallest and largest entry, each taken with 0, in float64,
    in the scale's layout: ceil(n / block) along ``axis`` (the value's sizes elsewhere), or
    1-D along ``axis`` when ``block`` is None."""
    if block is None:
        others = tuple(i for i in range(x.ndim) if i != axis)
        lo, hi = x.min(axis=others, initial=0.0), x.max(axis=others, initial=0.0)
    else:
        n = x.shape[axis]
        blocks = -(-n // block)
        pad = [(0, blocks * block - n) if i == axis else (0, 0) for i in range(x.ndim)]
        xb = np.pad(x, pad).reshape((*x.shape[:axis], blocks, block, *x.shape[axis + 1 :]))
        lo, hi = xb.min(axis=axis + 1, initial=0.0), xb.max(axis=axis + 1, initial=0.0)
    return lo.astype(np.float64), hi.astype(np.float64)


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
            f"int8, uint8, int4 or uint4, but it is {t}; {fix}"
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
            f"quantize to int8, uint8, int4 or uint4, not {to.name}; pass dtype=gd.int8 (or "
            "gd.uint8, gd.int4, gd.uint4)"
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
       "floating x and scale (float32/float16/bfloat16); int8/uint8/int4/uint4 result")  # fmt: skip
define(dequantize, _dequantize_rule, _dequantize_impl,
       "int8/uint8/int4/uint4 q; float32/float16/bfloat16 scale")  # fmt: skip
define(qmatmul, _qmatmul_rule, _qmatmul_impl,
       "floating x and scale (float32/float16/bfloat16); int8/uint8/int4/uint4 weight")  # fmt: skip
