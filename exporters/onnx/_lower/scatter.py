"""Lowerings of the scatters (ONNX's ScatterElements and ScatterND), with the reference's
order where indices repeat: the last write wins, and adds apply one after another in the
indices' row-major order (numpy's ``x[i] = u`` and ``np.add.at``).

onnxruntime's CPU kernels run the updates in that order. CUDA's write repeated indices in no
fixed order and its ScatterND add fails but for float32 and float16 (exporters/onnx/
_targets.py: CUDA_BROKEN, CUDA_QUIRKS). There, indices known when the graph is exported (a
constant: the common case) become rows, each a (target index tuple, source row) pair: a
write keeps the last row per target, in one ScatterND; an add runs in layers, each the
rows that are some target's n-th, as ScatterND(x, targets, GatherND(x, targets) + rows), so
that each target adds its rows in order and rounds after each, as the reference does.
Indices computed at run time are checked to be in range (CUDA does not check them), a
write gathers each target's last update first (a comparison of every pair along the axis),
and an add adds: integers through a one-hot product in int64 (exact in any order; the
MatMul runs on the CPU provider), floats natively (float32, float16: atomic adds, so that
repeated indices sum in no fixed order) or as a masked sum (float64, bfloat16).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower._index import arange
from exporters.onnx._lower.checks import checked_indices, int64_indices
from exporters.onnx._types import storage, type_name
from graphdsl.dtypes import Kind
from graphdsl.graph import Symbol


def _moving(b: Builder, op: str, x: V) -> V:
    return b.cast(x, b.compute_dtype(op, x.dtype, bits=True))


def _static(node: Symbol) -> np.ndarray | None:
    """The indices operand if it is a constant, as int64."""
    src = node.inputs[2]
    if src.op != "constant":
        return None
    value = np.asarray(src.attrs["value"])
    if value.dtype == np.uint64 and (value > np.iinfo(np.int64).max).any():
        return None
    return value.astype(np.int64)


def _rows_elements(idx: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """ScatterElements' target tuples (one per index position, row-major), or None where an
    index is out of range (the run-time check reports it)."""
    n = shape[axis]
    if ((idx < -n) | (idx >= n)).any():
        return None
    grids: list[np.ndarray] = list(np.indices(idx.shape))
    grids[axis] = np.where(idx < 0, idx + n, idx)
    return np.stack([g.reshape(-1) for g in grids], axis=1)


def _rows_nd(idx: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """ScatterND's target tuples (one per row), or None where one is out of range."""
    k = idx.shape[-1]
    rows = idx.reshape(-1, k)
    sizes = np.asarray(shape[:k], np.int64)
    if ((rows < -sizes) | (rows >= sizes)).any():
        return None
    return np.where(rows < 0, rows + sizes, rows)


def _ranks(rows: np.ndarray) -> np.ndarray:
    """For each row, how many earlier rows have the same target tuple."""
    seen: dict[tuple[int, ...], int] = {}
    out = np.empty(len(rows), np.int64)
    for i, r in enumerate(map(tuple, rows.tolist())):
        out[i] = seen.get(r, 0)
        seen[r] = out[i] + 1
    return out


def _static_scatter(b: Builder, xc: V, src: V, rows: np.ndarray, add: bool) -> V:
    """The scatter into ``xc`` of the source rows ``src`` (one per target tuple of ``rows``,
    along its first axis), in the reference's order, through ScatterND with unique
    targets."""
    d = xc.dtype
    ranks = _ranks(rows)
    if not add:  # the last row per target
        last: dict[tuple[int, ...], int] = {}
        for i, r in enumerate(map(tuple, rows.tolist())):
            last[r] = i
        keep = np.array(sorted(last.values()), np.int64)
        targets = b.const(rows[keep], T.int64, "targets")
        picked = b.node("Gather", [src.name, b.const(keep, T.int64, "rows").name], d, axis=0)
        return b.node("ScatterND", [xc.name, targets.name, picked.name], d)
    res = xc
    for layer in range(int(ranks.max()) + 1 if len(ranks) else 0):
        which = np.nonzero(ranks == layer)[0].astype(np.int64)
        targets = b.const(rows[which], T.int64, "targets")
        picked = b.node("Gather", [src.name, b.const(which, T.int64, "rows").name], d, axis=0)
        current = b.node("GatherND", [res.name, targets.name], d)
        total = b.elementwise("Add", [current, picked])
        res = b.node("ScatterND", [res.name, targets.name, total.name], d)
    return res


