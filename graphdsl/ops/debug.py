"""``rebind``: a value with a shape the caller asserts (MAX's ``rebind``), checked when the
model runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.ops._define import Operand, Symbol, define, op
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, format_shape, shape_of
from graphdsl.types import TensorType

__all__ = ["rebind"]


def rebind(x: Operand, shape: Sequence[int | str], message: str = "") -> Symbol:
    """``x`` with ``shape`` (of ``x``'s rank), as MAX's ``rebind``: a static dimension of
    ``shape`` is checked when the model runs (a mismatch fails the run, with ``message``
    in graphdsl's evaluation); a name is bound to the size it meets.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("rebind", input_types={"x": gd.TensorType(gd.float32, ("n", 3))})
    >>> x, = g.inputs
    >>> y = gd.ops.rebind(x, [2, 3], "two rows")
    >>> y.type
    TensorType(float32[2, 3])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.ones((4, 3), np.float32)})
    Traceback (most recent call last):
        ...
    graphdsl.shapes.ShapeError: rebind (at ...): rebind to (2, 3): the value has shape (4, 3): ...
    """
    return op("rebind", x, shape=tuple(shape), message=str(message))


def _rebind_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    shape = shape_of(list(attrs["shape"]))
    if len(shape) != t.rank:
        raise ShapeError(
            f"Wrong rank for rebind: the value is {t} but shape={format_shape(shape)}; rebind "
            "keeps the rank (reshape changes it)"
        )
    attrs["shape"] = shape
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


def _rebind_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    want = attrs["shape"]
    if any(isinstance(d, int) and d != n for d, n in zip(want, x.shape, strict=True)):
        note = f": {attrs['message']}" if attrs.get("message") else ""
        raise ShapeError(
            f"rebind to {format_shape(want)}: the value has shape {format_shape(x.shape)}{note}"
        )
    return np.array(x)


define(rebind, _rebind_rule, _rebind_impl, "any")
