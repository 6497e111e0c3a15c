"""MAX's shape and indexing ops and ``range`` over graphdsl's (``graphdsl.max.ops``)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.max._common import (
    DimLike,
    TensorValueLike,
    _arg,
    _dims,
    _number,
)
from graphdsl.max._graph import Graph, TensorValue, Weight, _tv
from graphdsl.max._types import (
    DeviceRef,
    UnsupportedError,
)

# ---------------------------------------------------------------------------- shapes


def reshape(x: TensorValueLike, shape: Iterable[DimLike]) -> TensorValue:
    """Reshapes (one dimension may be -1; graphdsl's ``reshape``)."""
    if isinstance(shape, Symbol):
        _dims(shape, "reshape")  # raises: a shape given as a tensor
    dims = [d if isinstance(d, str) else operator.index(d) for d in shape]
    return _tv(gd.reshape(_arg(x), dims))


def flatten(x: TensorValueLike, start_dim: int = 0, end_dim: int = -1) -> TensorValue:
    """Merges axes ``start_dim..end_dim`` (graphdsl's ``flatten``)."""
    return _tv(gd.flatten(_arg(x), start_dim, end_dim))


def transpose(x: TensorValueLike, axis_1: int, axis_2: int) -> TensorValue:
    """Swaps two axes (graphdsl's ``transpose``)."""
    return _tv(gd.transpose(_arg(x), axis_1, axis_2))


def permute(x: TensorValueLike, dims: list[int]) -> TensorValue:
    """Reorders the axes (graphdsl's ``permute``)."""
    return _tv(gd.permute(_arg(x), dims))


def broadcast_to(
    x: TensorValueLike, shape: Iterable[DimLike], out_dims: Iterable[DimLike] | None = None
) -> TensorValue:
    """Broadcasts to ``shape`` (graphdsl's ``broadcast_to``; ``out_dims`` is MAX's naming of
    a shape given as a tensor, which graphdsl does not take)."""
    return _tv(gd.broadcast_to(_arg(x), _dims(shape, "broadcast_to")))


def squeeze(x: TensorValueLike, axis: int) -> TensorValue:
    """Removes the size-1 axis ``axis`` (graphdsl's ``squeeze``)."""
    return _tv(gd.squeeze(_arg(x), axis))


def unsqueeze(x: TensorValueLike, axis: int) -> TensorValue:
    """Inserts a size-1 axis at ``axis`` (graphdsl's ``unsqueeze``)."""
    return _tv(gd.unsqueeze(_arg(x), axis))


def concat(original_vals: Iterable[TensorValueLike], axis: int = 0) -> TensorValue:
    """Concatenates along ``axis`` (graphdsl's ``concat``)."""
    return _tv(gd.concat([_arg(v) for v in original_vals], axis))


def stack(values: Iterable[TensorValueLike], axis: int = 0) -> TensorValue:
    """Stacks along a new axis ``axis`` (graphdsl's ``stack``)."""
    return _tv(gd.stack([_arg(v) for v in values], axis))


def split(x: TensorValueLike, split_sizes: Sequence[DimLike], axis: int = 0) -> list[TensorValue]:
    """Splits into pieces of ``split_sizes`` along ``axis`` (graphdsl's ``split``)."""
    return [_tv(p) for p in gd.split(_arg(x), _dims(split_sizes, "split"), axis)]


def chunk(x: TensorValueLike, chunks: int, axis: int = 0) -> list[TensorValue]:
    """Splits into ``chunks`` equal pieces along ``axis`` (graphdsl's ``chunk``)."""
    return [_tv(p) for p in gd.chunk(_arg(x), chunks, axis)]


def tile(x: TensorValueLike, repeats: Iterable[DimLike]) -> TensorValue:
    """Repeats ``x`` along each axis (graphdsl's ``tile``)."""
    return _tv(gd.tile(_arg(x), [int(r) for r in _dims(repeats, "tile")]))


def repeat_interleave(
    x: TensorValueLike,
    repeats: int | TensorValue,
    axis: int | None = None,
    out_dim: DimLike | None = None,
) -> TensorValue:
    """Repeats each element ``repeats`` times along ``axis`` (graphdsl's
    ``repeat_interleave``; per-element repeats given as a tensor are not supported)."""
    if isinstance(repeats, Symbol):
        raise UnsupportedError(
            "repeat_interleave: repeats given as a tensor (a data-dependent size) is not "
            "supported by graphdsl; give one int"
        )
    return _tv(gd.repeat_interleave(_arg(x), repeats, axis))


def pad(
    input: TensorValueLike,
    paddings: Iterable[int],
    mode: str = "constant",
    value: TensorValueLike = 0,
) -> TensorValue:
    """Pads every axis by ``paddings`` (before_0, after_0, ...) (graphdsl's ``pad``)."""
    if isinstance(value, (Symbol, Weight, np.ndarray)):
        raise UnsupportedError(
            "pad: a padding value given as a tensor is not supported by graphdsl; give a "
            "Python number"
        )
    return _tv(gd.pad(_arg(input), list(paddings), mode, _number(value)))


# ---------------------------------------------------------------------------- indexing


def gather(input: TensorValueLike, indices: TensorValueLike, axis: int) -> TensorValue:
    """Takes entries of ``input`` along ``axis`` at ``indices`` (graphdsl's ``gather``)."""
    return _tv(gd.gather(_arg(input), _arg(indices), axis))


def gather_nd(input: TensorValueLike, indices: TensorValueLike, batch_dims: int = 0) -> TensorValue:
    """Gathers slices at index tuples (graphdsl's ``gather_nd``)."""
    return _tv(gd.gather_nd(_arg(input), _arg(indices), batch_dims))


def scatter(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike, axis: int = -1
) -> TensorValue:
    """Writes ``updates`` into ``input`` at ``indices`` along ``axis`` (graphdsl's)."""
    return _tv(gd.scatter(_arg(input), _arg(updates), _arg(indices), axis))


def scatter_add(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike, axis: int = -1
) -> TensorValue:
    """Adds ``updates`` into ``input`` at ``indices`` along ``axis`` (graphdsl's)."""
    return _tv(gd.scatter_add(_arg(input), _arg(updates), _arg(indices), axis))


def scatter_nd(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike
) -> TensorValue:
    """Writes ``updates`` at index tuples (graphdsl's ``scatter_nd``)."""
    return _tv(gd.scatter_nd(_arg(input), _arg(updates), _arg(indices)))


def scatter_nd_add(
    input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike
) -> TensorValue:
    """Adds ``updates`` at index tuples (graphdsl's ``scatter_nd_add``)."""
    return _tv(gd.scatter_nd_add(_arg(input), _arg(updates), _arg(indices)))


def slice_tensor(x: TensorValue, indices: Sequence[Any]) -> TensorValue:
    """numpy-style basic indexing; ``(slice, "name")`` names a sliced symbolic dimension
    (graphdsl's ``slice_tensor``)."""
    return _tv(gd.slice_tensor(_arg(x), indices))


def band_part(
    x: TensorValueLike,
    num_lower: int | None = None,
    num_upper: int | None = None,
    exclude: bool = False,
) -> TensorValue:
    """Keeps the diagonal band ``-num_lower <= j - i <= num_upper`` of the last two axes (None:
    unbounded) and zeros the rest; ``exclude`` inverts it (graphdsl's ``band_part``)."""
    return _tv(gd.band_part(_arg(x), num_lower, num_upper, exclude))


def range(
    start: TensorValueLike | DimLike,
    stop: TensorValueLike | DimLike,
    step: TensorValueLike = 1,
    out_dim: DimLike | None = None,
    *,
    dtype: DType,
    device: DeviceRef,
) -> TensorValue:
    """``start, start + step, ...`` below ``stop`` in ``dtype`` on ``device``; ``start`` and
    ``stop`` may be symbolic dimensions (graphdsl's ``range``)."""
    bounds = []
    for what, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, (Symbol, Weight, np.ndarray)):
            raise UnsupportedError(
                f"range: {what} given as a tensor value (a data-dependent length) is not "
                "supported by graphdsl; give a Python number or a dimension"
            )
        bounds.append(_number(v))
    graph = Graph.current
    with graph:
        result = _tv(gd.range(bounds[0], bounds[1], bounds[2], out_dim, dtype=dtype))
    graph.place(result, device)
    return result
