"""Normalizations for transformer models, with MAX's names and signatures: ``layer_norm`` and
``rms_norm`` over the last dimension, ``group_norm`` over channel groups.

Floating only: integers and bool compute in the policy's default float, and the scale and
bias operands promote with the input under the graph's policy. The numpy reference computes
in float64 from the operands (already in the result dtype) and rounds once to the result
dtype. The ONNX export computes float32 and narrower floats in float32 (onnxruntime's
kernels): it agrees with the reference to a few float32 roundings times the row's condition
number (see each function), and for float32 intermediates only: where x**2 or (x - mean)**2
overflows float32 (|x| from about 1.8e19 on) the export gives 0 or NaN, the reference the
float64 value.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.ops._define import (
    FLOAT,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    need,
    op,
    promote,
)
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import ShapeError, format_shape
from graphdsl.types import OpTypeError, TensorType

__all__ = ["group_norm", "layer_norm", "rms_norm"]


def layer_norm(input: Operand, gamma: Operand, beta: Operand, epsilon: float = 1e-5) -> Symbol:
    """(input - mean) / sqrt(var + epsilon) * gamma + beta over the last dimension of
    ``input`` (the biased variance), as MAX's ``layer_norm``; ``gamma`` and ``beta`` are 1-D
    of the last dimension's size, ``epsilon`` a positive number.

    The reference computes in float64 (two passes: the mean, then the mean of squared
    deviations) and rounds once. The export runs onnxruntime's LayerNormalization in float32
    for float32 and narrower floats: within a few float32 roundings times the row's condition
    number mean(|x|) / sqrt(var + epsilon), as a two-pass float32 computation is (tests/
    norm_bounds.py states the bound); float64 is composed in float64.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("ln", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> x, = g.inputs
    >>> gamma, beta = np.array([1, 1, 2], np.float32), np.array([0, 0.5, 0], np.float32)
    >>> z = gd.ops.layer_norm(x, gamma, beta, epsilon=1e-5)
    >>> z.type
    TensorType(float32[2, 3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1, 2, 3], [5, 5, 5]], gd.float32.np)})[0]
    array([[-1.2247357,  0.5      ,  2.4494715],
           [ 0.       ,  0.5      ,  0.       ]], dtype=float32)
    """
    return op("layer_norm", input, gamma, beta, epsilon=epsilon)


def rms_norm(
    input: Operand,
    weight: Operand,
    epsilon: float = 1e-6,
    weight_offset: float = 0.0,
    multiply_before_cast: bool = False,
) -> Symbol:
    """input / sqrt(mean(input**2) + epsilon) * (weight + weight_offset) over the last
    dimension of ``input``, as MAX's ``rms_norm`` (Llama's RMSNorm; Gemma's with
    ``weight_offset=1.0, multiply_before_cast=True``); ``weight`` is 1-D of the last
    dimension's size, ``epsilon`` a positive number.

    ``multiply_before_cast``, as MAX documents it: False (Llama) rounds the normalized input
    to the result dtype before multiplying it by the weight, and the multiplication is in the
    result dtype, as are weight + weight_offset (the offset rounded to the dtype first); True
    (Gemma) multiplies by weight + weight_offset before the one rounding to the result dtype.
    A weight_offset of 0 uses the weight as it is. The reference computes in float64 and
    rounds at those points only.

    The export composes Pow(x, 2), ReduceMean, Add epsilon, Sqrt, Div, Mul (the pattern
    onnxruntime's optimizer fuses), in float32 for float32 and narrower floats: no
    cancellation, within about (n/2 + 5) float32 roundings of the reference for a row of n.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("rms", input_types={"x": gd.TensorType(gd.bfloat16, (2, 2))})
    >>> x, = g.inputs
    >>> w = np.array([1.0, 0.5], gd.bfloat16.np)
    >>> g.output(gd.ops.rms_norm(x, w), gd.ops.rms_norm(x, w, 1e-6, 1.0, True))
    >>> llama, gemma = gd.evaluate(g, {"x": np.array([[3, 4], [1, -1]], gd.bfloat16.np)})
    >>> llama, gemma
    (array([[0.847656, 0.566406],
           [1, -0.5]], dtype=bfloat16), array([[1.69531, 1.69531],
           [2, -1.5]], dtype=bfloat16))
    """
    return op(
        "rms_norm",
        input,
        weight,
        epsilon=epsilon,
        weight_offset=weight_offset,
        multiply_before_cast=multiply_before_cast,
    )


def group_norm(
    input: Operand, gamma: Operand, beta: Operand, num_groups: int, epsilon: float = 1e-5
) -> Symbol:
    """Normalization over groups of channels, as MAX's ``group_norm`` (and ONNX's
    GroupNormalization from opset 21): ``input`` is [N, C, ...] with channels second, its C
    channels split into ``num_groups`` groups of C / num_groups consecutive channels; each
    group of each sample is normalized as :func:`layer_norm` normalizes a row (over its
    channels and all the spatial positions), then scaled by ``gamma`` and shifted by
    ``beta``, both 1-D of C (per channel).

    The reference computes in float64 and rounds once; the export normalizes each group with
    onnxruntime's LayerNormalization (float32 for float32 and narrower floats) on the input
    reshaped to [N, num_groups, rest], then applies gamma and beta per channel.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("gn", input_types={"x": gd.TensorType(gd.float32, (1, 4, 2))})
    >>> x, = g.inputs
    >>> ones, zeros = np.ones(4, np.float32), np.zeros(4, np.float32)
    >>> g.output(gd.ops.group_norm(x, ones, zeros, num_groups=2))
    >>> gd.evaluate(g, {"x": np.array([[[1, 1], [3, 3], [0, 0], [0, 8]]], gd.float32.np)})[0]
    array([[[-0.999995 , -0.999995 ],
            [ 0.999995 ,  0.999995 ],
            [-0.57735  , -0.57735  ],
            [-0.57735  ,  1.7320501]]], dtype=float32)
    """
    return op("group_norm", input, gamma, beta, num_groups=num_groups, epsilon=epsilon)


# ---------------------------------------------------------------------------- type rules


def _positive(name: str, attr: str, value: Any) -> float:
    """``value`` as a positive finite float, or an OpTypeError naming the op and attribute."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise OpTypeError(f"{name}'s {attr} must be a number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise OpTypeError(f"{name}'s {attr} must be positive and finite, got {value!r}")
    return v


