"""Placeholders for MAX's MLIR objects: graphdsl has no MLIR and no kernel libraries.

max.graph builds its graphs as MLIR modules: code written for it creates an MLIR
``Context`` (``max._mlir_context.default_mlir_context()``), enters a ``Location``, and
hands graphs a ``KernelLibrary`` of compiled kernels. graphdsl's graphs are its own IR, so
these names exist here only so that such code runs unchanged: a :class:`Context` and a
:class:`Location` can be created and entered and hold nothing, an empty
:class:`KernelLibrary` records nothing, and ``Graph(..., context=..., kernel_library=...)``
ignores them. Anything real (kernel paths, MLIR attributes and types, an opaque MLIR type as
a graph input) raises :class:`~graphdsl.max.UnsupportedError` naming the feature. The one
exception is a dimension's attribute (``Dim.to_mlir()``, ``Dim.from_mlir(attr)``): graphdsl
keeps records of those kinds, ``max._core.dialects``' ``kgen`` and ``builtin`` in
:mod:`graphdsl.max._core_dialects`.

>>> from graphdsl.max import DeviceRef, DType, Graph, KernelLibrary, TensorType
>>> from graphdsl.max.mlir import Location, default_mlir_context
>>> ctx = default_mlir_context()
>>> with ctx, Location.unknown():
...     g = Graph("g", input_types=[TensorType(DType.int8, [2], DeviceRef.CPU())],
...               kernel_library=KernelLibrary(), context=ctx)
>>> len(KernelLibrary())
0
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from os import PathLike
from typing import Any

from graphdsl.max._errors import UnsupportedError

__all__ = ["Context", "KernelLibrary", "Location", "OpaqueType", "default_mlir_context"]

_NO_MLIR = "graphdsl has no MLIR (its graphs are graphdsl's own IR)"


class _Entered:
    """A context manager that does nothing (a placeholder's ``with`` block)."""

    def __enter__(self) -> _Entered:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class Context(_Entered):
    """MAX's MLIR context, as a placeholder: it can be created and entered (``with ctx:``)
    and holds nothing; graphdsl has no MLIR, so no dialect, attribute or type lives in it.
    ``Graph(..., context=ctx)`` ignores it."""

    def __repr__(self) -> str:
        return "<graphdsl.max.mlir.Context: a placeholder (graphdsl has no MLIR)>"


class Location(_Entered):
    """MAX's MLIR source location, as a placeholder: ``Location.unknown()`` can be entered
    (``with Location.unknown():``) and records nothing (graphdsl records each node's
    Python source location itself)."""

    @classmethod
    def unknown(cls, context: Context | None = None) -> Location:
        """The unknown location (a placeholder; ``context`` is ignored)."""
        return cls()

    def __repr__(self) -> str:
        return "loc(unknown)"


def default_mlir_context() -> Context:
    """MAX's ``max._mlir_context.default_mlir_context()``: a placeholder :class:`Context`
    (graphdsl has no MLIR)."""
    return Context()


class KernelLibrary:
    """MAX's library of compiled kernels, as a placeholder: ``KernelLibrary()`` (MAX's
    constructor) is an empty library that records nothing, which ``Graph(...,
    kernel_library=...)`` accepts and ignores. graphdsl has no kernel libraries: giving it
    kernel paths (here or with :meth:`load_paths`) raises :class:`UnsupportedError`
    (custom kernels; MAX's ``ops.custom`` is not supported either).

    >>> KernelLibrary().library_paths(), "my_kernel" in KernelLibrary()
    ([], False)
    """

    def __init__(
        self, context: Context | None = None, paths: Iterable[str | PathLike[str]] = ()
    ) -> None:
        self.load_paths(context, paths)

    def load_paths(
        self, context: Context | None, custom_extensions: Iterable[str | PathLike[str]]
    ) -> None:
        """Load kernels from ``custom_extensions``: none can be (graphdsl has no kernel
        libraries), so any path raises :class:`UnsupportedError`."""
        paths = list(custom_extensions)
        if paths:
            raise UnsupportedError(
                f"KernelLibrary: loading custom kernels ({', '.join(map(str, paths))}) is not "
                "supported by graphdsl: it has no kernel libraries (MAX's Mojo custom ops)"
            )

    def library_paths(self) -> list[str]:
        """The kernel paths loaded: none."""
        return []

    def __contains__(self, kernel: object) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __getitem__(self, kernel: str) -> Any:
        raise UnsupportedError(
            f"KernelLibrary[{kernel!r}]: graphdsl has no kernel libraries (MAX's compiled "
            "kernels and Mojo custom ops are not supported)"
        )

    def __repr__(self) -> str:
        return "KernelLibrary()  # a placeholder: graphdsl has no kernel libraries"


class OpaqueType:
    """MAX's ``_OpaqueType(name, parameters)`` (an MLIR opaque type), as a record: it holds
    its name and parameters and compares by them, but graphdsl has no MLIR types, so using
    one as a graph input raises :class:`UnsupportedError`."""

    def __init__(self, name: str, parameters: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.parameters = dict(parameters or {})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueType) and (self.name, self.parameters) == (
            other.name,
            other.parameters,
        )

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"_OpaqueType(name={self.name!r}, parameters={self.parameters!r})"

    def to_mlir(self) -> Any:
        """MAX's MLIR type: :class:`UnsupportedError` (graphdsl has no MLIR)."""
        raise UnsupportedError(f"{self!r}.to_mlir(): {_NO_MLIR}")


def check_placeholder(graph: str, what: str, given: object, cls: type) -> None:
    """Refuse ``given`` for ``Graph(..., what=given)`` unless it is None or one of this
    module's placeholders (an instance of ``cls``), which are ignored."""
    if given is not None and not isinstance(given, cls):
        raise UnsupportedError(
            f"Graph {graph!r}: {what}={given!r} is not supported by graphdsl: {_NO_MLIR} and "
            "no kernel libraries (an empty graphdsl.max.KernelLibrary() or "
            "graphdsl.max.mlir.Context() is accepted and ignored)"
        )
