"""``max.graph.ops.random``: random tensors from a graph-wide seed (``set_seed`` first, as in
MAX), as graphdsl's ``random_uniform`` and ``random_normal`` (ONNX RandomUniform and
RandomNormal). Each draw uses the seed plus the number of draws before it in the graph, so
two draws differ and a rebuilt graph draws the same. With an int seed the reference
interpreter's values are numpy's, onnxruntime's its own (continuing from run to run of a
session): equal in distribution, not element by element. With a seed tensor (a graph input
of :data:`SeedType`) both draw graphdsl's counter-based generator: the same values.

>>> import graphdsl as gd
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
>>> with Graph("r") as g:
...     ops.random.set_seed(42)
...     u = ops.random.uniform(TensorType(DType.float32, [3], DeviceRef.CPU()), range=(2, 3))
...     g.output(u)
>>> v = gd.evaluate(g, [])[0]
>>> v.dtype, bool(((v >= 2) & (v < 3)).all())
(dtype('float32'), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.dtypes import DType as CoreDType
from graphdsl.literals import literal_error
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._errors import UnsupportedError
from graphdsl.max._types import DeviceRef, TensorType
from graphdsl.max._value import TensorValue, current_graph, maxop, tv
from graphdsl.ops.random import TYPED_ONLY

__all__ = ["SeedType", "gaussian", "normal", "set_seed", "uniform"]

#: MAX's type of a seed given as a graph input: an int64 scalar on the CPU
SeedType = TensorType(DType.int64, [], DeviceRef.CPU())


def set_seed(seed: Any = 0) -> None:
    """The seed of the current graph's random draws: a Python int in int64's range (MAX's
    ValueError otherwise), or an int64 scalar tensor (:data:`SeedType`, a graph input: the
    seed is chosen when the model runs). Draw k after it uses seed + k. With a tensor seed
    graphdsl draws through its counter-based generator (see ``gd.ops.random_uniform``), so
    onnxruntime and ``gd.evaluate`` give the same values."""
    if isinstance(seed, TensorValue):
        if seed.dtype != DType.int64:
            raise TypeError(f"Seed value must be a tensor of type int64, got {seed.dtype}")
        if seed.rank != 0:
            raise ValueError(f"Seed value must be a scalar, got shape {seed.shape}")
    elif isinstance(seed, int) and not isinstance(seed, bool):
        if not -(2**63) <= seed < 2**63:
            raise ValueError(f"Seed value {seed} is out of range for int64")
    else:
        raise TypeError(f"set_seed: a seed is an int or an int64 scalar tensor, got {seed!r}")
    graph = current_graph()
    graph._random = [seed, 0]


def _next_seed() -> Any:
    graph = current_graph()
    state = getattr(graph, "_random", None)
    if state is None:
        raise RuntimeError("No seed set! Set with `ops.random.set_seed`.")
    seed, k = state
    state[1] += 1
    if isinstance(seed, TensorValue):
        return seed.symbol + np.int64(k) if k else seed.symbol
    return int(seed + k)


def _number(v: Any, what: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise UnsupportedError(f"random: {what}={v!r}: graphdsl takes Python numbers here")


def _draw(
    fn: Any, like: TensorType, bounds: tuple[Any, Any], what: str, constants: bool
) -> TensorValue:
    """A draw of ``like``'s type, as max 26.7 does (measured on its CPU: uniform int32 of
    range (0, 10) gave [6 2 3 5 8 0] where float32 gave [6.33 2.34 3.12 5.30 8.41 0.85]):
    uniform's bounds become constants of the dtype first (MAX's 'Unsafe cast', or its
    TypeError for a sub-byte dtype, otherwise; gaussian's mean and std stay floats); an
    integer dtype takes the float draw truncated toward zero; bool and float8_e8m0fnu are
    typed and not computed (MAX fails to compile them)."""
    graph = current_graph()
    dt = dtype_to_core(like.dtype)
    for v in bounds:
        _number(v, what)
        problem = graph.policy.literal_problem(v, dt) if constants else ""
        if problem:
            raise literal_error(True, v, dt, f"random {what} {v!r} {problem}")
    seed = _next_seed()
    shape = [dim_to_core(d) for d in like.shape]  # (symbolic sizes take a seed tensor)
    if isinstance(seed, int):
        shape = [int(d) for d in shape]
    drawn = dt if dt.is_float or dt in TYPED_ONLY else CoreDType.float32
    with graph:
        made = fn(shape, drawn, float(bounds[0]), float(bounds[1]), seed=seed)
    return tv(made if drawn is dt else made.cast(dt), like.device)


@maxop("random.uniform")
def uniform(like: TensorType, range: tuple[Any, Any] = (0, 1)) -> TensorValue:
    """Values of ``like``'s type drawn uniformly from ``[range[0], range[1])``."""
    return _draw(gd.random_uniform, like, tuple(range), "range", True)


@maxop("random.normal")
def normal(like: TensorType, mean: Any = 0, std: Any = 1) -> TensorValue:
    """Values of ``like``'s type drawn from the normal distribution of ``mean`` and ``std``."""
    return _draw(gd.random_normal, like, (mean, std), "mean and std", False)


gaussian = normal