def _float_typing(name: str, p: Policy, types: list[TensorType]) -> Promoted:
    """The dtype the operands promote to (the default float for integers and bool)."""
    c = promote(p, types)
    if c.dtype.kind in TO_FLOAT:
        c = Promoted(p.default_float, c.ambiguous)
    need(FLOAT, c, types, p)
    return c


def _params(name: str, x: TensorType, size: Any, what: str, named: dict[str, TensorType]) -> None:
    """Raise unless every operand of ``named`` has shape [size]."""
    bad = {k: t for k, t in named.items() if t.shape != (size,)}
    if bad:
        got = ", ".join(f"{k} {format_shape(t.shape)}" for k, t in named.items())
        raise ShapeError(
            f"{name} of input {x}: {' and '.join(named)} must be 1-D of the {what} ({size}), "
            f"got {got}; pass values of shape {format_shape((size,))}"
        )


def _layer_norm_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, gamma, beta = types
    c = _float_typing("layer_norm", p, types)
    if x.rank == 0:
        raise ShapeError(
            f"layer_norm normalizes over the last dimension, but input {x} is a scalar; "
            "expand_dims it first"
        )
    _params("layer_norm", x, x.shape[-1], "last dimension", {"gamma": gamma, "beta": beta})
    attrs["epsilon"] = _positive("layer_norm", "epsilon", attrs.get("epsilon", 1e-5))
    return (c.dtype,) * 3, TensorType(c.dtype, x.shape, c.ambiguous)


