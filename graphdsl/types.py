"""The static types of the IR: TensorType, and the errors a malformed graph or op raises.

>>> import graphdsl as gd
>>> str(gd.TensorType(gd.float32, ("batch", 4), ambiguous=True))
'float32?[batch, 4]'
"""

from __future__ import annotations

from typing import NamedTuple

from graphdsl.dtypes import DType, dtype
from graphdsl.shapes import Shape, dim_text, shape_of

__all__ = ["GraphError", "IndexRangeError", "OpTypeError", "TensorType", "as_type"]


class GraphError(ValueError):
    """A graph that is malformed, or used in a way its state does not allow.

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.float32})
    >>> gd.evaluate(g, {"x": 1.0})
    Traceback (most recent call last):
        ...
    graphdsl.types.GraphError: graph 'g' has no outputs: call g.output(...) first
    """


class OpTypeError(TypeError):
    """An op given operand dtypes it does not accept.

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.float32})
    >>> g.inputs[0] & 1
    Traceback (most recent call last):
        ...
    graphdsl.types.OpTypeError: bitwise_and (at ...): operand types float32[], int32?[] (in
    argument order) promote to float32 under policy 'default', but the op needs bool or integer
    operands; cast to a dtype it accepts first (gd.ops.cast)
    """


class IndexRangeError(IndexError):
    """An index outside the axis it indexes (found when building, or when evaluating).

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> g.inputs[0][5]
    Traceback (most recent call last):
        ...
    graphdsl.types.IndexRangeError: index 5 is out of range for axis 0 of size 2 (shape (2,
    3)); indices must be in [-2, 2)
    """


class TensorType(NamedTuple):
    """The static type of a value: dtype, shape (ints and symbolic names), ambiguity.

    >>> import graphdsl as gd
    >>> str(gd.TensorType(gd.float32, ("batch", 4), ambiguous=True))
    'float32?[batch, 4]'
    """

    dtype: DType
    shape: Shape = ()
    ambiguous: bool = False

    def __str__(self) -> str:
        dims = ", ".join(dim_text(d) for d in self.shape)
        return f"{self.dtype.name}{'?' if self.ambiguous else ''}[{dims}]"

    def __repr__(self) -> str:
        return f"TensorType({self})"

    @property
    def rank(self) -> int:
        return len(self.shape)


def as_type(t: object) -> TensorType:
    """A TensorType from a TensorType, ``(dtype, shape)`` or a dtype (a scalar)."""
    if isinstance(t, TensorType):
        return TensorType(t.dtype, shape_of(t.shape), t.ambiguous)
    if isinstance(t, tuple) and len(t) == 2:
        return TensorType(dtype(t[0]), shape_of(t[1]))
    return TensorType(dtype(t), ())
