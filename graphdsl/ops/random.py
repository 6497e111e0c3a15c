"""Random values: ``random_uniform`` and ``random_normal`` of a static shape, from a seed
(MAX's ``ops.random``; ONNX ``RandomUniform`` and ``RandomNormal``).

The reference interpreter draws from numpy's ``default_rng(seed)`` (uniform: ``low +
(high - low) * random()``; normal: ``mean + std * standard_normal()``) in float64 and rounds
to the dtype; onnxruntime draws from its own generator with the same seed. The two streams
differ: the values agree in distribution (bounds, mean, spread), not element by element.
The reference draws the same values at each evaluation; onnxruntime's kernel continues its
stream from one run of a session to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.ops._define import Symbol, op
from graphdsl.ops._define import define as _define
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError, TensorType

__all__ = ["random_normal", "random_uniform"]


def random_uniform(
    shape: Sequence[int], dtype: DType, low: float = 0.0, high: float = 1.0, seed: int = 0
) -> Symbol:
    """Values drawn uniformly from ``[low, high)``, of a static ``shape`` and floating
    ``dtype``, from ``seed``. With no Symbol operand, it builds in the graph of the
    enclosing ``with graph:`` block.

    >>> import graphdsl as gd
    >>> with gd.Graph("u") as g:
    ...     u = gd.ops.random_uniform((2, 3), gd.float32, -1.0, 1.0, seed=7)
    ...     g.output(u)
    >>> v = gd.evaluate(g, [])[0]
    >>> v.shape, bool(((v >= -1) & (v < 1)).all())
    ((2, 3), True)
    """
    return op("random_uniform", shape=tuple(shape), dtype=dtype, low=float(low),
              high=float(high), seed=int(seed))  # fmt: skip


def random_normal(
    shape: Sequence[int], dtype: DType, mean: float = 0.0, std: float = 1.0, seed: int = 0
) -> Symbol:
    """Values drawn from the normal distribution of ``mean`` and ``std``, of a static
    ``shape`` and floating ``dtype``, from ``seed``.

    >>> import graphdsl as gd
    >>> with gd.Graph("n") as g:
    ...     g.output(gd.ops.random_normal((1000,), gd.float64, 5.0, 0.5, seed=1))
    >>> v = gd.evaluate(g, [])[0]
    >>> round(float(v.mean()), 1), round(float(v.std()), 1)
    (5.0, 0.5)
    """
    return op("random_normal", shape=tuple(shape), dtype=dtype, mean=float(mean),
              std=float(std), seed=int(seed))  # fmt: skip


def _rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    dt: DType = attrs["dtype"]
    if not dt.is_float:
        raise OpTypeError(f"random values are floating: {dt.name} is not; cast the result")
    if dt is DType.float8_e8m0fnu:
        raise OpTypeError(
            "random values of float8_e8m0fnu, which holds only powers of two (no zero, no "
            "negatives), would be mostly NaN; draw a float32 and cast the result"
        )
    shape = attrs["shape"]
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ShapeError(f"random values need a static shape of ints >= 0, got {shape}")
    return (), TensorType(dt, tuple(shape))


def _uniform_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    rng = np.random.default_rng(attrs["seed"])
    low, high = attrs["low"], attrs["high"]
    return np.asarray(low + (high - low) * rng.random(attrs["shape"]))


def _normal_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    rng = np.random.default_rng(attrs["seed"])
    return np.asarray(attrs["mean"] + attrs["std"] * rng.standard_normal(attrs["shape"]))


_define(random_uniform, _rule, _uniform_impl, "no operands: a floating dtype")
_define(random_normal, _rule, _normal_impl, "no operands: a floating dtype")
