"""Lowerings of the layer ops (graphdsl.ops.layers): ``linear``, ``batch_norm``,
``adaptive_avg_pool2d`` and ``scaled_dot_product_attention``.

Each computes float32 and narrower floats in float32 and float64 in float64, and rounds once
to the result dtype, as the reference does (whose float64 sums these are within the bounds
the ops' docstrings state).

- ``linear``: Transpose of the (out, in) weight, MatMul, Add. onnxruntime folds the
  Transpose of a constant or weight (an initializer) when it loads the model. With
  ``export(exact=False)`` on CUDA a float16 / bfloat16 MatMul runs in its own type
  (``half_matmul``), the bias added in float32; on the CPU a float32 one is onnxruntime's
  FusedMatMul with ``transB=1`` (the same bits, without the folded copy: ``_fused_matmul``).
- ``batch_norm``: folded into the convolution it follows when that is an ONNX Conv in
  float32: a new Conv whose filter is the old one times gamma / sqrt(var + epsilon) per
  output channel and whose bias is (bias - mean) * that + beta, computed from the weights by
  nodes onnxruntime folds at load time (one Conv at run time; the old Conv is removed
  where nothing else reads its result). Elsewhere Sub, Mul by gamma / Sqrt(var +
  epsilon), Add, per channel.
- ``adaptive_avg_pool2d``: where the sizes divide, a Reshape to (N, C, oh, kh, ow, kw) and
  a ReduceMean; otherwise the input padded with one zero row and column, a Gather of each
  window's rows and one of its columns (the padding standing in for taps past a shorter
  window), ReduceSum and a Div by the window sizes (positions and sizes computed in the
  model from Ranges).
- ``scaled_dot_product_attention``: MatMul of q and k transposed, Mul by the scale, the
  mask (Where to -inf for a bool one, Add for a float one), the causal mask (Range and
  LessOrEqual of the sizes, static or at run time), Softmax, MatMul.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import NodeProto, helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import TYPED, SymbolicDims, T, half_matmul, register
from exporters.onnx._lower._index import arange, on_axis
from exporters.onnx._lower.control import DOMAIN, FUNCTIONS, Functions
from exporters.onnx._types import type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.shapes import Dim


def _compute(out: DType) -> DType:
    """float64 computes in float64, everything narrower in float32."""
    return T.float64 if out is T.float64 else T.float32


# ---------------------------------------------------------------------------- linear


@register("linear")
def _linear(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    out = args[0].dtype
    # export(exact=False) on CUDA: a half MatMul (float32 accumulation, rounded to the half
    # type), then the bias added in float32 and rounded again
    f = out if half_matmul(b, out) else _compute(out)
    x, w = (b.cast(a, f) for a in args[:2])
    y = _fused_matmul(b, node, x, w)
    if y is None:
        wt = b.node("Transpose", [w.name], f, perm=[1, 0])  # (in, out): folded for a weight
        y = b.elementwise("MatMul", [x, wt])
    if len(args) > 2:
        f = _compute(out)
        y = b.elementwise("Add", [b.cast(y, f), b.cast(args[2], f)])
    return b.cast(y, out)


def _fused_matmul(b: Builder, node: Symbol, x: V, w: V) -> V | None:
    """``export(exact=False)`` on the CPU: ``x @ w.T`` of float32 as onnxruntime's
    FusedMatMul (com.microsoft) with ``transB=1``, which reads the (out, in) weight as it is
    stored. MatMul of Transpose(w) gives the same bits (one MLAS GEMM of the same packed
    panels: measured equal on onnxruntime 1.31 and 1.32, 1 and 2 threads, M of 1 to 128),
    but onnxruntime folds that Transpose into a new tensor per weight when it loads the
    model and frees it once the MatMul has packed its copy: glibc keeps most of those freed
    blocks, 104 MB of a 155M-parameter Llama's peak RSS (none with FusedMatMul). None
    elsewhere (MatMul of the Transpose)."""
    if b.exact or b.target.name != "cpu" or node.dtype is not T.float32:
        return None  # (x and w are float32: linear's result, and its compute dtype)
    y = fused_matmul(b, x, w)
    b.memo.setdefault(TYPED, []).append((y.name, node))  # (the linear's type: without its bias)
    return y


def fused_matmul(b: Builder, x: V, w: V) -> V:
    """``x @ w.T`` of float32 as one call of onnxruntime's FusedMatMul with ``transB=1``."""
    functions: Functions = b.memo[FUNCTIONS]
    fused = helper.make_node("FusedMatMul", ["A", "B"], ["Y"], domain="com.microsoft", transB=1)
    doc = ("graphdsl linear under export(exact=False): onnxruntime's com.microsoft FusedMatMul "
           "(transB=1), within linear's bound (exporters/onnx/_lower/layers.py)")  # fmt: skip
    name = functions.contrib("com.microsoft.FusedMatMul.transB", ["A", "B"], ["Y"], fused, doc)
    y = b.fresh("linear")
    n = b.nodes.add()
    n.CopyFrom(helper.make_node(name, [x.name, w.name], [y], domain=DOMAIN))
    return V(y, T.float32)


