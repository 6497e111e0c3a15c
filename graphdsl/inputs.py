"""Check user-supplied input arrays against a graph's input types (shared by every backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, DTypeError, dtype
from graphdsl.graph import Graph
from graphdsl.shapes import format_shape

__all__ = ["InputError", "bind_inputs", "match_names"]


class InputError(ValueError):
    """Inputs that do not match the graph's input names, dtypes or shapes.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> g.output(g.inputs[0] + 1)
    >>> gd.evaluate(g, {"x": np.zeros(3, np.float32)})
    Traceback (most recent call last):
        ...
    graphdsl.inputs.InputError: input 'x': expected shape (2,), got (3,)
    """


def match_names(
    subject: str, names: list[str], inputs: Mapping[str, Any] | Sequence[Any]
) -> list[Any]:
    """The values of ``inputs`` (a dict by name or a list in order) in the order of ``names``.

    >>> match_names("graph 'g'", ["x", "y"], {"y": 2, "x": 1})
    [1, 2]
    >>> match_names("graph 'g'", ["x"], {"y": 2})
    Traceback (most recent call last):
        ...
    graphdsl.inputs.InputError: graph 'g' takes inputs ['x']: missing 'x'; unexpected 'y'
    """
    if isinstance(inputs, Mapping):
        missing = [n for n in names if n not in inputs]
        extra = [k for k in inputs if k not in names]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(map(repr, missing))}")
            if extra:
                parts.append(f"unexpected {', '.join(map(repr, extra))}")
            raise InputError(f"{subject} takes inputs {names}: {'; '.join(parts)}")
        return [inputs[n] for n in names]
    values = list(inputs)
    if len(values) != len(names):
        raise InputError(f"{subject} takes {len(names)} inputs {names}, got {len(values)}")
    return values


def bind_inputs(
    graph: Graph, inputs: Mapping[str, Any] | Sequence[Any]
) -> tuple[list[np.ndarray], dict[str, int]]:
    """Arrays in input order, checked, plus the size bound to each symbolic dimension.

    Python scalars and lists are accepted where they convert exactly to the input's dtype
    (``np.asarray`` with the declared dtype); numpy arrays must have the declared dtype.
    """
    values = match_names(f"graph {graph.name!r}", graph.input_names, inputs)
    dims: dict[str, int] = {}
    arrays = []
    for sym, value in zip(graph.inputs, values, strict=True):
        name = sym.attrs["name"]
        want: DType = sym.type.dtype
        if isinstance(value, np.ndarray | np.generic):
            arr = np.asarray(value)
            try:
                got = dtype(arr.dtype)
            except DTypeError:
                got = None
            if got is not want and arr.dtype != want.np:
                raise InputError(
                    f"input {name!r}: expected dtype {want.name}, got {arr.dtype}; convert it "
                    f"with .astype(gd.{want.name}.np)"
                )
            arr = arr.astype(want.np, copy=False)
        else:
            arr = np.asarray(value)
            if arr.dtype == object:
                raise InputError(f"input {name!r}: cannot make an array of {value!r}")
            try:
                conv = arr.astype(want.np)
                with np.errstate(all="ignore"):
                    exact = bool(np.all(conv.astype(arr.dtype) == arr))
            except (TypeError, ValueError):
                raise InputError(
                    f"input {name!r}: {value!r} cannot be converted to {want.name}; pass a "
                    f"numpy array of dtype {want.name}"
                ) from None
            if not exact:
                raise InputError(
                    f"input {name!r}: {value!r} is not exactly representable as {want.name}"
                )
            arr = conv
        shape = sym.type.shape
        if arr.ndim != len(shape):
            raise InputError(
                f"input {name!r}: expected rank {len(shape)} {format_shape(shape)}, got shape "
                f"{arr.shape}"
            )
        for i, (d, n) in enumerate(zip(shape, arr.shape, strict=True)):
            if isinstance(d, str):
                bound = dims.setdefault(d, n)
                if bound != n:
                    raise InputError(
                        f"input {name!r}: dimension {i} is {d!r}, bound to {bound} by an earlier "
                        f"input, but this array has {n} (shape {arr.shape})"
                    )
            elif d != n:
                raise InputError(
                    f"input {name!r}: expected shape {format_shape(shape)}, got {arr.shape}"
                )
        arrays.append(arr if arr.flags.c_contiguous else arr.copy(order="C"))
    return arrays, dims
