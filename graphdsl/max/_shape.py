"""MAX's shape and indexing ops and ``range`` over graphdsl's (``graphdsl.max.ops``)."""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.graph import Symbol
from graphdsl.max._common import (
    DimLike,
    TensorValueLike,
    _arg,
    _axis_words,
    _dims,
    _number,
    _rank,
    _scatter_words,
)
from graphdsl.max._dim import Dim
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._errors import max_words, refuse
from graphdsl.max._types import DeviceRef, UnsupportedError, Weight
from graphdsl.max._value import METHOD_OPS, TensorValue, current_graph, maxop
from graphdsl.max._value import tv as _tv
from graphdsl.policies import PromotionError
from graphdsl.shapes import ShapeError

# ---------------------------------------------------------------------------- shapes


@maxop("reshape")
def reshape(x: TensorValueLike, shape: Iterable[DimLike]) -> TensorValue:
    """Reshapes (one dimension may be -1; graphdsl's ``reshape``)."""
    if isinstance(shape, (Symbol, TensorValue)):
        _dims(shape, "reshape")  # raises: a shape given as a tensor
    dims = [operator.index(d) if isinstance(d, (int, np.integer)) else dim_to_core(d)
            for d in shape]  # fmt: skip
    minus_ones = sum(1 for d in dims if isinstance(d, int) and d == -1)
    words = "reshape(): at most one -1 dimension is allowed" if minus_ones > 1 else None
    if minus_ones == 1 and any(isinstance(d, int) and d == 0 for d in dims):
        words = "reshape(): cannot infer -1 dimension when another dimension is 0"
    value = _arg(x)
    try:
        with max_words(words):
            return _tv(gd.reshape(value, dims))
    except ShapeError as e:
        if words is not None or "cannot reshape" not in str(e):
            raise
        shown = [Dim(d) for d in dims]
        raise ShapeError(  # max.graph's diagnostic, then graphdsl's
            f"Failed to create op 'ReshapeOp':\nInputs:\n    input = {_tv(value)!r}\n"
            f"    new_shape = {shown!r}\n\nDiagnostics:\n    [reshape] input and output "
            "number of elements must match. If you are confident this is correct, consider a "
            f"rebind to assert that the reshape is valid\n(graphdsl: {e})"
        ) from None


@maxop("flatten")
def flatten(x: TensorValueLike, start_dim: int = 0, end_dim: int = -1) -> TensorValue:
    """Merges axes ``start_dim..end_dim`` (graphdsl's ``flatten``)."""
    between = "must be be between {lo} and {hi} (inclusive), but was {axis}"  # (MAX's words)
    words = _axis_words(x, start_dim, f"start_dim {between}") or _axis_words(
        x, end_dim, f"end_dim {between}"
    )
    rank = _rank(x)
    if rank == 0:  # MAX takes a scalar as of rank 1: dims -1 and 0
        for name, d in (("start_dim", start_dim), ("end_dim", end_dim)):
            if isinstance(d, int) and d not in (-1, 0):
                raise ShapeError(f"{name} {between.format(lo=-1, hi=0, axis=d)}; flatten: "
                                 f"{name} {d} is out of range for a scalar")  # fmt: skip
    ints = isinstance(start_dim, int) and isinstance(end_dim, int)
    if words is None and rank and ints and start_dim % rank > end_dim % rank:
        words = "start_dim cannot come after end_dim"
    if words is None and rank and ints:  # MAX reshapes to [..., -1, ...]: no -1 beside a 0
        lo, hi = start_dim % rank, end_dim % rank
        rest = [d for k, d in enumerate(_arg(x).shape) if not lo <= k <= hi]
        if any(isinstance(d, int) and d == 0 for d in rest):
            refuse("reshape(): cannot infer -1 dimension when another dimension is 0",
                   "(graphdsl: max.graph's flatten is that reshape)", ShapeError)  # fmt: skip
    with max_words(words):
        return _tv(gd.flatten(_arg(x), start_dim, end_dim))


