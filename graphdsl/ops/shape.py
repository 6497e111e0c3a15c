"""Shape ops: reshape, transpose, broadcast_to, concat, expand_dims, squeeze, split, tile,
and the compositions MAX and PyTorch users look for (permute, flatten, stack, chunk,
unsqueeze, repeat_interleave).

Each keeps its operand's dtype (concat and stack promote their values together). Symbolic
dimensions are allowed; derived sizes are written in lowest terms (``batch*2``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.ops._define import Operand, Symbol, define, op, promote, types_str
from graphdsl.policies import Policy
from graphdsl.shapes import (
    Dim,
    Shape,
    ShapeError,
    bound_size,
    broadcast_shapes,
    derived_dim,
    dim_repr,
    dim_text,
    format_shape,
    normalize_axes,
    normalize_axis,
    num_elements,
    shape_of,
    shape_repr,
    sum_dims,
)
from graphdsl.types import OpTypeError, TensorType

__all__ = [
    "broadcast_to",
    "chunk",
    "concat",
    "expand_dims",
    "flatten",
    "permute",
    "repeat_interleave",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "tile",
    "transpose",
    "unsqueeze",
]


def reshape(x: Operand, shape: Sequence[int | str]) -> Symbol:
    """Reshape, as numpy: one dimension may be -1, a 0 is a zero-length dimension, symbolic
    names are allowed (give an input's name to keep its dimension). Keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("reshape", input_types={"x": gd.TensorType(gd.float32, ('batch', 4))})
    >>> x, = g.inputs
    >>> z = gd.ops.reshape(x, (-1, 2))
    >>> z.type
    TensorType(float32[batch*2, 2])
    """
    return op("reshape", x, shape=tuple(shape))


def _reshape_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    """numpy's reshape: one -1 may be inferred, and 0 is a zero-length dimension (ONNX's
    Reshape would copy the input's dimension; the exporter sets allowzero=1). With symbolic
    dimensions the element counts must be equal as products of names, in lowest terms."""
    t = types[0]
    req = tuple(attrs["shape"])
    if sum(1 for d in req if d == -1) > 1:
        raise ShapeError(
            f"reshape to {req}: at most one dimension may be -1; give the others explicitly"
        )
    known = shape_of([d for d in req if d != -1])  # validates
    src, dst = format_shape(t.shape), format_shape(req)
    zero_in, zero_out = 0 in t.shape, 0 in known
    if zero_out and not zero_in:
        named = tuple(d if d != 0 or i >= t.rank else t.shape[i] for i, d in enumerate(req))
        raise ShapeError(
            f"cannot reshape {src} to {dst}: a 0 is a zero-length dimension (numpy's meaning, "
            "not ONNX's 'copy this dimension'), so the element counts differ; to keep a "
            f"dimension of the input, name it: {shape_repr(named)}"
        )
    n_in, n_known = num_elements(t.shape), num_elements(known)
    fill: Dim | None = None
    if -1 in req:
        if zero_out:
            raise ShapeError(
                f"cannot reshape {src} to {dst}: a -1 cannot be inferred beside a zero-length "
                "dimension (any size fits); give every dimension"
            )
        if zero_in:
            fill = 0
        elif n_in is not None and n_known is not None:
            if n_known == 0 or n_in % n_known:
                raise ShapeError(
                    f"cannot reshape {src} to {tuple(req)}: no whole size fits the -1; the "
                    "element counts must match"
                )
            fill = n_in // n_known
        else:
            fill = derived_dim(t.shape, known)
    elif n_in is not None and n_known is not None:
        if n_in != n_known:
            raise ShapeError(
                f"cannot reshape {src} ({n_in} elements) to {dst} ({n_known} elements); the "
                "element counts must match"
            )
    elif not zero_in and derived_dim(t.shape, known) != 1:
        have, want = derived_dim(t.shape, ()), derived_dim(known, ())
        raise ShapeError(
            f"cannot reshape {src} ({dim_text(have)} elements) to {dst} ({dim_text(want)} "
            "elements): the type "
            "system cannot tell that these counts are equal; use -1 for the dimension that "
            "takes the rest, or name dimensions of the input"
        )
    out: Shape = tuple(fill if d == -1 and fill is not None else d for d in req)
    return (t.dtype,), TensorType(t.dtype, out, t.ambiguous)


def _reshape_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    # the result's type is the target with its -1 resolved (numpy cannot infer a -1 beside
    # zero elements, where the type can): reshape to it, with the names bound
    x = args[0]
    try:
        req = tuple(bound_size(attrs.get("_bound", {}), d) for d in out.shape)
        return x.reshape(req)
    except (ValueError, ShapeError):  # a size that holds only for some bindings (b*3/2)
        raise ShapeError(
            f"at run time, a value of shape {x.shape} ({x.size} elements) cannot take the "
            f"shape {tuple(attrs['shape'])}; its type {format_shape(out.shape)} needs other "
            "sizes of the inputs' dimensions"
        ) from None


define(reshape, _reshape_rule, _reshape_impl, "any")


def transpose(
    x: Operand,
    dim_1: int | Sequence[int] | None = None,
    dim_2: int | None = None,
    *,
    perm: Sequence[int] | None = None,
) -> Symbol:
    """Swap axes ``dim_1`` and ``dim_2``, as MAX's ``transpose(x, dim_1, dim_2)``; or
    permute them by ``perm`` (also accepted in place of ``dim_1``, numpy's form); with
    neither, reverse them. Keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("transpose", input_types={"x": gd.TensorType(gd.int8, (2, 3, 4))})
    >>> x, = g.inputs
    >>> gd.ops.transpose(x, 1, 2).type, gd.ops.transpose(x, (2, 0, 1)).type
    (TensorType(int8[2, 4, 3]), TensorType(int8[4, 2, 3]))
    """
    if dim_2 is not None:
        if perm is not None or not isinstance(dim_1, int):
            raise OpTypeError(
                f"transpose(x, {dim_1!r}, {dim_2!r}): give two axes to swap (ints), or one "
                "permutation"
            )
        return op("transpose", x, perm=None, swap=(dim_1, dim_2))
    if dim_1 is not None:
        if perm is not None or isinstance(dim_1, int):
            raise OpTypeError(
                f"transpose(x, {dim_1!r}): give two axes to swap, transpose(x, 1, 2), or a "
                "whole permutation, transpose(x, (0, 2, 1))"
            )
        perm = dim_1
    return op("transpose", x, perm=None if perm is None else tuple(perm))


def _transpose_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    perm = attrs.get("perm")
    swap = attrs.pop("swap", None)
    if swap is not None:
        a, b = (normalize_axis(d, t.rank, "dim") for d in swap)
        swapped = list(range(t.rank))
        swapped[a], swapped[b] = b, a
        perm = tuple(swapped)
    elif perm is None:
        perm = tuple(reversed(range(t.rank)))
    perm = tuple(normalize_axis(a, t.rank, "perm entry") for a in perm)
    if sorted(perm) != list(range(t.rank)):
        raise ShapeError(
            f"transpose perm {perm} is not a permutation of {t.rank} axes; list each axis "
            f"0..{t.rank - 1} once"
        )
    attrs["perm"] = perm
    return (t.dtype,), TensorType(t.dtype, tuple(t.shape[i] for i in perm), t.ambiguous)


define(transpose, _transpose_rule, lambda a, attrs, out: np.transpose(a[0], attrs["perm"]), "any")


def broadcast_to(x: Operand, shape: Sequence[int | str]) -> Symbol:
    """Broadcast to ``shape`` (numpy's rules). Keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("broadcast_to", input_types={"x": gd.TensorType(gd.int8, (3, 1))})
    >>> x, = g.inputs
    >>> z = gd.ops.broadcast_to(x, ('n', 3, 4))
    >>> z.type
    TensorType(int8[n, 3, 4])
    """
    return op("broadcast_to", x, shape=tuple(shape))


def _broadcast_to_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    target = shape_of(attrs["shape"])
    if len(target) < t.rank or broadcast_shapes(t.shape, target) != target:
        raise ShapeError(
            f"cannot broadcast {format_shape(t.shape)} to {format_shape(target)}; each "
            "dimension must equal the target's (aligned from the right) or be 1"
        )
    attrs["shape"] = target
    return (t.dtype,), TensorType(t.dtype, target, t.ambiguous)


def _broadcast_to_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> Any:
    dims = attrs.get("_bound", {})
    shape = [bound_size(dims, d) for d in attrs["shape"]]
    return np.broadcast_to(args[0], shape).copy()


define(broadcast_to, _broadcast_to_rule, _broadcast_to_impl, "any")


def concat(values: Sequence[Operand], axis: int = 0) -> Symbol:
    """Join values along ``axis``; their dtypes promote together.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("concat", input_types={"x": gd.TensorType(gd.int8, ('n', 2)),
    ...                                     "y": gd.TensorType(gd.float16, (3, 2))})
    >>> x, y = g.inputs
    >>> z = gd.ops.concat([x, y, x], axis=0)
    >>> z.type
    TensorType(float16[n*2+3, 2])
    """
    return op("concat", *values, axis=axis)


def _concat_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    if not types:
        raise ShapeError("concat needs at least one value; pass a list of symbols")
    c = promote(p, types)
    rank = types[0].rank
    if rank == 0 or any(t.rank != rank for t in types):
        raise ShapeError(
            f"concat needs values of one rank >= 1, got {types_str(types)}; expand_dims or "
            "reshape them to one rank first"
        )
    axis = normalize_axis(attrs.get("axis", 0), rank)
    attrs["axis"] = axis
    total: Dim = 0
    for i in range(rank):
        if i == axis:
            continue
        dims = {t.shape[i] for t in types}
        if len(dims) > 1:
            raise ShapeError(
                f"concat along axis {axis}: dimension {i} differs ({types_str(types)}); "
                "every dimension but the concat axis must agree"
            )
    sizes = [t.shape[axis] for t in types]
    total = sum_dims(sizes)
    shape = tuple(total if i == axis else d for i, d in enumerate(types[0].shape))
    return (c.dtype,) * len(types), TensorType(c.dtype, shape, c.ambiguous)


define(concat, _concat_rule, lambda a, attrs, out: np.concatenate(a, axis=attrs["axis"]), "any")


def expand_dims(x: Operand, axis: int | Sequence[int]) -> Symbol:
    """Insert size-1 axes at ``axis`` (positions in the result). Keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("expand_dims", input_types={"x": gd.TensorType(gd.float32, ('n', 3))})
    >>> x, = g.inputs
    >>> z = gd.ops.expand_dims(x, (0, -1))
    >>> z.type
    TensorType(float32[1, n, 3, 1])
    """
    return op("expand_dims", x, axis=axis)


def _expand_dims_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    axes_in = attrs["axis"]
    axes_in = [axes_in] if isinstance(axes_in, int) else list(axes_in)
    axes = normalize_axes(axes_in, t.rank + len(axes_in))
    attrs["axis"] = axes
    shape: list[Dim] = list(t.shape)
    for a in axes:
        shape.insert(a, 1)
    return (t.dtype,), TensorType(t.dtype, tuple(shape), t.ambiguous)


define(
    expand_dims, _expand_dims_rule, lambda a, attrs, out: np.expand_dims(a[0], attrs["axis"]), "any"
)


def squeeze(x: Operand, axis: int | Sequence[int] | None = None) -> Symbol:
    """Remove size-1 axes (all of them when ``axis`` is None). Keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("squeeze", input_types={"x": gd.TensorType(gd.float32, (1, 'n', 1))})
    >>> x, = g.inputs
    >>> z = gd.ops.squeeze(x)
    >>> z.type
    TensorType(float32[n])
    """
    return op("squeeze", x, axis=axis)


def _squeeze_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    axis = attrs.get("axis")
    axes = (
        tuple(i for i, d in enumerate(t.shape) if d == 1)
        if axis is None
        else normalize_axes(axis, t.rank)
    )
    for a in axes:
        if t.shape[a] != 1:
            raise ShapeError(
                f"cannot squeeze axis {a} of shape {format_shape(t.shape)}: size {t.shape[a]}; "
                "only axes of size 1 can be squeezed"
            )
    attrs["axis"] = axes
    shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


define(squeeze, _squeeze_rule, lambda a, attrs, out: np.squeeze(a[0], attrs["axis"]), "any")


def permute(x: Operand, dims: Sequence[int]) -> Symbol:
    """Reorder the axes by ``dims`` (MAX's ``permute``; numpy's ``transpose(x, axes)``).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("permute", input_types={"x": gd.TensorType(gd.float32, ('b', 's', 4, 8))})
    >>> x, = g.inputs
    >>> gd.ops.permute(x, [0, 2, 1, 3]).type
    TensorType(float32[b, 4, s, 8])
    """
    return transpose(x, perm=dims)


def flatten(x: Operand, start_dim: int = 0, end_dim: int = -1) -> Symbol:
    """Merge axes ``start_dim..end_dim`` (inclusive) into one, as MAX and PyTorch.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("flatten", input_types={"x": gd.TensorType(gd.float32, ('b', 4, 8))})
    >>> x, = g.inputs
    >>> gd.ops.flatten(x, 1).type, gd.ops.flatten(x).type
    (TensorType(float32[b, 32]), TensorType(float32[b*32]))
    """
    if not isinstance(x, Symbol):
        raise OpTypeError(f"flatten needs a Symbol, got {type(x).__name__}")
    return x.flatten(start_dim, end_dim)


def unsqueeze(x: Operand, axis: int | Sequence[int]) -> Symbol:
    """MAX's and PyTorch's name for :func:`expand_dims`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("unsqueeze", input_types={"x": gd.TensorType(gd.float32, ('n', 3))})
    >>> x, = g.inputs
    >>> gd.ops.unsqueeze(x, -1).type
    TensorType(float32[n, 3, 1])
    """
    return expand_dims(x, axis)


def stack(values: Sequence[Operand], axis: int = 0) -> Symbol:
    """Join values of one shape along a new axis (MAX's and numpy's ``stack``); their dtypes
    promote together. Builds expand_dims and concat.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("stack", input_types={"x": gd.TensorType(gd.int8, ('n', 2)),
    ...                                    "y": gd.TensorType(gd.int16, ('n', 2))})
    >>> x, y = g.inputs
    >>> gd.ops.stack([x, y], axis=-1).type
    TensorType(int16[n, 2, 2])
    """
    if not values:
        raise ShapeError("stack needs at least one value; pass a list of symbols")
    shapes = {tuple(np.shape(v)) if not isinstance(v, Symbol) else v.shape for v in values}
    if len(shapes) > 1:
        raise ShapeError(
            f"stack needs values of one shape, got {', '.join(format_shape(s) for s in shapes)}"
        )
    rank = len(next(iter(shapes)))
    ax = normalize_axis(axis, rank + 1)
    return concat([expand_dims(v, ax) for v in values], axis=ax)


def split(x: Operand, split_sizes: int | Sequence[int | str], axis: int = 0) -> list[Symbol]:
    """Cut ``x`` along ``axis`` into pieces of ``split_sizes`` (MAX's ``split``; they must add
    up to the axis). One int ``n`` cuts a static axis into pieces of ``n``, the last one
    shorter where ``n`` does not divide it (``torch.split``'s). Each piece is a node of op
    ``split``; the ONNX exporter emits one Split.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("split", input_types={"x": gd.TensorType(gd.float32, ('b', 12))})
    >>> x, = g.inputs
    >>> q, k, v = gd.ops.split(x, [4, 4, 4], axis=-1)
    >>> v.type
    TensorType(float32[b, 4])
    >>> g.output(v)
    >>> gd.evaluate(g, {"x": np.arange(12, dtype=np.float32).reshape(1, 12)})[0]
    array([[ 8.,  9., 10., 11.]], dtype=float32)
    >>> [str(p.type) for p in gd.ops.split(x, 5, axis=1)]
    ['float32[b, 5]', 'float32[b, 5]', 'float32[b, 2]']
    """
    sizes: tuple[int | str, ...]
    if isinstance(split_sizes, (int, np.integer)) and not isinstance(split_sizes, bool):
        sizes = _even_pieces(x, int(split_sizes), axis)
    elif isinstance(split_sizes, Sequence) and not isinstance(split_sizes, str):
        sizes = tuple(split_sizes)
    else:
        raise OpTypeError(
            f"split: split_sizes must be one int (the size of each piece) or a list of "
            f"sizes, got {split_sizes!r}"
        )
    return [op("split", x, sizes=sizes, axis=axis, index=k) for k in range(len(sizes))]


def _even_pieces(x: Operand, n: int, axis: int) -> tuple[int, ...]:
    """Pieces of ``n`` along a static axis of ``x``, the last one shorter (torch.split)."""
    shape = x.shape if isinstance(x, Symbol) else np.shape(x)
    if not shape:
        raise ShapeError("split needs a value of rank >= 1; a scalar has no axis to cut")
    size = shape[normalize_axis(axis, len(shape))]
    if n < 1 or not isinstance(size, int):
        raise OpTypeError(
            f"split(x, {n}): one int cuts a static axis into pieces of that size (>= 1); axis "
            f"{axis} of {format_shape(tuple(shape))} is {dim_repr(size)}: give the sizes as a list"
        )
    return (n,) * (size // n) + ((size % n,) if size % n else ())


def _split_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    if t.rank == 0:
        raise ShapeError("split needs a value of rank >= 1; a scalar has no axis to cut")
    axis = normalize_axis(attrs.get("axis", 0), t.rank)
    sizes = shape_of(attrs["sizes"])
    if not sizes:
        raise ShapeError("split needs at least one size")
    if sum_dims(sizes) != t.shape[axis]:
        raise ShapeError(
            f"split sizes {tuple(sizes)} add up to {sum_dims(sizes)}, not the size "
            f"{t.shape[axis]} of axis {axis} of {format_shape(t.shape)}; they must add up"
        )
    attrs["axis"], attrs["sizes"] = axis, sizes
    shape = tuple(sizes[attrs["index"]] if i == axis else d for i, d in enumerate(t.shape))
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


def _split_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    axis = attrs["axis"]
    sizes = [bound_size(attrs.get("_bound", {}), d) for d in attrs["sizes"]]
    if sum(sizes) != x.shape[axis]:
        raise ShapeError(
            f"at run time, split sizes {sizes} do not add up to the axis size {x.shape[axis]}"
        )
    start = sum(sizes[: attrs["index"]])
    return np.take(x, np.arange(start, start + sizes[attrs["index"]]), axis=axis)


define(split, _split_rule, _split_impl, "any")


def chunk(x: Operand, chunks: int, axis: int = 0) -> list[Symbol]:
    """Cut ``x`` into ``chunks`` pieces of equal size along ``axis`` (MAX's and PyTorch's
    ``chunk``: the last is smaller when the size does not divide, and there may be fewer
    pieces). A symbolic axis is cut into ``chunks`` equal pieces. Builds :func:`split`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("chunk", input_types={"x": gd.TensorType(gd.float32, (2, 7))})
    >>> x, = g.inputs
    >>> [c.shape for c in gd.ops.chunk(x, 3, axis=1)]
    [(2, 3), (2, 3), (2, 1)]
    """
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise ShapeError(f"chunk needs a number of chunks >= 1, got {chunks!r}")
    if not isinstance(x, Symbol):
        raise OpTypeError(f"chunk needs a Symbol, got {type(x).__name__}")
    ax = normalize_axis(axis, x.rank)
    d = x.shape[ax]
    if isinstance(d, str):
        return split(x, [derived_dim([d], [chunks])] * chunks, ax)
    size = -(-d // chunks) if d else 0
    sizes = [size] * (d // size) + ([d % size] if d % size else []) if size else [0]
    return split(x, sizes, ax)


def tile(x: Operand, repeats: Sequence[Dim]) -> Symbol:
    """Repeat ``x`` ``repeats[i]`` times along each axis ``i`` (MAX's ``tile``; ONNX Tile); a
    count may be symbolic (its size when the model runs).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("tile", input_types={"x": gd.TensorType(gd.int8, ('n', 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.tile(x, [2, 3])
    >>> z.type
    TensorType(int8[n*2, 6])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1, 2]], np.int8)})[0]
    array([[1, 2, 1, 2, 1, 2],
           [1, 2, 1, 2, 1, 2]], dtype=int8)
    """
    return op("tile", x, repeats=tuple(repeats))


def _tile_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    reps = attrs["repeats"]
    bad = not isinstance(reps, (list, tuple)) or len(reps) != t.rank
    bad = bad or any(isinstance(r, (bool, np.bool_)) for r in reps)
    if not bad:
        try:
            reps = shape_of(reps)
        except (ShapeError, TypeError):
            bad = True
    if bad or any(isinstance(r, int) and r < 0 for r in reps):
        raise ShapeError(
            f"tile needs one repeat count (an int >= 0 or a symbolic dimension) per axis of "
            f"{format_shape(t.shape)}, got {tuple(attrs['repeats'])}"
        )
    attrs["repeats"] = reps
    shape = tuple(
        derived_dim([d, r], ()) if r != 0 else 0 for d, r in zip(t.shape, reps, strict=True)
    )
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


def _tile_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return np.tile(args[0], [bound_size(attrs.get("_bound", {}), r) for r in attrs["repeats"]])


define(tile, _tile_rule, _tile_impl, "any")


def repeat_interleave(x: Operand, repeats: int, axis: int | None = None) -> Symbol:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None), as MAX,
    PyTorch and numpy's ``repeat``. Builds expand_dims, broadcast_to and reshape.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("repeat", input_types={"x": gd.TensorType(gd.int8, ('n', 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.repeat_interleave(x, 2, axis=1)
    >>> z.type
    TensorType(int8[n, 4])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1, 2]], np.int8)})[0]
    array([[1, 1, 2, 2]], dtype=int8)
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
        raise OpTypeError(
            f"repeat_interleave needs repeats as an int >= 0, got {repeats!r} (per-element "
            "repeat counts give a data-dependent shape)"
        )
    if not isinstance(x, Symbol):
        raise OpTypeError(f"repeat_interleave needs a Symbol, got {type(x).__name__}")
    if axis is None:
        x, axis = x.flatten(), 0
    ax = normalize_axis(axis, x.rank)
    shape = list(x.shape)
    wide = broadcast_to(expand_dims(x, ax + 1), (*shape[: ax + 1], repeats, *shape[ax + 1 :]))
    merged = derived_dim([shape[ax], repeats], ()) if repeats else 0
    return reshape(wide, (*shape[:ax], merged, *shape[ax + 1 :]))