def _rms_norm_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, weight = types
    c = _float_typing("rms_norm", p, types)
    if x.rank == 0:
        raise ShapeError(
            f"rms_norm normalizes over the last dimension, but input {x} is a scalar; "
            "expand_dims it first"
        )
    _params("rms_norm", x, x.shape[-1], "last dimension", {"weight": weight})
    attrs["epsilon"] = _positive("rms_norm", "epsilon", attrs.get("epsilon", 1e-6))
    offset = attrs.get("weight_offset", 0.0)
    if isinstance(offset, bool) or not isinstance(offset, (int, float, np.integer, np.floating)):
        raise OpTypeError(f"rms_norm's weight_offset must be a number, got {offset!r}")
    if not math.isfinite(float(offset)):
        raise OpTypeError(f"rms_norm's weight_offset must be finite, got {offset!r}")
    attrs["weight_offset"] = float(offset)
    before = attrs.get("multiply_before_cast", False)
    if not isinstance(before, (bool, np.bool_)):
        raise OpTypeError(f"rms_norm's multiply_before_cast must be a bool, got {before!r}")
    attrs["multiply_before_cast"] = bool(before)
    return (c.dtype,) * 2, TensorType(c.dtype, x.shape, c.ambiguous)


def _group_norm_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, gamma, beta = types
    c = _float_typing("group_norm", p, types)
    if x.rank < 2:
        raise ShapeError(
            f"group_norm needs an input of rank >= 2 ([N, C, ...], channels second), got {x}"
        )
    channels = x.shape[1]
    groups = attrs.get("num_groups")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise OpTypeError(f"group_norm's num_groups must be a positive int, got {groups!r}")
    if not isinstance(channels, int):
        raise ShapeError(
            f"group_norm splits the channel dimension (axis 1) of input {x} into groups; it "
            "must be a static size, not a symbolic one"
        )
    if channels % int(groups):
        raise ShapeError(
            f"group_norm of input {x}: {channels} channels (axis 1) do not split into "
            f"{groups} groups; num_groups must divide the channel count"
        )
    attrs["num_groups"] = int(groups)
    _params("group_norm", x, channels, "channel count", {"gamma": gamma, "beta": beta})
    attrs["epsilon"] = _positive("group_norm", "epsilon", attrs.get("epsilon", 1e-5))
    return (c.dtype,) * 3, TensorType(c.dtype, x.shape, c.ambiguous)


# ---------------------------------------------------------------------------- references


def _normalized(x: np.ndarray, epsilon: float) -> np.ndarray:
    """(x - mean) / sqrt(var + epsilon) over the last axis of float64 ``x`` (two passes)."""
    if x.size == 0:  # nothing to normalize (the mean of an empty row would warn)
        return x
    d = x - x.mean(axis=-1, keepdims=True)
    var = (d * d).mean(axis=-1, keepdims=True)
    return np.asarray(d / np.sqrt(var + epsilon))


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64)


def _layer_norm(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, gamma, beta = (_f64(a) for a in args)
    with np.errstate(all="ignore"):
        return np.asarray(_normalized(x, attrs["epsilon"]) * gamma + beta)


def _round(x: np.ndarray, dtype: DType) -> np.ndarray:
    """``x`` rounded to ``dtype`` (as the final rounding does), back in float64."""
    return np.asarray(x).astype(dtype.np).astype(np.float64)


def _rms_norm(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, weight = (_f64(a) for a in args)
    offset = attrs["weight_offset"]
    with np.errstate(all="ignore"):
        if x.size == 0:
            return x
        normalized = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + attrs["epsilon"])
        if attrs["multiply_before_cast"]:
            return np.asarray(normalized * (weight + offset if offset else weight))
        if offset:  # in the result dtype, the offset rounded to it first (MAX's kernel)
            weight = _round(weight + _round(np.float64(offset), out.dtype), out.dtype)
        return np.asarray(_round(normalized, out.dtype) * weight)


def _group_norm(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, gamma, beta = (_f64(a) for a in args)
    groups = attrs["num_groups"]
    n = x.shape[0]
    rest = x.size // (n * groups) if n else 0
    per_channel = (-1,) + (1,) * (x.ndim - 2)
    with np.errstate(all="ignore"):
        z = _normalized(x.reshape(n, groups, rest), attrs["epsilon"]).reshape(x.shape)
        return np.asarray(z * gamma.reshape(per_channel) + beta.reshape(per_channel))


define(layer_norm, _layer_norm_rule, _layer_norm, "floating; integers -> default float")
define(rms_norm, _rms_norm_rule, _rms_norm, "floating; integers -> default float")
define(group_norm, _group_norm_rule, _group_norm, "floating; integers -> default float")