@maxop("transpose")
def transpose(x: TensorValueLike, axis_1: int, axis_2: int) -> TensorValue:
    """Swaps two axes (graphdsl's ``transpose``)."""
    out = "out of range (expected to be in range of [{lo}, {hi}], but got {axis})"
    if _rank(x) == 0:  # MAX takes a scalar as of rank 1: axes -1 and 0, and it is its own
        for name, a in (("axis_1", axis_1), ("axis_2", axis_2)):
            if isinstance(a, int) and a not in (-1, 0):
                raise ShapeError(f"Axis {name} {out.format(lo=-1, hi=0, axis=a)}")
        return _tv(_arg(x))
    words = _axis_words(x, axis_1, f"Axis axis_1 {out}") or _axis_words(
        x, axis_2, f"Axis axis_2 {out}"
    )
    with max_words(words):
        return _tv(gd.transpose(_arg(x), axis_1, axis_2))


@maxop("permute")
def permute(x: TensorValueLike, dims: list[int]) -> TensorValue:
    """Reorders the axes (graphdsl's ``permute``)."""
    words = None
    for d in dims:
        words = words or _axis_words(x, d, "All dimensions in the ordering must be be between "
                                     "{lo} and {hi} (inclusive), but was {axis}")  # fmt: skip
    rank, ints = _rank(x), all(isinstance(d, int) for d in dims)
    if rank is not None and len(dims) != rank:
        words = (
            f"The rank of the input ({rank}) does not match the number of dims used for "
            f"ordering ({len(dims)})"
        )
        refuse(words, f"(graphdsl: one entry per axis, got {list(dims)})")
    if words is None and rank and ints and len({d % rank for d in dims}) < len(dims):
        words = f"The ordering may not contain duplicate dimensions: {list(dims)}"
    with max_words(words):
        return _tv(gd.permute(_arg(x), dims))


@maxop("broadcast_to")
def broadcast_to(
    x: TensorValueLike, shape: Iterable[DimLike], out_dims: Iterable[DimLike] | None = None
) -> TensorValue:
    """Broadcasts to ``shape`` (graphdsl's ``broadcast_to``; ``out_dims`` is MAX's naming of
    a shape given as a tensor, which graphdsl does not take)."""
    return _tv(gd.broadcast_to(_arg(x), _dims(shape, "broadcast_to")))


@maxop("squeeze")
def squeeze(x: TensorValueLike, axis: int) -> TensorValue:
    """Removes the size-1 axis ``axis`` (graphdsl's ``squeeze``)."""
    value = _arg(x)
    words = _axis_words(value, axis, "list index out of range")  # (MAX's words)
    if (
        words is None
        and isinstance(value, Symbol)
        and isinstance(axis, int)
        and (value.shape[axis] != 1)
    ):
        words = f"Squeeze dim must be 1, got axis={axis}, shape={list(value.shape)}"
    with max_words(words):
        return _tv(gd.squeeze(value, axis))


@maxop("unsqueeze")
def unsqueeze(x: TensorValueLike, axis: int) -> TensorValue:
    """Inserts a size-1 axis at ``axis`` (graphdsl's ``unsqueeze``)."""
    words = _axis_words(x, axis, "unsqueeze axis out of bounds: axis={axis}, rank={rank}", extra=1)
    with max_words(words):
        return _tv(gd.unsqueeze(_arg(x), axis))


@maxop("concat")
def concat(original_vals: Iterable[TensorValueLike], axis: int = 0) -> TensorValue:
    """Concatenates along ``axis`` (graphdsl's ``concat``)."""
    vals = [_arg(v) for v in original_vals]
    words = "Must provide at least one value to concat." if not vals else None
    shapes = [v.shape for v in vals if isinstance(v, Symbol)]
    if len({len(s) for s in shapes}) > 1:  # (MAX checks the ranks first)
        refuse("Concat inputs must all have the same rank.",
               f"(graphdsl: got shapes {', '.join(map(str, shapes))})", ShapeError)  # fmt: skip
    if vals:
        words = _axis_words(vals[0], axis, "Axis out of range axis={axis}")
        if words is not None:
            raise ShapeError(f"{words}; concat: axis {axis} is out of range for the values")
        if isinstance(axis, int):
            words = _concat_words(shapes, axis)
        dtypes = {v.dtype.name: None for v in vals if isinstance(v, Symbol)}
        if words is None and len(dtypes) > 1:
            why = f"(graphdsl: max.graph concatenates values of one dtype, got {', '.join(dtypes)})"
            refuse("Failed to create op 'concat'", why, PromotionError)
    with max_words(words):
        return _tv(gd.concat(vals, axis))


