"""Random values: ``random_uniform`` and ``random_normal`` of a static shape, from a seed
(MAX's ``ops.random``; ONNX ``RandomUniform`` and ``RandomNormal``).

A seed given as an int64 scalar Symbol (a graph input: chosen when the model runs, as
MAX's ``set_seed(tensor)``) draws through a counter-based generator built of integer ops:
SplitMix64's mixing (uint64, wrapping) of the seed, then of each axis's index in turn
(``z = mix(z + (i + 1) * 0x9E3779B97F4A7C15)``), whose top 53 bits make a float64 in
[0, 1). The shape may be symbolic. These are exact integer and power-of-two
operations, so the reference interpreter and onnxruntime give the same values bit for bit
for the uniform draw; the normal draw (Box-Muller, one log, sqrt and cos per element) agrees
to float64 rounding of those functions before it is cast to the dtype.

The reference interpreter draws from numpy's ``default_rng(seed)`` (uniform: ``low +
(high - low) * random()``; normal: ``mean + std * standard_normal()``) in float64 and rounds
to the dtype; onnxruntime draws from its own generator with the same seed. The two streams
differ: the values agree in distribution (bounds, mean, spread), not element by element.
The reference draws the same values at each evaluation; onnxruntime's kernel continues its
stream from one run of a session to the next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.ops._define import Symbol, op, typed_only
from graphdsl.ops._define import define as _define
from graphdsl.ops.logic import bitwise_xor
from graphdsl.ops.slicing import range as arange
from graphdsl.ops.unary import cos, log, sqrt
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError, TensorType

__all__ = ["random_normal", "random_uniform"]


def random_uniform(
    shape: Sequence[int | str],
    dtype: DType,
    low: float = 0.0,
    high: float = 1.0,
    seed: int | Symbol = 0,
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

    A seed given when the model runs (an int64 scalar input) draws the same values on
    onnxruntime as in the reference, bit for bit:

    >>> g = gd.Graph("keyed", input_types={"seed": gd.TensorType(gd.int64, ())})
    >>> g.output(gd.ops.random_uniform((3,), gd.float64, seed=g.inputs[0]))
    >>> gd.evaluate(g, {"seed": np.int64(7)})[0].round(6)
    array([0.721508, 0.649704, 0.549374])
    """

    def keyed(s: Symbol) -> Symbol:
        u = _keyed_unit(s, shape, "random_uniform", 0)
        return u * float(high - low) + float(low) if (low, high) != (0, 1) else u

    return _draw("random_uniform", shape, dtype, {"low": float(low), "high": float(high)},
                 seed, keyed)  # fmt: skip


def random_normal(
    shape: Sequence[int | str],
    dtype: DType,
    mean: float = 0.0,
    std: float = 1.0,
    seed: int | Symbol = 0,
) -> Symbol:
    """Values drawn from the normal distribution of ``mean`` and ``std``, of a static
    ``shape`` and floating ``dtype``, from ``seed``.

    >>> import graphdsl as gd
    >>> with gd.Graph("n") as g:
    ...     g.output(gd.ops.random_normal((1000,), gd.float64, 5.0, 0.5, seed=1))
    >>> v = gd.evaluate(g, [])[0]
    >>> round(float(v.mean()), 1), round(float(v.std()), 1)
    (5.0, 0.5)

    With an int64 scalar Symbol as ``seed``, the draw is Box-Muller on two keyed uniform
    streams: ``sqrt(-2 log(1 - u1)) * cos(2 pi u2)``.
    """

    def keyed(s: Symbol) -> Symbol:
        u1 = _keyed_unit(s, shape, "random_normal", 0)
        u2 = _keyed_unit(s, shape, "random_normal", 1)
        z = sqrt(log(1.0 - u1) * -2.0) * cos(u2 * (2 * np.pi))
        return z * float(std) + float(mean) if (mean, std) != (0, 1) else z

    return _draw("random_normal", shape, dtype, {"mean": float(mean), "std": float(std)},
                 seed, keyed)  # fmt: skip


