"""The numpy reference interpreter against hand-computed results.

Expectations come from Python integers (exact arithmetic, wrapped by hand), from numpy's
own float16 / ml_dtypes' bfloat16 scalar arithmetic (which rounds after every op), and from
the semantics stated in DESIGN.md and in ``graphdsl/evaluate.py``'s docstring: integer
wraparound, floor ``//`` and ``%`` with the divisor's sign, integer division by zero gives
0, true division of integers gives the policy's default float, reductions keep the dtype,
narrow floats round after every op, saturating float -> int casts, exact integer powers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import floats
import ml_dtypes
import numpy as np
import pytest
from example_graphs import issue_mlp
from hypothesis import given
from hypothesis import strategies as st

import graphdsl as gd
from graphdsl import DType

Build = Callable[..., gd.Symbol]
ML_FLOATS = {
    np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)
}


def run(
    build: Build,
    types: Mapping[str, object] | Sequence[object],
    inputs: Mapping[str, Any] | Sequence[Any],
    policy: str = "default",
) -> np.ndarray:
    """Build a one-output graph from ``build(*inputs)`` and evaluate it."""
    g = gd.Graph("e", input_types=types, policy=policy)
    g.output(build(*g.inputs))
    g.verify()
    (out,) = gd.evaluate(g, inputs)
    return out


def vec(dt: DType, n: int | str = "n") -> gd.TensorType:
    return gd.TensorType(dt, (n,))


def wrap(v: int, dt: DType) -> int:
    """Two's complement wraparound of a Python int into ``dt`` (by hand)."""
    lo = int(dt.min)
    span: int = 2**dt.bits
    return (v - lo) % span + lo


