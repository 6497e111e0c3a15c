"""Lowerings of the indexing ops to ONNX's native operators (Gather, GatherND, Slice,
ScatterElements, ScatterND, Range, Trilu), all exact: they move values without arithmetic.

Index operands become int64 (int32 where the operator takes it); uint64 indices past
int64's range are clamped to int64's maximum first, so they stay out of range (onnxruntime
then fails with the node's name) instead of wrapping onto a valid negative index. Nodes
that index carry the graphdsl op and its source line as their ONNX name: onnxruntime's
bounds errors quote it.
"""

from __future__ import annotations

from onnx import helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower.shape import _with_shape
from exporters.onnx._types import storage
from graphdsl.graph import Symbol

_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


def _indices(b: Builder, v: V, *, int32_ok: bool = True) -> str:
    """An index operand as an ONNX index tensor (int64, or int32 where allowed)."""
    d = storage(v.dtype)
    if d is T.int64 or (d is T.int32 and int32_ok):
        return v.name
    if d is T.uint64:
        v = b.node("Min", [v.name, b.scalar(_I64_MAX, T.uint64).name], T.uint64)
    return b.cast(v, T.int64).name


def _named(b: Builder, node: Symbol, out: V) -> V:
    """Name the ONNX node just added after ``node`` (its op and source line)."""
    b.nodes[-1].name = b.fresh(f"{node.op} at {node.loc}" if node.loc else node.op)
    return out


def _moving(b: Builder, op: str, x: V) -> V:
    """``x`` in a dtype ``op`` has a kernel for (an exact widening or same-width view)."""
    return b.cast(x, b.compute_dtype(op, x.dtype, bits=True))


@register("gather")
def _gather(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, idx = args
    xc = _moving(b, "Gather", x)
    out = b.node("Gather", [xc.name, _indices(b, idx)], xc.dtype, axis=node.attrs["axis"])
    return b.cast(_named(b, node, out), x.dtype)


@register("gather_nd")
def _gather_nd(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, idx = args
    xc = _moving(b, "GatherND", x)
    out = b.node("GatherND", [xc.name, _indices(b, idx, int32_ok=False)], xc.dtype,
                 batch_dims=node.attrs["batch_dims"])  # fmt: skip
    return b.cast(_named(b, node, out), x.dtype)


def _scatter_lowering(onnx_op: str, reduction: str) -> None:
    key = onnx_op + ("_add" if reduction == "add" else "")
    elements = onnx_op == "ScatterElements"

    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, u, idx = args
        xc = _moving(b, key, x)
        uc = b.cast(u, xc.dtype)
        attrs: dict[str, str | int] = {"reduction": reduction}
        if elements:
            attrs["axis"] = node.attrs["axis"]
        index = _indices(b, idx, int32_ok=elements)
        out = b.node(onnx_op, [xc.name, index, uc.name], xc.dtype, "", **attrs)
        return b.cast(_named(b, node, out), x.dtype)

    register(node_op(onnx_op, reduction))(lower)


def node_op(onnx_op: str, reduction: str) -> str:
    base = "scatter" if onnx_op == "ScatterElements" else "scatter_nd"
    return base + ("_add" if reduction == "add" else "")


for _op in ("ScatterElements", "ScatterND"):
    for _reduction in ("none", "add"):
        _scatter_lowering(_op, _reduction)


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
        v = b.cast(_named(b, node, out), x.dtype)
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
        v = b.cast(_named(b, node, b.node("Slice", inputs, xc.dtype)), x.dtype)
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
        r = _named(b, node, b.node("Range", bounds, T.int64))
        return b.cast(r, want)
    # float: start + i * step in float64 for a static count, rounded once to the dtype
    n = node.type.shape[0]
    i = _named(b, node, b.node("Range", [b.const(0, T.int64).name, b.const(n, T.int64).name,
                                         b.const(1, T.int64).name], T.int64))  # fmt: skip
    f = b.cast(i, T.float64)
    scaled = b.node("Mul", [f.name, b.scalar(float(step), T.float64).name], T.float64)
    value = b.node("Add", [scaled.name, b.scalar(float(start), T.float64).name], T.float64)
    return b.cast(value, want)


@register("band_part")
def _band_part(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    lower, upper = node.attrs["num_lower"], node.attrs["num_upper"]
    if node.attrs["exclude"]:
        # the band as a bool mask (Trilu on ones), then zeros where it holds
        shape = b.node("Shape", [x.name], T.int64)
        ones = b.node("Expand", [b.scalar(True, T.bool).name, shape.name], T.bool)
        band = _trilu(b, ones, lower, upper)
        zero = b.scalar(0, x.dtype)
        return b.select(band, zero, x)
    return _trilu(b, x, lower, upper)


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
    out = b.node("Tile", [xc.name, b.int64s(node.attrs["repeats"])], xc.dtype)
    return b.cast(out, x.dtype)
