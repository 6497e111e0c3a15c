"""Lowerings of the vision ops (channels first, as graphdsl builds them): Conv, ConvTranspose,
MaxPool, AveragePool, Pad and Resize where onnxruntime's CPU kernel computes what the
reference does, with the legalizations beside them, and an im2col composition (a Gather of
every window, then MatMul, ReduceSum or Max) where it has no kernel for the dtype: float64
convolutions and average pools, 64-bit integer max pools.

Kernels. exporters/onnx/kernels/cpu.json has no entries for these ops yet (the probe,
scripts/probe_ort_kernels.py, now covers them, but has not been re-run): until it has,
``MEASURED_CPU`` below holds the pairs measured by hand on onnxruntime 1.32.0 (CPU provider,
graph optimizations off; a float16 Conv, MaxPool, Pad or Resize "runs" only because
onnxruntime wraps it in casts to float32 itself, so it is left out: the lowering computes
narrow floats in float32 explicitly). A table entry, once there, takes precedence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product
from typing import Any

import numpy as np
from onnx import helper

from exporters.onnx._builder import WIDEN, Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower._index import (
    IntLike,
    Taps,
    arange,
    conv_taps,
    cubic_taps,
    flat_taps,
    linear_taps,
    nearest_taps,
    on_axis,
    size_v,
    tap_counts,
    transposed_taps,
)
from exporters.onnx._targets import Target
from exporters.onnx._types import storage, type_name
from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Symbol
from graphdsl.ops._convert import cast_array
from graphdsl.ops._windows import pool_extra, pool_size
from graphdsl.shapes import Dim

MEASURED_CPU: dict[str, frozenset[str]] = {
    "Conv": frozenset({"FLOAT"}),
    "ConvTranspose": frozenset({"FLOAT"}),
    "AveragePool": frozenset({"FLOAT"}),
    "MaxPool": frozenset({"FLOAT", "DOUBLE", "INT8", "UINT8"}),
    **{key: frozenset({"BOOL", "INT8", "INT32", "INT64", "UINT8", "UINT32", "UINT64", "FLOAT",
                       "DOUBLE"}) for key in ("Pad", "Pad_reflect", "Pad_edge")},
    "Resize_linear": frozenset({"FLOAT", "INT8", "INT32", "UINT8"}),
    "Resize_cubic": frozenset({"FLOAT"}),
}  # fmt: skip
# MaxPool runs integers exactly in a float that holds every value of them
_EXACT_IN_FLOAT = {T.int8: (T.float16, T.float32, T.float64),
                   T.uint8: (T.float16, T.float32, T.float64), T.int16: (T.float32, T.float64),
                   T.uint16: (T.float32, T.float64), T.int32: (T.float64,),
                   T.uint32: (T.float64,)}  # fmt: skip


def _listed(t: Target, key: str, d: DType) -> bool:
    kernels = t.kernels.get(key)
    if kernels is not None:
        return type_name(d) in kernels
    return t.name == "cpu" and type_name(d) in MEASURED_CPU.get(key, frozenset())


def _falls_back(b: Builder, key: str, d: DType) -> bool:
    """``key`` on ``d`` runs on the provider behind the target (the CPU behind CUDA)."""
    fb = b.target.fallback
    return fb is not None and not b.target.registers(key, type_name(d)) and _listed(fb, key, d)


def _has(b: Builder, key: str, d: DType) -> bool:
    """A kernel for ``key`` on ``d``: the target's, or the one behind it."""
    return _listed(b.target, key, d) or _falls_back(b, key, d)


def _compute(
    b: Builder, key: str | tuple[str, ...], d: DType, extra: Sequence[DType] = ()
) -> DType | None:
    """The dtype to run ``key`` (or every key of a tuple) in for values of ``d``: ``d`` or an
    exact widening with the kernels (and casts both ways) on the target, else one whose
    kernels the provider behind it has; None where there is none."""
    src = storage(d)
    keys = (key,) if isinstance(key, str) else key
    for has in (_listed, None):
        for c in (src, *WIDEN.get(src, ()), *extra):
            found = (
                all(_listed(b.target, k, c) for k in keys)
                if has is not None
                else all(_has(b, k, c) for k in keys)
            )
            if found and (
                c is src
                or (b.target.runs_cast(type_name(src), type_name(c))
                    and b.target.runs_cast(type_name(c), type_name(src)))
            ):  # fmt: skip
                return c
    return None


