"""MAX's ``max._core.dialects.kgen``, as graphdsl's records of the parameter attributes that
max.graph's symbolic and algebraic dims use (re-exported from :mod:`graphdsl.dims`; no MLIR).

>>> from graphdsl.max import Dim
>>> from graphdsl.max._core_dialects import builtin, kgen
>>> si64 = builtin.IntegerType(64, builtin.SignednessSemantics.signed)
>>> Dim(kgen.ParamDeclRefAttr("batch", si64)), (Dim("n") * 2).to_mlir().opcode.name
(Dim('batch'), 'mul_no_wrap')
"""

from __future__ import annotations

from graphdsl.dims import POC, ParamDeclRefAttr, ParamOperatorAttr

__all__ = ["POC", "ParamDeclRefAttr", "ParamOperatorAttr"]
