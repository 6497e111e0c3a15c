"""The ops behind neural-network layers, with PyTorch's names (``torch.nn.functional``; MAX's
graph API has none of them): ``linear``, ``batch_norm`` (inference), ``adaptive_avg_pool2d``
and ``scaled_dot_product_attention``.

Types. Floating only: integer and bool operands compute in the policy's default float, and
the operands promote together under the graph's policy (an attention mask may instead be
bool: True where a query may attend to a key).

Layouts. ``linear``'s weight is PyTorch's ``(out_features, in_features)``. ``batch_norm``
and ``adaptive_avg_pool2d`` take ``input_layout="NCHW"`` (PyTorch's, the default) or
``"NHWC"``; the ops compute channels first and a channels-last value goes through a
``transpose`` each way, shared with the neighbouring vision ops as theirs are
(:mod:`graphdsl.ops.vision`).

Numerics. The references compute in float64 and round once to the result dtype. The ONNX
export computes float32 and narrower in float32 (float64 in float64), with sums in another
order: within the bounds each function states (tests/test_nn_ops.py checks them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._define import FLOAT, TO_FLOAT, Operand, Symbol, define, need, op, promote
from graphdsl.ops._vision_args import channels_last, symbol_arg, to_first, to_last
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import Dim, ShapeError, broadcast_shapes, dim_repr, format_shape
from graphdsl.types import OpTypeError, TensorType

__all__ = ["adaptive_avg_pool2d", "batch_norm", "linear", "scaled_dot_product_attention"]


# ---------------------------------------------------------------------------- helpers


def _float_typing(p: Policy, types: Sequence[TensorType]) -> Promoted:
    """The dtype floating operands promote to (the default float for integers and bool)."""
    c = promote(p, types)
    if c.dtype.kind in TO_FLOAT:
        c = Promoted(p.default_float, c.ambiguous)
    need(FLOAT, c, types, p)
    return c


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64)


def _first(x: Symbol, last: bool, rank: int | None) -> Symbol:
    """``x`` channels first: as is, the value a channels-last ``transpose`` was made from
    (that transpose then goes unused), or a new ``transpose``."""
    if rank is not None and x.rank != rank:
        raise ShapeError(f"the input must have rank {rank}, got {x.type}; reshape it first")
    if not last:
        return x
    if x.rank < 2:
        raise ShapeError(f"a channels-last input needs rank >= 2, got {x.type}")
    return to_first(x, x.rank, last, "the input")


# ---------------------------------------------------------------------------- linear


def linear(x: Operand, weight: Operand, bias: Operand | None = None) -> Symbol:
    """``x @ weight.T + bias``, as PyTorch's ``nn.functional.linear``: ``weight`` is
    ``(out_features, in_features)`` (PyTorch's layout, kept as a checkpoint stores it),
    ``bias`` ``(out_features,)`` or None, ``x`` ``(..., in_features)``; the result is
    ``(..., out_features)``. The reference computes in float64 and rounds once; the export
    (a Transpose of the weight, which onnxruntime folds when the weight is a constant or a
    weight, then MatMul and Add in float32) is within (in_features + 3) eps32 of
    ``|x| @ |weight|.T + |bias|``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("linear", input_types={"x": gd.TensorType(gd.float32, ("batch", 3))})
    >>> x, = g.inputs
    >>> w = np.array([[1, 0, 0], [1, 1, 1]], np.float32)  # 2 outputs from 3 inputs
    >>> y = gd.ops.linear(x, w, np.array([0.5, -1], np.float32))
    >>> y.type
    TensorType(float32[batch, 2])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.array([[1, 2, 3]], np.float32)})[0]
    array([[1.5, 5. ]], dtype=float32)
    """
    if bias is None:
        return op("linear", x, weight)
    return op("linear", x, weight, bias)


def _linear_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    c = _float_typing(p, types)
    x, w = types[0], types[1]
    if w.rank != 2:
        raise ShapeError(
            f"linear's weight must be 2-D (out_features, in_features), PyTorch's layout, got "
            f"{w}"
        )
    if x.rank == 0:
        raise ShapeError(f"linear needs an input of rank >= 1 (..., in_features), got {x}")
    if x.shape[-1] != w.shape[1]:
        raise ShapeError(
            f"linear of input {x} by weight {w}: the input's last dimension ({x.shape[-1]}) "
            f"must equal the weight's in_features, its second dimension ({w.shape[1]}); the "
            "weight is (out_features, in_features), as PyTorch stores it (transpose an "
            "(in, out) one, or use x @ weight)"
        )
    if len(types) == 3 and types[2].shape != (w.shape[0],):
        raise ShapeError(
            f"linear's bias must be 1-D of out_features ({w.shape[0]}), got {types[2]}"
        )
    shape = (*x.shape[:-1], w.shape[0])
    return (c.dtype,) * len(types), TensorType(c.dtype, shape, c.ambiguous)


def _linear(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, w = _f64(args[0]), _f64(args[1])
    with np.errstate(all="ignore"):
        y = np.matmul(x, w.T)
        if len(args) == 3:
            y = y + _f64(args[2])
    return np.asarray(y)


define(linear, _linear_rule, _linear, "floating; integers -> default float")


# ---------------------------------------------------------------------------- batch_norm


def batch_norm(
    x: Operand,
    mean: Operand,
    var: Operand,
    gamma: Operand | None = None,
    beta: Operand | None = None,
    epsilon: float = 1e-5,
    input_layout: str = "NCHW",
) -> Symbol:
    """Inference batch normalization, as PyTorch's ``nn.functional.batch_norm`` with
    ``training=False``: ``(x - mean) / sqrt(var + epsilon) * gamma + beta`` per channel,
    from the running statistics ``mean`` and ``var`` (1-D, one entry per channel);
    ``gamma`` and ``beta`` are 1-D too, or None (1 and 0). The channels are axis 1 of ``x``
    (``input_layout="NCHW"``, any rank >= 2) or its last axis (``"NHWC"``, rank 4).

    The reference computes in float64 and rounds once. The export computes float32 and
    narrower in float32: directly after a ``conv2d`` whose ONNX Conv runs in float32, it is
    folded into that convolution (the filter scaled per output channel by gamma /
    sqrt(var + epsilon), the bias made (bias - mean) * that scale + beta, both computed from
    the weights by nodes onnxruntime folds when they are constants or weights: one Conv at
    run time), within (n + 6) eps32 of ``|scale| (sum|w x| + |bias| + |mean|) + |beta|``
    for a convolution of n products; elsewhere ``(x - mean) * scale + beta``, within 3 eps32
    (|z gamma| + |beta|) plus the result's rounding (z the normalized value), with no
    intermediate larger than the result before beta (no overflow the reference has not).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("bn", input_types={"x": gd.TensorType(gd.float32, ("n", 2, 1, 1))})
    >>> x, = g.inputs
    >>> mean, var = np.array([1, -1], np.float32), np.array([4, 0.25], np.float32)
    >>> gamma, beta = np.array([2, 1], np.float32), np.array([0, 10], np.float32)
    >>> y = gd.ops.batch_norm(x, mean, var, gamma, beta, epsilon=0.0)
    >>> y.type
    TensorType(float32[n, 2, 1, 1])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.array([5, 1], np.float32).reshape(1, 2, 1, 1)})[0].ravel()
    array([ 4., 14.], dtype=float32)
    """
    last = channels_last(input_layout, 2)
    xf = _first(symbol_arg(x, "x"), last, 4 if last else None)
    operands = [xf, mean, var, 1 if gamma is None else gamma, 0 if beta is None else beta]
    return to_last(op("batch_norm", *operands, epsilon=epsilon), last)


def _epsilon(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise OpTypeError(f"batch_norm's epsilon must be a number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise OpTypeError(f"batch_norm's epsilon must be finite and >= 0, got {value!r}")
    return v


def _batch_norm_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    c = _float_typing(p, types)
    x = types[0]
    if x.rank < 2:
        raise ShapeError(
            f"batch_norm needs an input of rank >= 2 (N, C, ...), channels second, got {x}"
        )
    channels = x.shape[1]
    names = ("mean", "var", "gamma", "beta")
    bad = [f"{n} {format_shape(t.shape)}" for n, t in zip(names, types[1:], strict=True)
           if t.shape not in ((channels,), ())]  # fmt: skip
    if bad:
        raise ShapeError(
            f"batch_norm of input {x}: mean, var, gamma and beta must be 1-D of the channel "
            f"count ({channels}, axis 1) (gamma and beta may be scalars), got {', '.join(bad)}"
        )
    attrs["epsilon"] = _epsilon(attrs.get("epsilon", 1e-5))
    return (c.dtype,) * 5, TensorType(c.dtype, x.shape, c.ambiguous)


def _per_channel(a: np.ndarray, rank: int) -> np.ndarray:
    return a.reshape((-1,) + (1,) * (rank - 2)) if a.ndim == 1 else a


def _batch_norm(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = _f64(args[0])
    mean, var, gamma, beta = (_per_channel(_f64(a), x.ndim) for a in args[1:])
    with np.errstate(all="ignore"):
        return np.asarray((x - mean) / np.sqrt(var + attrs["epsilon"]) * gamma + beta)


define(batch_norm, _batch_norm_rule, _batch_norm, "floating; integers -> default float")


# ---------------------------------------------------------------------------- adaptive pool


def adaptive_windows(n: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive pooling windows of ``n`` elements into ``out``: the i-th is
    [floor(i n / out), ceil((i + 1) n / out))."""
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