def _no_kernel(b: Builder, key: str, d: DType, why: str = "") -> Exception:
    return b.fail(
        f"no kernel for {key} on {d.name}{why}",
        "cast the value to float32 first, or export for another target",
    )


def _spatial(b: Builder, node: Symbol, key: str) -> tuple[int, ...]:
    """The static spatial sizes of the node's first operand (the im2col rewrites need them)."""
    dims = node.inputs[0].shape[2:]
    if not all(isinstance(d, int) for d in dims):
        raise _no_kernel(b, key, node.in_dtypes[0], " for these sizes, and no rewrite for "
                         "symbolic spatial dimensions")  # fmt: skip
    return tuple(int(d) for d in dims)


def _pads(lo: Sequence[int], hi: Sequence[int]) -> list[int]:
    return [*lo, *hi]  # ONNX: every begin, then every end


# ---------------------------------------------------------------------------- im2col


def _gather(b: Builder, flat: V, rank: int, axis: int, size: int, idx: Taps, fill: object) -> V:
    """Gather ``idx`` along ``axis`` (of ``size``) of ``flat`` (of ``rank``), where a negative
    index reads ``fill``: one element of it padded after the axis's end (a Pad) when any
    index may be negative."""
    index = idx.v
    if idx.outside:
        if not _has(b, "Pad", flat.dtype):
            raise _no_kernel(b, "Pad", flat.dtype)
        pads = [0] * (2 * rank)
        pads[rank + axis] = 1
        flat = b.node("Pad", [flat.name, b.int64s(pads), b.scalar(fill, flat.dtype).name],
                      flat.dtype)  # fmt: skip
        negative = b.node("Less", [index.name, b.scalar(0, T.int64).name], T.bool)
        index = b.select(negative, b.scalar(size, T.int64), index)
    return b.node("Gather", [flat.name, index.name], flat.dtype, axis=axis)


def _windows(b: Builder, x: V, spatial: Sequence[int], taps: list[Taps], fill: object) -> V:
    """Every window of channels-first ``x`` (N, C, *spatial) as (N, C, *O, K): ``taps[i]``
    holds, per output and tap along axis i, the input position, or -1 for padding (which
    reads ``fill``). A Reshape, a Pad of one ``fill`` element when needed, a Gather."""
    size = math.prod(spatial)
    flat = b.node("Reshape", [x.name, b.int64s([0, 0, size])], x.dtype)
    return _gather(b, flat, 3, 2, size, flat_taps(b, taps, spatial), fill)


def _all_windows(
    b: Builder, x: V, spatial: Sequence[Dim], outs: Sequence[Dim], kernel: Sequence[int],
    strides: Sequence[int], dils: Sequence[int], lo: Sequence[int], hi: Sequence[int],
    fill: object,
) -> V:  # fmt: skip
    """Every window of channels-first ``x`` (N, C, *spatial) padded by ``lo`` and ``hi`` of
    ``fill``, as (N, C, *O, K): one Gather of positions computed in the model where the sizes
    are static, else a Slice per tap (a symbolic axis has stride 1: each tap's slice ends a
    fixed count before the padded axis's end)."""
    if all(isinstance(d, int) for d in (*spatial, *outs)):
        taps = [conv_taps(b, int(spatial[i]), kernel[i], strides[i], dils[i], lo[i],
                          int(outs[i])) for i in range(len(kernel))]  # fmt: skip
        return _windows(b, x, [int(d) for d in spatial], taps, fill)
    nd = len(kernel)
    if any(lo) or any(hi):
        if not _has(b, "Pad", x.dtype):
            raise _no_kernel(b, "Pad", x.dtype)
        x = b.node("Pad", [x.name, b.int64s(_pads([0, 0, *lo], [0, 0, *hi])),
                           b.scalar(fill, x.dtype).name], x.dtype)  # fmt: skip
    slabs = []
    for tap in product(*(range(k) for k in kernel)):
        starts = [j * d for j, d in zip(tap, dils, strict=True)]
        ends = []
        for a in range(nd):
            o = outs[a]
            if isinstance(o, int):
                ends.append(starts[a] + (o - 1) * strides[a] + 1)
            else:  # the last window's tap: span - 1 - start elements before the end
                back = dils[a] * (kernel[a] - 1) - starts[a]
                ends.append(-back if back else np.iinfo(np.int64).max)
        sl = b.node("Slice", [x.name, b.int64s(starts), b.int64s(ends),
                              b.int64s(list(range(2, 2 + nd))), b.int64s(list(strides))],
                    x.dtype)  # fmt: skip
        slabs.append(b.node("Unsqueeze", [sl.name, b.int64s([-1])], x.dtype).name)
    return b.node("Concat", slabs, x.dtype, axis=-1) if len(slabs) > 1 else V(slabs[0], x.dtype)


