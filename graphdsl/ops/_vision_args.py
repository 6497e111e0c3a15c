"""The vision ops' arguments (graphdsl.ops.vision, graphdsl.ops.pooling): layout names, int
tuples, the channels-first value an op computes on, the filter's axes, static sizes and a
convolution's output size per axis."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from graphdsl.ops._define import Operand, Symbol, op
from graphdsl.ops._windows import to_channels_first, to_channels_last, window_size
from graphdsl.shapes import (
    Dim,
    ShapeError,
    derived_dim,
    dim_repr,
    floordiv_dim,
    format_shape,
    sum_dims,
)
from graphdsl.types import OpTypeError

LAYOUTS = {
    2: {"NHWC": True, "NCHW": False},
    3: {"NDHWC": True, "NCDHW": False, "NHWC": True, "NCHW": False},  # MAX's enum names too
}
FILTER_LAYOUTS = {
    2: {"RSCF": True, "FCRS": False, "OIHW": False},
    3: {"QRSCF": True, "FCQRS": False, "OIDHW": False},
}
PAD_MODES = ("constant", "reflect", "edge")


def int_args(value: object, n: int, what: str, minimum: int) -> tuple[int, ...]:
    """``value`` as ``n`` Python ints >= ``minimum`` (one int stands for ``n`` equal ones)."""
    items = [value] * n if isinstance(value, (int, np.integer)) else value
    if not isinstance(items, (list, tuple)) or len(items) != n:
        raise OpTypeError(f"{what} must be an int or {n} ints, got {value!r}")
    out = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise OpTypeError(f"{what} must hold Python ints, got {value!r}")
        if v < minimum:
            raise OpTypeError(f"{what} entries must be >= {minimum}, got {value!r}")
        out.append(operator.index(v))
    return tuple(out)


def channels_last(value: object, nd: int) -> bool:
    names = LAYOUTS[nd]
    if value not in names:
        raise OpTypeError(
            f"input_layout must be one of {sorted(names)} (channels last or first), got {value!r}"
        )
    return names[str(value)]


def filter_last(value: object, nd: int, input_last: bool) -> bool:
    names = FILTER_LAYOUTS[nd]
    if value is None:  # follows the input: RSCF beside NHWC, FCRS (OIHW) beside NCHW
        return input_last
    if value not in names:
        raise OpTypeError(
            f"filter_layout must be one of {sorted(names)} or None (follow input_layout), "
            f"got {value!r}"
        )
    return names[str(value)]


def symbol_arg(x: Operand, what: str) -> Symbol:
    if not isinstance(x, Symbol):
        raise OpTypeError(
            f"{what} must be a Symbol (a graph value), got {type(x).__name__}; make a "
            "constant with g.constant(...) first"
        )
    return x


def to_first(x: Symbol, rank: int, last: bool, what: str) -> Symbol:
    """``x`` (of ``rank``) channels first: as is, or the value a channels-last ``transpose``
    was made from (the transpose then goes unused), or a new ``transpose``."""
    if x.rank != rank:
        layout = "channels last" if last else "channels first"
        raise ShapeError(
            f"{what} must have rank {rank} ({layout}), got {x.type}; reshape or expand_dims "
            "it first"
        )
    if not last:
        return x
    if x.op == "transpose" and tuple(x.attrs["perm"]) == to_channels_last(rank):
        return x.inputs[0]
    return transpose_node(x, to_channels_first(rank))


def transpose_node(x: Symbol, perm: tuple[int, ...]) -> Symbol:
    return op("transpose", x, perm=perm)


def kernel_last_filter(f: Operand, nd: int, last: bool) -> Operand:
    """The filter with its kernel axes last: (a, b, *K) from channels-last (*K, b, a); a numpy
    filter is transposed here, a Symbol by a ``transpose`` node."""
    if isinstance(f, Symbol):
        if f.rank != nd + 2:
            raise ShapeError(f"the filter must have rank {nd + 2}, got {f.type}")
        return transpose_node(f, (nd + 1, nd, *range(nd))) if last else f
    arr = np.asarray(f)
    if arr.ndim != nd + 2:
        raise ShapeError(f"the filter must have rank {nd + 2}, got an array of shape {arr.shape}")
    return np.ascontiguousarray(np.transpose(arr, (nd + 1, nd, *range(nd)))) if last else arr


def to_last(r: Symbol, last: bool) -> Symbol:
    return transpose_node(r, to_channels_last(r.rank)) if last else r


def static_dims(dims: Sequence[Dim], what: str) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in dims):
        raise ShapeError(f"{what} must be static (ints), got {format_shape(tuple(dims))}")
    return tuple(int(d) for d in dims)


def window_dim(
    d: Dim, k: int, stride: int, dilation: int, lo: int, hi: int, axis: str, transpose: bool
) -> Dim:
    """A convolution's output size along one spatial axis (``transpose``: the transposed
    convolution's, (d - 1) * stride - lo - hi + dilation * (k - 1) + 1, where ``hi`` is
    net of output padding)."""
    span = dilation * (k - 1) + 1
    if isinstance(d, int):
        if transpose:
            n = (d - 1) * stride - lo - hi + span if d else 0
        else:
            n = window_size(d, k, stride, dilation, lo, hi)
        if n < 1 and not (transpose and d == 0):
            raise ShapeError(
                f"along {axis} the kernel spans {span} elements (dilation included), more "
                f"than the {d + lo + hi} of the padded input: no output; use a smaller "
                "kernel or dilation, or pad more"
            )
        return n
    extra = span - stride - lo - hi if transpose else lo + hi - span + 1
    if extra < 0:  # (a size that would be negative for a small d: the type cannot say so)
        raise ShapeError(
            f"{axis} is symbolic ({dim_repr(d)}) and its output size would be negative for "
            f"small sizes of {dim_repr(d)} (with this kernel and padding); give {axis} a "
            "static size, or pad by at least dilation * (kernel - 1) in all ('same' padding, "
            "or kernel // 2 on each side)"
        )
    if transpose:
        return sum_dims([derived_dim([d, stride], []), extra])
    # floor((d + lo + hi - span) / stride) + 1
    return sum_dims([floordiv_dim(sum_dims([d, extra - 1]), stride), 1])