def _concat_words(shapes: list[tuple[Any, ...]], axis: int) -> str | None:
    """MAX's words for values (of ``shapes``) of other ranks, or of other sizes off the
    concat axis (``axis`` in range)."""
    if len({len(s) for s in shapes}) > 1:
        return "Concat inputs must all have the same rank."
    rank = len(shapes[0]) if shapes else 0
    for i, sizes in enumerate(zip(*shapes, strict=False)):
        if i != axis % rank and len(set(sizes)) > 1:
            return f"Concat inputs differ on non-concat axis {i}"
    return None


@maxop("stack")
def stack(values: Iterable[TensorValueLike], axis: int = 0) -> TensorValue:
    """Stacks along a new axis ``axis`` (graphdsl's ``stack``): MAX's values of one dtype
    and rank (graphdsl's own stack would promote their dtypes)."""
    vals = [_arg(v) for v in values]
    words = "Expected at least one value to stack" if not vals else None
    symbols = [v for v in vals if isinstance(v, Symbol)]
    if len({v.rank for v in symbols}) > 1:
        shown = ", ".join(str(v.shape) for v in symbols)
        refuse("All inputs to stack must be the same rank", f"got {shown}", ShapeError)
    if len({v.dtype for v in symbols}) > 1:
        dtypes = ", ".join(v.dtype.name for v in symbols)
        refuse("All inputs to stack must have the same dtype", f"got {dtypes}; cast them first",
               PromotionError)  # fmt: skip
    if vals:
        words = _axis_words(vals[0], axis, "Axis out of range (expected to be in range of "
                            "[{lo}, {hi}], but got {axis})", extra=1)  # fmt: skip
        if words is None and isinstance(axis, int):  # (MAX concatenates them unsqueezed)
            shapes = [list(v.shape) for v in symbols]
            for shape in shapes:
                shape.insert(axis % (len(shape) + 1), 1)
            words = _concat_words([tuple(s) for s in shapes], axis)
    with max_words(words):
        return _tv(gd.stack(vals, axis))


@maxop("split")
def split(x: TensorValueLike, split_sizes: Sequence[DimLike], axis: int = 0) -> list[TensorValue]:
    """Splits into pieces of ``split_sizes`` along ``axis`` (graphdsl's ``split``)."""
    value, sizes = _arg(x), _dims(split_sizes, "split")
    words = _axis_words(value, axis, _AXIS_IN_RANGE)
    symbolic = [s for s in sizes if not isinstance(s, int)]
    if words is None and symbolic:  # max.graph takes int() of each size first
        raise TypeError(
            f"int({Dim(symbolic[0])!r}): Int conversions only supported for static dims "
            "(graphdsl: max.graph splits by static sizes; graphdsl's own gd.ops.split takes "
            "symbolic ones)"
        )
    static = isinstance(axis, int) and not symbolic
    if words is None and isinstance(value, Symbol) and static:
        size = value.shape[axis]
        if any(s < 0 for s in sizes):  # type: ignore[operator]
            refuse(f"Split sizes must be positive: sizes={sizes}",
                   "(graphdsl: a piece cannot have a negative size)", ShapeError)  # fmt: skip
        if not isinstance(size, int) or size != sum(sizes):  # type: ignore[arg-type]
            words = (
                f"Split sizes must sum to dimension value; x.shape[axis]={Dim(size)!r} != "
                f"sum(sizes={sizes})"
            )
    with max_words(words):
        return [_tv(p) for p in gd.split(value, sizes, axis)]


_AXIS_IN_RANGE = "Axis must be in range [{lo}, {end}), got {axis}"  # MAX's words (split, chunk)


