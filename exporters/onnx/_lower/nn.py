"""Lowerings of ``matmul`` (unsigned reinterpreted where onnxruntime fails) and ``softmax``."""

from __future__ import annotations

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import (
    SymbolicDims,
    T,
    half_matmul,
    register,
)
from exporters.onnx._types import storage, type_name
from graphdsl.graph import Symbol

# ---------------------------------------------------------------- matmul and reductions


_SAME_WIDTH_SIGNED = {T.uint32: T.int32, T.uint64: T.int64}


@register("matmul")
def _matmul(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    a_shape, b_shape = node.inputs[0].shape, node.inputs[1].shape
    if 2 <= len(a_shape) < len(b_shape) and not all(
        isinstance(d, int) and d > 0 for d in b_shape[:-2]
    ):
        # onnxruntime 1.31's MatMul refuses to broadcast a matrix against a batch of them
        # that may be empty ("right operand cannot broadcast on dim 0", measured on its CPU
        # kernel, which runs integer MatMuls in CUDA sessions too): the matrix expanded
        # (narrow floats expanded in float32, exactly: onnx before 1.2x types no float8
        # Expand at opset 21)
        target = (*b_shape[:-2], *a_shape[-2:])
        d = args[0].dtype
        moved = b.cast(args[0], T.float32) if storage(d) in NARROW else args[0]
        wide = b.node("Expand", [moved.name, dims.shape_tensor(target)], moved.dtype)
        args = [b.cast(wide, d), args[1]]
    if len(b_shape) == 1 and len(a_shape) >= 2 and not all(
        isinstance(d, int) and d > 0 for d in a_shape[:-1]
    ):
        # onnxruntime 1.31's MatMul refuses rows or a batch that may be empty against a
        # vector ("left operand cannot broadcast on dim 0", measured on its CPU kernel: (0, 3)
        # @ (3,) too; 1.32 runs it): the vector as a one-column matrix (the same products and
        # sums), the column squeezed
        column = b.node("Unsqueeze", [args[1].name, b.int64s([1])], args[1].dtype)
        r = _product(b, [args[0], column])
        return b.node("Squeeze", [r.name, b.int64s([-1])], r.dtype)
    return _product(b, args)


def _product(b: Builder, args: list[V]) -> V:
    """MatMul of ``args`` as the reference computes it (see the cases below)."""
    signed = _SAME_WIDTH_SIGNED.get(storage(args[0].dtype))
    if signed is not None:
        # onnxruntime's uint32/uint64 MatMul fail on an empty contraction (they write their
        # zeros as int32/int64); signed products and sums wrap the same way: exact
        r = b.elementwise("MatMul", [b.cast(a, signed) for a in args], bits=True)
        return b.cast(r, args[0].dtype)
    # narrow floats in float32 (the reference's float32 sum, rounded once), but with
    # export(exact=False) where the target's half MatMul accumulates in float32: CUDA's, which
    # may also round split-K partial sums to the half type (exporters/onnx/_targets.py,
    # HALF_ACCUMULATES_F32; the bound: docs/semantics.md)
    return b.elementwise("MatMul", args, narrow_in_f32=not half_matmul(b, args[0].dtype),
                         bits=True)  # fmt: skip


def _in_f32(b: Builder, op: str, x: V) -> bool:
    """Must ``op`` on ``x`` run in float32 (narrow floats), or has the target a kernel of x's
    own narrow dtype that computes in float32 and rounds once (Target.rounds_once)?"""
    return not b.target.rounds_once(op, type_name(storage(x.dtype)))


@register("softmax")
def _softmax(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # narrow floats in float32, rounded once; on CUDA float16 and bfloat16 run their own
    # kernel, which does the same (exporters/onnx/_targets.py, ROUNDS_ONCE)
    x, axis = args[0], int(node.attrs["axis"])
    narrow = _in_f32(b, "Softmax", x)
    cd = T.float32 if narrow and x.dtype in NARROW else storage(x.dtype)
    if b.target.has("Softmax", type_name(cd)) or b.target.falls_back("Softmax", type_name(cd)):
        return b.elementwise("Softmax", args, narrow_in_f32=narrow, axis=axis)
    # no kernel that computes in the dtype's precision (CUDA's double Softmax rounds to
    # float32's): exp(x - max) / sum, as the reference computes it
    xc = b.cast(x, cd)
    size = [node.inputs[0].shape[axis]]
    m = b.reduce("ReduceMax", xc, [axis], cd, 1, size)
    e = b.node("Exp", [b.node("Sub", [xc.name, m.name], cd).name], cd)
    total = b.reduce("ReduceSum", e, [axis], cd, 1, size)
    return b.cast(b.node("Div", [e.name, total.name], cd), x.dtype)


@register("logsoftmax")
def _logsoftmax(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    axis = int(node.attrs["axis"])
    x = args[0]
    if 0 in node.inputs[0].shape:  # no elements: the empty result is the input (onnxruntime
        # 1.31 fails the max-and-sum form beside other reductions of the same empty value:
        # "Shape mismatch attempting to re-use buffer {0} != {1}")
        return x
    # CUDA's LogSoftmax computes x - (max + log(sum)), which loses log(sum) beside a large
    # max (_targets.py's CUDA_QUIRKS): there x - max first (the reference's first step), whose
    # max is 0, then the float32 kernel
    shift = b.target.quirk("logsoftmax_unshifted")
    if not shift and not _in_f32(b, "LogSoftmax", x):
        return b.elementwise("LogSoftmax", args, axis=axis)
    cd = T.float32 if x.dtype in NARROW else storage(x.dtype)
    size = [node.inputs[0].shape[axis]]
    if cd is not T.float64 and b.target.has("LogSoftmax", type_name(cd)):
        if not shift:
            return b.elementwise("LogSoftmax", args, narrow_in_f32=True, axis=axis)
        xc = b.cast(x, cd)
        m = b.reduce("ReduceMax", xc, [axis], cd, 1, size)
        shifted = b.node("Sub", [xc.name, m.name], cd)
        return b.cast(b.node("LogSoftmax", [shifted.name], cd, axis=axis), x.dtype)
    # onnxruntime 1.32's double LogSoftmax keeps a NaN or +inf to its own element (measured:
    # [1, nan] gives [46.05, nan], [inf, 1] gives [nan, -inf]; the reference and its float
    # kernel make the whole slice NaN): composed as the reference computes it, (x - max) -
    # log(sum(exp(x - max))) (also where a target has no LogSoftmax); ReduceMax skips NaN,
    # but a NaN still makes the sum NaN
    xc = b.cast(x, cd)
    m = b.reduce("ReduceMax", xc, [axis], cd, 1, size)
    shifted = b.node("Sub", [xc.name, m.name], cd)
    total = b.reduce("ReduceSum", b.node("Exp", [shifted.name], cd), [axis], cd, 1, size)
    r = b.node("Sub", [shifted.name, b.node("Log", [total.name], cd).name], cd)
    return b.cast(r, x.dtype)
