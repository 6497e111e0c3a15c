"""MAX's PyTorch-style ``TensorValue`` methods (``unflatten``, ``unbind``, ``repeat``,
``masked_fill``, ``amin``, ``amax``, ``swapaxes``, ``flip``, ``size``), each over
graphdsl.max's ops: a base class of :class:`graphdsl.max.TensorValue`.

>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
>>> with Graph("c", input_types=[TensorType(DType.float32, [2, 12], DeviceRef.CPU())]) as g:
...     x = g.inputs[0].tensor
...     x.unflatten(1, (3, -1)).shape, x.repeat(2, 1, 1).shape, len(x.unbind(0))
([Dim(2), Dim(3), Dim(4)], [Dim(2), Dim(2), Dim(12)], 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from graphdsl.max._dim import StaticDim

if TYPE_CHECKING:
    from graphdsl.max._value import TensorValue

__all__ = ["TorchStyleMethods"]


# graphdsl.max.ops, which registers itself here when it is imported (it imports this
# module's users, so this module cannot import it)
_OPS: list[Any] = []
# graphdsl.max._value's apply, registered there
_APPLY: list[Any] = []


def _ops() -> Any:
    return _OPS[0]


def _axis(self: Any, axis: int, what: str) -> int:
    if not -self.rank <= axis < self.rank:
        raise IndexError(f"{what}: axis {axis} is out of range for a value of rank {self.rank}")
    return axis % int(self.rank)


class TorchStyleMethods:
    """MAX's PyTorch-style methods of ``TensorValue`` (a base class of it)."""

    __slots__ = ()

    def __contains__(self, item: object) -> bool:
        """``in`` is refused, as MAX refuses it (a graph value holds no Python items)."""
        raise TypeError(f"'{type(self).__name__}' is not a container")

    def size(self: Any, dim: int | None = None) -> Any:
        """The shape (``size()``) or one dimension of it (``size(dim)``), as PyTorch's."""
        return self.shape if dim is None else self.shape[_axis(self, dim, "size")]

    def swapaxes(self: Any, axis0: int, axis1: int) -> TensorValue:
        """``transpose(axis0, axis1)`` (numpy's name)."""
        return self.transpose(axis0, axis1)  # type: ignore[no-any-return]

    def unflatten(self: Any, dim: int, sizes: Sequence[Any]) -> TensorValue:
        """Axis ``dim`` split into axes of ``sizes`` (one may be -1), as PyTorch's: a
        reshape, MAX's ValueError when the sizes do not make the axis."""
        axis = _axis(self, dim, "unflatten")
        shape = list(self.shape)
        sizes = list(sizes)
        known = [s for s in sizes if not (isinstance(s, int) and s == -1)]
        if len(known) < len(sizes) - 1:
            raise ValueError(f"unflatten: at most one -1 in sizes, got {sizes}")
        size = shape[axis]
        if isinstance(size, StaticDim) and all(isinstance(s, (int, StaticDim)) for s in known):
            product = 1
            for s in known:
                product *= int(s)
            whole = int(size)
            ok = whole % product == 0 if len(known) < len(sizes) else whole == product
            if product == 0 or not ok:
                raise ValueError(
                    f"unflatten: sizes {sizes} do not make dimension {dim} of size {whole}"
                )
        return self.reshape([*shape[:axis], *sizes, *shape[axis + 1 :]])  # type: ignore[no-any-return]

    def unbind(self: Any, dim: int = 0) -> tuple[TensorValue, ...]:
        """The slices along axis ``dim`` (which must be static), without it, as a tuple
        (PyTorch's ``unbind``; MAX's ValueError for a symbolic axis)."""
        axis = _axis(self, dim, "unbind")
        size = self.shape[axis]
        if not isinstance(size, StaticDim):
            raise ValueError(f"unbind: dimension {dim} is {size!r}, not static")
        ops = _ops()
        pieces = ops.split(self, [1] * int(size), axis) if int(size) else []
        return tuple(ops.squeeze(p, axis) for p in pieces)

    def repeat(self: Any, *sizes: Any) -> TensorValue:
        """The value tiled ``sizes`` times along each axis, as PyTorch's ``repeat``: as many
        sizes as axes or more (new leading axes); fewer is MAX's ValueError."""
        if len(sizes) == 1 and isinstance(sizes[0], Iterable):
            sizes = tuple(sizes[0])
        if len(sizes) < self.rank:
            raise ValueError(
                f"repeat: {len(sizes)} sizes for a value of rank {self.rank}; give at least one "
                "per axis"
            )
        x = self
        for _ in range(len(sizes) - self.rank):
            x = _ops().unsqueeze(x, 0)
        return _ops().tile(x, list(sizes))  # type: ignore[no-any-return]

    def masked_fill(self: Any, mask: Any, value: Any) -> TensorValue:
        """``value`` where ``mask`` holds, the value elsewhere (``ops.where``; ``mask``
        broadcasts)."""
        ops = _ops()
        filled = ops.where(mask, value, self)
        if filled.shape != self.shape:
            filled = ops.broadcast_to(filled, self.shape)
        return filled  # type: ignore[no-any-return]

    def _reduce_axes(self: Any, fn: str, axis: int | Sequence[int] | None) -> TensorValue:
        if axis is None:
            axes = list(range(self.rank))
        else:
            axes = [axis] if isinstance(axis, int) else list(axis)
        found = sorted({_axis(self, a, fn) for a in axes}, reverse=True)
        x = self
        for a in found:
            x = _ops().squeeze(getattr(_ops(), fn)(x, axis=a), a)
        return x  # type: ignore[no-any-return]

    def amin(self: Any, axis: int | Sequence[int] | None = None) -> TensorValue:
        """The minimum over ``axis`` (an int, several, or all when None), the axes removed
        (PyTorch's ``amin``)."""
        return self._reduce_axes("min", axis)  # type: ignore[no-any-return]

    def amax(self: Any, axis: int | Sequence[int] | None = None) -> TensorValue:
        """The maximum over ``axis`` (an int, several, or all when None), the axes removed
        (PyTorch's ``amax``)."""
        return self._reduce_axes("max", axis)  # type: ignore[no-any-return]

    def flip(self: Any, dims: int | Sequence[int]) -> TensorValue:
        """The value reversed along each axis of ``dims`` (PyTorch's ``flip``): graphdsl's
        ``slice_tensor`` with step -1 (symbolic axes too)."""
        import graphdsl.ops as gd

        apply = _APPLY[0]
        axes = {_axis(self, d, "flip") for d in ([dims] if isinstance(dims, int) else dims)}
        index = [slice(None, None, -1) if a in axes else slice(None) for a in range(self.rank)]
        return apply("flip", lambda v: gd.slice_tensor(v, index), self)  # type: ignore[no-any-return]
