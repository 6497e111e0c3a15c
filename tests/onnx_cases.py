"""The (op, dtype) matrix: every op of the catalogue on every dtype the DSL accepts for it.

Shared by tests/test_onnx_matrix.py and scripts/support_matrix.py (the published matrix).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

import graphdsl as gd
from graphdsl import DType

DTYPES = [
    DType.bool, DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8, DType.uint16,
    DType.uint32, DType.uint64, DType.float16, DType.bfloat16, DType.float32, DType.float64,
    DType.float8_e4m3fn, DType.float8_e5m2,
    # issue 30: MAX's other small floats and ONNX's 4-bit integers
    DType.float8_e4m3fnuz, DType.float8_e5m2fnuz, DType.float8_e8m0fnu, DType.float6_e2m3fn,
    DType.float6_e3m2fn, DType.float4_e2m1fn, DType.int4, DType.uint4,
]  # fmt: skip

Build = Callable[[list[gd.Symbol]], gd.Symbol]

BINARY = ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
          "matmul"]  # fmt: skip
UNARY = ["logical_not", "bitwise_not", "negative", "abs", "sign", "exp", "log", "sqrt", "rsqrt",
         "sin", "cos", "tanh", "sigmoid", "relu", "floor", "ceil", "round", "softmax", "trunc",
         "is_nan", "is_inf", "silu", "tan", "sinh", "cosh",
         "log1p", "expm1", "atanh", "atan", "asin", "acos"]  # fmt: skip


def _cases() -> dict[str, tuple[int, Build]]:
    """op name -> (number of inputs, builder from the input symbols)."""
    ops: dict[str, tuple[int, Build]] = {}
    for name in BINARY:
        fn = getattr(gd.ops, name)
        ops[name] = (2, lambda s, fn=fn: fn(s[0], s[1]))
    for name in UNARY:
        fn = getattr(gd.ops, name)
        ops[name] = (1, lambda s, fn=fn: fn(s[0]))
    for name in ("sum", "prod", "max", "min", "mean"):
        fn = getattr(gd.ops, name)
        ops[name] = (1, lambda s, fn=fn: fn(s[0], axis=1))
        ops[name + "_all_keepdims"] = (1, lambda s, fn=fn: fn(s[0], keepdims=True))
    ops["where"] = (2, lambda s: gd.ops.where(gd.ops.less(gd.ops.cast(s[0], "float32"), 1.0),
                                              s[0], s[1]))  # fmt: skip
    ops["clip"] = (1, lambda s: gd.ops.clip(s[0], 0, 7))
    ops["clip_float_bounds"] = (1, lambda s: gd.ops.clip(s[0], -1.5, 2.5))
    ops["clip_max_only"] = (1, lambda s: gd.ops.clip(s[0], max=3))
    ops["clip_tensor_min"] = (2, lambda s: gd.ops.clamp(s[0], s[1], 7))
    ops["reshape"] = (1, lambda s: gd.ops.reshape(s[0], (-1, 2)))
    ops["transpose"] = (1, lambda s: gd.ops.transpose(s[0]))
    ops["broadcast_to"] = (1, lambda s: gd.ops.broadcast_to(s[0], (2, 6, 4)))
    ops["concat"] = (2, lambda s: gd.ops.concat([s[0], s[1]], axis=1))
    ops["expand_dims"] = (1, lambda s: gd.ops.expand_dims(s[0], 0))
    ops["squeeze"] = (1, lambda s: gd.ops.squeeze(gd.ops.expand_dims(s[0], 1), 1))
    # indexing: index operands of several integer dtypes, negative and repeated entries
    ops.update(_indexing_cases())
    # selection and scans, and the statistical reductions (argmax, top_k, cumsum, var...)
    ops.update(_selection_cases())
    # erf, gelu; the norms with gamma/beta/weight constants of the input's dtype
    ops.update(_norm_cases())
    # convolutions, pools, pad and resize on the input reshaped to an image
    ops.update(_vision_cases())
    # quantize, dequantize, qmatmul: per tensor, per channel and blocked, with zero points
    ops.update(_quant_cases())
    # linear, batch_norm (folded into a conv too), adaptive_avg_pool2d, attention
    ops.update(_layer_cases())
    # cond (If) and while_loop (Loop): both branches taken, joined types, loop variables
    ops.update(_control_cases())
    for to in DTYPES:
        ops[f"cast_to_{to.name}"] = (1, lambda s, to=to: gd.ops.cast(s[0], to))
    return ops


def _control_cases() -> dict[str, tuple[int, Build]]:
    """call of a subgraph twice, on the input's dtype and on its join with int16 (the
    argument converts at the call); cond with both branches taken (the outputs of cond(p)
    and cond(not p), concatenated):
    branches of the input's dtype, of it and int16 (their join: the cast inside the int16
    branch), of it and a literal; while_loop rotating the rows three times (the counter an
    ambiguous literal), rotating int16 rows in (the carried type: the join, from the first
    iteration), and one that never runs its body."""

    def both(s: gd.Symbol, then: Any, other: Any) -> gd.Symbol:
        p = gd.ops.less(gd.ops.cast(s[0, 0], "float32"), 1.0)  # true for some inputs only
        taken = [gd.ops.cond(c, then, other) for c in (p, gd.ops.logical_not(p))]
        return gd.ops.concat(taken, axis=0)

    def rotate(x: gd.Symbol, new: gd.Symbol) -> gd.Symbol:
        return gd.ops.concat([x[1:], new[:1]], axis=0)

    def loop(s: gd.Symbol, new: Any, stop: int = 3) -> gd.Symbol:
        _, x = gd.ops.while_loop(
            [0, s], lambda i, x: i < stop, lambda i, x: (i + 1, rotate(x, new(x)))
        )
        return x

    def called(s: gd.Symbol, param: DType) -> gd.Symbol:
        """A subgraph on ``param`` values (rows reversed, the first column dropped and the
        last repeated) called twice: on the input (converted at the call) and on its own
        result."""
        sub = s.graph.subgraph(f"rows_{param.name}", [gd.TensorType(param, ("n", 4))])
        v = sub.inputs[0][::-1]
        sub.output(gd.ops.concat([v[:, 1:], v[:, 3:]], axis=1))
        once = gd.ops.call(sub, s)
        assert isinstance(once, gd.Symbol)
        twice = gd.ops.call(sub, once)
        assert isinstance(twice, gd.Symbol)
        return twice

    def joined(s: gd.Symbol) -> DType:  # the join of the input's dtype and int16, known
        return s.graph.policy.common_dtype(s.dtype, DType.int16).dtype

    i16 = np.arange(-12, 12, dtype=np.int16).reshape(6, 4) * 1000
    return {
        "call": (1, lambda s: called(s[0], s[0].dtype)),
        "call_promoted": (1, lambda s: called(s[0], joined(s[0]))),
        "cond": (2, lambda s: both(s[0], lambda: s[0], lambda: s[1][::-1])),
        "cond_join": (1, lambda s: both(s[0], lambda: s[0], lambda: s[0].graph.constant(i16))),
        "cond_literal": (1, lambda s: both(s[0], lambda: 1, lambda: s[0])),
        "while_loop": (1, lambda s: loop(s[0], lambda x: x)),
        "while_loop_join": (1, lambda s: loop(s[0], lambda x: x.graph.constant(i16))),
        "while_loop_never": (1, lambda s: loop(s[0], lambda x: x, stop=0)),
    }  # fmt: skip


def with_element(r: gd.Symbol, x: gd.Symbol) -> gd.Symbol:
    """[r, r + x[0, 0]]: a 1-D result itself (exact whatever the input's element is: NaN or an
    extreme there absorbs the second half) and combined with the input."""
    return gd.ops.concat([r, r + x[0, 0]], axis=0)


def _indexing_cases() -> dict[str, tuple[int, Build]]:
    i64, i32, u8 = np.int64, np.int32, np.uint8
    cols = np.array([[1, -4, 3, 0], [3, 0, 0, 1]], i64)  # a column repeated: the last wins
    return {
        "gather": (1, lambda s: gd.ops.gather(s[0], np.array([3, -1, 0, 5, 3], i64))),
        "gather_axis1": (
            1,
            lambda s: gd.ops.gather(s[0], np.array([[1, -4], [3, 0]], i32), axis=1),
        ),
        "gather_nd": (1, lambda s: gd.ops.gather_nd(s[0], np.array([[0, 1], [5, 3]], u8))),
        "gather_nd_negative": (1, lambda s: gd.ops.gather_nd(s[0], np.array([[-1, -4]], i64))),
        "scatter": (2, lambda s: gd.ops.scatter(s[0], s[1][:2], cols, axis=1)),
        "scatter_add": (2, lambda s: gd.ops.scatter_add(s[0], s[1][:2], cols, axis=1)),
        "scatter_nd": (2, lambda s: gd.ops.scatter_nd(s[0], s[1][:2], np.array([[4], [-6]], i64))),
        "scatter_nd_add": (
            2,
            lambda s: gd.ops.scatter_nd_add(s[0], s[1][:3], np.array([[4], [4], [0]], i32)),
        ),
        "slice_tensor": (1, lambda s: s[0][1:5:2, ::-1]),
        "slice_tensor_int": (1, lambda s: s[0][-1]),
        "slice_tensor_mixed": (1, lambda s: s[0][None, 2, -3:]),
        # the range itself, and plus an input element (wrapping for integers)
        "range": (1, lambda s: with_element(gd.ops.range(2, -7, -3, dtype=s[0].dtype), s[0])),
        "range_float": (1, lambda s: gd.ops.range(-1.5, 2.0, 0.25, dtype=s[0].dtype)),
        "band_part": (1, lambda s: gd.ops.band_part(s[0], 1, 2)),
        "band_part_exclude": (1, lambda s: gd.ops.band_part(s[0], 0, None, exclude=True)),
        "split": (1, lambda s: gd.ops.split(s[0], [1, 3, 2])[1]),
        "tile": (1, lambda s: gd.ops.tile(s[0], [2, 1])),
    }


def _selection_cases() -> dict[str, tuple[int, Build]]:
    """argmax/argmin, top_k (each result), argsort, cumsum, logsoftmax; any, all, var, std,
    logsumexp over one axis and over all of them."""
    ops: dict[str, tuple[int, Build]] = {}
    for name in ("any", "all", "var", "std", "logsumexp"):
        fn = getattr(gd.ops, name)
        ops[name] = (1, lambda s, fn=fn: fn(s[0], axis=1))
        ops[name + "_all_keepdims"] = (1, lambda s, fn=fn: fn(s[0], keepdims=True))
    ops["var_correction"] = (1, lambda s: gd.ops.var(s[0], axis=0, correction=1))
    ops["std_correction"] = (1, lambda s: gd.ops.std(s[0], axis=(0, 1), correction=1.5))
    for name in ("argmax", "argmin"):
        fn = getattr(gd.ops, name)
        ops[name] = (1, lambda s, fn=fn: fn(s[0]))
        ops[name + "_axis0_keepdims"] = (1, lambda s, fn=fn: fn(s[0], axis=0, keepdims=True))
    ops["top_k"] = (1, lambda s: gd.ops.top_k(s[0], 3)[0])
    ops["top_k_indices"] = (1, lambda s: gd.ops.top_k(s[0], 3)[1])
    ops["top_k_axis0_all"] = (1, lambda s: gd.ops.top_k(s[0], 6, axis=0)[0])
    ops["argsort"] = (1, lambda s: gd.ops.argsort(s[0]))
    ops["argsort_descending_axis0"] = (1, lambda s: gd.ops.argsort(s[0], False, axis=0))
    ops["cumsum"] = (1, lambda s: gd.ops.cumsum(s[0]))
    ops["cumsum_exclusive_reverse"] = (
        1,
        lambda s: gd.ops.cumsum(s[0], axis=0, exclusive=True, reverse=True),
    )
    ops["logsoftmax"] = (1, lambda s: gd.ops.logsoftmax(s[0]))
    ops["logsoftmax_axis0"] = (1, lambda s: gd.ops.logsoftmax(s[0], axis=0))
    return ops


def _norm_cases() -> dict[str, tuple[int, Build]]:
    """erf and gelu (each approximation); layer_norm, rms_norm (Llama's, with an offset, and
    Gemma's) and group_norm on [N=6, C=4] in 2 groups, their 1-D operands constants of the
    input's dtype (signed and fractional for floats)."""

    def vec(s: gd.Symbol, floats: list[float], ints: list[int]) -> gd.Symbol:
        values = np.array(floats if s.dtype.is_float else ints, np.float64)
        return s.graph.constant(values.astype(s.dtype.np))

    def gamma(s: gd.Symbol) -> gd.Symbol:
        return vec(s, [1.5, -2.0, 0.5, 3.0], [1, 2, 3, 1])

    def beta(s: gd.Symbol) -> gd.Symbol:
        return vec(s, [0.25, -1.0, 0.0, 2.0], [0, 1, 2, 0])

    return {
        "erf": (1, lambda s: gd.ops.erf(s[0])),
        "gelu": (1, lambda s: gd.ops.gelu(s[0])),
        "gelu_tanh": (1, lambda s: gd.ops.gelu(s[0], approximate="tanh")),
        "gelu_quick": (1, lambda s: gd.ops.gelu(s[0], approximate="quick")),
        "layer_norm": (1, lambda s: gd.ops.layer_norm(s[0], gamma(s[0]), beta(s[0]))),
        "rms_norm": (1, lambda s: gd.ops.rms_norm(s[0], gamma(s[0]))),
        "rms_norm_offset": (1, lambda s: gd.ops.rms_norm(s[0], gamma(s[0]), weight_offset=0.3)),
        "rms_norm_gemma": (1, lambda s: gd.ops.rms_norm(s[0], gamma(s[0]), 1e-6, 1.0, True)),
        "group_norm": (1, lambda s: gd.ops.group_norm(s[0], gamma(s[0]), beta(s[0]), 2)),
    }


def _vision_cases() -> dict[str, tuple[int, Build]]:
    """Convolutions (filters and bias cut from the second input), pools (ceil-mode windows
    past the padding, dilation, padding as large as the kernel), pad in each mode and resize
    on the [6, 4] input reshaped to an NHWC or NCHW image."""

    def img(s: gd.Symbol, shape: tuple[int, ...]) -> gd.Symbol:
        return gd.ops.reshape(s, shape)

    return {
        "conv2d": (2, lambda s: gd.ops.conv2d(img(s[0], (1, 6, 4, 1)),
                                              img(s[1][:2], (2, 2, 1, 2)), stride=(2, 2))),
        "conv2d_nchw_groups": (2, lambda s: gd.ops.conv2d(
            img(s[0], (1, 2, 6, 2)), img(s[1][:2], (2, 1, 2, 2)), stride=(2, 1),
            padding=(1, 0, 0, 1), groups=2, bias=s[1][2, :2], input_layout="NCHW")),
        "conv3d": (2, lambda s: gd.ops.conv3d(img(s[0], (1, 2, 3, 4, 1)),
                                              img(s[1][:2], (2, 2, 2, 1, 1)), stride=(1, 2, 2))),
        "conv2d_transpose": (2, lambda s: gd.ops.conv2d_transpose(
            img(s[0], (1, 3, 2, 4)), img(s[1][:4], (2, 2, 1, 4)), stride=(2, 2),
            padding=(1, 0, 0, 1), output_paddings=(1, 0))),
        "avg_pool2d": (1, lambda s: gd.ops.avg_pool2d(img(s[0], (1, 6, 4, 1)), (3, 2), stride=2,
                                                      padding=1, ceil_mode=True)),
        "avg_pool2d_exclusive": (1, lambda s: gd.ops.avg_pool2d(
            img(s[0], (1, 1, 6, 4)), (2, 2), stride=(1, 2), dilation=(2, 1), padding=1,
            count_boundary=False, input_layout="NCHW")),
        "max_pool2d": (1, lambda s: gd.ops.max_pool2d(img(s[0], (1, 6, 4, 1)), (3, 2), stride=2,
                                                      padding=1, ceil_mode=True)),
        "max_pool2d_dilated": (1, lambda s: gd.ops.max_pool2d(
            img(s[0], (1, 1, 6, 4)), (2, 2), dilation=(3, 1), padding=(2, 1),
            input_layout="NCHW")),
        "pad": (1, lambda s: gd.ops.pad(s[0], (1, 0, 2, 3), value=1)),
        "pad_reflect": (1, lambda s: gd.ops.pad(s[0], (2, 1, 3, 0), "reflect")),
        "pad_edge": (1, lambda s: gd.ops.pad(s[0], (0, 2, 1, 1), "edge")),
        "resize": (1, lambda s: gd.ops.resize(img(s[0], (1, 1, 6, 4)), (1, 1, 4, 7), "nearest")),
        "resize_bilinear": (1, lambda s: gd.ops.resize(img(s[0], (1, 1, 6, 4)), (1, 1, 3, 2))),
    }  # fmt: skip


def _quant_cases() -> dict[str, tuple[int, Build]]:
    """quantize of the floats the quantization ops accept (scales of the input's dtype: 2.0
    makes the ties 0.5, 1.5, -3.5, 3.5), dequantize of int8/uint8 (float32, float16 and
    bfloat16 scales), qmatmul with a constant weight (non-negative, so that the reference on
    |x| bounds the sum of |terms|) per output channel and in blocks of K with a zero point."""

    def const(s: gd.Symbol, values: Any, dt: Any) -> gd.Symbol:
        return s.graph.constant(np.array(values, np.float64).astype(dt))

    def fdt(s: gd.Symbol) -> Any:  # the input's dtype where it can be a scale (else float32)
        return s.dtype.np if s.dtype in (DType.float16, DType.bfloat16) else np.float32

    bf16 = ml_dtypes.bfloat16
    w = np.array([[1, 0, 127], [3, 100, 7], [0, 5, 2], [64, 1, 9]], np.uint8)
    return {
        "quantize": (1, lambda s: gd.ops.quantize(s[0], const(s[0], 2.0, fdt(s[0])))),
        "quantize_uint8_axis": (1, lambda s: gd.ops.quantize(
            s[0], const(s[0], [0.5, 2.0, 0.37, 3.0], fdt(s[0])),
            const(s[0], [0, 128, 3, 255], np.uint8), "uint8", axis=1)),
        "quantize_blocked": (1, lambda s: gd.ops.quantize(
            s[0], const(s[0], [[0.5, 2.0, 0.37, 1e-3], [7.0, 0.1, 2.0, 1.0]], fdt(s[0])),
            const(s[0], [[0, -5, 3, 127], [-128, 1, 0, 9]], np.int8), axis=0, block_size=4)),
        "dequantize": (1, lambda s: gd.ops.dequantize(s[0], const(s[0], 0.37, np.float32))),
        "dequantize_axis_float16": (1, lambda s: gd.ops.dequantize(
            s[0], const(s[0], [0.1, 2.0, 1e-4, 300.0], np.float16),
            const(s[0], [0, 3, 127, 100], s[0].dtype.np), axis=1)),
        "dequantize_blocked_bfloat16": (1, lambda s: gd.ops.dequantize(
            s[0], const(s[0], [[0.1, 2.0, 1e-3, 3.0], [0.7, 1.0, 5.0, 1e30]], bf16),
            const(s[0], [[0, 3, 127, 100], [1, 0, 2, 9]], s[0].dtype.np), axis=0,
            block_size=5)),
        "qmatmul": (1, lambda s: gd.ops.qmatmul(
            s[0], w.astype(np.int8), const(s[0], [0.5, 0.01, 2.0], fdt(s[0])))),
        "qmatmul_blocked_zp": (1, lambda s: gd.ops.qmatmul(
            s[0], w, const(s[0], [[0.25, 0.5, 1.0], [3.0, 0.1, 0.7]], fdt(s[0])),
            np.zeros((2, 3), np.uint8), axis=0, block_size=2)),
    }  # fmt: skip


def _layer_cases() -> dict[str, tuple[int, Build]]:
    """linear with a weight and bias cut from the second input; batch_norm with constant
    statistics of the input's dtype (means negative, variances >= 1, gammas and betas
    positive: the reference on |x| bounds the terms), channels first and last, and after a
    convolution (folded into it); adaptive_avg_pool2d with windows that divide the axes,
    that do not (overlapping), and global; attention with the keys zero (each query sees
    its allowed keys with equal weights: the mean of their values), causal, and with a bool
    or float mask that lets each query see one key (exact: a weight of 1)."""

    def vec(s: gd.Symbol, values: list[float], n: int = 4) -> gd.Symbol:
        arr = np.resize(np.array(values, np.float64), n)
        if not s.dtype.is_float:
            arr = np.round(arr)
        return s.graph.constant(arr.astype(s.dtype.np))

    def bn(s: gd.Symbol, x: gd.Symbol, layout: str = "NCHW", n: int = 4) -> gd.Symbol:
        return gd.ops.batch_norm(x, vec(s, [-1.5, 0.0, -3.0, -0.5], n),
                                 vec(s, [1.0, 4.0, 2.25, 9.0], n), vec(s, [1.5, 2.0, 0.5, 3.0], n),
                                 vec(s, [0.25, 1.0, 0.0, 2.0], n), 1e-5, layout)  # fmt: skip

    def zeros(s: gd.Symbol) -> gd.Symbol:
        return s.graph.constant(np.zeros((6, 4), s.dtype.np))

    one_key = np.eye(6, dtype=np.bool_)[[2, 0, 5, 1, 3, 4]]  # each query sees one key
    sdpa = gd.ops.scaled_dot_product_attention
    return {
        "linear": (2, lambda s: gd.ops.linear(s[0], s[1][:3], s[1][3, :3])),
        "linear_no_bias": (2, lambda s: gd.ops.linear(s[0][0], s[1][1:3])),
        "batch_norm": (1, lambda s: bn(s[0], s[0])),
        "batch_norm_nhwc": (1, lambda s: bn(s[0], gd.ops.reshape(s[0], (1, 3, 2, 4)), "NHWC")),
        "batch_norm_conv": (2, lambda s: bn(s[0], gd.ops.conv2d(
            gd.ops.reshape(s[0], (1, 2, 6, 2)), gd.ops.reshape(gd.ops.abs(s[1][:4]), (2, 2, 2, 2)),
            padding=(1, 0, 0, 1), input_layout="NCHW"), n=2)),
        "adaptive_avg_pool2d": (1, lambda s: gd.ops.adaptive_avg_pool2d(
            gd.ops.reshape(s[0], (1, 1, 6, 4)), (4, 3))),
        "adaptive_avg_pool2d_divides": (1, lambda s: gd.ops.adaptive_avg_pool2d(
            gd.ops.reshape(s[0], (1, 3, 2, 4)), (3, 1), "NHWC")),
        "adaptive_avg_pool2d_global": (1, lambda s: gd.ops.adaptive_avg_pool2d(
            gd.ops.reshape(s[0], (2, 3, 2, 2)), 1)),
        "scaled_dot_product_attention": (2, lambda s: sdpa(s[0], zeros(s[0]), s[1])),
        "scaled_dot_product_attention_causal": (2, lambda s: sdpa(s[0], zeros(s[0]), s[1],
                                                                  is_causal=True)),
        "scaled_dot_product_attention_mask": (2, lambda s: sdpa(s[0], s[1], s[1], one_key)),
        "scaled_dot_product_attention_float_mask": (2, lambda s: sdpa(
            s[0], s[0], s[1], np.where(one_key, 0.0, -np.inf).astype(np.float32))),
        "group_query_attention": (2, lambda s: gqa(s, 0)),
        "group_query_attention_present_value": (2, lambda s: gqa(s, 2)),
    }  # fmt: skip


def gqa(s: list[gd.Symbol], result: int) -> gd.Symbol:
    """group_query_attention of 6 tokens (batch 1, 2 query heads of size 2, 1 key/value
    head) into a zero buffer of 8, the keys zero: token i's output is the mean of values
    0..i (as attention_causal); result 2, the values written into the buffer (exact)."""
    zeros = s[0].graph.constant(np.zeros((1, 6, 2), s[0].dtype.np))
    buffer = s[0].graph.constant(np.zeros((1, 1, 8, 2), s[0].dtype.np))
    q = gd.ops.reshape(s[0], (1, 6, 4))
    v = gd.ops.reshape(s[1][:, 1:3], (1, 6, 2))
    out = gd.ops.group_query_attention(q, zeros, v, buffer, buffer, np.array([5], np.int32),
                                       num_heads=2, kv_num_heads=1)  # fmt: skip
    return out[result]


# The terms each output of a windowed case sums (products, a bias, interpolation taps, and
# a rounding more for a division or a rounded weight): its n for tests/floats.py's
# dot_bound (input and output sizes do not tell it). Integers become floats there
# (avg_pool2d, resize), so they get moderate integers, as mean does.
WINDOW_TERMS = {"conv2d": 4, "conv2d_nchw_groups": 5, "conv3d": 8, "conv2d_transpose": 4,
                # 6 and 4 taps and the division by the count
                "avg_pool2d": 7, "avg_pool2d_exclusive": 5,
                # 4 taps (2 by 2, each weight 1/4)
                "resize_bilinear": 4,
                # the layers: products and a bias (linear), the normalization's few
                # roundings, or those after a convolution's 8 products (batch_norm: within
                # (n + 6) eps, graphdsl/ops/layers.py), the window's taps and the division
                # (adaptive pools), the mean of 6 values (attention; one value with a one-key
                # mask, exact, but its scores must not overflow float32 where the
                # reference's float64 ones do not)
                "linear": 7, "linear_no_bias": 7, "batch_norm": 3, "batch_norm_nhwc": 3,
                "batch_norm_conv": 14, "adaptive_avg_pool2d": 6,
                "adaptive_avg_pool2d_divides": 6, "adaptive_avg_pool2d_global": 6,
                "scaled_dot_product_attention": 10, "scaled_dot_product_attention_causal": 10,
                "scaled_dot_product_attention_mask": 2,
                "scaled_dot_product_attention_float_mask": 2,
                # the mean of up to 6 values, as attention's (the buffer's 8 keys: 10 too)
                "group_query_attention": 10}  # fmt: skip
CASES = _cases()
SHAPE = (6, 4)


# "operand types int8[6, 4], ... (in argument order)": every rule's error names the operand
# types first, whatever it refuses; and "(at onnx_cases.py:41)"
_OPERANDS = re.compile(r"operand types .*? \(in argument order\)|\(at [^)]*\)")


# the floats whose range a case's literals may leave: e8m0 (no zero, no negatives) and the
# 4- and 6-bit floats (largest values 6, 7.5, 28)
_NARROW_RANGE = frozenset({DType.float8_e8m0fnu, DType.float6_e2m3fn, DType.float6_e3m2fn,
                           DType.float4_e2m1fn})  # fmt: skip


def refuses_dtype(err: Exception, dt: DType) -> bool:
    """Is ``err`` the DSL refusing ``dt`` for the op: an OpTypeError or PromotionError whose
    message (past its list of operand types) names the dtype, or a literal of the case that
    float8_e8m0fnu (positive powers of two) or a 4- or 6-bit float cannot hold? Any other
    build failure (a graph, literal or shape error, or a type error about something else,
    such as an op with no Symbol operand built outside ``with graph:``) is a broken case,
    not a refusal."""
    if isinstance(err, gd.LiteralError) and dt in _NARROW_RANGE:
        # a case's literal (0, -1, 7...) that e8m0 (positive powers of two) or a 4- or 6-bit
        # float (largest values 6, 7.5, 28) cannot hold
        return re.search(rf"(?<![\w]){re.escape(dt.name)}(?![\w])", str(err)) is not None
    if not isinstance(err, (gd.OpTypeError, gd.PromotionError)):
        return False
    said = _OPERANDS.sub("", str(err))
    return re.search(rf"(?<![\w]){re.escape(dt.name)}(?![\w])", said) is not None


def build(op: str, dt: DType) -> gd.Graph | None:
    """The one-op graph for (op, dtype), or None when the DSL refuses the dtype for the op
    (:func:`refuses_dtype`); any other build failure raises. Built inside ``with g:``: the
    ops with no Symbol operand (range, dynamic_range, the random draws, a cast of a numpy
    constant) build in the graph of the with block."""
    n, fn = CASES[op]
    shape = (4, 4) if op == "matmul" else SHAPE
    g = gd.Graph(f"{op}_{dt.name}", input_types=[gd.TensorType(dt, shape)] * n)
    try:
        with g:
            g.output(fn(g.inputs))
    except Exception as e:  # re-raised, with the case named, unless the dtype is refused
        if refuses_dtype(e, dt):
            return None
        raise AssertionError(f"{op} on {dt.name}: the case does not build ({e})") from e
    return g


# Ops whose onnxruntime CPU kernel gives +0.0 where the exact result is a float32 subnormal,
# on some processors: Softmax's exp-sum kernel (MlasComputeSumExpF32Kernel) on every x86-64
# without AVX-512F (AVX2/FMA3 and SSE kernels build 2**n from bits, exactly 0 for
# x - max < -87.68); the AVX-512F kernel keeps subnormals. See docs/semantics.md.
FLUSHES_SUBNORMALS = {"softmax"}
_F32_TINY = float(np.finfo(np.float32).tiny)


def flushed_subnormals(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: ``want`` is a float32 subnormal (0 < |want| < 2**-126) and ``got`` is a
    zero of its sign, as a kernel of FLUSHES_SUBNORMALS may give on some processors."""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    with np.errstate(all="ignore"):
        sub = (w != 0) & (np.abs(w) < _F32_TINY)
    return np.asarray(sub & (g == 0) & (np.signbit(g) == np.signbit(w)))


# Float sums and products depend on the order of accumulation; with +-max among the terms
# a different (equally valid) order overflows. These ops get moderate finite extremes (var
# and std: their sums of x and of squares).
ORDER_DEPENDENT = {"sum", "prod", "mean", "matmul", "softmax", *WINDOW_TERMS, "qmatmul",
                   "qmatmul_blocked_zp", "var", "std", "var_correction",
                   "std_correction"}  # fmt: skip


def special_values(dt: DType, moderate: bool = False) -> np.ndarray:
    """Negatives, zeros, extremes, and for floats NaN and inf."""
    if dt is DType.bool:
        return np.array([False, True])
    if dt.is_integer:
        info = ml_dtypes.iinfo(dt.np) if dt.bits == 4 else np.iinfo(dt.np)
        vals = [0, 1, 2, 3, 7, -1, -2, -7, info.min, info.max, info.min + 1, info.max - 1, 5, 100]
        if moderate:
            vals = [*vals[:8], 5, 100]
        held = sorted({v for v in vals if info.min <= v <= info.max})
        if dt.bits == 4:  # ml_dtypes' int4 and uint4 from int64 (not from Python ints)
            return np.array(held, dtype=np.int64).astype(dt.np)
        return np.array(held, dtype=dt.np)
    finfo = ml_dtypes.finfo(dt.np)
    big = 3.0 if moderate else float(finfo.max)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.5, 3.0, -7.0, 7.0, big, -big,
            float(finfo.tiny), np.inf, -np.inf, np.nan, 0.1, 10.0]  # fmt: skip
    with np.errstate(all="ignore"):
        return np.array(vals, dtype=np.float64).astype(dt.np)


def inputs(g: gd.Graph, seed: int, moderate: bool = False) -> list[np.ndarray]:
    """Arrays covering the special values, every pair of them across the two inputs."""
    rng = np.random.default_rng(seed)
    out = []
    for k, s in enumerate(g.inputs):
        vals = special_values(s.dtype, moderate)
        size = int(np.prod(s.shape))
        pairs = list(itertools.product(range(len(vals)), repeat=2))
        rng.shuffle(pairs)
        idx = np.array([p[k % 2] for p in pairs] * (size // len(pairs) + 1))[:size]
        out.append(vals[idx].reshape(s.shape))
    return out


def case_inputs(g: gd.Graph, op: str, dt: DType) -> list[np.ndarray]:
    """The inputs the matrix runs (op, dt)'s graph ``g`` on (scripts/probe_cuda.py too)."""
    from norm_bounds import MOMENT_OPS, NORM_OPS

    base_op = op.split("_all")[0]
    # float accumulation order is free; integer sums and products are exact at any extreme
    moderate = base_op in ORDER_DEPENDENT and (
        dt.is_inexact or base_op == "mean" or op in WINDOW_TERMS
    )
    # the norms, var and std square their inputs in float32: finite extremes (int64's too)
    # would overflow
    moderate |= g.outputs[0].op in NORM_OPS | MOMENT_OPS
    return inputs(g, seed=len(op) * 31 + list(DType).index(dt), moderate=moderate)


def all_cases() -> list[tuple[str, DType]]:
    return [(op, dt) for op in CASES for dt in DTYPES if build(op, dt) is not None]


def describe(x: Any) -> str:
    return np.array2string(np.asarray(x), threshold=20)


def _max_cases() -> dict[str, tuple[int, Build]]:
    """The ops graphdsl.max added (issue 25): combining scatters (repeated indices), bottom_k,
    nonzero, rebind, slices and ranges with tensor bounds, fold; dim_size (of the input's
    dims: static here, symbolic in tests/test_dims.py and the fuzzer)."""
    i64 = np.int64

    def bounds(d: DType) -> tuple[Any, ...]:
        """start, stop, step: 2, -1, -4 (2, 5, 8 for the unsigned dtypes, whose literals
        cannot be negative)"""
        return tuple(i64(v) for v in ((2, 11, 3) if d.kind is gd.Kind.unsigned else (2, -7, -3)))

    cols = np.array([[1, -4, 3, 0], [3, 0, 0, 1]], i64)  # a column repeated: they combine
    rows = np.array([[4], [4], [0]], i64)
    ops: dict[str, tuple[int, Build]] = {}
    for kind in ("max", "min", "mul"):
        fn = getattr(gd.ops, f"scatter_{kind}")
        nd = getattr(gd.ops, f"scatter_nd_{kind}")
        ops[f"scatter_{kind}"] = (2, lambda s, fn=fn: fn(s[0], s[1][:2], cols, axis=1))
        ops[f"scatter_nd_{kind}"] = (2, lambda s, nd=nd: nd(s[0], s[1][:3], rows))
    ops["bottom_k"] = (1, lambda s: gd.ops.bottom_k(s[0], 3)[0])
    ops["bottom_k_indices"] = (1, lambda s: gd.ops.bottom_k(s[0], 3)[1])
    ops["bottom_k_axis0_all"] = (1, lambda s: gd.ops.bottom_k(s[0], 6, axis=0)[0])
    ops["nonzero"] = (1, lambda s: gd.ops.nonzero(s[0], "count"))
    ops["rebind"] = (1, lambda s: gd.ops.rebind(s[0], [6, "w"]))
    ops["dynamic_slice"] = (1, lambda s: gd.ops.dynamic_slice(s[0], 0, i64(1), i64(5), i64(2), "k"))
    ops["dynamic_range"] = (
        1,
        lambda s: with_element(
            gd.ops.dynamic_range(*bounds(s[0].dtype), "k", dtype=s[0].dtype), s[0]
        ),
    )
    ops["dim_size"] = (1, lambda s: gd.ops.dim_size(s[0].shape[0] * 2 + s[0].shape[1]))
    ops["fold"] = (1, lambda s: gd.ops.fold(gd.ops.reshape(s[0], (1, 4, 6)), (3, 4), (2, 2)))
    # roi_align sampling each pixel once (half-pixel, one sample per bin of one pixel): the
    # image back, exactly (a NaN or inf beside a pixel makes it NaN in both: 0 * inf)
    whole = np.array([[0, 0, 0, 4, 6]], np.float32)
    ops["roi_align"] = (
        1,
        lambda s: gd.ops.roi_align(
            gd.ops.reshape(s[0], (1, 6, 4, 1)), gd.ops.cast(whole, s[0].dtype), 6, 4, 1.0, 1, True
        ),
    )
    # random draws, the draws themselves: the reference's and onnxruntime's values differ
    # (graphdsl/ops/random.py); the matrix compares what both must give (RANDOM_DRAWS)
    ops["random_uniform"] = (
        1,
        lambda s: gd.ops.random_uniform(SHAPE, s[0].dtype, -1.0, 2.0, seed=3),
    )
    ops["random_normal"] = (1, lambda s: gd.ops.random_normal(SHAPE, s[0].dtype, 0.0, 1.0, seed=5))
    return ops


CASES.update(_max_cases())
# The random draws: what onnxruntime's draws and the reference's must both be (their values
# differ, element by element): of the graph's dtype and shape, finite, within [low, high]
# (closed: rounding a draw below high to the dtype may give high), and not all one value.
RANDOM_DRAWS = {"random_uniform": (-1.0, 2.0), "random_normal": (-np.inf, np.inf)}
WINDOW_TERMS["fold"] = 4  # each output sums up to 4 block entries
ORDER_DEPENDENT.add("fold")