# ---------------------------------------------------------------------------- batch_norm


def _producer(b: Builder, name: str) -> tuple[int, NodeProto] | None:
    """The node of ``b``'s graph that makes value ``name`` and its position (None for an
    input or a constant)."""
    for k in range(len(b.nodes) - 1, -1, -1):
        n: NodeProto = b.nodes[k]
        if name in n.output:
            return k, n
    return None


def _only_use(value: Symbol, user: Symbol) -> bool:
    """Is ``user`` the only node of the graph that reads ``value`` (and no output it)?"""
    g = user.graph
    if any(o is value for o in g.outputs):
        return False
    return all(n is user or all(i is not value for i in n.inputs) for n in g.nodes)


def _fold_into_conv(b: Builder, node: Symbol, args: list[V], eps: V) -> V | None:
    """The batch norm folded into the float32 Conv that makes its input, or None where its
    input is not such a Conv's result."""
    if node.inputs[0].op != "conv2d" or any(a.dtype is not T.float32 for a in args):
        return None
    found = _producer(b, args[0].name)
    channels = node.shape[1]
    if found is None or found[1].op_type != "Conv" or not isinstance(channels, int):
        return None
    at, conv = found
    _, mean, var, gamma, beta = args
    scale = b.node("Div", [gamma.name, b.node("Sqrt", [b.node("Add", [var.name, eps.name],
                   T.float32).name], T.float32).name], T.float32)  # fmt: skip
    spread = b.node("Reshape", [scale.name, b.int64s([-1, 1, 1, 1])], T.float32)
    filt = b.node("Mul", [conv.input[1], spread.name], T.float32)
    has_bias = len(conv.input) > 2 and conv.input[2]
    old_bias = conv.input[2] if has_bias else b.scalar(0.0, T.float32).name
    shifted = b.node("Mul", [b.node("Sub", [old_bias, mean.name], T.float32).name, scale.name],
                     T.float32)  # fmt: skip
    bias = b.node("Add", [shifted.name, beta.name], T.float32)
    bias = b.node("Expand", [bias.name, b.int64s([channels])], T.float32)  # Conv's B is 1-D
    folded = b.node("Conv", [conv.input[0], filt.name, bias.name], T.float32)
    b.nodes[len(b.nodes) - 1].attribute.extend(conv.attribute)
    if _only_use(node.inputs[0], node):  # the convolution's result is read here only
        del b.nodes[at]
    return folded


