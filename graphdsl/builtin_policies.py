"""The built-in policies by name, and MAX's ``implicit_cast_type`` over them.

>>> import graphdsl as gd
>>> gd.policy_names()
['default', 'jax', 'jax-x32', 'jax-strict', 'max', 'max-graph', 'anvil', 'array-api']
"""

from __future__ import annotations

from collections.abc import Sequence

from graphdsl import lattices as _lat
from graphdsl._promotion_types import PromotionError
from graphdsl.dtypes import DType
from graphdsl.policies import OpTyping, Policy, Promoted

__all__ = ["implicit_cast_type", "policy", "policy_names"]

T = DType
_X64 = {"int": DType.int64, "float": DType.float64, "complex": DType.complex128}

# max.graph's ranges of Python ints it converts to each dtype (``_DTYPE_MIN_AND_MAX_FULL_
# PRECISION`` in max/graph/dtype_promotion.py; every recorded cell of
# tests/data/max_graph_promotion.json agrees): integers their whole range; float16, bfloat16,
# float32 and float64 the integers up to 2**(significand bits + 1), even where a larger one
# is exact (2**31 into float32 is refused); float8_e4m3fn its largest value, 448; and
# float8_e5m2 1.10 * 2**16, above its largest value 57344 (recorded: 65536 is accepted); the
# other small floats their largest values (float8_e8m0fnu 2**-127..2**127: no zero, no
# negatives). max.graph makes no constants of the sub-byte floats at all (literals.py).
_INTEGERS = (T.bool, T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64)
_MAX_GRAPH_INT_RANGES: dict[DType, tuple[int | float, int | float]] = {
    **{d: (d.min, d.max) for d in _INTEGERS},
    T.float16: (-(2**11), 2**11),
    T.bfloat16: (-(2**8), 2**8),
    T.float32: (-(2**24), 2**24),
    T.float64: (-(2**53), 2**53),
    T.float8_e4m3fn: (-448, 448),
    T.float8_e5m2: (-1.10 * 2**16, 1.10 * 2**16),
    # the others: their largest values (e8m0: from its smallest; it has no zero)
    T.float8_e4m3fnuz: (-240, 240),
    T.float8_e5m2fnuz: (-57344, 57344),
    T.float8_e8m0fnu: (2.0**-127, 2.0**127),
    T.float6_e2m3fn: (-7.5, 7.5),
    T.float6_e3m2fn: (-28, 28),
    T.float4_e2m1fn: (-6, 6),
}


def _max_graph_div(p: Policy, operands: Sequence[Promoted]) -> OpTyping:
    """max.graph's ``div``: two integer operands divide in float64, even a pair that does not
    promote (int8 / uint8); other operands promote and the result keeps their dtype (bool /
    int8 is int8, bool / bool is bool), computed in float64 and converted back as ``cast``
    converts (truncated toward zero, saturated, NaN -> 0)."""
    f64 = DType.float64
    if all(o.dtype.is_integer for o in operands):
        result = Promoted(f64, all(o.ambiguous for o in operands))
        return OpTyping((f64,) * len(operands), result, "max.graph divides integers in float64")
    acc = operands[0]
    for o in operands[1:]:
        acc = p.decide(acc.dtype, acc.ambiguous, o.dtype, o.ambiguous).result
    if acc.dtype is DType.bool and not p.bool_arithmetic:
        raise PromotionError("bool / bool: max.graph types it as bool; MAX's compiler refuses it")
    compute = f64 if acc.dtype.kind.rank < 2 else acc.dtype  # bool or integer: in float64
    return OpTyping(
        (compute,) * len(operands), acc, "max.graph's div keeps the operands' common dtype"
    )


def _max_graph_float_math(p: Policy, operands: Sequence[Promoted]) -> OpTyping | None:
    """max.graph types exp, log, sqrt, sin, tanh, erf, gelu... of a bool or integer tensor
    as that dtype (exp(int32) is int32): computed in float64 and converted back as ``cast``
    converts (truncated toward zero, saturated, NaN -> 0). Literals (max.graph refuses them
    in unary ops) and floats follow the op's own rule."""
    (x,) = operands
    if x.ambiguous or x.dtype.kind.rank > 1:  # floats, complex: the op's own rule
        return None
    return OpTyping(
        (DType.float64,), x, f"max.graph keeps the {x.dtype.name} dtype (computed in float64)"
    )


def _max_graph_logical(p: Policy, operands: Sequence[Promoted]) -> OpTyping | None:
    """max.graph's logical ops (``&``, ``|``, ``^``, ``~`` on its values) take bools only
    ("rmo.and: Inputs must be bools"); a Python bool or int literal becomes a bool."""
    known = [o.dtype for o in operands if not o.ambiguous] or [DType.bool]
    inexact = [o.dtype.kind.value for o in operands if o.ambiguous and o.dtype.kind.rank > 1]
    if inexact:  # a float (complex) literal
        raise PromotionError(
            f"Unsafe cast: Can't promote python {inexact[0]} to dtype(DType.{known[0].name}). "
            f"(max.graph's logical ops convert a literal to their operand's dtype, policy "
            f"{p.name!r}: use True or False)"
        )
    wrong = [o.dtype.name for o in operands if o.dtype is not DType.bool and not o.ambiguous]
    if wrong:
        raise PromotionError(
            f"max.graph's logical ops take bool operands only, got {', '.join(wrong)} (policy "
            f"{p.name!r}; the other policies take any operand by its truth value): compare "
            "first (x != 0), or cast to bool"
        )
    return None


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
            "max-graph",
            _lat.MAX_GRAPH,
            literals="max-graph",
            defaults=_X64,
            int_literal_ranges=_MAX_GRAPH_INT_RANGES,
            op_rules={
                "true_divide": _max_graph_div,
                "float_math": _max_graph_float_math,
                "logical": _max_graph_logical,
            },
            bool_arithmetic=True,
            description="Modular's max.graph 26 (the max Python package), from recorded "
            "goldens: exact conversions only, literals take the tensor's dtype",
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
    """The names of the built-in policies.

    >>> import graphdsl as gd
    >>> gd.policy_names()
    ['default', 'jax', 'jax-x32', 'jax-strict', 'max', 'max-graph', 'anvil', 'array-api']
    """
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
