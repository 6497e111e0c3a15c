"""Symbol: a value in a graph, the output of one op; Python's operators build new nodes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from graphdsl._source import Location
from graphdsl.dtypes import DType, dtype
from graphdsl.shapes import Dim, Shape, derived_dim, normalize_axis
from graphdsl.types import GraphError, TensorType

if TYPE_CHECKING:  # the graph imports this module; symbols only call their graph's methods
    from graphdsl.graph import Graph

__all__ = ["Operand", "Scalar", "Symbol", "register_extension"]

Scalar = bool | int | float | complex
# the operators pass their caller's frame to Graph._apply, which finds the node's location
# from there (a frame fewer to walk)
_getframe = sys._getframe


class Symbol:
    """A value in a graph: the output of one op. Build new symbols with operators and ``gd.ops``.

    Symbols compare by identity: ``x == y`` builds an ``equal`` node, so use ``x is y`` to
    ask whether two symbols are the same value.

    >>> import graphdsl as gd
    >>> g = gd.Graph("s", input_types={"x": gd.TensorType(gd.float32, ("batch", 2))})
    >>> x, = g.inputs
    >>> x.dtype, x.shape, x.rank
    (DType.float32, (Dim('batch'), 2), 2)
    >>> y = x * 2
    >>> y.op, y.type, x.T.type
    ('mul', TensorType(float32[batch, 2]), TensorType(float32[2, batch]))
    >>> x[0].type, x.cast("int32").type
    (TensorType(float32[2]), TensorType(int32[batch, 2]))
    >>> (x == y).dtype  # a node, not a comparison of symbols
    DType.bool
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

    # -- MAX's TensorValue methods (numpy's and PyTorch's names where they agree)
    def __getitem__(self, index: Any) -> Symbol:
        """numpy/MAX indexing: ints, slices (negative bounds and steps), ``None``, ``...``,
        and one integer Symbol or array (a gather): see :func:`graphdsl.ops.slice_tensor`."""
        return _extension("getitem")(self, index)  # type: ignore[no-any-return]

    def __iter__(self) -> Any:
        raise TypeError(
            "a Symbol is not iterable at graph-build time; index it (x[0]) or split it "
            "(gd.ops.split)"
        )

    @property
    def T(self) -> Symbol:
        """The last two axes swapped, as MAX's ``TensorValue.T`` (numpy's ``.T`` for rank 2;
        numpy reverses every axis of a higher rank). A value of rank < 2 is its own."""
        if self.rank < 2:
            return self
        return self.transpose(-2, -1)

    def reshape(self, *shape: Any) -> Symbol:
        """``gd.ops.reshape``: ``x.reshape(2, -1)`` or ``x.reshape((2, -1))``."""
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self.graph._apply("reshape", (self,), {"shape": tuple(dims)})

    def transpose(self, dim_1: int, dim_2: int) -> Symbol:
        """Swap two axes, as MAX's ``TensorValue.transpose`` and PyTorch (not numpy's
        permutation: use :meth:`permute` for that)."""
        perm = _swap(self.rank, dim_1, dim_2)
        return self.graph._apply("transpose", (self,), {"perm": perm})

    def permute(self, *dims: Any) -> Symbol:
        """Reorder the axes: ``x.permute(0, 2, 1, 3)`` or ``x.permute([0, 2, 1, 3])``."""
        perm = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        return self.graph._apply("transpose", (self,), {"perm": tuple(perm)})

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Symbol:
        """Merge axes ``start_dim..end_dim`` (inclusive) into one, as MAX and PyTorch."""
        shape = _flattened(self.shape, start_dim, end_dim)
        return self.graph._apply("reshape", (self,), {"shape": shape})

    def broadcast_to(self, shape: Sequence[int | str]) -> Symbol:
        """``gd.ops.broadcast_to``."""
        return self.graph._apply("broadcast_to", (self,), {"shape": tuple(shape)})

    # -- reductions, as numpy's and PyTorch's methods (all axes when ``axis`` is None)
    def _reduce(self, name: str, axis: int | Sequence[int] | None, keepdims: bool) -> Symbol:
        ax = tuple(axis) if isinstance(axis, list) else axis
        return self.graph._apply(name, (self,), {"axis": ax, "keepdims": bool(keepdims)})

    def sum(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
        """``gd.ops.sum``: ``x.sum()``, ``x.sum(axis=1, keepdims=True)``.

        >>> import numpy as np, graphdsl as gd
        >>> g = gd.Graph("r", input_types={"x": gd.TensorType(gd.int16, (2, 3))})
        >>> x, = g.inputs
        >>> g.output(x.sum(), x.sum(axis=1), x.mean(axis=0), x.max(axis=-1, keepdims=True))
        >>> total, rows, means, top = gd.evaluate(g, [np.array([[1, 2, 3], [4, 5, 9]], np.int16)])
        >>> total, rows
        (array(24, dtype=int16), array([ 6, 18], dtype=int16))
        >>> means
        array([2.5, 3.5, 6. ], dtype=float32)
        >>> top.tolist(), x.min().type, x.prod(axis=(0, 1)).type
        ([[3], [9]], TensorType(int16[]), TensorType(int16[]))
        """
        return self._reduce("sum", axis, keepdims)

    def prod(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
        """``gd.ops.prod`` (see :meth:`sum`)."""
        return self._reduce("prod", axis, keepdims)

    def mean(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
        """``gd.ops.mean`` (see :meth:`sum`)."""
        return self._reduce("mean", axis, keepdims)

    def max(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
        """``gd.ops.max``, the largest element (see :meth:`sum`)."""
        return self._reduce("max", axis, keepdims)

    def min(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
        """``gd.ops.min``, the smallest element (see :meth:`sum`)."""
        return self._reduce("min", axis, keepdims)

    # -- operators: all build nodes through gd.ops
    def __add__(self, o: Operand) -> Symbol:
        return self.graph._apply("add", (self, o), {}, _getframe(1))

    def __radd__(self, o: Operand) -> Symbol:
        return self.graph._apply("add", (o, self), {}, _getframe(1))

    def __sub__(self, o: Operand) -> Symbol:
        return self.graph._apply("sub", (self, o), {}, _getframe(1))

    def __rsub__(self, o: Operand) -> Symbol:
        return self.graph._apply("sub", (o, self), {}, _getframe(1))

    def __mul__(self, o: Operand) -> Symbol:
        return self.graph._apply("mul", (self, o), {}, _getframe(1))

    def __rmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("mul", (o, self), {}, _getframe(1))

    def __truediv__(self, o: Operand) -> Symbol:
        return self.graph._apply("div", (self, o), {}, _getframe(1))

    def __rtruediv__(self, o: Operand) -> Symbol:
        return self.graph._apply("div", (o, self), {}, _getframe(1))

    def __floordiv__(self, o: Operand) -> Symbol:
        return self.graph._apply("floordiv", (self, o), {}, _getframe(1))

    def __rfloordiv__(self, o: Operand) -> Symbol:
        return self.graph._apply("floordiv", (o, self), {}, _getframe(1))

    def __mod__(self, o: Operand) -> Symbol:
        return self.graph._apply("mod", (self, o), {}, _getframe(1))

    def __rmod__(self, o: Operand) -> Symbol:
        return self.graph._apply("mod", (o, self), {}, _getframe(1))

    def __pow__(self, o: Operand) -> Symbol:
        return self.graph._apply("pow", (self, o), {}, _getframe(1))

    def __rpow__(self, o: Operand) -> Symbol:
        return self.graph._apply("pow", (o, self), {}, _getframe(1))

    def __matmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("matmul", (self, o), {}, _getframe(1))

    def __rmatmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("matmul", (o, self), {}, _getframe(1))

    def __and__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_and", (self, o), {}, _getframe(1))

    def __rand__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_and", (o, self), {}, _getframe(1))

    def __or__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_or", (self, o), {}, _getframe(1))

    def __ror__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_or", (o, self), {}, _getframe(1))

    def __xor__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_xor", (self, o), {}, _getframe(1))

    def __rxor__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_xor", (o, self), {}, _getframe(1))

    def __eq__(self, o: object) -> Symbol:  # type: ignore[override]
        return self.graph._apply("equal", (self, o), {}, _getframe(1))

    def __ne__(self, o: object) -> Symbol:  # type: ignore[override]
        return self.graph._apply("not_equal", (self, o), {}, _getframe(1))

    def __lt__(self, o: Operand) -> Symbol:
        return self.graph._apply("less", (self, o), {}, _getframe(1))

    def __le__(self, o: Operand) -> Symbol:
        return self.graph._apply("less_equal", (self, o), {}, _getframe(1))

    def __gt__(self, o: Operand) -> Symbol:
        return self.graph._apply("greater", (self, o), {}, _getframe(1))

    def __ge__(self, o: Operand) -> Symbol:
        return self.graph._apply("greater_equal", (self, o), {}, _getframe(1))

    def __neg__(self) -> Symbol:
        return self.graph._apply("negative", (self,), {}, _getframe(1))

    def __pos__(self) -> Symbol:
        return self

    def __abs__(self) -> Symbol:
        return self.graph._apply("abs", (self,), {}, _getframe(1))

    def __invert__(self) -> Symbol:
        return self.graph._apply("bitwise_not", (self,), {}, _getframe(1))


# (a Dim: a dimension of a shape, as its size; a str that is not a Dim is refused)
Operand = Symbol | Scalar | np.ndarray | np.generic | Dim


def _swap(rank: int, dim_1: int, dim_2: int) -> tuple[int, ...]:
    """The permutation that swaps two axes of a value of ``rank``."""
    a = normalize_axis(dim_1, rank, "dim_1")
    b = normalize_axis(dim_2, rank, "dim_2")
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _flattened(shape: Shape, start_dim: int, end_dim: int) -> tuple[Dim, ...]:
    """``shape`` with axes ``start_dim..end_dim`` merged (a scalar flattens to one element)."""
    if not shape:
        return (1,)
    lo = normalize_axis(start_dim, len(shape), "start_dim")
    hi = normalize_axis(end_dim, len(shape), "end_dim")
    if hi < lo:
        raise GraphError(
            f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for a value of "
            f"rank {len(shape)}; give start_dim <= end_dim"
        )
    return (*shape[:lo], derived_dim(shape[lo : hi + 1], ()), *shape[hi + 1 :])


# Conveniences of a Graph or Symbol that belong to higher layers (printing, verification,
# passes, indexing) are registered by the modules that provide them, so that the IR imports
# nothing above itself (as JAX's core defines a Primitive and lax registers its rules);
# ``import graphdsl`` loads every one.
_EXTENSIONS: dict[str, Callable[..., Any]] = {}


def register_extension(name: str, fn: Callable[..., Any]) -> None:
    """Provide ``name`` ("format", "to_dot", "verify", "explain", "copy", "warn_lossy",
    "getitem")."""
    _EXTENSIONS[name] = fn


def _extension(name: str) -> Callable[..., Any]:
    fn = _EXTENSIONS.get(name)
    if fn is None:
        raise GraphError(
            f"{name!r} is provided by a graphdsl module that is not loaded; `import graphdsl` "
            "loads them all"
        )
    return fn