def _contract(b: Builder, win: V, w: V, groups: int, nd: int, cin: int, fout: int, k: int) -> V:
    """The sum over channels and taps of windows (N, C, *O, K) times a filter (F, C/groups,
    *K), as one MatMul: (N, *O, groups, 1, C/groups * K) @ (groups, C/groups * K,
    F/groups), then (N, F, *O)."""
    d = win.dtype
    cols = b.node("Transpose", [win.name], d, perm=[0, *range(2, 2 + nd), 1, 2 + nd])
    cg = cin // groups
    keep = [0] * (nd + 1)  # N and the output's spatial sizes, as they are
    cols = b.node("Reshape", [cols.name, b.int64s([*keep, groups, 1, cg * k])], d)
    wm = b.node("Reshape", [w.name, b.int64s([groups, fout // groups, cg * k])], d)
    wm = b.node("Transpose", [wm.name], d, perm=[0, 2, 1])
    r = b.node("MatMul", [cols.name, wm.name], d)
    r = b.node("Reshape", [r.name, b.int64s([*keep, fout])], d)
    return b.node("Transpose", [r.name], d, perm=[0, nd + 1, *range(1, nd + 1)])


def _add_bias(b: Builder, r: V, args: list[V], nd: int) -> V:
    if len(args) < 3:
        return r
    bias = b.node("Reshape", [args[2].name, b.int64s([-1, *[1] * nd])], r.dtype)
    return b.node("Add", [r.name, bias.name], r.dtype)


# ---------------------------------------------------------------------------- convolution


@register("conv2d", "conv3d", "conv2d_transpose")
def _conv(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    a = node.attrs
    transpose = node.op == "conv2d_transpose"
    key = "ConvTranspose" if transpose else "Conv"
    out = args[0].dtype
    nd = node.inputs[0].rank - 2
    lo, hi = list(a["padding"][::2]), list(a["padding"][1::2])
    cd = _compute(b, key, out)
    if cd is not None:
        extra = {"output_padding": list(a["output_paddings"])} if transpose else {
            "group": int(a["groups"])}  # fmt: skip
        ins = [b.cast(v, cd).name for v in args]
        if not transpose and _pad_explicitly(b, node, args, lo, hi):
            full = _pads([0, 0, *lo], [0, 0, *hi])
            ins[0] = b.node("Pad", [ins[0], b.int64s(full), b.scalar(0.0, cd).name], cd).name
            lo, hi = [0] * nd, [0] * nd
        r = b.node(key, ins, cd, strides=list(a["stride"]), dilations=list(a["dilation"]),
                   pads=_pads(lo, hi), **extra)  # fmt: skip
        if len(ins) == 3 and ins[2] in b.no_negative_zero:
            b.no_negative_zero.add(r.name)  # the sum of the products + a bias without -0.0
        return b.cast(r, out)
    # no kernel (float64): in the operands' dtype, with the sums in another order than the
    # reference's (within its tolerance)
    if not _has(b, "MatMul", out) or not _has(b, "Gather", out):
        raise _no_kernel(b, key, out)
    kernel = [int(d) for d in node.inputs[1].shape[2:]]
    strides, dils = list(a["stride"]), list(a["dilation"])
    if transpose:
        spatial = _spatial(b, node, key)
        outs = [int(d) for d in node.shape[2:]]
        taps = [transposed_taps(b, spatial[i], kernel[i], strides[i], dils[i], lo[i], outs[i])
                for i in range(nd)]  # fmt: skip
        r = _transposed_products(b, args[0], args[1], spatial, kernel, taps,
                                 int(node.inputs[0].shape[1]), int(node.shape[1]))  # fmt: skip
    else:  # every window (padding: zeros, multiplied as the reference does) times the filter
        win = _all_windows(b, args[0], node.inputs[0].shape[2:], node.shape[2:], kernel,
                           strides, dils, lo, hi, 0.0)  # fmt: skip
        cin, fout = int(node.inputs[0].shape[1]), int(node.shape[1])
        r = _contract(b, win, args[1], int(a["groups"]), nd, cin, fout, math.prod(kernel))
    return _add_bias(b, r, args, nd)


def _pad_explicitly(
    b: Builder, node: Symbol, args: list[V], lo: Sequence[int], hi: Sequence[int]
) -> bool:
    """Must the zero padding be a Pad before the Conv? On a target whose Conv leaves the
    padding out of its sums (cuDNN: CUDA_QUIRKS' conv_skips_padding), where that changes
    the result: a filter that may hold inf or NaN (0 * inf is NaN in the reference), or a
    sum of -0.0 products that a +0.0 from the padding makes +0.0 (exact, without a bias
    that holds no -0.0)."""
    if not (any(lo) or any(hi)) or not b.target.quirk("conv_skips_padding"):
        return False
    w = node.inputs[1]
    finite = w.op == "constant" and bool(np.isfinite(np.asarray(w.attrs["value"],
                                                                np.float64)).all())  # fmt: skip
    clean_bias = len(args) == 3 and args[2].name in b.no_negative_zero
    return not finite or (b.exact and not clean_bias)


def _transposed_products(
    b: Builder, x: V, w: V, spatial: Sequence[int], kernel: Sequence[int],
    taps: list[Taps], cin: int, cout: int,
) -> V:  # fmt: skip
    """A transposed convolution as the reference defines it: every input element times every
    filter tap (one MatMul over the input channels), then each output sums the products
    that land on it (a Gather of them, a ReduceSum). Products land only where an input
    element does: the windows of a convolution would multiply the zeros between and around
    the input elements by the filter, making 0 * inf = NaN where the reference has no term."""
    nd = len(spatial)
    d = x.dtype
    p, k = math.prod(spatial), math.prod(kernel)
    cols = b.node("Transpose", [x.name], d, perm=[0, *range(2, 2 + nd), 1])  # (N, *I, C_in)
    cols = b.node("Reshape", [cols.name, b.int64s([0, p, cin])], d)
    wm = b.node("Transpose", [w.name], d, perm=[0, *range(2, 2 + nd), 1])  # (C_in, *K, C_out)
    wm = b.node("Reshape", [wm.name, b.int64s([-1, k * cout])], d)
    products = b.node("MatMul", [cols.name, wm.name], d)  # (N, P, K * C_out)
    products = b.node("Reshape", [products.name, b.int64s([0, p * k, cout])], d)
    # output o, tap j: the product of input i = (o + lo - j * dilation) / stride and tap j
    # (a flat input position of -1, none, gives -k + j: negative, which _gather reads as fill)
    inputs = flat_taps(b, taps, spatial)  # (*O, K): flat input position or -1
    idx = b.node("Add", [b.node("Mul", [inputs.v.name, b.scalar(k, T.int64).name],
                                T.int64).name, arange(b, k).name], T.int64)  # fmt: skip
    landed = _gather(b, products, 3, 1, p * k, inputs._replace(v=idx), 0.0)  # (N, *O, K, C_out)
    total = b.node("ReduceSum", [landed.name, b.int64s([1 + nd])], d, keepdims=0)
    return b.node("Transpose", [total.name], d, perm=[0, nd + 1, *range(1, nd + 1)])


# ---------------------------------------------------------------------------- pooling


def _pool_attrs(node: Symbol) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """Kernel, strides, dilations, padding before, padding after (with ceil mode's extra:
    ONNX's ceil_mode keeps a last window that starts in the right padding, where PyTorch's
    and onnxruntime's kernel drop it, so shape inference and the kernel disagree; explicit
    end padding with ceil_mode=0 gives the reference's windows on both)."""
    a = node.attrs
    kernel, strides, dils = list(a["kernel_size"]), list(a["stride"]), list(a["dilation"])
    lo = list(a["padding"])
    hi = []
    for i, d in enumerate(node.inputs[0].shape[2:]):
        extra = 0
        if isinstance(d, int):  # (a symbolic axis has stride 1: no ceil-mode window)
            o = pool_size(d, kernel[i], strides[i], dils[i], lo[i], a["ceil_mode"])
            extra = pool_extra(d, kernel[i], strides[i], dils[i], lo[i], o)
        hi.append(lo[i] + extra)
    return kernel, strides, dils, lo, hi


def _pool_windows(b: Builder, node: Symbol, x: V, fill: object) -> V:
    kernel, strides, dils, lo, hi = _pool_attrs(node)
    return _all_windows(b, x, node.inputs[0].shape[2:], node.shape[2:], kernel, strides, dils,
                        lo, hi, fill)  # fmt: skip


def _fits(kernel: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> bool:
    """Pads smaller than the kernel: onnxruntime's pools refuse larger ones (a Pad makes
    them)."""
    return all(p < k for p, k in zip([*lo, *hi], [*kernel, *kernel], strict=True))


def _max_pool_native(b: Builder, node: Symbol, x: V, *, pad_first: bool = False) -> V:
    """MaxPool over ``x`` (of a dtype with a kernel): padding the reference's -inf (lowest)
    explicitly where onnxruntime refuses pads as large as the kernel, or where ``pad_first``
    (its CPU kernel pads with the lowest finite value: a window of -inf and padding gave
    -3.4e38, found by the fuzzer)."""
    kernel, strides, dils, lo, hi = _pool_attrs(node)
    if _fits(kernel, lo, hi) and not (pad_first and (any(lo) or any(hi))):
        return b.node("MaxPool", [x.name], x.dtype, kernel_shape=kernel, strides=strides,
                      dilations=dils, pads=_pads(lo, hi))  # fmt: skip
    lowest = -np.inf if x.dtype.kind is Kind.float else x.dtype.min
    padded = b.node("Pad", [x.name, b.int64s(_pads([0, 0, *lo], [0, 0, *hi])),
                            b.scalar(lowest, x.dtype).name], x.dtype)  # fmt: skip
    return b.node("MaxPool", [padded.name], x.dtype, kernel_shape=kernel, strides=strides,
                  dilations=dils)  # fmt: skip


def _nan_where_nan_in_window(b: Builder, node: Symbol, x: V, r: V) -> V:
    """``r`` (a pooled result of ``x``), NaN where the window holds a NaN.

    x * x holds no -inf, so the mean of a window of it is NaN exactly where the window holds
    a NaN (a sum of values in [0, inf] is never NaN), whatever the processor: an
    AveragePool, an IsNaN and a Where at the pooled size, and r * 1 or r * NaN. All but the
    IsNaN and the Where keep onnxruntime's blocked NCHWc layout; a 1x1 MaxPool (a copy)
    moves their result back into it, so that the product and the convolutions after it stay
    there (the example CNN: 1.2x the unrepaired model, where an IsNaN of x and a MaxPool of
    it are 1.45x, each layout change a pass over x). Else, that MaxPool of IsNaN(x)."""
    cd = x.dtype
    kernel, strides, dils, lo, hi = _pool_attrs(node)
    if not _has(b, "AveragePool", cd) or any(d != 1 for d in dils) or not _fits(kernel, lo, hi):
        nan = b.cast(b.node("IsNaN", [x.name], T.bool), cd)
        any_nan = b.cast(_max_pool_native(b, node, nan), T.bool)
        return b.select(any_nan, b.scalar(np.nan, cd), r)
    square = b.node("Mul", [x.name, x.name], cd)
    mean = b.node("AveragePool", [square.name], cd, kernel_shape=kernel, strides=strides,
                  pads=_pads(lo, hi))  # fmt: skip
    poison = b.node("Where", [b.node("IsNaN", [mean.name], T.bool).name,
                              b.scalar(np.nan, cd).name, b.scalar(1.0, cd).name], cd)  # fmt: skip
    poison = b.node("MaxPool", [poison.name], cd, kernel_shape=[1] * len(kernel))
    out = b.node("Mul", [r.name, poison.name], cd)
    if r.name in b.no_negative_zero:
        b.no_negative_zero.add(out.name)  # r * 1.0 is r
    return out


@register("max_pool2d")
def _max_pool(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    src = storage(x.dtype)
    kernel, _, _, lo, hi = _pool_attrs(node)
    # pads as large as the kernel are a Pad first (CUDA: an 8-bit MaxPool, no 8-bit Pad)
    keys = ("MaxPool",) if _fits(kernel, lo, hi) else ("MaxPool", "Pad")
    cd = _compute(b, keys, src, _EXACT_IN_FLOAT.get(src, ()))
    if cd is None:  # int64, uint64: the windows' elementwise Max, exactly
        if not _has(b, "Max", src):
            raise _no_kernel(b, "MaxPool", src)
        win = _pool_windows(b, node, x, src.min)
        k = math.prod(node.attrs["kernel_size"])
        parts = b.fresh("window_tap")
        names = [f"{parts}_{j}" for j in range(k)]
        b.nodes.add().CopyFrom(helper.make_node("Split", [win.name], names, axis=-1,
                                                num_outputs=k))  # fmt: skip
        most = b.node("Max", names, x.dtype) if k > 1 else V(names[0], x.dtype)
        return b.node("Squeeze", [most.name, b.int64s([-1])], x.dtype)
    xc = b.cast(x, cd)
    quirk = b.target.quirk("maxpool_lowest")
    # a float window of -inf and padding is -inf: the CPU's kernel pads with its lowest
    # finite value (ceil mode's last windows are end padding too: _pool_attrs), so the
    # padding is a Pad of -inf first (exact=False keeps the kernel's padding)
    pad_first = b.exact and not quirk and src.kind is Kind.float
    r = _max_pool_native(b, node, xc, pad_first=pad_first)
    if src.kind is not Kind.float:
        return b.cast(r, x.dtype)
    if quirk and b.exact:
        # a window of -inf (and padding) is -inf, where CUDA's kernel gives the lowest
        # finite value: a MaxPool of 1.0 where x is not -inf finds those windows (0.0 or
        # less: nothing but -inf there). export(exact=False) keeps the kernel's value (it
        # takes onnxruntime's MaxPool as it is: below)
        real = b.node("Not", [b.node("Equal", [xc.name, b.scalar(-np.inf, cd).name],
                                     T.bool).name], T.bool)  # fmt: skip
        found = _max_pool_native(b, node, b.cast(real, cd))
        none = b.node("Less", [found.name, b.scalar(0.5, cd).name], T.bool)
        r = b.node("Where", [none.name, b.scalar(-np.inf, cd).name, r.name], cd)
    # onnxruntime's MaxPool skips NaN and keeps whichever of -0.0 and +0.0 it meets first
    # (measured: [1, nan] gives 1, [-0.0, +0.0] gives -0.0; a NaN the window's last element
    # gives NaN); the reference propagates NaN and orders -0.0 < +0.0. export(exact=False)
    # takes onnxruntime's semantics as they are (the MaxPool alone, as hand-written models
    # and torch.onnx's have it). Else one more MaxPool, of 1.0 where x is NaN, says which
    # windows hold a NaN; a Where puts NaN there. Where x may hold -0.0, it pools a code per
    # element instead (2: NaN, 1: +0.0, 0: else), which also says which windows hold a
    # +0.0; the result is r + 0.0 (a -0.0 made +0.0, nothing else changed) times -1 where r
    # is zero and no +0.0 was there, times NaN where a NaN was there (else 1: exact).
    if not b.exact:
        return b.cast(r, x.dtype)
    if xc.name in b.no_negative_zero:  # NaN alone (no -0.0: no order of zeros)
        return b.cast(_nan_where_nan_in_window(b, node, xc, r), x.dtype)
    nan = b.cast(b.node("IsNaN", [xc.name], T.bool), cd)  # 1.0 where NaN, else 0.0
    zero, one = b.scalar(0.0, cd), b.scalar(1.0, cd)
    inv = b.node("Div", [one.name, xc.name], cd)
    positive_zero = b.node("And", [b.node("Equal", [xc.name, zero.name], T.bool).name,
                                   b.node("Greater", [inv.name, zero.name], T.bool).name],
                           T.bool)  # fmt: skip
    code = b.node("Add", [b.node("Mul", [nan.name, b.scalar(2.0, cd).name], cd).name,
                          b.cast(positive_zero, cd).name], cd)  # fmt: skip
    found = _max_pool_native(b, node, code)
    any_nan = b.node("Greater", [found.name, b.scalar(1.5, cd).name], T.bool)
    poison = b.node("Where", [any_nan.name, b.scalar(np.nan, cd).name, one.name], cd)
    any_positive_zero = b.node("Greater", [found.name, b.scalar(0.5, cd).name], T.bool)
    negative = b.node("And", [b.node("Equal", [r.name, zero.name], T.bool).name,
                              b.node("Not", [any_positive_zero.name], T.bool).name],
                      T.bool)  # fmt: skip
    sign = b.node("Where", [negative.name, b.scalar(-1.0, cd).name, one.name], cd)
    positive = b.node("Add", [r.name, zero.name], cd)
    fixed = b.node("Mul", [b.node("Mul", [positive.name, sign.name], cd).name, poison.name], cd)
    return b.cast(fixed, x.dtype)  # fmt: skip


@register("avg_pool2d")
def _avg_pool(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    kernel, strides, dils, lo, hi = _pool_attrs(node)
    boundary = bool(node.attrs["count_boundary"])
    cd = _compute(b, "AveragePool", x.dtype)
    # onnxruntime counts the pads attribute's elements in the divisor (count_include_pad=1)
    # also where a ceil-mode window reaches past the padding, which the reference never
    # counts: there the padding is made explicit zeros (counted as elements) and only the
    # extra end padding stays an attribute, uncounted (count_include_pad=0); without padding
    # (lo all 0) nothing is counted but the input's elements
    extra = [h - p for h, p in zip(hi, lo, strict=True)]
    explicit = boundary and any(extra)
    attr_lo, attr_hi = ([0, 0], extra) if explicit else (lo, hi)
    if cd is not None and _fits(kernel, attr_lo, attr_hi):
        xc = b.cast(x, cd)
        if explicit and any(lo):
            xc = b.node("Pad", [xc.name, b.int64s(_pads([0, 0, *lo], [0, 0, *lo]))], cd)
        r = b.node("AveragePool", [xc.name], cd, kernel_shape=kernel, strides=strides,
                   dilations=dils, pads=_pads(attr_lo, attr_hi),
                   count_include_pad=int(boundary and not explicit))  # fmt: skip
        return b.cast(r, x.dtype)
    # no kernel (float64), or pads onnxruntime refuses: sum the gathered windows and divide
    # by the reference's counts
    f = T.float64 if storage(x.dtype) is T.float64 else T.float32
    if not _has(b, "ReduceSum", f):
        raise _no_kernel(b, "AveragePool", x.dtype)
    xf = b.cast(x, f)
    total = b.node("ReduceSum", [_pool_windows(b, node, xf, 0.0).name, b.int64s([-1])], f,
                   keepdims=0)  # fmt: skip
    spatial, outs = node.inputs[0].shape[2:], node.shape[2:]
    if all(isinstance(d, int) for d in (*spatial, *outs)):
        counts = []
        for i in range(2):  # taps inside the padded input (all but ceil mode's extra ones),
            # or inside the input: per window, in the model
            n, o = int(spatial[i]), int(outs[i])
            within = (0, n + 2 * lo[i]) if boundary else (lo[i], lo[i] + n)
            counts.append(tap_counts(b, kernel[i], strides[i], dils[i], o, *within))
        both = b.node("Mul", [on_axis(b, counts[0], 0, 2).name, counts[1].name], T.int64)
        divisor = b.cast(both, f)
    else:  # the same count at run time: the windows' sum over ones (1 in the counted
        # padding, 0 in the rest)
        ones = b.node("Expand", [b.scalar(1.0, f).name, b.node("Concat", [
            b.int64s([1, 1]), b.node("Shape", [xf.name], T.int64, start=2).name], T.int64,
            axis=0).name], f)  # fmt: skip
        if boundary and any(lo):
            ones = b.node("Pad", [ones.name, b.int64s(_pads([0, 0, *lo], [0, 0, *lo])),
                                  b.scalar(1.0, f).name], f)  # fmt: skip
            inner_lo, inner_hi = [0, 0], [h - p for h, p in zip(hi, lo, strict=True)]
        else:
            inner_lo, inner_hi = lo, hi
        counted = _all_windows(b, ones, node.inputs[0].shape[2:], outs, kernel, strides,
                               dils, inner_lo, inner_hi, 0.0)  # fmt: skip
        divisor = b.node("ReduceSum", [counted.name, b.int64s([-1])], f, keepdims=0)
    return b.cast(b.node("Div", [total.name, divisor.name], f), x.dtype)


# ---------------------------------------------------------------------------- pad, resize


@register("pad")
def _pad(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    pads = list(node.attrs["paddings"])
    if not any(pads):
        return x
    mode = node.attrs["mode"]
    key = "Pad" if mode == "constant" else f"Pad_{mode}"
    # Pad moves values: a float that holds every value of an integer type pads it exactly
    # (CUDA pads only bool and floats)
    cd = _compute(b, key, x.dtype, _EXACT_IN_FLOAT.get(storage(x.dtype), ()))
    if cd is None:
        raise _no_kernel(b, key, x.dtype)
    inputs = [b.cast(x, cd).name, b.int64s(_pads(pads[::2], pads[1::2]))]
    if mode == "constant":  # the value as the reference pads: rounded to x's dtype
        value = cast_array(np.asarray(node.attrs["value"]), x.dtype)
        inputs.append(b.const(value.astype(np.float64) if cd.kind is Kind.float else value,
                              cd).name)  # fmt: skip
    return b.cast(b.node("Pad", inputs, cd, mode=mode), x.dtype)


@register("resize")
def _resize(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    mode = node.attrs["interpolation"]
    ins, outs = list(node.inputs[0].shape), list(node.shape)
    moved = [a for a in range(4) if ins[a] != outs[a]]  # (equal dims: equal at run time)
    if not moved:
        return x
    key = "Resize_linear" if mode == "bilinear" else "Resize_cubic"
    cd = None if mode == "nearest" else _compute(b, key, x.dtype)
    # Native Resize for bilinear and bicubic when just H and W change, both, by sizes known
    # at export: onnxruntime computes the half-pixel coordinate in float32 (weights within a
    # few eps of the reference's exact ones). Not for nearest: the float32 coordinate misses
    # ties (measured: 36 -> 21, output 17's source is 29.5 exactly, rounded half down to 29;
    # onnxruntime picks 30), and not when an axis keeps its size: onnxruntime runs it too,
    # with weights (1, 0) or (0, 1, 0, 0), so an inf in one row makes NaN in its neighbours
    # (measured: [[1, 2], [inf, 4]] to 2x4 gives NaN in both rows, bilinear and bicubic, with
    # axes=[3] too); onnxruntime's CPU kernels resize N and C only in nearest mode
    static = all(isinstance(d, int) for d in (*ins, *outs))
    if cd is not None and static and moved == [2, 3]:
        extra: dict[str, Any] = {"coordinate_transformation_mode": "half_pixel"}
        if mode == "bicubic":
            extra.update(cubic_coeff_a=-0.75, exclude_outside=0)
        r = b.node("Resize", [b.cast(x, cd).name, "", "", b.int64s([int(d) for d in outs[2:]])],
                   cd, axes=[2, 3], mode=mode[2:], **extra)  # fmt: skip
        return b.cast(r, x.dtype)
    # otherwise nearest is a Gather of the reference's indices per axis (exact, any dtype);
    # bilinear and bicubic gather the taps of each resized axis and sum them times the
    # reference's weights, in float64 for float64, else float32
    if mode == "nearest":  # (no float8 Gather: those gather their exact float16 values)
        f = _compute(b, "Gather", x.dtype)
        if f is None:
            raise _no_kernel(b, "Gather", x.dtype)
    else:
        f = T.float64 if x.dtype is T.float64 else T.float32
        if not _has(b, "ReduceSum", f):
            raise _no_kernel(b, key, x.dtype)
    r = b.cast(x, f)
    now = list(ins)  # the shape of r as the axes are resized
    for axis in moved:
        n_in, n_out = _size(dims, ins[axis]), _size(dims, outs[axis])
        now[axis] = outs[axis]
        if mode == "nearest":
            r = b.node("Gather", [r.name, nearest_taps(b, n_in, n_out).name], f, axis=axis)
            continue
        idx, w64 = (linear_taps if mode == "bilinear" else cubic_taps)(b, n_in, n_out)
        k = 2 if mode == "bilinear" else 4
        taps = b.node("Gather", [r.name, idx.name], f, axis=axis)
        split = (*now[:axis], now[axis], k, *now[axis + 1 :])
        taps = b.node("Reshape", [taps.name, dims.shape_tensor(split)], f)
        w = b.cast(w64, f)
        if axis < 3:  # (n_out, k) against the axes after this one
            w = b.node("Unsqueeze", [w.name, b.int64s(list(range(2, 5 - axis)))], f)
        total = b.node("ReduceSum", [b.node("Mul", [taps.name, w.name], f).name,
                                     b.int64s([axis + 1])], f, keepdims=0)  # fmt: skip
        if isinstance(n_in, int) and isinstance(n_out, int):
            r = total
            continue
        # sizes equal at run time: the reference copies the axis, where the weights (1, 0)
        # or (0, 1, 0, 0) would make NaN beside an inf; the tap at src = o is the copy
        same = b.node("Equal", [size_v(b, n_in).name, size_v(b, n_out).name], T.bool)
        centre = b.node("Gather", [taps.name, b.scalar(0 if k == 2 else 1, T.int64).name], f,
                        axis=axis + 1)  # fmt: skip
        r = b.node("Where", [same.name, centre.name, total.name], f)
    return b.cast(r, x.dtype)


def _size(dims: SymbolicDims, d: Dim) -> IntLike:
    """A dimension as an int, or (symbolic) its run-time size as a 0-d int64 value."""
    return int(d) if isinstance(d, int) else V(dims.scalar(d), T.int64)
