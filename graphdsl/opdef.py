"""The op registry: what the IR knows of an op, filled in by ``graphdsl.ops``.

An :class:`OpDef` holds an op's type rule (operand types and attributes -> the dtype each
operand computes in and the result's type), its numpy reference implementation, the
operand kinds it accepts (for docs), the operands it takes by truth value, and its public
function. The IR looks rules up here when a node is built; the op families in
``graphdsl/ops/`` register each op beside its function (``graphdsl.ops._define.define``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.policies import Policy
from graphdsl.types import TensorType

__all__ = ["OPS", "Impl", "OpDef", "Rule", "register"]

Rule = Callable[[Policy, list[TensorType], dict[str, Any]], tuple[tuple[DType, ...], TensorType]]
Impl = Callable[[list[np.ndarray], dict[str, Any], TensorType], np.ndarray]


class OpDef(NamedTuple):
    name: str
    rule: Rule
    impl: Impl
    accepts: str  # operand kinds, for docs and the support matrix
    truthy: tuple[int, ...] = ()  # operands converted by truth value (x != 0)
    family: str = ""  # the module of graphdsl.ops that defines it ("elementwise", ...)


OPS: dict[str, OpDef] = {}


def register(opdef: OpDef) -> None:
    """Add ``opdef`` to the registry; a name is defined once."""
    if opdef.name in OPS:
        raise ValueError(f"op {opdef.name!r} is defined twice")
    OPS[opdef.name] = opdef
