"""The "jax", "jax-x32" and "jax-strict" policies against jax.numpy itself, pair by pair.

For every pair drawn from the 15 standard dtypes, the small floats and int4/uint4 that the
installed JAX has, and Python
int/float/complex, ``jnp.add`` on zeros gives a dtype and a weak-type flag; the policy
must give the same dtype and ambiguity (weak), or raise where JAX raises.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import graphdsl as gd
from graphdsl import DType

jax = pytest.importorskip("jax", reason="jax is a test dependency: pip install -e '.[test]'")
jnp = pytest.importorskip("jax.numpy")

STANDARD = [
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
    "float8_e4m3fn", "float8_e5m2",
    # the small dtypes JAX added later, where the installed JAX has them (0.4.30, the oldest
    # admitted, lacks float8_e8m0fnu, float4_e2m1fn and the float6 types)
    *[d for d in ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn",
                  "float6_e3m2fn", "float4_e2m1fn", "int4", "uint4") if hasattr(jnp, d)],
]  # fmt: skip
X32 = [d for d in STANDARD if d not in ("int64", "uint64", "float64", "complex128")]
PYTHON = [int, float, complex]


@pytest.fixture
def jax_mode(request: pytest.FixtureRequest) -> Iterator[None]:
    x64, promotion = request.param
    old_x64 = jax.config.jax_enable_x64
    old_promo = jax.config.jax_numpy_dtype_promotion
    jax.config.update("jax_enable_x64", x64)
    jax.config.update("jax_numpy_dtype_promotion", promotion)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old_x64)
        jax.config.update("jax_numpy_dtype_promotion", old_promo)


def zero(t: Any) -> Any:
    return t(0) if t in PYTHON else jnp.zeros((), dtype=np.dtype(DType(t).np))


def jax_result(a: Any, b: Any) -> tuple[str, bool] | None:
    try:  # traced, not run: XLA's CPU backend computes no float4/float6
        out = jax.eval_shape(lambda: jnp.add(zero(a), zero(b)))
    except (TypeError, ValueError):  # TypePromotionError is a ValueError subclass
        return None
    weak = getattr(out, "weak_type", None)
    if weak is None:  # JAX 0.4.30's ShapeDtypeStruct has no weak_type: its dtype rule's flag
        from jax._src import dtypes as jax_dtypes  # (XLA's CPU adds no int4 to run it)

        operands = [t(0) if t in PYTHON else np.dtype(DType(t).np) for t in (a, b)]
        _, weak = jax_dtypes.result_type(*operands, return_weak_type_flag=True)
    return str(out.dtype), bool(weak)


def ours(p: gd.Policy, a: Any, b: Any) -> tuple[str, bool] | None:
    def op(t: Any) -> tuple[DType, bool]:
        if t in PYTHON:
            return p.literal_type(t(0)).dtype, True
        return DType(t), False

    (da, aa), (db, ab) = op(a), op(b)
    try:
        res = p.common_dtype(da, db, aa, ab)
    except gd.PromotionError:
        return None
    return res.dtype.name, res.ambiguous


def compare(policy: str, types: list[Any]) -> list[str]:
    p = gd.policy(policy)
    bad = []
    for a, b in itertools.product(types, repeat=2):
        want, got = jax_result(a, b), ours(p, a, b)
        if want != got:
            name = lambda t: t.__name__ if t in PYTHON else t  # noqa: E731
            bad.append(f"{name(a)} x {name(b)}: jax {want}, {policy} {got}")
    return bad


@pytest.mark.parametrize("jax_mode", [(True, "standard")], indirect=True)
@pytest.mark.usefixtures("jax_mode")
def test_jax_x64() -> None:
    bad = compare("jax", STANDARD + PYTHON)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("jax_mode", [(False, "standard")], indirect=True)
@pytest.mark.usefixtures("jax_mode")
def test_jax_x32() -> None:
    bad = compare("jax-x32", X32 + PYTHON)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("jax_mode", [(True, "strict")], indirect=True)
@pytest.mark.usefixtures("jax_mode")
def test_jax_strict() -> None:
    bad = compare("jax-strict", STANDARD + PYTHON)
    assert not bad, "\n".join(bad)