@register("batch_norm")
def _batch_norm(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    out = args[0].dtype
    f = _compute(out)
    xs = [b.cast(a, f) for a in args]
    eps = b.scalar(float(node.attrs["epsilon"]), f)
    folded = _fold_into_conv(b, node, xs, eps)
    if folded is not None:
        return folded
    x, mean, var, gamma, beta = xs
    per_channel = b.int64s([-1] + [1] * (len(node.shape) - 2))

    def spread(v: V) -> V:
        return b.node("Reshape", [v.name, per_channel], f)

    # (x - mean) * (gamma / std) + beta: the per-channel scale is computed from the weights
    # (folded at load), and no intermediate is larger than the result before beta: the
    # normalized (x - mean) / std overflowed float32 for x = -3e38 and std < 1, where the
    # reference (float64) then scales it back into range
    std = b.elementwise("Sqrt", [b.elementwise("Add", [spread(var), eps])])
    scale = b.elementwise("Div", [spread(gamma), std])
    y = b.elementwise("Add", [b.elementwise("Mul", [b.elementwise("Sub", [x, spread(mean)]),
                                                    scale]), spread(beta)])  # fmt: skip
    return b.cast(y, out)


# ---------------------------------------------------------------------------- adaptive pool


def _windows(b: Builder, n: int, out: int) -> tuple[V, V, int]:
    """Along an axis of ``n`` split into ``out`` adaptive windows [floor(i n / out), ceil((i +
    1) n / out)), computed in the model: each window's positions (out, k), ``n`` (the padding
    zero) past the end of a shorter one; each window's size (out,); and k, the longest
    window: ceil((n + out - gcd(n, out)) / out) (a window's size is ceil((r + n) / out) for r =
    i n mod out, whose largest value is out - gcd)."""
    k = -(-(n + out - math.gcd(n, out)) // out)
    start = b.node("Div", [arange(b, out, 0, n).name, b.scalar(out, T.int64).name], T.int64)
    end = b.node("Div", [arange(b, out, n + out - 1, n).name, b.scalar(out, T.int64).name],
                 T.int64)  # fmt: skip
    at = b.node("Add", [on_axis(b, start, 0, 2).name, arange(b, k).name], T.int64)
    inside = b.node("Less", [at.name, on_axis(b, end, 0, 2).name], T.bool)
    taps = b.node("Where", [inside.name, at.name, b.scalar(n, T.int64).name], T.int64)
    return taps, b.node("Sub", [end.name, start.name], T.int64), k


@register("adaptive_avg_pool2d")
def _adaptive_avg_pool2d(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    out = args[0].dtype
    f = _compute(out)
    x = b.cast(args[0], f)
    h, w = (int(d) for d in node.inputs[0].shape[2:])
    oh, ow = node.attrs["output_size"]
    if h % oh == 0 and w % ow == 0:
        # windows of kh x kw, side by side: reshape them apart and average (Reshape's 0 keeps
        # N and C, allowzero being 0)
        kh, kw = h // oh, w // ow
        r = b.node("Reshape", [x.name, b.int64s([0, 0, oh, kh, ow, kw])], f)
        return b.cast(b.reduce("ReduceMean", r, [3, 5], f, 0, [kh, kw]), out)
    zero = b.scalar(0.0, f).name
    padded = b.node("Pad", [x.name, b.int64s([0, 0, 0, 0, 0, 0, 1, 1]), zero], f)
    (rows_idx, rows_n, kh), (cols_idx, cols_n, kw) = _windows(b, h, oh), _windows(b, w, ow)
    rows = b.node("Gather", [padded.name, rows_idx.name], f, axis=2)
    taps = b.node("Gather", [rows.name, cols_idx.name], f, axis=4)
    total = b.reduce("ReduceSum", taps, [3, 5], f, 0, [kh, kw])
    counts = b.node("Mul", [on_axis(b, rows_n, 0, 2).name, cols_n.name], T.int64)
    return b.cast(b.node("Div", [total.name, b.cast(counts, f).name], f), out)


# ---------------------------------------------------------------------------- attention


def _causal(b: Builder, node: Symbol, q: V, k: V) -> V:
    """Bools (L, S), True where query i may attend to key j: j <= i (top-left) or
    j <= i + S - L (bottom-right), two ranges compared in the model (a constant would be
    L x S)."""

    def positions(v: V, n: Dim) -> V:  # 0 .. n-1 for the n of v's second-to-last axis
        if isinstance(n, int):
            return arange(b, n)
        count = b.node("Reshape", [b.node("Shape", [v.name], T.int64, start=-2, end=-1).name,
                                   b.int64s([])], T.int64)  # fmt: skip
        zero, one = b.const(0, T.int64).name, b.const(1, T.int64).name
        return b.node("Range", [zero, count.name, one], T.int64)

    length, keys = node.inputs[0].shape[-2], node.inputs[1].shape[-2]
    rows = positions(q, length)
    if node.attrs["is_causal"] == "bottom_right" and length != keys:  # shift by S - L
        sizes = [b.node("Shape", [t.name], T.int64, start=-2, end=-1) for t in (k, q)]
        shift = b.node("Sub", [sizes[0].name, sizes[1].name], T.int64)
        rows = b.node("Add", [rows.name, shift.name], T.int64)
    rows = b.node("Unsqueeze", [rows.name, b.int64s([1])], T.int64)
    return b.node("LessOrEqual", [positions(k, keys).name, rows.name], T.bool)


def _softmax_last(b: Builder, s: V, size: int | str) -> V:
    """Softmax over the last axis: onnxruntime's kernel where the target has one for the
    dtype, else exp(s - max) / sum composed as the reference computes it."""
    f = s.dtype
    if b.target.has("Softmax", type_name(f)) or b.target.falls_back("Softmax", type_name(f)):
        return b.node("Softmax", [s.name], f, axis=-1)
    m = b.reduce("ReduceMax", s, [-1], f, 1, [size])
    e = b.node("Exp", [b.node("Sub", [s.name, m.name], f).name], f)
    total = b.reduce("ReduceSum", e, [-1], f, 1, [size])
    return b.node("Div", [e.name, total.name], f)


@register("scaled_dot_product_attention")
def _sdpa(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    out = args[0].dtype
    f = _compute(out)
    q, k, v = (b.cast(a, f) for a in args[:3])
    q_type = node.inputs[0]
    gqa = node.attrs.get("enable_gqa", False)
    if gqa:  # q (..., Hkv, rep, L, E) against k, v (..., Hkv, 1, S, E): broadcast, no copies
        hq, hk = q_type.shape[-3], node.inputs[1].shape[-3]
        assert isinstance(hq, int) and isinstance(hk, int)
        q = _split_heads(b, q, q_type.rank, hk, hq // hk)
        k, v = (b.node("Unsqueeze", [t.name, b.int64s([-3])], f) for t in (k, v))
    rank = len(node.inputs[1].shape) + (1 if gqa else 0)
    kt = b.node("Transpose", [k.name], f, perm=[*range(rank - 2), rank - 1, rank - 2])
    s = b.elementwise("MatMul", [q, kt])
    s = b.elementwise("Mul", [s, b.scalar(float(node.attrs["scale"]), f)])
    never = b.scalar(-np.inf, f)
    if len(args) == 4:
        mask = args[3]
        if gqa and len(node.inputs[3].shape) >= 3:  # its heads axis (1) against (Hkv, rep)
            mask = b.node("Unsqueeze", [mask.name, b.int64s([-3])], mask.dtype)
        if mask.dtype is T.bool:
            s = b.select(mask, s, never)
        else:
            s = b.elementwise("Add", [s, b.cast(mask, f)])
    if node.attrs["is_causal"]:
        s = b.select(_causal(b, node, args[0], args[1]), s, never)
    p = _softmax_last(b, s, node.inputs[1].shape[-2])
    if node.attrs.get("fully_masked") == "zero":  # a row of -inf scores: zeros, not NaN
        # every score -inf (a NaN score is not masked: the row stays NaN, as the reference's
        # max(s) == -inf; onnxruntime's ReduceMax would skip the NaN)
        masked = b.cast(b.node("IsInf", [s.name], T.bool, detect_positive=0), T.float32)
        every = b.reduce("ReduceMin", masked, [-1], T.float32, 1, [node.inputs[1].shape[-2]])
        p = b.select(b.cast(every, T.bool), b.scalar(0.0, f), p)
    y = b.elementwise("MatMul", [p, v])
    if gqa:  # (..., Hkv, rep, L, Ev) -> (..., Hq, L, Ev)
        y = _merge_heads(b, y, q_type.rank + 1)
    return b.cast(y, out)


def _split_heads(b: Builder, x: V, rank: int, groups: int, rep: int) -> V:
    """(..., groups * rep, L, E) -> (..., groups, rep, L, E)."""
    return _reshape_around(b, x, rank - 3, [groups, rep], rank - 2)


def _merge_heads(b: Builder, x: V, rank: int) -> V:
    """(..., groups, rep, L, E) -> (..., groups * rep, L, E)."""
    return _reshape_around(b, x, rank - 4, [-1], rank - 2)


def _reshape_around(b: Builder, x: V, lead: int, middle: list[int], tail: int) -> V:
    """x reshaped to its axes before ``lead``, ``middle``, its axes from ``tail`` on (the
    kept sizes read from x's shape in the model: they may be symbolic)."""
    parts = []
    if lead:
        parts.append(b.node("Shape", [x.name], T.int64, start=0, end=lead).name)
    parts.append(b.int64s(middle))
    parts.append(b.node("Shape", [x.name], T.int64, start=tail).name)
    shape = b.node("Concat", parts, T.int64, axis=0)
    return b.node("Reshape", [x.name, shape.name], x.dtype)