def _as_rows(b: Builder, node: Symbol, index: str, u: V) -> tuple[str, V]:
    """ScatterND's indices as (M, k) and updates as (M, *rest): the batch axes flattened."""
    k = int(node.inputs[2].shape[-1])
    idx = b.node("Reshape", [index, b.int64s([-1, k])], T.int64).name
    rest = b.node("Shape", [u.name], T.int64, start=node.inputs[2].rank - 1)
    shape = b.node("Concat", [b.int64s([-1]), rest.name], T.int64, axis=0)
    return idx, b.node("Reshape", [u.name, shape.name], u.dtype)


def _last_writes(b: Builder, u: V, index: str, axis: int, rank: int, tuples: bool) -> V:
    """``u`` with each update replaced by the last one that writes to the same place (along
    ``axis``; for ScatterND rows, ``tuples``: along the rows, comparing whole index tuples):
    then any order of the writes gives the reference's result."""
    a = b.node("Unsqueeze", [index, b.int64s([axis + 1])], T.int64)  # (..., m, 1, ...)
    c = b.node("Unsqueeze", [index, b.int64s([axis])], T.int64)  # (..., 1, m, ...)
    same = b.node("Equal", [a.name, c.name], T.bool)  # [.., j, l, ..]: j and l collide
    if tuples:  # (M, M, k): all of a tuple's components equal
        agree = b.cast(same, T.int32)
        same = b.cast(b.reduce("ReduceMin", agree, [-1], T.int32, 0, None), T.bool)
    m = b.node("Shape", [index], T.int64, start=axis, end=axis + 1)
    count = b.node("Squeeze", [m.name, b.int64s([0])], T.int64)
    ls = b.node("Range", [b.const(0, T.int64).name, count.name, b.const(1, T.int64).name],
                T.int64)  # fmt: skip
    after = rank - 1 - axis  # the axes after axis + 1 in the pairs' rank + 1
    if not tuples and after:
        ls = b.node("Unsqueeze", [ls.name, b.int64s(list(range(1, after + 1)))], T.int64)
    pos = b.node("Where", [same.name, ls.name, b.scalar(-1, T.int64).name], T.int64)
    last = b.reduce("ReduceMax", pos, [-1] if tuples else [axis + 1], T.int64, 0, None)
    if tuples:
        return b.node("Gather", [u.name, last.name], u.dtype, axis=0)
    return b.node("GatherElements", [u.name, last.name], u.dtype, axis=axis)


def _onehot_add(b: Builder, node: Symbol, xc: V, rows: V, index: str) -> V:
    """``xc`` plus, at each target tuple of ``index`` (M, k), the sum of its ``rows`` (M, *rest):
    a one-hot (T, M) matrix of the flat targets times the rows flattened to (M, R); in int64
    for integers (exact modulo 2**64 in any order: the MatMul runs on the CPU provider) or,
    for floats, the rows masked with -0.0 and summed (in another order than the
    reference's where targets repeat)."""
    shape = node.inputs[0].shape
    k = int(node.inputs[2].shape[-1])
    lead = [int(n) for n in shape[:k]]  # (static: checked by the caller)
    strides = [int(np.prod(lead[c + 1 :], dtype=np.int64)) for c in range(k)]
    d = xc.dtype
    flat = b.node("MatMul", [index, b.const(np.array(strides, np.int64), T.int64).name],
                  T.int64)  # (M,)  # fmt: skip
    targets = arange(b, int(np.prod(lead, dtype=np.int64)))  # every flat target, (T,)
    hit = b.node("Equal", [b.node("Unsqueeze", [targets.name, b.int64s([1])], T.int64).name,
                           b.node("Unsqueeze", [flat.name, b.int64s([0])], T.int64).name],
                 T.bool)  # (T, M)  # fmt: skip
    flat_rows = b.node("Flatten", [rows.name], d, axis=1)  # (M, R)
    if d.kind is not Kind.float:
        wide = T.int64
        sums = b.elementwise("MatMul", [b.cast(hit, wide), b.cast(flat_rows, wide)], bits=True)
    else:
        wide = T.float64 if storage(d) is T.float64 else T.float32
        mask = b.node("Unsqueeze", [hit.name, b.int64s([2])], T.bool)
        spread = b.node("Unsqueeze", [b.cast(flat_rows, wide).name, b.int64s([0])], wide)
        masked = b.node("Where", [mask.name, spread.name, b.scalar(-0.0, wide).name], wide)
        sums = b.reduce("ReduceSum", masked, [1], wide, 0, None)
    sums = b.node("Reshape", [sums.name, b.node("Shape", [xc.name], T.int64).name], wide)
    return b.cast(b.elementwise("Add", [b.cast(xc, wide), sums]), d)


