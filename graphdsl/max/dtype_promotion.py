"""MAX's ``max.graph.dtype_promotion`` helpers over graphdsl's ``max-graph`` policy.

max.graph converts a Python number, a numpy array or a driver tensor that meets a tensor of
dtype ``d`` into a constant of ``d`` ("promoting a weak value to a strong one"), and refuses
when the value would lose precision. graphdsl's ``max-graph`` policy holds the same rule
(its ``int_literal_ranges`` are max.graph's ``_DTYPE_MIN_AND_MAX_FULL_PRECISION``); these
helpers expose it under MAX's (private) names, for code written against them.

>>> from graphdsl.max import DeviceRef, DType, Graph
>>> _DTYPE_MIN_AND_MAX_FULL_PRECISION[DType.float16]
(-2048, 2048)
>>> with Graph("weak"):
...     _promote_to_strong(3, DType.int8, DeviceRef.CPU()).dtype
int8
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.builtin_policies import policy
from graphdsl.literals import max_graph_words
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._types import DeviceRef
from graphdsl.max._value import TensorValue

__all__ = ["_DTYPE_MIN_AND_MAX_FULL_PRECISION", "_promote_to_strong"]

_POLICY = policy("max-graph")


def _ranges() -> dict[DType, tuple[int | float, int | float]]:
    found: dict[DType, tuple[int | float, int | float]] = {}
    for d in DType:
        core = dtype_to_core(d)
        if core in _POLICY.int_literal_ranges:
            found[d] = _POLICY.int_literal_ranges[core]
    return found


#: max.graph's table: the Python ints (and, for float dtypes, the float range) each dtype
#: takes without losing precision (graphdsl's ``max-graph`` policy's ``int_literal_ranges``)
_DTYPE_MIN_AND_MAX_FULL_PRECISION: dict[DType, tuple[int | float, int | float]] = _ranges()


def _promote_to_strong(value: Any, strong_dtype: DType, device: DeviceRef) -> TensorValue:
    """``value`` (a Python number, a numpy scalar or 0-d array, a driver tensor, a
    TensorValue) as a TensorValue of ``strong_dtype`` on ``device``, as max.graph converts a
    weak value that meets a tensor: a float goes to float dtypes only, an int within
    :data:`_DTYPE_MIN_AND_MAX_FULL_PRECISION`; else MAX's ``ValueError`` ("Unsafe cast: ...",
    graphdsl's explanation after it)."""
    from graphdsl.max._constant import constant

    if isinstance(value, TensorValue):
        if value.dtype != strong_dtype:
            raise ValueError(
                f"Unsafe cast: Can't promote tensor of dtype {value.dtype} to "
                f"dtype(DType.{strong_dtype.name}) (graphdsl: cast it with ops.cast)"
            )
        return value
    if hasattr(value, "__dlpack__") and not isinstance(value, (np.ndarray, np.generic)):
        value = np.from_dlpack(value)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.size != 1:
            raise ValueError(
                f"Unsafe cast: only a single value is promoted to dtype(DType."
                f"{strong_dtype.name}); got an array of shape {arr.shape}"
            )
        value = arr.reshape(()).item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(
            f"_promote_to_strong: {value!r} is not a number, array or tensor (max.graph "
            "promotes only those)"
        )
    core = dtype_to_core(strong_dtype)
    problem = _POLICY.literal_problem(value, core)
    if problem:
        raise ValueError(
            f"{max_graph_words(value, core)} (graphdsl: the value {value!r} {problem} under "
            "policy 'max-graph')"
        )
    return constant(value, strong_dtype, device)