def adaptive_avg_pool2d(
    x: Operand, output_size: int | Sequence[int | None], input_layout: str = "NCHW"
) -> Symbol:
    """The mean of each of ``output_size`` windows of the spatial axes, as PyTorch's
    ``nn.functional.adaptive_avg_pool2d``: window i of an axis of n elements pooled to m is
    [floor(i n / m), ceil((i + 1) n / m)). ``output_size`` is an int (square) or (h, w), a
    None keeping that axis's size. The input is NCHW (``input_layout="NHWC"`` for channels
    last) with static H and W; floating dtypes are kept, integers and bool give the
    policy's default float. The reference sums in float64 and rounds the mean once; the
    export (a Reshape and ReduceMean where the sizes divide, a Gather of the windows and
    ReduceSum otherwise, in float32 for float32 and narrower) is within (k + 2) eps32 of
    the mean of |x| over a window of k elements.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("pool", input_types={"x": gd.TensorType(gd.float32, ("n", 1, 3, 2))})
    >>> x, = g.inputs
    >>> y = gd.ops.adaptive_avg_pool2d(x, (2, 1))  # rows [0, 2) and [1, 3), all columns
    >>> y.type
    TensorType(float32[n, 1, 2, 1])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.arange(6, dtype=np.float32).reshape(1, 1, 3, 2)})[0].ravel()
    array([1.5, 3.5], dtype=float32)
    """
    last = channels_last(input_layout, 2)
    xf = _first(symbol_arg(x, "x"), last, 4)
    if isinstance(output_size, (int, np.integer)) and not isinstance(output_size, bool):
        size: tuple[object, ...] = (int(output_size), int(output_size))
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 2:
        size = tuple(xf.shape[2 + i] if s is None else s for i, s in enumerate(output_size))
    else:
        raise OpTypeError(
            f"adaptive_avg_pool2d's output_size must be an int or (h, w) (an entry may be "
            f"None: that axis's size), got {output_size!r}"
        )
    return to_last(op("adaptive_avg_pool2d", xf, output_size=size), last)


