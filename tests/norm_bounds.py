"""How far the ONNX export of the norms and of GELU may be from ``gd.evaluate``, from the
math: the reference computes in float64 and rounds once; the export computes float32 and
narrower in float32 (onnxruntime's kernels), float64 in float64. u is the compute dtype's
unit roundoff (2**-24 or 2**-53), ``round_out(v) = eps_out * |v| + smallest_subnormal_out``
(at least one ulp of the result dtype at v).

- layer_norm, group_norm (a row: a last-axis row, or a group): two passes, as onnxruntime's
  LayerNormalization kernel and the float64 composition compute. The mean is off by at most
  n u mean|x| (any order of summation); the deviations by that plus u |d|; the variance of
  the rounded deviations by (n + 3) u relatively plus the square of the mean's error (the
  deviations sum to 0, so that error enters to second order only). With the row's condition
  number K = mean|x| / sqrt(var + eps) and z the normalized value:
  ``|dz| <= n u K + (n/2 + 5) u |z| + (n u K)**2 |z| / 2 + n s / (var + eps) |z|`` (s: the
  smallest subnormal of the compute dtype, for squares that underflow), then
  ``|dy| <= |gamma| |dz| + 2u (|z gamma| + |beta|) + round_out(y)``.
- rms_norm: all terms positive, no cancellation: the normalized value n = x / rms is off by
  (n/2 + 3) u relatively (plus the underflow term); weight + offset by u (|w| + |offset|);
  the product by u; Llama's rounding of n to the result dtype moves it by round_out(n) at
  most; then ``|dy| <= (n/2 + 5) u |n w'| + u |n| (|w| + |offset|) + |w'| round_out(n) [Llama]
  + round_out(y)``.
- gelu "none" and "tanh": onnxruntime's float32 Gelu computes 1 + erf(x/sqrt 2)
  (1 + tanh(...)) in float32, a value in [0, 2] off by a few u absolutely (erf or tanh within
  an ulp, its argument's rounding, the sum's), halved and multiplied by |x|: within
  ``4 round_out(y) + 4 u |x|``. The float64 compositions are within that too (the exact
  formulas, a few float64 ulps). "quick", x * sigmoid(1.702 x): within 4 round_out(y) plus
  ``2 |x| s`` where sigmoid's value is subnormal.

- var and std (MOMENT_OPS), the same two passes (exporters/onnx/_lower/reduction.py mirrors
  the reference step by step: only the order of the two sums differs). The mean is off by
  ``E = gamma_(n+1) mean|x|`` (its sum, its division); the deviations d_i + delta share the
  mean's error delta (|delta| <= E), so the squares sum to ``Q + n delta**2`` exactly
  (sum d_i = 0), which the roundings of the deviations, the squares and the sum move by
  gamma_(n+2) relatively, and squares that underflow by n s absolutely:
  ``|dQ| <= n E**2 + gamma_(n+2) (Q + n E**2) + n s``, then ``|dvar| <= |dQ| / N + u |var|``
  (N = max(n - correction, 0)). Two such computations: twice that, then rounded to the
  result dtype. std adds its square root: ``|dstd| <= min(|dvar| / (2 std), sqrt|dvar|)
  + u std``, twice, then rounded.

The bounds hold for finite float32 intermediates: where squares or sums of a row overflow
float32 (|x| from about 1.8e19) the export gives 0 or NaN, the reference the float64 value;
``overflows`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

import graphdsl as gd
from graphdsl import DType
from graphdsl.ops.cast import cast_array

__all__ = [
    "GELU_OPS",
    "MOMENT_OPS",
    "NORM_OPS",
    "Bound",
    "bound",
    "moment_bound",
    "moment_output_bound",
    "output_bound",
]

NORM_OPS = frozenset({"layer_norm", "rms_norm", "group_norm"})
GELU_OPS = frozenset({"gelu"})
MOMENT_OPS = frozenset({"var", "std"})


class Bound(NamedTuple):
    """``|export - reference| <= bound`` elementwise, unless ``overflows`` (see the module)."""

    bound: np.ndarray
    overflows: bool


def _compute(out: DType) -> DType:
    return DType.float64 if out is DType.float64 else DType.float32


def _round_out(v: np.ndarray, out: DType) -> np.ndarray:
    fi = ml_dtypes.finfo(out.np)
    return np.asarray(float(fi.eps) * np.abs(v) + float(fi.smallest_subnormal))


def _rows(x: np.ndarray, op: str, attrs: Mapping[str, Any]) -> np.ndarray:
    """``x`` as the rows its op normalizes: [..., n] (group_norm: [N, groups, rest])."""
    if op != "group_norm":
        return x
    groups = int(attrs["num_groups"])
    n = x.shape[0]
    return x.reshape(n, groups, x.size // (n * groups) if n else 0)


class _Units(NamedTuple):
    """The result dtype, the reference in float64, and the compute dtype's unit roundoff u,
    smallest subnormal s and float32's largest value."""

    out: DType
    ref: np.ndarray
    u: float
    s: float
    big: float