def arr(values: Sequence[Any], dt: DType) -> np.ndarray:
    return np.array(values, dtype=dt.np)


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and values, NaN where NaN and the sign of zeros (tests/floats.py:
    the ops here round once, or sum integers exactly, which the sums' tests check)."""
    floats.assert_bits(got, want)


INTS = [gd.int8, gd.int16, gd.int32, gd.int64, gd.uint8, gd.uint16, gd.uint32, gd.uint64]


# ------------------------------------------------------------------ integer wraparound


def test_integer_wraparound_examples() -> None:
    same(run(lambda x: x + 1, [gd.int8], [np.int8(127)]), np.array(-128, np.int8))
    same(run(lambda x: x - 1, [gd.uint8], [np.uint8(0)]), np.array(255, np.uint8))
    a = [65536, 46341, -70000]
    b = [65536, 46341, 70000]
    want = arr([wrap(x * y, gd.int32) for x, y in zip(a, b, strict=True)], gd.int32)
    assert want.tolist() == [0, -(2**31) + 4633, -605032704]  # 46341**2 = 2**31 + 4633
    types = [vec(gd.int32), vec(gd.int32)]
    same(run(lambda x, y: x * y, types, [arr(a, gd.int32), arr(b, gd.int32)]), want)
    big = arr([2**62], gd.int64)
    same(run(lambda x: x * 4, [vec(gd.int64)], [big]), arr([0], gd.int64))
    # negation wraps too: unsigned, and the most negative signed value
    same(run(lambda x: -x, [vec(gd.uint8)], [arr([1, 0], gd.uint8)]), arr([255, 0], gd.uint8))
    same(run(lambda x: -x, [vec(gd.int8)], [arr([-128], gd.int8)]), arr([-128], gd.int8))
    # abs(int8 -128) wraps to -128 (ops.abs docstring)
    same(run(abs, [vec(gd.int8)], [arr([-128, -5], gd.int8)]), arr([-128, 5], gd.int8))


def test_evaluate_docstring_example() -> None:
    g = gd.Graph("e", input_types={"x": gd.TensorType(gd.int8, (3,))})
    (x,) = g.inputs
    g.output(x * 2, x // 0)
    got = gd.evaluate(g, {"x": arr([100, -7, 3], gd.int8)})
    same(got[0], arr([wrap(200, gd.int8), -14, 6], gd.int8))
    same(got[1], arr([0, 0, 0], gd.int8))


@pytest.mark.parametrize("dt", INTS)
@given(data=st.data())
def test_add_sub_mul_wrap_like_python_ints(dt: DType, data: st.DataObject) -> None:
    values = st.integers(int(dt.min), int(dt.max))
    a = data.draw(st.lists(values, min_size=1, max_size=5))
    b = data.draw(st.lists(values, min_size=len(a), max_size=len(a)))
    g = gd.Graph("w", input_types=[vec(dt), vec(dt)])
    x, y = g.inputs
    g.output(x + y, x - y, x * y)
    got = gd.evaluate(g, [arr(a, dt), arr(b, dt)])
    for out, fn in zip(got, (int.__add__, int.__sub__, int.__mul__), strict=True):
        want = [wrap(fn(p, q), dt) for p, q in zip(a, b, strict=True)]
        assert out.dtype == dt.np
        assert out.tolist() == want


def test_mixed_integers_promote_before_the_op() -> None:
    # int8 + uint8 -> int16 (both lattices agree): 100 + 200 = 300, no int8 wraparound
    got = run(lambda x, y: x + y, [gd.int8, gd.uint8], [np.int8(100), np.uint8(200)])
    same(got, np.array(300, np.int16))


# ------------------------------------------------------------------ floor division and modulo


@pytest.mark.parametrize(
    ("a", "b", "q", "r"),
    [(7, -2, -4, -1), (-7, 2, -4, 1), (7, 2, 3, 1), (-7, -2, 3, -1), (6, -3, -2, 0), (0, 5, 0, 0)],
)
@pytest.mark.parametrize("dt", [gd.int8, gd.int16, gd.int32, gd.int64])
def test_integer_floordiv_mod_signs(dt: DType, a: int, b: int, q: int, r: int) -> None:
    assert (a // b, a % b) == (q, r)  # Python's floor semantics, the reference
    types = [gd.TensorType(dt, ()), gd.TensorType(dt, ())]
    args = [np.array(a, dt.np), np.array(b, dt.np)]
    same(run(lambda x, y: x // y, types, args), np.array(q, dt.np))
    same(run(lambda x, y: x % y, types, args), np.array(r, dt.np))


@pytest.mark.parametrize("dt", INTS)
@given(data=st.data())
def test_integer_floordiv_mod_match_python(dt: DType, data: st.DataObject) -> None:
    """``//`` floors, ``%`` takes the divisor's sign, by zero gives 0, overflow wraps."""
    values = st.integers(int(dt.min), int(dt.max))
    a = data.draw(st.lists(values, min_size=1, max_size=6))
    divisors = values | st.just(0) | st.just(-1 if dt.min else 1)
    b = data.draw(st.lists(divisors, min_size=len(a), max_size=len(a)))
    g = gd.Graph("d", input_types=[vec(dt), vec(dt)])
    x, y = g.inputs
    g.output(x // y, x % y)
    q, r = gd.evaluate(g, [arr(a, dt), arr(b, dt)])
    assert q.tolist() == [wrap(p // d, dt) if d else 0 for p, d in zip(a, b, strict=True)]
    assert r.tolist() == [p % d if d else 0 for p, d in zip(a, b, strict=True)]


def test_integer_division_by_zero_gives_zero() -> None:
    for dt in INTS:
        a = arr([5, 0, int(dt.max), int(dt.min)], dt)
        z = arr([0, 0, 0, 0], dt)
        g = gd.Graph("z", input_types=[vec(dt), vec(dt)])
        x, y = g.inputs
        g.output(x // y, x % y, x // 0, x % 0)
        for out in gd.evaluate(g, [a, z]):
            same(out, arr([0, 0, 0, 0], dt))


def test_int8_min_floordiv_minus_one_wraps() -> None:
    # -128 // -1 = 128, which wraps to -128; -128 % -1 = 0
    types = [gd.int8, gd.int8]
    args = [np.int8(-128), np.int8(-1)]
    same(run(lambda x, y: x // y, types, args), np.array(wrap(128, gd.int8), np.int8))
    same(run(lambda x, y: x % y, types, args), np.array(0, np.int8))


@pytest.mark.parametrize(
    ("a", "b"), [(7.5, -2.0), (-7.5, 2.0), (7.5, 2.0), (-7.5, -2.0), (0.5, -0.25), (5.0, 3.0)]
)
@pytest.mark.parametrize("dt", [gd.float32, gd.float64])
def test_float_floordiv_mod_take_divisor_sign(dt: DType, a: float, b: float) -> None:
    # every value here is exact in float32, and Python's float // and % floor
    q, r = a // b, a % b
    types = [dt, dt]
    args = [np.array(a, dt.np), np.array(b, dt.np)]
    same(run(lambda x, y: x // y, types, args), np.array(q, dt.np))
    same(run(lambda x, y: x % y, types, args), np.array(r, dt.np))
    assert r == 0 or math.copysign(1, r) == math.copysign(1, b)


def test_float_mod_examples() -> None:
    assert 7.5 % -2 == -0.5
    got = run(lambda x: x % -2, [gd.float32], [np.float32(7.5)])
    same(got, np.array(-0.5, np.float32))
    got = run(lambda x: x // -2, [gd.float64], [np.float64(7.5)])
    same(got, np.array(-4.0, np.float64))


# ------------------------------------------------------------------ true division


@pytest.mark.parametrize(("policy", "want"), [("default", np.float32), ("jax", np.float64)])
def test_true_division_of_integers_gives_default_float(policy: str, want: type) -> None:
    types = [vec(gd.int32), vec(gd.int32)]
    args = [arr([7, 1, -7, 0], gd.int32), arr([2, 3, 2, 5], gd.int32)]
    got = run(lambda x, y: x / y, types, args, policy=policy)
    same(got, np.array([3.5, want(1) / want(3), -3.5, 0.0], want))


def test_true_division_of_int16_and_literal() -> None:
    got = run(lambda x: x / 4, [vec(gd.int16)], [arr([1, -3], gd.int16)])
    same(got, arr([0.25, -0.75], gd.float32))


# ------------------------------------------------------------------ reductions


def test_reductions_keep_dtype_and_integer_sums_wrap() -> None:
    x8 = arr([100, 100, 100], gd.int8)
    same(run(gd.ops.sum, [vec(gd.int8)], [x8]), np.array(wrap(300, gd.int8), np.int8))
    xu = arr([200, 100], gd.uint8)
    same(run(gd.ops.sum, [vec(gd.uint8)], [xu]), np.array(300 - 256, np.uint8))
    same(run(gd.ops.prod, [vec(gd.int8)], [arr([16, 16], gd.int8)]), np.array(0, np.int8))
    same(run(gd.ops.max, [vec(gd.int8)], [x8]), np.array(100, np.int8))
    x32 = arr([2**31 - 1, 1], gd.int32)
    same(run(gd.ops.sum, [vec(gd.int32)], [x32]), np.array(-(2**31), np.int32))
    m = arr([[1, 2, 3], [120, 10, 0]], gd.int8)
    t = gd.TensorType(gd.int8, (2, 3))
    got = run(lambda x: gd.ops.sum(x, axis=1), [t], [m])
    same(got, arr([6, wrap(130, gd.int8)], gd.int8))
    got = run(lambda x: gd.ops.sum(x, axis=0, keepdims=True), [t], [m])
    same(got, arr([[121, 12, 3]], gd.int8))


@pytest.mark.parametrize(
    ("policy", "fdt", "idt"), [("default", gd.float32, gd.int32), ("jax", gd.float64, gd.int64)]
)
def test_mean_of_ints_and_sum_of_bool(policy: str, fdt: DType, idt: DType) -> None:
    x = arr([1, 2, 4], gd.int32)
    # exact sums in float32, so in float64 too (exactly_summable does not tell float64
    # terms' exactness itself); then one division rounds
    assert floats.exactly_summable(x.astype(np.float64), np.float32)
    got = run(gd.ops.mean, [vec(gd.int32)], [x], policy=policy)
    same(got, np.array(fdt.np.type(7) / fdt.np.type(3), fdt.np))
    b = np.array([True, False, True, True])
    same(run(gd.ops.sum, [vec(gd.bool)], [b], policy=policy), np.array(3, idt.np))
    same(run(gd.ops.mean, [vec(gd.bool)], [b], policy=policy), np.array(0.75, fdt.np))


def test_float16_sum_accumulates_in_float32_and_rounds_once() -> None:
    x = arr([2048, 1, 1], gd.float16)
    # one op at a time in float16: 2048 + 1 = 2049 rounds (to even) to 2048, twice
    per_op = np.float16(np.float16(2048) + np.float16(1)) + np.float16(1)
    assert per_op == 2048
    assert floats.exactly_summable(x.astype(np.float64), np.float32)  # then one rounding
    same(run(gd.ops.sum, [vec(gd.float16)], [x]), np.array(2050, np.float16))


# ------------------------------------------------------------------ float16 / bfloat16 rounding


@pytest.mark.parametrize(
    ("dt", "eps"),
    [
        (gd.float16, 2.0**-11),
        (gd.bfloat16, 2.0**-8),
        (gd.float8_e4m3fn, 2.0**-4),
        (gd.float8_e5m2, 2.0**-3),
    ],
)
def test_narrow_floats_round_after_every_op(dt: DType, eps: float) -> None:
    """(x + e) + e with e half an ulp of 1: each add rounds back to 1 (ties to even), while
    computing the chain in float32 and rounding once gives 1 + one ulp."""
    t = dt.np.type
    x, e = t(1.0), t(eps)
    per_op = t(np.float32(t(np.float32(x) + np.float32(e))) + np.float32(e))
    once = t(np.float32(x) + np.float32(e) + np.float32(e))
    assert per_op == 1.0
    assert once == 1.0 + 2 * eps
    got = run(lambda a, b: (a + b) + b, [dt, dt], [np.array(x), np.array(e)])
    same(got, np.array(per_op))
    assert got != once


@pytest.mark.parametrize("dt", [gd.float16, gd.bfloat16])
@given(data=st.data())
def test_narrow_float_chain_matches_per_op_rounding(dt: DType, data: st.DataObject) -> None:
    """numpy's float16 and ml_dtypes' bfloat16 scalar arithmetic round after every op."""
    values = st.floats(-100, 100, width=32).map(lambda v: dt.np.type(v))
    a, b, c = (data.draw(values) for _ in range(3))
    got = run(lambda x, y, z: (x * y + z) / y - x, [dt] * 3, [np.array(v) for v in (a, b, c)])
    with np.errstate(all="ignore"):
        want = np.array((a * b + c) / b - a)
    same(got, want)


def test_float16_with_int8_rounds_in_float16() -> None:
    got = run(lambda x, y: x + y, [gd.int8, gd.float16], [np.int8(100), np.float16(0.1)])
    same(got, np.array(np.float16(100) + np.float16(0.1)))


# ------------------------------------------------------------------ casts


def cast_run(values: Sequence[Any], src: DType, to: DType) -> np.ndarray:
    return run(lambda x: gd.ops.cast(x, to), [vec(src)], [arr(values, src)])


def test_float_to_int_truncates_saturates_nan_to_zero() -> None:
    nan, inf = float("nan"), float("inf")
    vals = [1.9, -1.9, 0.5, 1e10, -1e10, nan, inf, -inf]
    i32 = [1, -1, 0, 2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31)]
    same(cast_run(vals, gd.float32, gd.int32), arr(i32, gd.int32))
    u8 = [1, 0, 0, 255, 0, 0, 255, 0]
    same(cast_run(vals, gd.float64, gd.uint8), arr(u8, gd.uint8))
    same(cast_run([300.7, -300.7, 127.9], gd.float64, gd.int8), arr([127, -128, 127], gd.int8))
    i64 = [2**63 - 1, -(2**63), 2**53]
    same(cast_run([1e19, -1e19, 2.0**53], gd.float64, gd.int64), arr(i64, gd.int64))
    same(cast_run([65504, -65504], gd.float16, gd.int16), arr([32767, -32768], gd.int16))
    # the largest float64 below 2**63 is in range and converts exactly
    same(cast_run([2.0**63 - 1024], gd.float64, gd.int64), arr([2**63 - 1024], gd.int64))
    same(cast_run([2.0**64 - 2048], gd.float64, gd.uint64), arr([2**64 - 2048], gd.uint64))


def test_int_narrowing_wraps() -> None:
    vals = [300, -129, 255, 128, -1]
    same(cast_run(vals, gd.int32, gd.int8), arr([wrap(v, gd.int8) for v in vals], gd.int8))
    same(cast_run(vals, gd.int32, gd.uint8), arr([wrap(v, gd.uint8) for v in vals], gd.uint8))
    same(cast_run([-1], gd.int64, gd.uint32), arr([2**32 - 1], gd.uint32))


def test_cast_to_bool_is_nonzero() -> None:
    floats = [0.0, -0.0, 2.5, float("nan"), -1e-30]
    same(cast_run(floats, gd.float64, gd.bool), np.array([False, False, True, True, True]))
    same(cast_run([0, 2, -1, 256], gd.int32, gd.bool), np.array([False, True, True, True]))
    same(cast_run([True, False], gd.bool, gd.int8), arr([1, 0], gd.int8))


def test_float_casts_round_to_nearest_even() -> None:
    same(
        cast_run([2**24 + 1, 2**24 + 3], gd.int32, gd.float32), arr([2**24, 2**24 + 4], gd.float32)
    )
    same(cast_run([1e40, -1e40], gd.float64, gd.float32), arr([np.inf, -np.inf], gd.float32))
    same(cast_run([1 + 2.0**-8], gd.float32, gd.bfloat16), arr([1.0], gd.bfloat16))
    same(cast_run([1 + 3 * 2.0**-8], gd.float32, gd.bfloat16), arr([1 + 2.0**-6], gd.bfloat16))


# ------------------------------------------------------------------ integer pow


def int_pow(b: int, n: int) -> int:
    """Exact b**n for n >= 0; for n < 0, 1/b**n truncated toward zero."""
    if n >= 0:
        return int(b**n)
    return {1: 1, -1: int((-1) ** (-n))}.get(b, 0)


def test_integer_pow_negative_exponents() -> None:
    base = arr([2, 1, -1, -1, -2, 5], gd.int32)
    exp = arr([-1, -3, -3, -2, -1, -2], gd.int32)
    got = run(lambda x, y: x**y, [vec(gd.int32), vec(gd.int32)], [base, exp])
    same(got, arr([0, 1, -1, 1, 0, 0], gd.int32))
    assert [int_pow(b, n) for b, n in zip(base.tolist(), exp.tolist(), strict=True)] == [
        0,
        1,
        -1,
        1,
        0,
        0,
    ]


def test_integer_pow_is_exact_and_wraps() -> None:
    same(run(lambda x: x**7, [gd.int8], [np.int8(2)]), np.array(-128, np.int8))
    same(run(lambda x: x**8, [gd.uint8], [np.uint8(2)]), np.array(0, np.uint8))
    want = wrap(3**40, gd.int32)
    same(run(lambda x: x**40, [gd.int32], [np.int32(3)]), np.array(want, np.int32))
    # 3**39 is exact in int64 but not in float64: no float round trip
    same(run(lambda x: x**39, [gd.int64], [np.int64(3)]), np.array(3**39, np.int64))
    assert float(3**39) != 3**39
    same(run(lambda x: 2**x, [gd.int16], [np.int16(-1)]), np.array(0, np.int16))


@pytest.mark.parametrize("dt", [gd.int8, gd.int32, gd.uint8, gd.int64])
@given(data=st.data())
def test_integer_pow_matches_python(dt: DType, data: st.DataObject) -> None:
    lo = -3 if dt.min else 0
    b = data.draw(st.lists(st.integers(lo, 12), min_size=1, max_size=6))
    n_lo = -4 if dt.min else 0
    n = [data.draw(st.integers(n_lo if x else 0, 45)) for x in b]  # no 0 ** negative
    got = run(lambda x, y: x**y, [vec(dt), vec(dt)], [arr(b, dt), arr(n, dt)])
    assert got.dtype == dt.np
    assert got.tolist() == [wrap(int_pow(x, k), dt) for x, k in zip(b, n, strict=True)]


# ------------------------------------------------------------------ NaN propagation


@pytest.mark.parametrize("dt", [gd.float32, gd.float64, gd.float16, gd.bfloat16])
def test_nan_propagates(dt: DType) -> None:
    nan = float("nan")
    x = arr([nan, 1.0, nan, -2.0], dt)
    y = arr([1.0, nan, nan, -3.0], dt)
    types = [vec(dt), vec(dt)]
    for fn, last in ((gd.ops.maximum, -2.0), (gd.ops.minimum, -3.0)):
        same(run(fn, types, [x, y]), arr([nan, nan, nan, last], dt))
        same(run(fn, types, [y, x]), arr([nan, nan, nan, last], dt))
    same(run(gd.ops.relu, [vec(dt)], [x]), arr([nan, 1.0, nan, 0.0], dt))
    for red in (gd.ops.max, gd.ops.min):
        got = run(red, [vec(dt)], [arr([1.0, nan, 3.0], dt)])
        assert got.dtype == dt.np
        assert np.isnan(got.astype(np.float32))


# ------------------------------------------------------------------ other elementwise ops


def test_mixed_comparison_promotes_first() -> None:
    # int8 -1 < uint8 255 compares in int16: no wraparound makes it False
    got = run(lambda x, y: x < y, [gd.int8, gd.uint8], [np.int8(-1), np.uint8(255)])
    same(got, np.array(True))
    # uint32 x int32 -> int64 in "default" (JAX's x64 lattice)
    got = run(lambda x, y: x + y, [gd.uint32, gd.int32], [np.uint32(4e9), np.int32(-1)])
    same(got, np.array(3_999_999_999, np.int64))


def test_abs_round_floor() -> None:
    z = np.array([3 + 4j, -1j], np.complex64)
    same(run(abs, [vec(gd.complex64)], [z]), arr([5.0, 1.0], gd.float32))
    halves = arr([0.5, 1.5, 2.5, -0.5, -1.7], gd.float32)
    same(run(gd.ops.round, [vec(gd.float32)], [halves]), arr([0, 2, 2, -0.0, -2], gd.float32))
    same(run(gd.ops.floor, [vec(gd.float32)], [halves]), arr([0, 1, 2, -1, -2], gd.float32))
    same(run(gd.ops.ceil, [vec(gd.float32)], [halves]), arr([1, 2, 3, -0.0, -1], gd.float32))
    ints = arr([-3, 7], gd.int8)
    same(run(gd.ops.floor, [vec(gd.int8)], [ints]), ints)
    same(run(gd.ops.sign, [vec(gd.int8)], [ints]), arr([-1, 1], gd.int8))


def test_float_only_op_on_ints_computes_in_default_float() -> None:
    x = arr([4, 2], gd.int32)
    same(run(gd.ops.sqrt, [vec(gd.int32)], [x]), arr([2.0, np.sqrt(np.float32(2))], gd.float32))
    got = run(gd.ops.sqrt, [vec(gd.int32)], [x], policy="jax")
    same(got, arr([2.0, np.sqrt(2.0)], gd.float64))


# ------------------------------------------------------------------ truth values, where


def test_where_and_logical_ops_by_truth_value() -> None:
    c = arr([0, 2, -1], gd.int32)
    a = arr([1.5, 2.5, 3.5], gd.float32)
    b = arr([-1.0, -2.0, -3.0], gd.float32)
    types = [vec(gd.int32), vec(gd.float32), vec(gd.float32)]
    same(run(gd.ops.where, types, [c, a, b]), arr([-1.0, 2.5, 3.5], gd.float32))
    f = arr([0.5, 0.0, float("nan")], gd.float32)
    got = run(gd.ops.logical_and, [vec(gd.int32), vec(gd.float32)], [c, f])
    same(got, np.array([False, False, True]))
    same(run(gd.ops.logical_not, [vec(gd.float32)], [f]), np.array([False, True, False]))


# ------------------------------------------------------------------ examples


@pytest.mark.parametrize("policy", ["default", "anvil"])
def test_anvil_propagation_example(policy: str) -> None:
    """Seed 004: z = x + 1 is i32? (x bool), and z * y with y i16 is i16; f(TRUE, 2L) = 4."""
    g = gd.Graph("anvil", input_types={"x": gd.bool, "y": gd.int16}, policy=policy)
    x, y = g.inputs
    z = x + 1
    assert (z.dtype, z.ambiguous) == (gd.int32, True)
    out = z * y
    assert (out.dtype, out.ambiguous) == (gd.int16, False)
    g.output(out)
    (got,) = gd.evaluate(g, {"x": True, "y": np.int16(2)})
    same(got, np.array(4, np.int16))


def test_issue_mlp_example() -> None:
    g = issue_mlp()
    g.verify()
    got = gd.evaluate(g, {"x": np.ones((2, 4), np.float32), "n": np.int16(3)})
    # x @ w = 4 in every cell, + 3 = 7, relu 7, * 2 = 14; 1 + 1.5 = 2.5 (float32, anvil rule)
    same(got[0], np.full((2, 3), 14.0, np.float32))
    same(got[1], np.array(2.5, np.float32))
    neg = gd.evaluate(g, {"x": -np.ones((5, 4), np.float32), "n": np.int16(1)})
    same(neg[0], np.zeros((5, 3), np.float32))


def test_symbolic_shapes_bind_at_evaluation() -> None:
    g = gd.Graph("s", input_types={"x": gd.TensorType(gd.float32, ("batch", 4))})
    (x,) = g.inputs
    g.output(
        gd.ops.reshape(x, ("batch", 2, 2)),
        gd.ops.reshape(x, (-1,)),
        gd.ops.broadcast_to(gd.ops.expand_dims(x, 1), ("batch", 3, 4)),
        gd.ops.concat([x, x], axis=0),
    )
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    a, b, c, d = gd.evaluate(g, {"x": data})
    same(a, data.reshape(3, 2, 2))
    same(b, data.reshape(-1))
    same(c, np.broadcast_to(data[:, None, :], (3, 3, 4)).copy())
    same(d, np.concatenate([data, data]))


def test_literal_output_that_does_not_fit_its_default_dtype() -> None:
    """A literal that ends as an int32 (its default dtype) must fit: 2**40 is not silently
    wrapped to 0 (DESIGN: a literal narrowed to a dtype must fit)."""

    def build_and_run() -> list[np.ndarray]:
        g = gd.Graph("lit", input_types=[gd.int8])
        g.output(g.scalar(2**40))
        return gd.evaluate(g, [np.int8(0)])

    with pytest.raises(gd.LiteralError):
        build_and_run()


# ------------------------------------------------------------------ input checking


def xy_graph() -> gd.Graph:
    g = gd.Graph(
        "chk",
        input_types={
            "x": gd.TensorType(gd.float32, ("batch", 4)),
            "y": gd.TensorType(gd.int16, ("batch",)),
        },
    )
    x, y = g.inputs
    g.output(gd.ops.sum(x, axis=1) + y)
    return g


X = np.zeros((2, 4), np.float32)
Y = np.zeros((2,), np.int16)


def test_good_inputs_by_name_and_by_position() -> None:
    g = xy_graph()
    (a,) = gd.evaluate(g, {"x": X + 1, "y": Y + 1})
    (b,) = gd.evaluate(g, [X + 1, Y + 1])
    same(a, np.full(2, 5.0, np.float32))
    same(b, a)


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({"x": X, "z": Y}, ["'y'", "'z'", "missing", "unexpected"]),
        ({"x": X}, ["missing", "'y'"]),
        ({"x": X, "y": Y, "w": Y}, ["unexpected", "'w'"]),
        ([X], ["2 inputs", "got 1"]),
        ([X, Y, Y], ["2 inputs", "got 3"]),
        ({"x": X.astype(np.float64), "y": Y}, ["'x'", "float32", "float64"]),
        ({"x": X, "y": Y.astype(np.int32)}, ["'y'", "int16", "int32"]),
        ({"x": X[0], "y": Y}, ["'x'", "rank 2", "(4,)"]),
        ({"x": np.zeros((2, 5), np.float32), "y": Y}, ["'x'", "(2, 5)"]),
        ({"x": X, "y": np.zeros((3,), np.int16)}, ["'y'", "'batch'", "2", "3"]),
        ({"x": X, "y": [70000, 1]}, ["'y'", "70000", "int16"]),
        ({"x": X, "y": [1.5, 1]}, ["'y'", "1.5", "int16"]),
    ],
)
def test_bad_inputs(inputs: Any, words: list[str]) -> None:
    with pytest.raises(gd.InputError) as info:
        gd.evaluate(xy_graph(), inputs)
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)


def test_python_values_that_convert_exactly_are_accepted() -> None:
    g = gd.Graph("py", input_types={"n": gd.int16, "v": gd.TensorType(gd.float64, (2,))})
    n, v = g.inputs
    g.output(v * n)
    (got,) = gd.evaluate(g, {"n": 3, "v": [0.5, -1]})
    same(got, np.array([1.5, -3.0]))


def test_evaluate_needs_outputs() -> None:
    g = gd.Graph("none", input_types=[gd.int8])
    with pytest.raises(gd.GraphError, match="no outputs"):
        gd.evaluate(g, [np.int8(1)])


def test_bfloat16_inputs_are_ml_dtypes() -> None:
    x = np.array([1.5], ml_dtypes.bfloat16)
    same(run(lambda a: a * 2, [vec(gd.bfloat16)], [x]), np.array([3.0], ml_dtypes.bfloat16))
