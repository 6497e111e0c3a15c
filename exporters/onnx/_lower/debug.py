"""Lowering of ``rebind``: the value unchanged, after a run-time check that each static
dimension of the asserted shape is the value's (ONNX has no assertion: a mismatch makes a
``Range`` of step 0, which onnxruntime refuses, failing the run; its node is named
``rebind_check``)."""

from __future__ import annotations

import numpy as np

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from graphdsl.graph import Symbol

REBIND_CHECK = "rebind_check"


@register("rebind")
def _rebind(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    want = node.attrs["shape"]
    static = [k for k, d in enumerate(want) if isinstance(d, int)]
    if not static:
        return x
    shape = b.node("Shape", [x.name], T.int64)
    got = b.node("Gather", [shape.name, b.int64s(static)], T.int64, axis=0)
    expected = b.const(np.array([want[k] for k in static], np.int64), T.int64)
    # 0 or 1 per dimension, reduced in int32 (CUDA's int64 ReduceMax rounds through float64)
    differs = b.cast(b.node("Not", [b.node("Equal", [got.name, expected.name], T.bool).name],
                            T.bool), T.int32)  # fmt: skip
    any_bad = b.node("ReduceMax", [differs.name, b.int64s([0])], T.int32, keepdims=0)
    step = b.node("Sub", [b.const(1, T.int64).name, b.cast(any_bad, T.int64).name], T.int64)
    check = b.node("Range", [b.const(0, T.int64).name, b.const(1, T.int64).name, step.name],
                   T.int64, REBIND_CHECK)  # fmt: skip
    zero = b.node("Squeeze", [check.name, b.int64s([0])], T.int64)  # 0, or the run failed
    gate = b.node("Mul", [zero.name, b.const(0, T.int64).name], T.int64)
    tied = b.node("Reshape", [x.name, b.node("Add", [shape.name, gate.name], T.int64).name],
                  x.dtype)  # fmt: skip
    return tied
