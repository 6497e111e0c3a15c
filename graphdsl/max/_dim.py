"""MAX's dimensions and shapes: ``Dim`` (a class: ``Dim(3)`` is a :class:`StaticDim`,
``Dim("n")`` a :class:`SymbolicDim`, arithmetic on them an :class:`AlgebraicDim`) and the
list-like :class:`Shape`, with max.graph 26's arithmetic, equality, hashing and printing
(tests/data/max_graph_api.json records them).

The Dim classes are graphdsl's own (:mod:`graphdsl.dims`): graphdsl's shapes hold the same
objects (a static dimension as the plain int), so nothing converts between the two APIs.

>>> from graphdsl.max import Dim, Shape, StaticDim
>>> n = Dim("n")
>>> n + 1, (n + 1) * 2, n * 2 // 2, isinstance(Dim(3), StaticDim)
(Dim('n') + Dim(1), (Dim('n') * Dim(2)) + Dim(2), Dim('n'), True)
>>> Shape([1, "n"]) == [1, "n"], str(n - 1)
(True, 'n + -1')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeAlias

import numpy as np

from graphdsl.dims import AlgebraicDim, Dim, DynamicDim, StaticDim, SymbolicDim, core_dim

__all__ = [
    "AlgebraicDim",
    "Dim",
    "DimLike",
    "DynamicDim",
    "Shape",
    "ShapeLike",
    "StaticDim",
    "SymbolicDim",
    "to_core",
]


def to_core(d: Any) -> int | str:
    """A MAX dimension (a Dim, an int, a name) as graphdsl's shapes hold it: a static one as
    the int, a symbolic one as the same Dim (MAX's rules: ``Dim(np.int64(2))`` and the name
    ``"1n"`` are refused).

    >>> from graphdsl.max import Dim
    >>> to_core(Dim("n") * 2 - 1), to_core(Dim(3)), to_core("m")
    ((Dim('n') * Dim(2)) + Dim(-1), 3, Dim('m'))
    """
    return core_dim(Dim(d.item() if isinstance(d, np.integer) else d))


# ---------------------------------------------------------------------------- shapes


class Shape(list[Dim]):
    """A tensor's shape, as max.graph's ``Shape``: a list of :class:`Dim`, equal to a list
    of ints, names and dims.

    >>> from graphdsl.max import Shape
    >>> s = Shape([2, "n"])
    >>> s, s == [2, "n"], s.rank, s.static_dims
    ([Dim(2), Dim('n')], True, 2, [2])
    """

    def __init__(self, dims: Iterable[Any] = ()) -> None:
        super().__init__(Dim(d) for d in dims)

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self)

    @property
    def static_dims(self) -> list[int]:
        """The static dimensions, as ints."""
        return [d.dim for d in self if isinstance(d, StaticDim)]

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        """The symbolic dimensions the shape depends on."""
        for d in self:
            yield from d.parameters

    @staticmethod
    def is_static(shape: Shape) -> bool:
        """Whether every dimension is static and non-negative."""
        return all(isinstance(d, StaticDim) and d.dim >= 0 for d in shape)


DimLike: TypeAlias = int | str | Dim | np.integer
"""What a dimension may be given as, as max.graph's ``DimLike``: an int (a static
dimension), a name (a symbolic one), a :class:`Dim`, or a numpy integer (which the ops
take as its int; ``Dim()`` itself refuses one, as MAX's does)."""

ShapeLike: TypeAlias = Iterable[DimLike]
"""What a shape may be given as, as max.graph's ``ShapeLike``: an iterable of
:data:`DimLike` (a list, a tuple, a :class:`Shape`); ``Shape(s)`` makes it a Shape."""
