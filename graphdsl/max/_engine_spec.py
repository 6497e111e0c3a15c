"""MAX's ``TensorSpec`` (a model input's or output's name, shape and dtype) and the text
of tensor types in MAX's engine errors, for :mod:`graphdsl.max.engine`, which re-exports
``TensorSpec``."""

from __future__ import annotations

from collections.abc import Sequence

from graphdsl.graph import Symbol
from graphdsl.max._dtype import _MLIR as _DTYPE_MLIR_NAMES
from graphdsl.max._dtype import DType, from_core

__all__ = ["TensorSpec"]

# MAX's names of dtypes in its execute() errors ("[(3, 5), f32]"): its MLIR names, but bool's
_MLIR_NAMES = {**_DTYPE_MLIR_NAMES, "bool": "bool"}


class TensorSpec:
    """A model input's or output's name, shape and dtype, as MAX's ``TensorSpec``: ``shape``
    is a list of ints, None for a symbolic dimension; ``dtype`` a
    :class:`graphdsl.max.DType`.

    >>> from graphdsl.max import DType
    >>> from graphdsl.max.engine import TensorSpec
    >>> spec = TensorSpec([None, 4], DType.float32, "input0")
    >>> spec, str(spec)
    (TensorSpec(shape=[None, 4], dtype=DType.float32, name=input0), '-1x4xfloat32')
    """

    __slots__ = ("_dtype", "_name", "_shape")

    def __init__(self, shape: Sequence[int | None] | None, dtype: DType, name: str) -> None:
        self._shape = None if shape is None else list(shape)
        self._dtype = dtype
        self._name = name

    @property
    def shape(self) -> list[int | None] | None:
        """The dimensions: ints, None where symbolic."""
        return None if self._shape is None else list(self._shape)

    @property
    def dtype(self) -> DType:
        """The element type."""
        return self._dtype

    @property
    def name(self) -> str:
        """The input's or output's name (``input0``, ``output0``...)."""
        return self._name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorSpec) and (self._shape, self._dtype, self._name) == (
            other._shape,
            other._dtype,
            other._name,
        )

    def __hash__(self) -> int:
        return hash((tuple(self._shape or ()), self._dtype, self._name))

    def __str__(self) -> str:
        if self._shape is None:
            return f"None x {self._dtype.name}"
        dims = ["-1" if d is None else str(d) for d in self._shape]
        return "x".join([*dims, self._dtype.name])

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype}, name={self._name})"


def _spec(s: Symbol, name: str) -> TensorSpec:
    shape = [d if isinstance(d, int) else None for d in s.shape]
    return TensorSpec(shape, from_core(s.dtype), name)


def _mlir(dims: Sequence[int | str], dtype: DType) -> str:
    """MAX's text of a tensor type in its errors: ``[(3, *), f32]``."""
    shown = ", ".join("*" if isinstance(d, str) else str(d) for d in dims)
    return f"[({shown}), {_MLIR_NAMES.get(dtype.name, dtype.name)}]"
