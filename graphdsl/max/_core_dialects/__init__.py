"""MAX's ``max._core.dialects``, for its dimension attributes only: :mod:`.builtin` and
:mod:`.kgen` hold graphdsl's records of the attributes that max.graph's dims convert to and
from (``Dim.to_mlir()``, ``Dim.from_mlir(attr)``, ``Dim(attr)``). graphdsl has no MLIR: the
records are immutable, equal by value and need no context (:class:`graphdsl.dims.TypedAttr`).

>>> from graphdsl.max import AlgebraicDim, Dim
>>> from graphdsl.max._core_dialects import builtin, kgen
>>> attr = kgen.ParamOperatorAttr(kgen.POC.add, [Dim("batch").to_mlir(), Dim(10).to_mlir()])
>>> d = AlgebraicDim(attr)
>>> d, d.attr.opcode == kgen.POC.add, isinstance(Dim(10).to_mlir(), builtin.IntegerAttr)
(Dim('batch') + Dim(10), True, True)
"""

from __future__ import annotations

from graphdsl.max._core_dialects import builtin, kgen

__all__ = ["builtin", "kgen"]
