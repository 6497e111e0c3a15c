"""MAX's ``max.graph.value`` module: the graph values (re-exported from
:mod:`graphdsl.max`), MAX's ``Numeric`` alias and its ``_is_strong_tensor_value_like``."""

from __future__ import annotations

import numpy as np

from graphdsl.max._buffer import BufferValue, BufferValueLike
from graphdsl.max._common import TensorValueLike
from graphdsl.max._value import TensorValue, Value
from graphdsl.max._value_compat import is_strong_tensor_value_like as _is_strong_tensor_value_like

__all__ = [
    "BufferValue",
    "BufferValueLike",
    "Numeric",
    "TensorValue",
    "TensorValueLike",
    "Value",
    "_is_strong_tensor_value_like",
]

#: A Python or numpy number or array, which MAX's ops take as a weak (literal) operand
Numeric = int | float | np.integer | np.floating | np.ndarray
