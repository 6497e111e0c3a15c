"""Lowerings of the ops with sizes known when the model runs: ``nonzero`` (ONNX NonZero of
``x != 0``, transposed to (count, rank)), ``dynamic_range`` (ONNX Range, in int64 or
float64 where the dtype has no kernel, then cast: ``start + i * step`` as the reference
computes it in the dtype for the kernel's dtypes), ``dynamic_slice`` (ONNX Slice with
tensor bounds, clamped as numpy's) and ``dim_size`` (a constant, or the input shapes'
entries a symbolic dimension is made of: Shape, Gather and the arithmetic between them)."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._types import FLOAT8, storage
from graphdsl.dtypes import Kind
from graphdsl.graph import Symbol


@register("nonzero")
def _nonzero(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if storage(x.dtype) is T.bool:
        mask = x
    else:  # NaN != 0 is true, -0.0 != 0 false: numpy's non-zero
        zero = b.scalar(0, x.dtype)
        mask = b.node("Not", [b.elementwise("Equal", [x, zero], result_bool=True).name], T.bool)
    found = b.node("NonZero", [mask.name], T.int64)  # (rank, count)
    return b.node("Transpose", [found.name], T.int64, perm=[1, 0])


_RANGE = (T.int32, T.int64, T.float32, T.float64)


@register("dynamic_range")
def _dynamic_range(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    d = storage(node.dtype)
    run = d if d in _RANGE else (T.float64 if d.kind is Kind.float else T.int64)
    start, stop, step = (b.cast(a, run) for a in args)
    made = b.node("Range", [start.name, stop.name, step.name], run)
    return b.cast(made, node.dtype)


@register("dynamic_slice")
def _dynamic_slice(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, start, stop, step = args
    axis = int(node.attrs["axis"])

    def one(v: V) -> str:
        return b.node("Reshape", [b.cast(v, T.int64).name, b.int64s([1])], T.int64).name

    # onnxruntime's Slice has no float8 kernel: those values move exactly in float32
    moving = b.cast(x, T.float32) if storage(x.dtype) in FLOAT8 else x
    made = b.node("Slice", [moving.name, one(start), one(stop), b.int64s([axis]), one(step)],
                  moving.dtype)  # fmt: skip
    return b.cast(made, x.dtype)



@register("dim_size")
def _dim_size(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return V(dims.scalar(node.attrs["dim"]), T.int64)