def _draw(name: str, shape: Sequence[int | str], dtype: DType, params: dict[str, float],
          seed: int | Symbol, keyed: Callable[[Symbol], Symbol]) -> Symbol:  # fmt: skip
    """The op ``name`` of an int seed; ``keyed`` (the counter-based draw, in float64) of a
    Symbol seed, cast to ``dtype``; a typed-only node where the policy types and refuses."""
    if not isinstance(seed, Symbol):
        return op(name, shape=tuple(shape), dtype=dtype, **params, seed=int(seed))
    if _typed_only(seed.graph.policy, dtype):
        with seed.graph:  # (typed only: never computed, so no seed to read)
            return op(name, shape=tuple(shape), dtype=dtype, **params, seed=0)
    _rule(seed.graph.policy, [], {"dtype": dtype, "shape": ()})  # the op's dtype checks,
    drawn = keyed(seed)  # before any node is built
    return drawn if dtype is DType.float64 else drawn.cast(dtype)


_GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment and its two mixing multipliers
_MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def _mix(z: Symbol) -> Symbol:
    """SplitMix64's finalizer on uint64 (shifts as floor divisions by powers of two)."""
    for shift, mult in zip((30, 27), _MIX, strict=True):
        z = bitwise_xor(z, z // np.uint64(1 << shift)) * np.uint64(mult)
    return bitwise_xor(z, z // np.uint64(1 << 31))


def _keyed_unit(seed: Symbol, shape: Sequence[int | str], what: str, stream: int) -> Symbol:
    """float64 values in [0, 1) of ``shape``: the hash z = mix(seed + (stream + 1) * G),
    then z = mix(z + (i + 1) * G) for each axis's index i in turn (G SplitMix64's
    increment), top 53 bits. No stride arithmetic, so symbolic sizes work."""
    if seed.rank != 0 or not seed.dtype.is_integer:
        raise OpTypeError(
            f"{what}: a seed given as a Symbol must be an integer scalar (int64, as MAX's "
            f"SeedType), got {seed.type}; give a Python int or an int64[] input"
        )
    dims = tuple(shape)
    if not all(isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
               for d in dims):  # fmt: skip
        raise ShapeError(f"{what}: random values need a shape of sizes >= 0, got {dims}")
    u64, golden = DType.uint64, np.uint64(_GOLDEN)
    z = _mix(seed.cast(u64) + np.uint64((stream + 1) * _GOLDEN % 2**64))
    for j, d in enumerate(dims):
        with seed.graph:
            index = arange(1, d + 1, dtype=u64) if isinstance(d, int) else (
                arange(0, d, dtype=u64) + np.uint64(1))  # fmt: skip
        if len(dims) > 1:
            index = index.reshape(*[d if k == j else 1 for k in range(len(dims))])
        z = _mix(z + index * golden)
    unit: Symbol = (z // np.uint64(1 << 11)).cast(DType.float64) * float(2.0**-53)
    return unit


# dtypes max.graph types random values of and its compiler then refuses (recorded with max
# 26.7: "Failed to compile the model"): typed under a bool_arithmetic policy (max-graph),
# refused when computed (graphdsl.ops._define.uncomputable)
TYPED_ONLY = (DType.bool, DType.float8_e8m0fnu)
for _name in ("random_uniform", "random_normal"):
    typed_only(_name, TYPED_ONLY, "draw a float32 and cast the result")


def _typed_only(p: Policy, dt: DType) -> bool:
    return p.bool_arithmetic and dt in TYPED_ONLY


def _rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    dt: DType = attrs["dtype"]
    shape = attrs["shape"]
    if _typed_only(p, dt):
        if not all(isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool)
                                          and d >= 0) for d in shape):  # fmt: skip
            raise ShapeError(f"random values need a shape of sizes >= 0, got {shape}")
        return (), TensorType(dt, tuple(shape))
    if not dt.is_float:
        raise OpTypeError(f"random values are floating: {dt.name} is not; cast the result")
    if dt is DType.float8_e8m0fnu:
        raise OpTypeError(
            "random values of float8_e8m0fnu, which holds only powers of two (no zero, no "
            "negatives), would be mostly NaN; draw a float32 and cast the result"
        )
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
