"""Lowerings of the indexing ops to ONNX's native operators (Gather, GatherND, Slice,
Range, Trilu, Split, Tile; the scatters are in scatter.py), all exact: they move values
without arithmetic.

Index operands become int64 (int32 where the operator takes it; checks.py), checked at run
time where the target's kernels do not check them. Every ONNX node carries the graphdsl op
and its source line in its name: onnxruntime's bounds errors quote it, and run() reads it
back.
"""

from __future__ import annotations

from onnx import helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower.checks import checked_indices, checked_positions, int64_indices
from exporters.onnx._lower.shape import _with_shape
from graphdsl.graph import Symbol
from graphdsl.shapes import Dim

_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


def _moving(b: Builder, op: str, x: V) -> V:
    """``x`` in a dtype ``op`` has a kernel for (an exact widening or same-width view)."""
    return b.cast(x, b.compute_dtype(op, x.dtype, bits=True))


@register("gather")
def _gather(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, idx = args
    xc = _moving(b, "Gather", x)
    axis = int(node.attrs["axis"]) % node.inputs[0].rank
    checks = b.target.quirk("unchecked_indices")
    index = int64_indices(b, idx, int32_ok=not checks)
    size, src = node.inputs[0].shape[axis], node.inputs[1]
    if src.op == "range" and (src.attrs["start"], src.attrs["step"]) == (0, 1):
        index = checked_positions(b, index, src.shape[0], size, dims)
    else:
        index = checked_indices(b, index, [size], dims, per_component=False)
    out = b.node("Gather", [xc.name, index], xc.dtype, axis=axis)
    return b.cast(out, x.dtype)


@register("gather_nd")
def _gather_nd(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, idx = args
    xc = _moving(b, "GatherND", x)
    batch = int(node.attrs["batch_dims"])
    k = int(node.inputs[1].shape[-1])
    index = int64_indices(b, idx, int32_ok=False)
    sizes = list(node.inputs[0].shape[batch : batch + k])
    index = checked_indices(b, index, sizes, dims, per_component=True)
    out = b.node("GatherND", [xc.name, index], xc.dtype, batch_dims=batch)
    return b.cast(out, x.dtype)


@register("slice_tensor")
def _slice(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    shape = node.inputs[0].shape
    items = node.attrs["items"]
    taken = [it for it in items if it[0] != "n"]
    ints = [a for a, it in enumerate(taken) if it[0] == "i"]
    sliced = [a for a, it in enumerate(taken) if it[0] == "s" and it[1:4] != (None, None, 1)]
    new = [k for k, it in enumerate(it for it in items if it[0] != "i") if it[0] == "n"]
    if len(ints) == 1 and not sliced:
        # one index and nothing else cut: a Gather of a scalar index drops the axis itself
        xc = _moving(b, "Gather", x)
        out = b.node("Gather", [xc.name, b.const(taken[ints[0]][1], T.int64).name], xc.dtype,
                     axis=ints[0])  # fmt: skip
        v = b.cast(out, x.dtype)
        return _with_shape(b, "Unsqueeze", v, b.int64s(new)) if new else v
    v = x
    if ints or sliced:
        starts, ends, axes, steps = [], [], [], []
        for a in sorted(ints + sliced):
            start, end, step = _bounds(taken[a], shape[a])
            starts.append(start)
            ends.append(end)
            axes.append(a)
            steps.append(step)
        xc = _moving(b, "Slice", x)
        inputs = [xc.name, *(b.int64s(vals) for vals in (starts, ends, axes, steps))]
        v = b.cast(b.node("Slice", inputs, xc.dtype), x.dtype)
    if ints:
        v = _with_shape(b, "Squeeze", v, b.int64s(ints))
    if new:
        v = _with_shape(b, "Unsqueeze", v, b.int64s(new))
    return v


def _bounds(item: tuple[object, ...], d: int | str) -> tuple[int, int, int]:
    """ONNX Slice's (start, end, step) for one normalized index item on a dimension ``d``."""
    if item[0] == "i":
        i = int(item[1])  # type: ignore[call-overload]
        return i, (i + 1 if i != -1 else _I64_MAX), 1
    start, stop, step = item[1], item[2], int(item[3])  # type: ignore[call-overload]
    if isinstance(d, int):
        lo, hi, st = slice(start, stop, step).indices(d)
        if not len(range(lo, hi, st)):
            return 0, 0, 1
        # numpy's "before the first entry" is -1 after indices(); ONNX reads -1 as the last
        return lo, (hi if hi >= 0 else _I64_MIN), st
    # a symbolic dimension: ONNX clamps open and negative bounds as numpy does
    open_start, open_stop = (0, _I64_MAX) if step > 0 else (_I64_MAX, _I64_MIN)
    return (
        open_start if start is None else int(start),  # type: ignore[call-overload]
        open_stop if stop is None else int(stop),  # type: ignore[call-overload]
        step,
    )


@register("range")
def _range(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    start, stop, step = (node.attrs[k] for k in ("start", "stop", "step"))
    want = node.type.dtype
    ints = all(isinstance(v, (int, str)) for v in (start, stop, step))
    if ints:
        # int64 values start + i * step, converted (wrapping) to the dtype, as the reference
        bounds = [dims.scalar(v) if isinstance(v, str) else b.const(v, T.int64).name
                  for v in (start, stop, step)]  # fmt: skip
        r = b.node("Range", bounds, T.int64)
        return b.cast(r, want)
    # float: start + i * step in float64 for a static count, rounded once to the dtype
    n = node.type.shape[0]
    i = b.node("Range", [b.const(0, T.int64).name, b.const(n, T.int64).name,
                                         b.const(1, T.int64).name], T.int64)  # fmt: skip
    f = b.cast(i, T.float64)
    scaled = b.node("Mul", [f.name, b.scalar(float(step), T.float64).name], T.float64)
    value = b.node("Add", [scaled.name, b.scalar(float(start), T.float64).name], T.float64)
    return b.cast(value, want)


@register("band_part")
def _band_part(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    lower, upper = node.attrs["num_lower"], node.attrs["num_upper"]
    exclude = node.attrs["exclude"]
    shape = node.inputs[0].shape
    if b.target.quirk("empty_trilu_fails") and not all(
        isinstance(d, int) and d > 0 for d in shape
    ):  # CUDA's Trilu fails on an empty tensor: the band as a mask of positions
        band = _band_mask(b, shape[-2], shape[-1], lower, upper, dims)
        zero = b.scalar(0, x.dtype)
        return b.select(band, zero, x) if exclude else b.select(band, x, zero)
    if exclude:
        # the band as a bool mask (Trilu on ones), then zeros where it holds
        ones = b.node("Expand", [b.scalar(True, T.bool).name,
                                 b.node("Shape", [x.name], T.int64).name], T.bool)  # fmt: skip
        band = _trilu(b, ones, lower, upper)
        zero = b.scalar(0, x.dtype)
        return b.select(band, zero, x)
    return _trilu(b, x, lower, upper)


def _band_mask(
    b: Builder, rows: Dim, cols: Dim, lower: int | None, upper: int | None, dims: SymbolicDims
) -> V:
    """(rows, cols) bool: ``-lower <= col - row <= upper`` (a bound of None: no bound)."""
    zero, one = b.const(0, T.int64).name, b.const(1, T.int64).name
    r = b.node("Range", [zero, dims.scalar(rows), one], T.int64)
    c = b.node("Range", [zero, dims.scalar(cols), one], T.int64)
    diff = b.node("Sub", [c.name, b.node("Unsqueeze", [r.name, b.int64s([1])], T.int64).name],
                  T.int64)  # fmt: skip
    band = b.node("Equal", [diff.name, diff.name], T.bool)  # all True, (rows, cols)
    if lower is not None:
        low = b.node("GreaterOrEqual", [diff.name, b.const(-lower, T.int64).name], T.bool)
        band = b.node("And", [band.name, low.name], T.bool)
    if upper is not None:
        high = b.node("LessOrEqual", [diff.name, b.const(upper, T.int64).name], T.bool)
        band = b.node("And", [band.name, high.name], T.bool)
    return band


def _trilu(b: Builder, x: V, lower: int | None, upper: int | None) -> V:
    """Entries with ``-lower <= col - row <= upper`` kept, the rest zero (Trilu copies: exact)."""
    v = _moving(b, "Trilu", x)
    if lower is not None:
        v = b.node("Trilu", [v.name, b.const(-lower, T.int64).name], v.dtype, upper=1)
    if upper is not None:
        v = b.node("Trilu", [v.name, b.const(upper, T.int64).name], v.dtype, upper=0)
    return b.cast(v, x.dtype)


@register("split")
def _split(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # one ONNX Split for all the pieces of one value (each piece is a graphdsl node)
    x = args[0]
    sizes, axis = node.attrs["sizes"], node.attrs["axis"]
    key = ("split", x.name, sizes, axis)
    outs: list[V] | None = b.memo.get(key)
    if outs is None:
        xc = _moving(b, "Split", x)
        names = [b.fresh("split") for _ in sizes]
        n = b.nodes.add()
        n.op_type = "Split"
        n.input.extend([xc.name, dims.shape_tensor(tuple(sizes))])
        n.output.extend(names)
        n.attribute.append(helper.make_attribute("axis", axis))
        outs = [V(name, xc.dtype) for name in names]
        b.memo[key] = outs
    return b.cast(outs[node.attrs["index"]], x.dtype)


@register("tile")
def _tile(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    xc = _moving(b, "Tile", x)
    out = b.node("Tile", [xc.name, dims.shape_tensor(tuple(node.attrs["repeats"]))], xc.dtype)
    return b.cast(out, x.dtype)