def _adaptive_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    c = _float_typing(p, types)
    if t.rank != 4:
        raise ShapeError(f"adaptive_avg_pool2d needs an NCHW value of rank 4, got {t}")
    size = attrs.get("output_size")
    if not isinstance(size, tuple) or len(size) != 2 or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in size
    ):
        raise OpTypeError(
            f"adaptive_avg_pool2d's output_size must be two ints >= 1, got {size!r}"
        )
    hw = t.shape[2:]
    if not all(isinstance(d, int) and d >= 1 for d in hw):
        raise ShapeError(
            f"adaptive_avg_pool2d of {t}: H and W must be static and >= 1 (the windows are "
            f"computed from them), got {format_shape(hw)}"
        )
    attrs["output_size"] = (int(size[0]), int(size[1]))
    return (c.dtype,), TensorType(c.dtype, (*t.shape[:2], *attrs["output_size"]), c.ambiguous)


def _adaptive(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = _f64(args[0])
    (h, w), (oh, ow) = x.shape[2:], attrs["output_size"]
    r = np.empty((*x.shape[:2], oh, ow))
    with np.errstate(all="ignore"):
        for i, (a, b) in enumerate(adaptive_windows(h, oh)):
            for j, (c, d) in enumerate(adaptive_windows(w, ow)):
                r[:, :, i, j] = np.sum(x[:, :, a:b, c:d], axis=(2, 3)) / ((b - a) * (d - c))
    return r


define(adaptive_avg_pool2d, _adaptive_rule, _adaptive, "floating; integers -> default float")


# ---------------------------------------------------------------------------- attention


def scaled_dot_product_attention(
    q: Operand,
    k: Operand,
    v: Operand,
    mask: Operand | None = None,
    is_causal: bool | str = False,
    scale: float | None = None,
    *,
    enable_gqa: bool = False,
    fully_masked: str = "nan",
) -> Symbol:
    """``softmax(q @ k.T * scale + mask) @ v`` over the last two axes, as PyTorch's
    ``nn.functional.scaled_dot_product_attention`` (without dropout): ``q`` is
    ``(..., L, E)``, ``k`` ``(..., S, E)``, ``v`` ``(..., S, Ev)``, the leading axes
    broadcast; the result is ``(..., L, Ev)``. ``scale`` defaults to 1 / sqrt(E). ``mask``
    broadcasts to ``(..., L, S)``: bool (True where a query may attend to a key) or float
    (added to the scores).

    ``is_causal`` masks the future. ``"top_left"``: query i attends to keys 0..i
    (PyTorch's ``is_causal=True``). ``"bottom_right"``: query i attends to keys
    0..S - L + i, for queries that follow S - L keys already in a cache (decoding with a
    KV cache: the last query sees every key). ``True`` means either when L and S are the
    same dimension, and is refused as ambiguous otherwise.

    ``enable_gqa`` (PyTorch's name): grouped-query attention. q's heads (axis -3) are a
    multiple of k's and v's; query head h uses key/value head ``h // (Hq // Hkv)``, by
    broadcasting (no copies of k and v). A mask's head axis, if it has one, must be 1.

    ``fully_masked``: what a query that may attend to no key gives: ``"nan"`` (PyTorch's
    result) or ``"zero"`` (zeros, so a fully padded row of a left-padded batch does not
    spread NaN).

    The reference computes in float64 and rounds once. The export runs MatMul, Mul, the
    mask (Where or Add), Softmax and MatMul in float32 for float32 and narrower; with
    dq the scores' error ((E + 2) eps32 of ``|q| @ |k|.T * scale``), each output is within
    ``(2 max dq + (2 S + 10) eps32)`` of ``softmax(scores) @ |v|``.

    >>> import numpy as np, graphdsl as gd
    >>> t = gd.TensorType(gd.float32, ("seq", 2))
    >>> g = gd.Graph("sdpa", input_types={"q": t, "k": t, "v": t})
    >>> q, k, v = g.inputs
    >>> y = gd.ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> y.type
    TensorType(float32[seq, 2])
    >>> g.output(y)
    >>> zeros, v = np.zeros((3, 2), np.float32), np.array([[3, 0], [1, 2], [2, 1]], np.float32)
    >>> gd.evaluate(g, [zeros, zeros, v])[0]  # equal scores: the mean of the visible values
    array([[3., 0.],
           [2., 1.],
           [2., 1.]], dtype=float32)
    """
    operands = [q, k, v] if mask is None else [q, k, v, mask]
    return op("scaled_dot_product_attention", *operands, is_causal=is_causal, scale=scale,
              enable_gqa=enable_gqa, fully_masked=fully_masked)  # fmt: skip


def _sdpa_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    q, k, v = types[:3]
    mask = types[3] if len(types) == 4 else None
    bool_mask = mask is not None and mask.dtype is DType.bool
    promoted = types[:3] if mask is None or bool_mask else types
    c = _float_typing(p, promoted)
    if mask is not None and not bool_mask and mask.dtype.kind is not Kind.float:
        raise OpTypeError(
            f"scaled_dot_product_attention's mask is {mask}: give a bool mask (True where a "
            "query may attend to a key) or a float one (added to the scores)"
        )
    if min(q.rank, k.rank, v.rank) < 2:
        raise ShapeError(
            f"scaled_dot_product_attention needs q (..., L, E), k (..., S, E) and v (..., S, "
            f"Ev) of rank >= 2, got {q}, {k}, {v}"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"scaled_dot_product_attention of q {q}, k {k}, v {v}: q and k must share E "
            "(their last dimension), k and v share S (their second to last)"
        )
    length, keys = q.shape[-2], k.shape[-2]
    gqa = attrs.get("enable_gqa", False)
    if not isinstance(gqa, (bool, np.bool_)):
        raise OpTypeError(f"enable_gqa must be a bool, got {gqa!r}")
    if gqa:
        batch = _gqa_batch(q, k, v, mask)
    else:
        batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        scores = broadcast_shapes((*batch, length, keys), mask.shape)
        if scores[-2:] != (length, keys):
            raise ShapeError(
                f"scaled_dot_product_attention's mask {mask} must broadcast to the scores' "
                f"(..., L, S) = {format_shape((*batch, length, keys))}"
            )
        batch = scores[:-2]
    causal = _alignment(attrs.get("is_causal", False), length, keys)
    fully = attrs.get("fully_masked", "nan")
    if fully not in ("nan", "zero"):
        raise OpTypeError(f"fully_masked must be 'nan' or 'zero', got {fully!r}")
    scale = attrs.get("scale")
    if scale is None:
        e = q.shape[-1]
        if not isinstance(e, int) or e < 1:
            raise ShapeError(
                f"scaled_dot_product_attention: the default scale is 1 / sqrt(E), but E is "
                f"{e!r}; give scale= explicitly"
            )
        scale = 1 / math.sqrt(e)
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise OpTypeError(f"scale must be a number or None, got {scale!r}")
    if not math.isfinite(float(scale)):
        raise OpTypeError(f"scale must be finite, got {scale!r}")
    attrs.update(is_causal=causal, scale=float(scale), enable_gqa=bool(gqa), fully_masked=fully)
    in_dtypes = (c.dtype,) * 3 + (() if mask is None else (DType.bool if bool_mask else c.dtype,))
    return in_dtypes, TensorType(c.dtype, (*batch, length, v.shape[-1]), c.ambiguous)


_ALIGNMENTS = ("top_left", "bottom_right")


def _alignment(causal: object, length: Dim, keys: Dim) -> bool | str:
    """is_causal as False, "top_left" or "bottom_right"; True only where L and S agree."""
    if causal in _ALIGNMENTS:
        return str(causal)
    if not isinstance(causal, (bool, np.bool_)):
        raise OpTypeError(f"is_causal must be a bool, 'top_left' or 'bottom_right', got {causal!r}")
    if not causal:
        return False
    if length != keys:
        raise OpTypeError(
            f"scaled_dot_product_attention(is_causal=True) of {dim_repr(length)} queries and "
            f"{dim_repr(keys)} keys is ambiguous: the two may differ. Say which: "
            "is_causal='top_left' (PyTorch's is_causal=True: query i sees keys 0..i) or "
            "'bottom_right' (queries after a KV cache: query i sees keys 0..S - L + i)"
        )
    return "top_left"


def _gqa_batch(q: TensorType, k: TensorType, v: TensorType,
               mask: TensorType | None) -> tuple[Dim, ...]:  # fmt: skip
    """The leading axes of grouped-query attention: q's heads, k's and v's broadcast."""
    if min(q.rank, k.rank, v.rank) < 3:
        raise ShapeError(
            f"scaled_dot_product_attention(enable_gqa=True) needs a heads axis (-3) on q, k "
            f"and v, got {q}, {k}, {v}"
        )
    hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
    if not (isinstance(hq, int) and isinstance(hk, int) and hk > 0 and hq % hk == 0) or hk != hv:
        raise ShapeError(
            f"scaled_dot_product_attention(enable_gqa=True): q's heads ({dim_repr(hq)}) must be "
            f"a static multiple of k's ({dim_repr(hk)}), and v's ({dim_repr(hv)}) equal k's"
        )
    if mask is not None and mask.rank >= 3 and mask.shape[-3] != 1:
        raise ShapeError(
            f"scaled_dot_product_attention(enable_gqa=True): the mask {mask} has a heads axis "
            "of size other than 1; give one mask for every head (size 1 at axis -3)"
        )
    return (*broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3]), hq)


