"""MAX's ``max.graph.value`` module: the graph values (re-exported from
:mod:`graphdsl.max`), MAX's ``Numeric`` alias and its ``_is_strong_tensor_value_like``."""

from __future__ import annotations

import numpy as np

from graphdsl.max._buffer import BufferValue, BufferValueLike
from graphdsl.max._common import TensorValueLike
from graphdsl.max._types import Weight
from graphdsl.max._value import TensorValue, Value

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


def _is_strong_tensor_value_like(obj: object) -> bool:
    """Whether ``obj`` is a value with a dtype of its own (a TensorValue, a graph input
    holding one, a Weight, a numpy array), as MAX's ``_is_strong_tensor_value_like``;
    types (``TensorType``, ``BufferType``) and Python numbers are not.

    >>> _is_strong_tensor_value_like(np.zeros(2)), _is_strong_tensor_value_like(1.5)
    (True, False)
    """
    if isinstance(obj, Value):
        return not isinstance(obj, BufferValue)
    return isinstance(obj, (TensorValue, Weight, np.ndarray))
