"""tests/floats.py, the suite's rule for comparing floats: what it accepts and refuses."""

from __future__ import annotations

import floats
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st


def _sequential(terms: np.ndarray, order: np.ndarray) -> np.float32:
    """Σ terms in float32, one addition at a time in ``order`` (from +0.0, as BLAS does)."""
    acc = np.float32(0.0)
    for i in order:
        acc = np.float32(acc + terms[i])
    return acc


def test_exactly_summable_is_the_stated_condition() -> None:
    f32 = np.float32
    assert floats.exactly_summable(np.array([[2.0**23, 1.0]]), f32)
    assert not floats.exactly_summable(np.array([[2.0**24, 1.0]]), f32)  # 2**24 + 1 rounds
    assert not floats.exactly_summable(np.array([[0.1, 0.2]]), f32)  # 0.1 is no float32
    assert not floats.exactly_summable(np.array([[1.0, np.inf]]), f32)
    assert floats.exactly_summable(np.array([[0.0, -0.0], [2.0**-149, 2.0**-149]]), f32)
    # each sum its own q: a row of one arbitrary term is exact whatever the other rows hold
    assert floats.exactly_summable(np.array([[0.1], [2.0**30]], np.float32), f32)
    assert not floats.exactly_summable(np.array([[3.0e38, 3.0e38]]), f32)  # overflows
    # float64: products past 53 significant bits are not exact (NaN terms)
    third = np.array([[1 / 3]])
    assert not floats.exactly_summable(floats.matmul_terms(third, third), np.float64)
    assert floats.exactly_summable(floats.matmul_terms(third, np.array([[0.5]])), np.float64)


@given(st.lists(st.integers(-(2**10), 2**10), min_size=1, max_size=40), st.randoms())
def test_exactly_summable_sums_agree_in_every_order(ints: list[int], rnd: object) -> None:
    terms = (np.array(ints, np.float64) / 64).astype(np.float32)
    assert floats.exactly_summable(terms[None, :].astype(np.float64), np.float32)
    order = np.arange(len(terms))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    assert _sequential(terms, order) == np.float32(terms.astype(np.float64).sum())


@given(st.integers(1, 200), st.integers(0, 2**32 - 1))
def test_dot_bound_holds_between_two_orders(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(np.float32) * np.float32(rng.uniform(0.1, 1e3))
    b = rng.standard_normal(n).astype(np.float32)
    products = (a.astype(np.float64) * b).astype(np.float32)  # each rounds: within γ_n anyway
    forward = _sequential(products, np.arange(n))
    backward = _sequential(products, np.arange(n)[::-1])
    s = np.abs(a.astype(np.float64) * b).sum()
    bound = floats.dot_bound(np.array(s), n, np.float32, np.array(forward), np.array(backward))
    floats.assert_close(np.array(forward), np.array(backward), bound)


def test_assert_bits_checks_zero_signs_and_nan_places() -> None:
    x = np.array([0.0, 1.0, np.nan], np.float32)
    floats.assert_bits(x, x.copy())
    with pytest.raises(AssertionError, match="bit for bit"):
        floats.assert_bits(np.array([-0.0, 1.0, np.nan], np.float32), x)
    with pytest.raises(AssertionError, match="bit for bit"):
        floats.assert_bits(np.array([0.0, 1.0, 2.0], np.float32), x)
    with pytest.raises(AssertionError, match="dtype"):
        floats.assert_bits(x.astype(np.float64), x)


def test_assert_close_leaves_zero_signs_and_checks_nan_and_inf() -> None:
    want = np.array([0.0, 1.0, np.nan, np.inf], np.float32)
    floats.assert_close(np.array([-0.0, 1.0, np.nan, np.inf], np.float32), want, 0.0)
    with pytest.raises(AssertionError, match="differ"):
        floats.assert_close(np.array([0.0, 1.0, 5.0, np.inf], np.float32), want, 10.0)
    with pytest.raises(AssertionError, match="differ"):
        floats.assert_close(np.array([0.0, 1.0, np.nan, -np.inf], np.float32), want, 10.0)
    with pytest.raises(AssertionError, match="largest difference"):
        floats.assert_close(np.array([0.0, 1.5, np.nan, np.inf], np.float32), want, 0.25)


def test_exact_sums_are_checked_not_assumed() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((5, 2)).astype(np.float32)
    with pytest.raises(AssertionError, match="not exact by construction"):
        floats.assert_exact_sum(a @ b, a @ b, floats.matmul_terms(a, b))
    # quarters and halves: exact, compared bit for bit (zero signs aside)
    q = (rng.integers(-8, 8, (3, 5)) / 4).astype(np.float32)
    h = (rng.integers(-4, 4, (5, 2)) / 2).astype(np.float32)
    floats.assert_matmul(q @ h, (q.astype(np.float64) @ h).astype(np.float32), q, h)
    with pytest.raises(AssertionError, match="differ"):
        floats.assert_matmul(np.nextafter(q @ h, np.float32(np.inf)), q @ h, q, h)
    # inexact: within the dot bound, and one beyond it is caught
    want = (a.astype(np.float64) @ b).astype(np.float32)
    floats.assert_matmul(a @ b, want, a, b)
    with pytest.raises(AssertionError, match="beyond a bound"):
        floats.assert_matmul(want * np.float32(1 + 1e-4), want, a, b)
