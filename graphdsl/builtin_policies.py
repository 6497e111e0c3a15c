"""The built-in policies by name, and MAX's ``implicit_cast_type`` over them.

>>> import graphdsl as gd
>>> gd.policy_names()
['default', 'jax', 'jax-x32', 'jax-strict', 'max', 'anvil', 'array-api']
"""

from __future__ import annotations

from graphdsl import lattices as _lat
from graphdsl.dtypes import DType
from graphdsl.policies import Policy

__all__ = ["implicit_cast_type", "policy", "policy_names"]

_X64 = {"int": DType.int64, "float": DType.float64, "complex": DType.complex128}

_POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy(
            "default",
            _lat.JAX,
            literals="anvil",
            description="JAX's lattice (x64 edges) with {anvil}'s ambiguous literals, "
            "32-bit literal defaults",
        ),
        Policy(
            "jax",
            _lat.JAX,
            literals="jax",
            defaults=_X64,
            description="jax.numpy with x64 enabled: JAX lattice and weak types",
        ),
        Policy(
            "jax-x32",
            _lat.JAX_X32,
            literals="jax",
            description="jax.numpy with x64 disabled (u32 x i32 -> i32)",
        ),
        Policy(
            "jax-strict",
            _lat.JAX_STRICT,
            literals="jax",
            defaults=_X64,
            strict_weak=True,
            description="jax.numpy with jax_numpy_dtype_promotion='strict'",
        ),
        Policy(
            "max",
            _lat.MAX,
            literals="max",
            description="Modular MAX's lattice (index, address, tensor_float32); "
            "literals take the known dtype exactly",
        ),
        Policy(
            "anvil",
            _lat.ANVIL,
            literals="anvil",
            description="{anvil}'s tables and ambiguity rules",
        ),
        Policy(
            "array-api",
            _lat.ARRAY_API,
            literals="array-api",
            description="the Array API's required promotions; everything else undefined",
        ),
    )
}


def policy_names() -> list[str]:
    """The names of the built-in policies."""
    return list(_POLICIES)


def policy(name: str | Policy = "default") -> Policy:
    """Look up a built-in policy by name (a :class:`Policy` passes through).

    >>> import graphdsl as gd
    >>> gd.policy("jax-x32").promote_types("uint32", "int32")
    DType.int32
    """
    if isinstance(name, Policy):
        return name
    try:
        return _POLICIES[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, list(_POLICIES), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"unknown policy {name!r}; {hint}known policies: {', '.join(_POLICIES)}"
        ) from None


_get_policy = policy


def implicit_cast_type(
    lhs: DType | str, rhs: DType | str, policy: str | Policy = "default"
) -> DType:
    """MAX's ``implicit_cast_type``: the smallest dtype both known dtypes promote to.

    >>> import graphdsl as gd
    >>> gd.implicit_cast_type(gd.int16, gd.float32)
    DType.float32
    >>> gd.implicit_cast_type("int64", "float16", policy="max")
    DType.float16
    """
    return _get_policy(policy).promote_types(lhs, rhs)
