"""Index operands for ONNX: int64 (int32 where the operator takes it), and, where the target's
kernels read out of range indices without an error (CUDA's Gather, GatherND, ScatterElements
and ScatterND: _targets.py's CUDA_QUIRKS), checked at run time.

The check is data: ``bad = any(i < -n or i >= n)``, then ``Range(0, 1, 0 if bad else 1)``,
whose zero step onnxruntime refuses ("delta in Range operator can not be zero"), added to
the indices as a 0. The Range node is named after the graphdsl op and source line with
``index_check``; run() reads that name back and reports the index error there.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T
from exporters.onnx._types import storage
from graphdsl.shapes import Dim

__all__ = ["INDEX_CHECK", "checked_indices", "checked_positions", "int64_indices"]

_I64_MAX = 2**63 - 1
INDEX_CHECK = "index_check"  # in the names of the check's Range nodes


def int64_indices(b: Builder, v: V, *, int32_ok: bool = True) -> str:
    """An index operand as an ONNX index tensor (int64, or int32 where allowed); uint64
    indices past int64's range are clamped to its maximum, so they stay out of range
    instead of wrapping onto a valid negative index."""
    d = storage(v.dtype)
    if d is T.int64 or (d is T.int32 and int32_ok):
        return v.name
    if d is T.uint64:
        v = b.node("Min", [v.name, b.scalar(_I64_MAX, T.uint64).name], T.uint64)
    return b.cast(v, T.int64).name


def checked_indices(
    b: Builder, index: str, sizes: Sequence[Dim], dims: SymbolicDims, *, per_component: bool
) -> str:
    """``index`` (int64 or int32), failing at run time where an entry is outside [-n, n) for
    its size n: one size for every entry, or with ``per_component`` one per entry of the
    last axis (GatherND's and ScatterND's index tuples). Unchanged where the target checks
    indices itself."""
    if not b.target.quirk("unchecked_indices"):
        return index
    i = V(index, T.int64)
    if per_component:
        parts = [b.node("Reshape", [dims.scalar(n), b.int64s([1])], T.int64).name for n in sizes]
        n = b.node("Concat", parts, T.int64, axis=0) if len(parts) > 1 else V(parts[0], T.int64)
    else:
        n = V(dims.scalar(sizes[0]), T.int64)
    low = b.node("Less", [i.name, b.node("Neg", [n.name], T.int64).name], T.bool)
    high = b.node("GreaterOrEqual", [i.name, n.name], T.bool)
    # 0 or 1 per entry, in int32: CUDA's int64 ReduceMax rounds through float64 (CUDA_BROKEN)
    bad = b.cast(b.node("Or", [low.name, high.name], T.bool), T.int32)
    flat = b.node("Reshape", [bad.name, b.int64s([-1])], T.int32)
    padded = b.node("Concat", [b.const([0], T.int32).name, flat.name], T.int32, axis=0)
    any_bad = b.node("ReduceMax", [padded.name, b.int64s([0])], T.int32, keepdims=0)
    step = b.node("Sub", [b.const(1, T.int64).name, b.cast(any_bad, T.int64).name], T.int64)
    return _fail_unless(b, step, i.name)


def checked_positions(b: Builder, index: str, count: Dim, size: Dim, dims: SymbolicDims) -> str:
    """``index``, the positions 0, 1, ..., count - 1 (a ``range``): in range for an axis of
    ``size`` exactly when count <= size, one comparison instead of one per position (the
    position embeddings of a sequence)."""
    if not b.target.quirk("unchecked_indices"):
        return index
    n = V(dims.scalar(count), T.int64)
    fits = b.node("LessOrEqual", [n.name, dims.scalar(size)], T.bool)
    return _fail_unless(b, b.cast(fits, T.int64), index)


def _fail_unless(b: Builder, step: V, index: str) -> str:
    """``index`` + 0, where the 0 comes from Range(0, 1, ``step``): onnxruntime refuses a
    zero step, so the model fails here unless ``step`` is 1."""
    check = b.node("Range", [b.const(0, T.int64).name, b.const(1, T.int64).name, step.name],
                   T.int64, INDEX_CHECK)  # fmt: skip
    zero = b.node("Squeeze", [check.name, b.int64s([0])], T.int64)
    return b.node("Add", [index, zero.name], T.int64).name
