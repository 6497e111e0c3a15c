"""Symbol: a value in a graph, the output of one op; Python's operators build new nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from graphdsl._source import Location
from graphdsl.dtypes import DType, dtype
from graphdsl.shapes import Shape
from graphdsl.types import TensorType

if TYPE_CHECKING:  # the graph imports this module; symbols only call their graph's methods
    from graphdsl.graph import Graph

__all__ = ["Operand", "Scalar", "Symbol"]

Scalar = bool | int | float | complex


class Symbol:
    """A value in a graph: the output of one op. Build new symbols with operators and ``gd.ops``.

    Symbols compare by identity: ``x == y`` builds an ``equal`` node, so use ``x is y`` to
    ask whether two symbols are the same value.
    """

    __slots__ = ("attrs", "graph", "id", "in_dtypes", "inputs", "loc", "op", "type")
    # numpy must not broadcast over a Symbol (np.ones(3) + x would give an object array):
    # with this, it returns NotImplemented and Python calls Symbol.__radd__
    __array_ufunc__ = None

    def __init__(
        self,
        graph: Graph,
        op: str,
        inputs: tuple[Symbol, ...],
        attrs: dict[str, Any],
        type: TensorType,
        in_dtypes: tuple[DType, ...],
        loc: Location | None,
    ) -> None:
        self.graph = graph
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.type = type
        self.in_dtypes = in_dtypes
        self.loc = loc
        self.id = len(graph.nodes)

    # -- type accessors
    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> Shape:
        return self.type.shape

    @property
    def ambiguous(self) -> bool:
        return self.type.ambiguous

    @property
    def rank(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        where = f" at {self.loc}" if self.loc else ""
        return f"<Symbol {self.op} {self.type} of graph {self.graph.name!r}{where}>"

    __hash__ = object.__hash__  # by identity (``==`` builds a node)

    def __bool__(self) -> bool:
        raise TypeError(
            "a Symbol has no truth value at graph-build time; use gd.ops.where(cond, a, b) "
            "for a data-dependent choice, or 'x is y' to compare symbols"
        )

    def cast(self, to: DType | str) -> Symbol:
        """Explicit conversion (``gd.ops.cast``)."""
        return self.graph._apply("cast", (self,), {"to": dtype(to)})

    # -- operators: all build nodes through gd.ops
    def __add__(self, o: Operand) -> Symbol:
        return self.graph._apply("add", (self, o), {})

    def __radd__(self, o: Operand) -> Symbol:
        return self.graph._apply("add", (o, self), {})

    def __sub__(self, o: Operand) -> Symbol:
        return self.graph._apply("sub", (self, o), {})

    def __rsub__(self, o: Operand) -> Symbol:
        return self.graph._apply("sub", (o, self), {})

    def __mul__(self, o: Operand) -> Symbol:
        return self.graph._apply("mul", (self, o), {})

    def __rmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("mul", (o, self), {})

    def __truediv__(self, o: Operand) -> Symbol:
        return self.graph._apply("div", (self, o), {})

    def __rtruediv__(self, o: Operand) -> Symbol:
        return self.graph._apply("div", (o, self), {})

    def __floordiv__(self, o: Operand) -> Symbol:
        return self.graph._apply("floordiv", (self, o), {})

    def __rfloordiv__(self, o: Operand) -> Symbol:
        return self.graph._apply("floordiv", (o, self), {})

    def __mod__(self, o: Operand) -> Symbol:
        return self.graph._apply("mod", (self, o), {})

    def __rmod__(self, o: Operand) -> Symbol:
        return self.graph._apply("mod", (o, self), {})

    def __pow__(self, o: Operand) -> Symbol:
        return self.graph._apply("pow", (self, o), {})

    def __rpow__(self, o: Operand) -> Symbol:
        return self.graph._apply("pow", (o, self), {})

    def __matmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("matmul", (self, o), {})

    def __rmatmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("matmul", (o, self), {})

    def __and__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_and", (self, o), {})

    def __rand__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_and", (o, self), {})

    def __or__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_or", (self, o), {})

    def __ror__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_or", (o, self), {})

    def __xor__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_xor", (self, o), {})

    def __rxor__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_xor", (o, self), {})

    def __eq__(self, o: object) -> Symbol:  # type: ignore[override]
        return self.graph._apply("equal", (self, o), {})

    def __ne__(self, o: object) -> Symbol:  # type: ignore[override]
        return self.graph._apply("not_equal", (self, o), {})

    def __lt__(self, o: Operand) -> Symbol:
        return self.graph._apply("less", (self, o), {})

    def __le__(self, o: Operand) -> Symbol:
        return self.graph._apply("less_equal", (self, o), {})

    def __gt__(self, o: Operand) -> Symbol:
        return self.graph._apply("greater", (self, o), {})

    def __ge__(self, o: Operand) -> Symbol:
        return self.graph._apply("greater_equal", (self, o), {})

    def __neg__(self) -> Symbol:
        return self.graph._apply("negative", (self,), {})

    def __pos__(self) -> Symbol:
        return self

    def __abs__(self) -> Symbol:
        return self.graph._apply("abs", (self,), {})

    def __invert__(self) -> Symbol:
        return self.graph._apply("bitwise_not", (self,), {})


Operand = Symbol | Scalar | np.ndarray | np.generic