def _units(reference: np.ndarray) -> _Units:
    out = gd.dtype(np.asarray(reference).dtype)
    f = _compute(out)
    return _Units(out, np.asarray(reference).astype(np.float64), float(np.finfo(f.np).eps) / 2,
                  float(np.finfo(f.np).smallest_subnormal),
                  float(np.finfo(np.float32).max))  # fmt: skip


def bound(
    op: str, attrs: Mapping[str, Any], operands: Sequence[np.ndarray], reference: np.ndarray
) -> Bound:
    """The bound for one node of ``op`` (NORM_OPS or GELU_OPS) on ``operands`` (the values in
    the node's operand dtypes), whose reference result is ``reference``."""
    out, ref, u, s, big = _units(reference)
    f = _compute(out)
    args = [np.asarray(a).astype(np.float64) for a in operands]
    with np.errstate(all="ignore"):
        if op == "gelu":
            return _gelu_bound(attrs, args[0], ref, out, u)
        x = args[0]
        if x.size == 0:
            return Bound(np.zeros(x.shape), False)
        if op == "rms_norm":
            return _rms_bound(attrs, x, args[1], ref, out, u, s, big)
        gamma, beta = args[1], args[2]
        if op == "group_norm":
            per_channel = (-1,) + (1,) * (x.ndim - 2)
            gamma, beta = gamma.reshape(per_channel), beta.reshape(per_channel)
        rows = _rows(x, op, attrs)
        n = rows.shape[-1]
        eps = float(attrs["epsilon"])
        mean = rows.mean(axis=-1, keepdims=True)
        d = rows - mean
        var = (d * d).mean(axis=-1, keepdims=True)
        z = d / np.sqrt(var + eps)
        k = np.abs(rows).mean(axis=-1, keepdims=True) / np.sqrt(var + eps)
        dz = (n * u * k + (n / 2 + 5) * u * np.abs(z) + (n * u * k) ** 2 * np.abs(z) / 2
              + n * s / (var + eps) * np.abs(z))  # fmt: skip
        dz, z = dz.reshape(x.shape), z.reshape(x.shape)
        b = np.abs(gamma) * dz + 2 * u * (np.abs(z * gamma) + np.abs(beta)) + _round_out(ref, out)
        # rows with inf or NaN give NaN both ways; finite ones may overflow in float32
        finite = np.all(np.isfinite(rows), axis=-1)
        sums = np.maximum(np.abs(rows).sum(axis=-1), (d * d).sum(axis=-1))
        overflows = f is DType.float32 and bool(np.any(finite & (sums >= big / 2)))
        return Bound(np.asarray(b), overflows)


def _rms_bound(
    attrs: Mapping[str, Any], x: np.ndarray, w: np.ndarray, ref: np.ndarray, out: DType,
    u: float, s: float, big: float,
) -> Bound:  # fmt: skip
    n = x.shape[-1]
    offset = float(attrs["weight_offset"])
    ms = (x * x).mean(axis=-1, keepdims=True)
    eps = float(attrs["epsilon"])
    normalized = np.abs(x / np.sqrt(ms + eps))
    weight = np.abs(w + offset)
    rel = (n / 2 + 5) * u + n * s / (ms + eps)
    b = rel * normalized * weight + u * normalized * (np.abs(w) + abs(offset))
    if not attrs["multiply_before_cast"]:
        b = b + weight * _round_out(normalized, out)
    b = b + _round_out(ref, out)
    finite = np.all(np.isfinite(x), axis=-1)
    overflows = _compute(out) is DType.float32 and bool(
        np.any(finite & ((x * x).sum(axis=-1) >= big / 2))
    )
    return Bound(np.asarray(b), overflows)