@maxop("chunk")
def chunk(x: TensorValueLike, chunks: int, axis: int = 0) -> list[TensorValue]:
    """Splits into ``chunks`` equal pieces along ``axis`` (graphdsl's ``split``), as MAX's:
    the axis must be static and ``chunks`` divide it (a 0-size axis gives ``chunks`` empty
    pieces; a negative count none)."""
    value = _arg(x)
    if isinstance(value, Symbol) and value.rank == 0 and isinstance(chunks, int) and chunks > 1:
        refuse(f"Cannot split scalar value into chunks={chunks}", "(graphdsl: it has no axis)",
               ShapeError)  # fmt: skip
    words = _axis_words(value, axis, _AXIS_IN_RANGE)
    if words is not None:  # (before MAX's modulo by chunks)
        raise ShapeError(f"{words}; chunk: axis {axis} is out of range for {value.type}")
    with max_words(words):
        static = isinstance(value, Symbol) and isinstance(axis, int)
        static = static and -value.rank <= axis < value.rank  # (else graphdsl raises)
        size = value.shape[axis] if static else None
        if size is not None and not isinstance(size, int):
            raise TypeError(
                f"chunk: x.shape[axis]={Dim(size)!r} is not static (MAX chunks static "
                "dimensions only); split with explicit sizes (ops.split) instead"
            )
        if chunks == 0:
            raise ZeroDivisionError("chunk: chunks=0 (integer modulo by zero, as in MAX)")
        if isinstance(chunks, int) and chunks < 0:
            return []  # (as MAX: no pieces)
        if isinstance(size, int) and isinstance(chunks, int) and size % chunks:
            raise ShapeError(
                f"chunk: chunks={chunks} must statically divide x.shape[axis]={size} (MAX's "
                "rule); split with explicit sizes (ops.split) instead"
            )
        if isinstance(size, int) and isinstance(chunks, int):
            return [_tv(p) for p in gd.split(value, [size // chunks] * chunks, axis)]
        return [_tv(p) for p in gd.chunk(value, chunks, axis)]


@maxop("tile")
def tile(x: TensorValueLike, repeats: Iterable[DimLike]) -> TensorValue:
    """Repeats ``x`` along each axis (graphdsl's ``tile``)."""
    value, counts = _arg(x), _dims(repeats, "tile")
    words = None
    if isinstance(value, Symbol) and len(counts) != value.rank:
        words = (
            "Input rank and number of elements in repeats must match: "
            f"shape={list(value.shape)}, repeats={counts}"
        )
    if words is None and any(isinstance(c, int) and c <= 0 for c in counts):
        refuse(f"Repeats must all be positive: repeats={[Dim(c) for c in counts]}",
               "(graphdsl: each axis is repeated at least once)")  # fmt: skip
    with max_words(words):
        return _tv(gd.tile(value, counts))


@maxop("repeat_interleave")
def repeat_interleave(
    x: TensorValueLike,
    repeats: int | TensorValue,
    axis: int | None = None,
    out_dim: DimLike | None = None,
) -> TensorValue:
    """Repeats each element ``repeats`` times along ``axis`` (graphdsl's
    ``repeat_interleave``; per-element repeats given as a tensor are not supported)."""
    if isinstance(repeats, (Symbol, TensorValue)):
        raise UnsupportedError(
            "repeat_interleave: repeats given as a tensor (a data-dependent size) is not "
            "supported by graphdsl; give one int"
        )
    words = (
        None
        if axis is None
        else _axis_words(x, axis, "repeat_interleave: axis={axis} out of bounds for x.rank={rank}")
    )
    if words is None and isinstance(repeats, int) and repeats <= 0:  # (MAX's words, its typo)
        refuse(f"repeats_inteleave: repeat value must be positive, given repeats={repeats}",
               "(graphdsl: repeat each element at least once)")  # fmt: skip
    with max_words(words):
        return _tv(gd.repeat_interleave(_arg(x), repeats, axis))


@maxop("pad")
def pad(
    input: TensorValueLike,
    paddings: Iterable[int],
    mode: str = "constant",
    value: TensorValueLike = 0,
) -> TensorValue:
    """Pads every axis by ``paddings`` (before_0, after_0, ...) (graphdsl's ``pad``)."""
    if isinstance(value, (Symbol, TensorValue, Weight, np.ndarray)):
        raise UnsupportedError(
            "pad: a padding value given as a tensor is not supported by graphdsl; give a "
            "Python number"
        )
    if mode not in ("constant", "reflect", "edge"):
        refuse(f"pad: unsupported padding mode {mode!r}",
               "(graphdsl: use 'constant', 'reflect' or 'edge')")  # fmt: skip
    pads = list(paddings)
    negative = any(isinstance(p, int) and p < 0 for p in pads)
    with max_words(f"padding values must be non-negative but given {pads}" if negative else None):
        return _tv(gd.pad(_arg(input), pads, mode, _number(value)))


# ---------------------------------------------------------------------------- indexing


@maxop("gather")
def gather(input: TensorValueLike, indices: TensorValueLike, axis: int) -> TensorValue:
    """Takes entries of ``input`` along ``axis`` at ``indices`` (graphdsl's ``gather``)."""
    with max_words(_axis_words(input, axis, "axis={axis} out of range for input")):
        return _tv(gd.gather(_arg(input), _arg(indices), axis))


@maxop("gather_nd")
def gather_nd(input: TensorValueLike, indices: TensorValueLike, batch_dims: int = 0) -> TensorValue:
    """Gathers slices at index tuples (graphdsl's ``gather_nd``)."""
    value, index = _arg(input), _arg(indices)
    words = None
    if isinstance(value, Symbol) and isinstance(index, Symbol) and index.rank:
        size = index.shape[-1]
        if isinstance(size, int) and value.rank < batch_dims + size:
            words = f"Not enough dims in input: batch_dims={batch_dims}, index_size={size}"
    with max_words(words):
        return _tv(gd.gather_nd(value, index, batch_dims))


@maxop("scatter")
def scatter(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike, axis: int = -1
) -> TensorValue:
    """Writes ``updates`` into ``input`` at ``indices`` along ``axis`` (graphdsl's)."""
    with max_words(_scatter_words(input, updates, axis, indices)):
        return _tv(gd.scatter(_arg(input), _arg(updates), _arg(indices), axis))


@maxop("scatter_add")
def scatter_add(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike, axis: int = -1
) -> TensorValue:
    """Adds ``updates`` into ``input`` at ``indices`` along ``axis`` (graphdsl's)."""
    with max_words(_scatter_words(input, updates, axis, indices)):
        return _tv(gd.scatter_add(_arg(input), _arg(updates), _arg(indices), axis))


@maxop("scatter_nd")
def scatter_nd(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike
) -> TensorValue:
    """Writes ``updates`` at index tuples (graphdsl's ``scatter_nd``)."""
    with max_words(_scatter_words(input, updates, None, indices, nd=True)):
        return _tv(gd.scatter_nd(_arg(input), _arg(updates), _arg(indices)))


@maxop("scatter_nd_add")
def scatter_nd_add(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike
) -> TensorValue:
    """Adds ``updates`` at index tuples (graphdsl's ``scatter_nd_add``)."""
    with max_words(_scatter_words(input, updates, None, indices, nd=True)):
        return _tv(gd.scatter_nd_add(_arg(input), _arg(updates), _arg(indices)))


@maxop("slice_tensor")
def slice_tensor(x: TensorValue, indices: Sequence[Any]) -> TensorValue:
    """numpy-style basic indexing; ``(slice, "name")`` names a sliced symbolic dimension
    (graphdsl's ``slice_tensor``)."""
    return _tv(gd.slice_tensor(_arg(x), indices))


@maxop("band_part")
def band_part(
    x: TensorValueLike,
    num_lower: int | None = None,
    num_upper: int | None = None,
    exclude: bool = False,
) -> TensorValue:
    """Keeps the diagonal band ``-num_lower <= j - i <= num_upper`` of the last two axes (None:
    unbounded) and zeros the rest; ``exclude`` inverts it (graphdsl's ``band_part``)."""
    for name, n in (("num_lower", num_lower), ("num_upper", num_upper)):
        if n is not None and n < -1:
            raise ValueError(f"{name}={n} must be non-negative (None or -1: unbounded)")
    num_lower = None if num_lower == -1 else num_lower  # (MAX: -1 is unbounded too)
    num_upper = None if num_upper == -1 else num_upper
    value = _arg(x)
    words = None
    if isinstance(value, Symbol) and value.rank < 2:
        words = f"Input tensor x.shape={list(value.shape)} must have at least 2 dimensions"
    with max_words(words):
        return _tv(gd.band_part(value, num_lower, num_upper, exclude))


@maxop("range")
def range(
    start: TensorValueLike | DimLike,
    stop: TensorValueLike | DimLike,
    step: TensorValueLike = 1,
    out_dim: DimLike | None = None,
    *,
    dtype: DType,
    device: DeviceRef,
) -> TensorValue:
    """``start, start + step, ...`` in ``dtype`` on ``device``, as max.graph 26 makes it: its
    length is ``(stop - start) // step`` (floored, so ``range(0, 5, 2)`` has 2 values, as in
    MAX; 0 for a zero step) unless ``out_dim`` gives it. ``start`` and ``stop`` may be
    symbolic dimensions, or scalar tensors with ``out_dim`` (a length known when the model
    runs: ONNX ``Range``)."""
    core = dtype_to_core(dtype)
    bounds = [start, stop, step]
    if any(isinstance(v, (TensorValue, Symbol, Weight, np.ndarray)) for v in bounds):
        return _dynamic_range(bounds, out_dim, core, device)
    s0, s1, st = (dim_to_core(v) if isinstance(v, Dim) else _number(v) for v in bounds)
    graph = current_graph()
    if isinstance(st, str):
        raise TypeError(f"range: the step must be a number, got the dimension {st!r}")
    if isinstance(s0, str) or isinstance(s1, str):
        with graph:
            made = gd.range(s0, s1, st, None if out_dim is None else dim_to_core(out_dim),
                            dtype=core)  # fmt: skip
        return _tv(made, device)
    if out_dim is None and st != 0 and (s1 - s0) / st < 0:
        count = Dim(math.floor((s1 - s0) / st))
        raise TypeError(
            f"Static tensor dimensions must be non-negative; got shape=[{count!r}] (graphdsl: "
            f"range({s0}, {s1}, {st}) counts away from its stop)"
        )
    n = _max_length(s0, s1, st) if out_dim is None else int(Dim(out_dim))
    if n == 0 or st == 0:  # n zeros: a scalar broadcast in the graph
        zero = graph.constant(np.zeros((), core.np))
        with graph:
            return _tv(gd.broadcast_to(zero, [n]), device)
    floats = any(isinstance(v, float) for v in (s0, s1, st))
    # graphdsl's range has ceil((stop - start) / step) values: a stop that gives n of them
    end = s0 + (n - 0.5) * st if floats else s0 + n * st
    words = None
    if core.name == "bool":  # (MAX's words for the first bound that is not a bool)
        bad = [v for v in (s0, s1, st) if isinstance(v, int) and v not in (0, 1)]
        if bad:
            words = (
                f"Unsafe cast: Can't promote python int with value ({bad[0]}) to "
                "dtype(DType.bool). It would lose precision."
            )
    with graph, max_words(words):
        return _tv(gd.range(s0, end, st, dtype=core), device)


def _max_length(start: Any, stop: Any, step: Any) -> int:
    """max.graph 26's length of a range: ``(stop - start) // step``, floored (0 for step 0)."""
    if step == 0:
        return 0
    if all(isinstance(v, int) for v in (start, stop, step)):
        return int(builtins.max(0, (stop - start) // step))
    return int(builtins.max(0, math.floor((stop - start) / step)))


def _dynamic_range(bounds: list[Any], out_dim: Any, dtype: Any, device: DeviceRef) -> TensorValue:
    if out_dim is None:
        raise ValueError(
            "Dynamic ranges must provide an explicit out_dim: a range with bounds given as "
            "tensors has a length known only when the model runs"
        )
    from graphdsl.ops.dynamic import dynamic_range

    graph = current_graph()
    values = [b if isinstance(b, (TensorValue, Symbol)) else
              graph.constant(np.asarray(_number(b) if not isinstance(b, np.ndarray) else b,
                                        dtype.np))
              for b in bounds]  # fmt: skip
    start, stop, step = (_arg(v) for v in values)
    with graph:
        made = dynamic_range(start, stop, step, dim_to_core(out_dim), dtype=dtype)
    return _tv(made, device)


METHOD_OPS.update(flatten=flatten, permute=permute, reshape=reshape, transpose=transpose)