def _scatter(elements: bool, add: bool) -> None:
    onnx_op = "ScatterElements" if elements else "ScatterND"
    key = onnx_op + ("_add" if add else "")
    name = ("scatter" if elements else "scatter_nd") + ("_add" if add else "")

    @register(name)
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, u, idx = args
        axis = int(node.attrs["axis"]) % node.inputs[0].rank if elements else 0
        shape = node.inputs[0].shape
        attrs: dict[str, Any] = {"reduction": "add" if add else "none"}
        if elements:
            attrs["axis"] = axis
        if not b.target.quirk("scatter_duplicates"):  # the CPU: in order, natively
            xc = _moving(b, key, x)
            index = int64_indices(b, idx, int32_ok=elements)
            out = b.node(onnx_op, [xc.name, index, b.cast(u, xc.dtype).name], xc.dtype, **attrs)
            return b.cast(out, x.dtype)
        static = _static(node) if all(isinstance(n, int) for n in shape) else None
        rows = None
        if static is not None:
            ints = tuple(int(n) for n in shape)
            rows = _rows_elements(static, ints, axis) if elements else _rows_nd(static, ints)
        if rows is not None:  # indices known: rows in the reference's order
            xc = _moving(b, "ScatterND", x)
            uc = b.cast(u, xc.dtype)
            if elements:
                src = b.node("Reshape", [uc.name, b.int64s([-1])], uc.dtype)
            else:
                src = _as_rows(b, node, b.const(static, T.int64).name, uc)[1]
            return b.cast(_static_scatter(b, xc, src, rows, add), x.dtype)
        # indices known at run time only: checked (CUDA does not), then written or added
        k = 1 if elements else int(node.inputs[2].shape[-1])
        sizes = [shape[axis]] if elements else list(shape[:k])
        index = checked_indices(b, int64_indices(b, idx, int32_ok=False), sizes, dims,
                                per_component=not elements)  # fmt: skip
        if elements:
            xc = _moving(b, key, x)
            uc = b.cast(u, xc.dtype)
            if not add:
                uc = _last_writes(b, uc, index, axis, node.inputs[2].rank, tuples=False)
            out = b.node(onnx_op, [xc.name, index, uc.name], xc.dtype, **attrs)
            return b.cast(out, x.dtype)
        rows_index, rows_u = _as_rows(b, node, index, u)
        if add:
            d = storage(x.dtype)
            native = d.kind is Kind.float and b.target.has(key, type_name(d))
            if not native and all(isinstance(n, int) for n in shape[:k]):
                return b.cast(_onehot_add(b, node, b.cast(x, d), rows_u, rows_index), x.dtype)
        xc = _moving(b, key, x)
        uc = b.cast(rows_u, xc.dtype)
        if not add:
            uc = _last_writes(b, uc, rows_index, 0, 2, tuples=True)
        out = b.node(onnx_op, [xc.name, rows_index, uc.name], xc.dtype, **attrs)
        return b.cast(out, x.dtype)


for _elements in (True, False):
    for _add in (False, True):
        _scatter(_elements, _add)