def _gelu_bound(
    attrs: Mapping[str, Any], x: np.ndarray, ref: np.ndarray, out: DType, u: float
) -> Bound:
    ulps = 4 if out in (DType.float32, DType.float64) else 1
    if attrs.get("approximate", "none") == "quick":  # composed in float64 for every dtype
        extra = 2 * np.abs(x) * float(np.finfo(np.float64).smallest_subnormal)
    else:
        extra = 4 * u * np.abs(x)
    return Bound(np.asarray(ulps * _round_out(ref, out) + extra), False)


def output_bound(g: gd.Graph, inputs: Sequence[np.ndarray]) -> Bound | None:
    """The bound for ``g``'s first output where one of NORM_OPS or GELU_OPS makes it (the
    (op, dtype) matrix's graphs), else None."""
    from fuzz_graphs import intermediates  # a test helper module, as this one

    node = g.outputs[0]
    if node.op not in NORM_OPS | GELU_OPS:
        return None
    names = [s.attrs["name"] for s in g.inputs]
    env = intermediates(g, dict(zip(names, inputs, strict=True)))
    operands = [cast_array(np.asarray(env[id(i)]), d)
                for i, d in zip(node.inputs, node.in_dtypes, strict=True)]  # fmt: skip
    return bound(node.op, node.attrs, operands, env[id(node)])


def moment_bound(op: str, attrs: Mapping[str, Any], x: np.ndarray, reference: np.ndarray) -> Bound:
    """The bound for var or std (MOMENT_OPS) of ``x`` (in the node's operand dtype) over
    ``attrs["axis"]`` with ``attrs["correction"]``, whose reference result is ``reference``
    (see the module). ``overflows``: a finite slice whose squares or sums may overflow in
    float32 (the bound does not hold there)."""
    out, ref, u, s, big = _units(reference)
    f = _compute(out)
    axes = tuple(int(a) for a in attrs["axis"])
    x = np.asarray(x).astype(np.float64)
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    if n == 0:
        return Bound(np.zeros(ref.shape), False)
    free = max(n - float(attrs["correction"]), 0.0)

    def gamma(k: int) -> float:
        return k * u / (1 - k * u)

    with np.errstate(all="ignore"):
        mean = x.mean(axis=axes, keepdims=True)
        e = gamma(n + 1) * np.abs(x).mean(axis=axes, keepdims=True)
        q = ((x - mean) ** 2).sum(axis=axes, keepdims=True)
        dq = n * e**2 + gamma(n + 2) * (q + n * e**2) + n * s
        var = q / free
        dvar = 2 * (dq / free + u * var)
        if op == "std":
            std = np.sqrt(var)
            d = 2 * (np.minimum(dvar / (2 * std), np.sqrt(dvar)) + u * std)
        else:
            d = dvar
        finite = np.all(np.isfinite(x), axis=axes, keepdims=True)
        sums = np.maximum(np.abs(x).sum(axis=axes, keepdims=True), q)
        overflows = f is DType.float32 and bool(np.any(finite & (sums >= big / 2)))
        if not attrs["keepdims"]:
            d = d.reshape(ref.shape)
        b = d.reshape(ref.shape) + _round_out(ref, out)
    return Bound(np.asarray(b * (1 + 2.0**-40)), overflows)


def moment_output_bound(g: gd.Graph, inputs: Sequence[np.ndarray]) -> Bound | None:
    """:func:`moment_bound` for ``g``'s first output where var or std makes it of the
    graph's first input (the (op, dtype) matrix's graphs), else None."""
    node = g.outputs[0]
    if node.op not in MOMENT_OPS or node.inputs[0] is not g.inputs[0]:
        return None
    x = cast_array(np.asarray(inputs[0]), node.in_dtypes[0])
    return moment_bound(node.op, node.attrs, x, gd.evaluate(g, list(inputs))[0])