def causal_mask(length: int, keys: int, align: str = "top_left") -> np.ndarray:
    """The causal mask, (length, keys) bools: query i may attend to keys 0..i
    ("top_left", PyTorch's) or 0..keys - length + i ("bottom_right")."""
    return np.tri(length, keys, keys - length if align == "bottom_right" else 0, np.bool_)


def _sdpa(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    q, k, v = (_f64(a) for a in args[:3])
    if attrs.get("enable_gqa"):  # key/value head h // rep for query head h
        rep = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    with np.errstate(all="ignore"):
        s = np.matmul(q, np.swapaxes(k, -1, -2)) * attrs["scale"]
        if len(args) == 4:
            m = np.asarray(args[3])
            s = np.where(m, s, -np.inf) if m.dtype == np.bool_ else s + _f64(m)
        if attrs["is_causal"]:
            s = np.where(causal_mask(s.shape[-2], s.shape[-1], attrs["is_causal"]), s, -np.inf)
        if s.shape[-1] == 0:  # no keys: an empty sum, 0
            return np.zeros((*s.shape[:-1], v.shape[-1]))
        e = np.exp(s - np.max(s, axis=-1, keepdims=True))
        p = e / np.sum(e, axis=-1, keepdims=True)
        if attrs.get("fully_masked") == "zero":
            p = np.where(np.max(s, axis=-1, keepdims=True) == -np.inf, 0.0, p)
        return np.asarray(np.matmul(p, v))


define(scaled_dot_product_attention, _sdpa_rule, _sdpa,
       "floating; integers -> default float; a bool mask")  # fmt: skip
