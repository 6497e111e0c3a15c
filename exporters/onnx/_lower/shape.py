"""Lowerings of the shape ops (exact; reshape to the node's type, with allowzero=1)."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import (
    SymbolicDims,
    register,
)
from graphdsl.graph import Symbol

# ---------------------------------------------------------------- shape ops (exact)


@register("reshape")
def _reshape(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # to the result's type: the target with its -1 resolved by the type rule (neither ONNX
    # nor numpy can infer a -1 beside zero elements); allowzero=1: a 0 is a zero-length
    # dimension, as in numpy (ONNX would copy the input's)
    target, source = node.type.shape, node.inputs[0].shape
    if 0 not in target and any(isinstance(d, str) for d in target):
        # a dimension kept at its place is a 0 ("copy the input's") with allowzero=0, as
        # hand-written ONNX says it: no Shape/Gather/Concat to rebuild it at run time
        kept = [0 if i < len(source) and source[i] == d else d for i, d in enumerate(target)]
        if all(isinstance(d, int) for d in kept):
            fixed = [int(d) for d in kept]
            return _with_shape(b, "Reshape", args[0], b.int64s(fixed), allowzero=0)
    shape = dims.shape_tensor(target)
    return _with_shape(b, "Reshape", args[0], shape, allowzero=1)


def _with_shape(b: Builder, op: str, x: V, shape: str, **attrs: int) -> V:
    cd = b.compute_dtype(op, x.dtype, bits=True)
    r = b.node(op, [b.cast(x, cd).name, shape], cd, "", **attrs)
    return b.cast(r, x.dtype)


@register("broadcast_to")
def _broadcast_to(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return _with_shape(b, "Expand", args[0], dims.shape_tensor(tuple(node.attrs["shape"])))


@register("transpose")
def _transpose(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # a transpose of a transpose is one transpose (none if the two cancel): y = x^p, z = y^q
    # has z[j] = x[p[q[j]]]
    perm = list(node.attrs["perm"])
    x = args[0]
    if perm == sorted(perm):  # the identity (a scalar's empty perm included): no node
        return x
    earlier: tuple[V, list[int]] | None = b.memo.get(("transposed", x.name))
    if earlier is not None and earlier[0].dtype is x.dtype:
        source, first = earlier
        perm = [first[j] for j in perm]
        b.bypassed = True
        if perm == sorted(perm):
            return source
        x = source
    out = b.elementwise("Transpose", [x], bits=True, perm=perm)
    b.memo[("transposed", out.name)] = (x, perm)
    return out


@register("concat")
def _concat(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.elementwise("Concat", args, bits=True, axis=int(node.attrs["axis"]))


@register("expand_dims")
def _expand_dims(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return _with_shape(b, "Unsqueeze", args[0], b.int64s(node.attrs["axis"]))


@register("squeeze")
def _squeeze(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    axes = node.attrs["axis"]
    if not axes:
        return args[0]
    return _with_shape(b, "Squeeze", args[0], b.int64s(axes))
