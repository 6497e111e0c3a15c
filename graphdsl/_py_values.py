"""What users hand a graph, checked and made its data: input types, Python scalars, arrays
for constants, a weight's type. Each error names the user's line (``loc``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from graphdsl._source import Location
from graphdsl.dtypes import DType, dtype, to_e8m0
from graphdsl.literals import LiteralError, literal_problem
from graphdsl.shapes import ShapeError, shape_of
from graphdsl.types import GraphError, OpTypeError, TensorType, as_type

__all__ = [
    "constant_array",
    "graph_inputs",
    "literal_key",
    "python_scalar",
    "scalar_array",
    "weight_type",
]


def graph_inputs(given: Mapping[str, object] | Sequence[object]) -> list[tuple[str, TensorType]]:
    """A graph's inputs: ``{name: type}`` or a list of types (named input0, input1, ...); a
    type may be a TensorType, a dtype (a scalar input) or ``(dtype, shape)``, never
    ambiguous."""
    items = (
        list(given.items())
        if isinstance(given, Mapping)
        else [(f"input{i}", t) for i, t in enumerate(given)]
    )
    out = []
    for name, t in items:
        if not isinstance(name, str) or not name.isidentifier():
            raise GraphError(f"input names must be identifiers, got {name!r}")
        typ = as_type(t)
        if typ.ambiguous:
            raise GraphError(f"input {name!r} cannot be ambiguous: inputs have known types")
        out.append((name, typ))
    return out


def python_scalar(value: object, loc: Location | None) -> bool | int | float | complex:
    """``value`` as a Python scalar (a numpy scalar's item)."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float, complex)):
        raise OpTypeError(f"scalar (at {loc}): {value!r} is not a Python scalar")
    return value


def scalar_array(value: bool | int | float | complex, target: DType, loc: Location | None
                 ) -> np.ndarray:  # fmt: skip
    """``g.scalar(value, target)``'s data: ``value`` where it fits ``target`` (rounded to its
    precision)."""
    problem = literal_problem(value, target, exact=False)
    if problem:
        raise LiteralError(f"scalar (at {loc}): the value {value!r} {problem}")
    return np.asarray(value).astype(target.np)


def literal_key(value: bool | int | float | complex) -> tuple[type, object]:
    """What tells literals apart (a graph keeps one node per distinct literal): the value
    itself, except where equal values differ: 0.0 and -0.0, nan, and complex numbers (whose
    zero parts have signs too)."""
    t = type(value)
    return (t, value) if t is not complex and value == value and value != 0 else (t, repr(value))


def constant_array(
    value: object, dt: DType | str | None, loc: Location | None
) -> tuple[np.ndarray, DType]:
    """``g.constant(value, dt)``'s data and dtype: a C-ordered array of ``dt`` (else of the
    array's own dtype)."""
    target = dtype(dt) if dt is not None else None
    arr = np.asarray(value)
    if target is None:
        if arr.dtype == object:
            raise OpTypeError(f"constant (at {loc}): cannot make a tensor of {value!r}")
        target = dtype(arr.dtype)
    if target is DType.float8_e8m0fnu and arr.dtype != target.np:
        arr = to_e8m0(arr)  # (whichever ml_dtypes: its ties changed between 0.5 and 0.6)
    arr = arr.astype(target.np, copy=False)
    return (arr if arr.flags.c_contiguous else arr.copy(order="C")), target


def weight_type(name: str, dt: DType | str, shape: Sequence[int], loc: Location | None
                ) -> TensorType:  # fmt: skip
    """The type of weight ``name``: ``dt`` and a static ``shape`` (the shape of its data)."""
    typ = TensorType(dtype(dt), shape_of(shape))
    if any(isinstance(d, str) for d in typ.shape):
        raise ShapeError(
            f"weight {name!r} (at {loc}): shape {tuple(typ.shape)} has a symbolic "
            "dimension; a weight has the static shape of its data"
        )
    return typ
