"""MAX's ``max._core.dialects.builtin``, as graphdsl's records of the attributes and types
that max.graph's static dims use (re-exported from :mod:`graphdsl.dims`; no MLIR).

>>> from graphdsl.max import Dim
>>> from graphdsl.max._core_dialects import builtin
>>> si64 = builtin.IntegerType(64, builtin.SignednessSemantics.signed)
>>> Dim(builtin.IntegerAttr(si64, 5)), Dim(5).to_mlir() == builtin.IntegerAttr(si64, 5)
(Dim(5), True)
"""

from __future__ import annotations

from graphdsl.dims import IntegerAttr, IntegerType, SignednessSemantics, StringAttr, TypedAttr

__all__ = ["IntegerAttr", "IntegerType", "SignednessSemantics", "StringAttr", "TypedAttr"]
