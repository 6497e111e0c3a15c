"""Selection, scans and statistical reductions: argmax, argmin, top_k, argsort, cumsum (the
selection family), any, all, var, std, logsumexp (reductions) and logsoftmax (nn).

Goldens are written out by hand from numpy's meaning of each op (ties, NaN, -0.0, empty
axes, keepdims), and each is checked on both backends: ``gd.evaluate`` and the exported
model on onnxruntime's CPU provider. Type tables are derived from each op's stated rule
under every policy; user errors name what is wrong and what to do. The last tests pin the
export's structure: one native ArgMax for an argmax over a vocabulary, one TopK for both
results of a top_k, and the onnxruntime behaviours the lowerings rely on or work around.
"""

from __future__ import annotations

import math
from typing import Any

import floats
import numpy as np
import onnx
import pytest
from backend import export, run
from onnx import helper

import graphdsl as gd
from graphdsl import DType, Kind

T = DType
nan, inf = math.nan, math.inf
INTEGERS = [T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64]
FLOATS = [T.float16, T.bfloat16, T.float32, T.float64]
POLICIES = gd.policy_names()


def graph(dt: DType, shape: tuple[int | str, ...], build: Any, policy: str = "default") -> gd.Graph:
    g = gd.Graph("t", input_types={"x": gd.TensorType(dt, shape)}, policy=policy)
    out = build(g.inputs[0])
    g.output(*(out if isinstance(out, tuple) else (out,)))
    return g


def both(g: gd.Graph, x: Any, *, ulps: int = 0) -> list[np.ndarray]:
    """The reference's results, after checking that onnxruntime gives the same: dtype,
    shape, NaN places and the sign of zeros; values bit for bit (tests/floats.py: selections,
    and sums exact by construction, which the tests check), or, for the kernels with exp and
    log, within ``ulps`` of the compute dtype (float32 for the narrow floats) at the value."""
    feeds = {"x": np.asarray(x, dtype=g.inputs[0].dtype.np)}
    want = gd.evaluate(g, feeds)
    got = run(export(g, check="full"), feeds)
    for k, (w, r) in enumerate(zip(want, got, strict=True)):
        if ulps == 0 or not gd.dtype(w.dtype).is_float:
            floats.assert_bits(r, w, f"output {k}")
        else:
            floats.assert_close(r, w, floats.ulp_bound(w, floats.compute_dtype(w.dtype), ulps),
                                f"output {k}")  # fmt: skip
    return want


def check(got: np.ndarray, want: Any, dt: DType | None = None) -> None:
    """``got`` equals the golden ``want`` (of dtype ``dt``), NaN for NaN, zeros by sign
    (tests/floats.py's assert_bits: for results exact by construction)."""
    floats.assert_bits(got, np.asarray(want, dtype=(dt or gd.dtype(got.dtype)).np))


def exact(*sums: Any) -> None:
    """Each of ``sums`` (its terms: sequences of values) is exact in any order in float32,
    so in float64 too (tests/floats.py's exactly_summable; it tells float32's)."""
    for terms in sums:
        assert floats.exactly_summable(np.asarray(terms, np.float64), np.float32), terms


# ---------------------------------------------------------------- argmax, argmin


ROWS = [[1.0, 5.0, 5.0, 2.0], [1.0, nan, 9.0, nan], [-0.0, 0.0, -1.0, -2.0],
        [0.0, -0.0, 3.0, 3.0], [-inf, -inf, -inf, -inf], [inf, 2.0, inf, nan]]  # fmt: skip


@pytest.mark.parametrize("dt", [T.float32, T.float64, T.float16, T.bfloat16])
def test_argmax_argmin_ties_nan_and_zero_signs(dt: DType) -> None:
    # first index of the extreme; the first NaN wins both; -0.0 and +0.0 tie
    g = graph(dt, (6, 4), lambda x: (gd.ops.argmax(x), gd.ops.argmin(x)))
    hi, lo = both(g, ROWS)
    check(hi, [1, 1, 0, 2, 0, 3], T.int64)
    check(lo, [0, 1, 3, 0, 0, 3], T.int64)


@pytest.mark.parametrize("dt", [*INTEGERS, T.bool])
def test_argmax_argmin_every_integer_dtype(dt: DType) -> None:
    lo, hi = (0, 1) if dt is T.bool else (dt.min, dt.max)
    x = [[lo, hi, hi, lo], [hi, lo, lo, hi], [lo, lo, lo, lo]]
    g = graph(dt, (3, 4), lambda x: (gd.ops.argmax(x, axis=1), gd.ops.argmin(x, axis=1)))
    amax, amin = both(g, x)
    check(amax, [1, 0, 0], T.int64)
    check(amin, [0, 1, 0], T.int64)


def test_argmax_axis_and_keepdims() -> None:
    x = [[3, 9, 1], [7, 2, 8]]
    g = graph(T.int32, (2, 3), lambda x: (gd.ops.argmax(x, axis=0, keepdims=True),
                                          gd.ops.argmin(x, axis=-1, keepdims=True)))  # fmt: skip
    a, b = both(g, x)
    check(a, [[1, 0, 1]], T.int64)
    check(b, [[2], [1]], T.int64)


def test_argmax_over_other_empty_axes_and_symbolic_sizes() -> None:
    g = graph(T.float32, ("n", 3), lambda x: gd.ops.argmax(x, axis=1))
    check(both(g, np.zeros((0, 3)))[0], np.zeros(0), T.int64)
    check(both(g, [[1, 2, 2], [nan, nan, 1]])[0], [1, 0], T.int64)


# ---------------------------------------------------------------- top_k, argsort


def test_top_k_sorted_largest_first_ties_by_lower_index() -> None:
    x = [[1.0, 3.0, 3.0, 2.0, 3.0], [nan, 1.0, 5.0, nan, -inf], [-0.0, 0.0, -0.0, -1.0, -1.0]]
    g = graph(T.float32, (3, 5), lambda x: gd.ops.top_k(x, 3))
    values, indices = both(g, x)
    check(indices, [[1, 2, 4], [0, 3, 2], [0, 1, 2]], T.int64)
    check(values, [[3.0, 3.0, 3.0], [nan, nan, 5.0], [-0.0, 0.0, -0.0]], T.float32)


@pytest.mark.parametrize("dt", [*INTEGERS, T.bool, *FLOATS])
def test_top_k_every_dtype(dt: DType) -> None:
    lo, hi = (0, 1) if dt is T.bool else (-2, 3) if dt.is_float else (dt.min, dt.max)
    x = [[lo, hi, lo, hi], [hi, hi, lo, lo]]
    g = graph(dt, (2, 4), lambda x: gd.ops.top_k(x, 2, axis=1))
    values, indices = both(g, x)
    check(indices, [[1, 3], [0, 1]], T.int64)
    check(values, [[hi, hi], [hi, hi]], dt)


def test_top_k_zero_and_whole_axis_and_other_axis() -> None:
    x = [[4, 1], [2, 9], [4, 3]]
    g = graph(T.int16, (3, 2), lambda x: (*gd.ops.top_k(x, 0, axis=0),
                                          *gd.ops.top_k(x, 3, axis=0)))  # fmt: skip
    v0, i0, v3, i3 = both(g, x)
    check(v0, np.zeros((0, 2)), T.int16)
    check(i0, np.zeros((0, 2)), T.int64)
    check(v3, [[4, 9], [4, 3], [2, 1]], T.int16)
    check(i3, [[0, 1], [2, 2], [1, 0]], T.int64)


def test_top_k_symbolic_axis_and_a_k_larger_at_run_time() -> None:
    g = graph(T.float32, (2, "n"), lambda x: gd.ops.top_k(x, 2))
    values, indices = both(g, [[1, 5, 5], [0, -1, 7]])
    check(values, [[5, 5], [7, 0]], T.float32)
    check(indices, [[1, 2], [2, 0]], T.int64)
    with pytest.raises(gd.ShapeError, match=r"k=2 .* axis 1 has only 1 elements at run time"):
        gd.evaluate(g, {"x": np.zeros((2, 1), np.float32)})


@pytest.mark.parametrize("dt", [T.float32, T.float64, T.bfloat16])
def test_argsort_stable_both_ways_nan_largest(dt: DType) -> None:
    x = [2.0, nan, -0.0, 2.0, 0.0, -inf, nan, 7.0]
    g = graph(dt, (8,), lambda x: (gd.ops.argsort(x), gd.ops.argsort(x, ascending=False)))
    up, down = both(g, x)
    check(up, [5, 2, 4, 0, 3, 7, 1, 6], T.int64)  # numpy's argsort(kind="stable")
    check(down, [1, 6, 7, 0, 3, 2, 4, 5], T.int64)


@pytest.mark.parametrize("dt", [*INTEGERS, T.bool])
def test_argsort_every_integer_dtype(dt: DType) -> None:
    lo, hi = (0, 1) if dt is T.bool else (dt.min, dt.max)
    x = [[hi, lo, hi, lo], [lo, lo, hi, lo]]
    g = graph(dt, (2, 4), lambda x: (gd.ops.argsort(x, axis=1),
                                     gd.ops.argsort(x, ascending=False, axis=0)))  # fmt: skip
    rows, cols = both(g, x)
    check(rows, [[1, 3, 0, 2], [0, 1, 3, 2]], T.int64)
    check(cols, [[0, 0, 0, 0], [1, 1, 1, 1]], T.int64)


def test_argsort_symbolic_axis_and_empty() -> None:
    g = graph(T.int32, ("n", 2), lambda x: gd.ops.argsort(x, axis=0))
    check(both(g, [[3, 1], [1, 1], [2, 0]])[0], [[1, 2], [2, 0], [0, 1]], T.int64)
    check(both(g, np.zeros((0, 2)))[0], np.zeros((0, 2)), T.int64)


# ---------------------------------------------------------------- cumsum


def test_cumsum_integers_wrap_in_their_dtype() -> None:
    for dt, x, want in (
        (T.int8, [100, 27, 1, 5], [100, 127, -128, -123]),
        (T.uint8, [200, 50, 6, 1], [200, 250, 0, 1]),
        (T.int64, [2**63 - 1, 1, -1], [2**63 - 1, -(2**63), 2**63 - 1]),
        (T.uint64, [2**64 - 1, 1, 5], [2**64 - 1, 0, 5]),
        (T.uint32, [2**32 - 2, 3], [2**32 - 2, 1]),
    ):
        g = graph(dt, (len(x),), lambda x: gd.ops.cumsum(x))
        check(both(g, x)[0], want, dt)


def test_cumsum_exclusive_and_reverse() -> None:
    x = [[1, 2, 3], [4, 5, 6]]
    cases = {
        (False, False): [[1, 3, 6], [4, 9, 15]],
        (True, False): [[0, 1, 3], [0, 4, 9]],
        (False, True): [[6, 5, 3], [15, 11, 6]],
        (True, True): [[5, 3, 0], [11, 6, 0]],
    }
    for (exclusive, reverse), want in cases.items():
        g = graph(T.int16, (2, 3), lambda x, e=exclusive, r=reverse: gd.ops.cumsum(x, 1, e, r))
        check(both(g, x)[0], want, T.int16)
    g = graph(T.int16, (2, 3), lambda x: gd.ops.cumsum(x, axis=0, reverse=True))
    check(both(g, x)[0], [[5, 7, 9], [4, 5, 6]], T.int16)


def test_cumsum_zero_signs_and_specials() -> None:
    # inclusive sums start from the first element (-0.0 stays -0.0); exclusive ones are them
    # shifted by one after a +0.0 (ONNX's reference; onnxruntime's kernel adds from +0.0)
    x = [-0.0, -0.0, 1.0, inf, nan]
    g = graph(T.float32, (5,), lambda x: (gd.ops.cumsum(x), gd.ops.cumsum(x, exclusive=True),
                                          gd.ops.cumsum(x, reverse=True)))  # fmt: skip
    inclusive, exclusive, backwards = both(g, x)
    # bit for bit, zero signs too: the library's cumsum promises them (its first element is
    # x[0], an exclusive one's +0.0: docs/semantics.md), beyond a sum's in general
    check(inclusive, [-0.0, -0.0, 1.0, inf, nan], T.float32)
    check(exclusive, [0.0, -0.0, -0.0, 1.0, inf], T.float32)
    check(backwards, [nan, nan, nan, nan, nan], T.float32)


def test_cumsum_exclusive_reverse_zero_signs() -> None:
    x = [[1.0, -0.0, -0.0], [-0.0, 2.0, -3.0]]
    g = graph(T.float64, (2, 3), lambda x: gd.ops.cumsum(x, exclusive=True, reverse=True))
    exact(*x)  # (and the zero signs as the test above says)
    check(both(g, x)[0], [[-0.0, -0.0, 0.0], [-1.0, -3.0, 0.0]], T.float64)


def test_cumsum_narrow_floats_add_in_float32_and_round_once() -> None:
    # in float16 step by step: 2048 + 1 rounds to 2048 twice; in float32: 2049, 2050
    g = graph(T.float16, (3,), lambda x: gd.ops.cumsum(x))
    exact([2048, 1, 1])  # in float32: then one rounding each
    check(both(g, [2048, 1, 1])[0], [2048, 2048, 2050], T.float16)


def test_cumsum_empty_axis() -> None:
    g = graph(T.float32, (2, "n"), lambda x: gd.ops.cumsum(x, exclusive=True))
    check(both(g, np.zeros((2, 0)))[0], np.zeros((2, 0)), T.float32)


# ---------------------------------------------------------------- any, all


def test_any_all_by_truth_value() -> None:
    x = [[0.0, -0.0, 0.0], [0.0, nan, 0.0], [2.0, 1.0, -inf]]
    g = graph(T.float32, (3, 3), lambda x: (gd.ops.any(x, axis=1), gd.ops.all(x, axis=1),
                                            gd.ops.any(x),
                                            gd.ops.all(x, keepdims=True)))  # fmt: skip
    a, b, c, d = both(g, x)
    check(a, [False, True, True], T.bool)
    check(b, [False, False, True], T.bool)
    check(c, True, T.bool)
    check(d, [[False]], T.bool)


@pytest.mark.parametrize("dt", [T.bool, T.int8, T.uint64, T.bfloat16, T.float8_e5m2])
def test_any_all_over_empty_sets(dt: DType) -> None:
    g = graph(dt, (2, "n"), lambda x: (gd.ops.any(x, axis=1), gd.ops.all(x, axis=1)))
    a, b = both(g, np.zeros((2, 0)))
    check(a, [False, False], T.bool)
    check(b, [True, True], T.bool)
    a, b = both(g, [[0], [3]] if dt is not T.bool else [[False], [True]])
    check(a, [False, True], T.bool)
    check(b, [False, True], T.bool)


# ---------------------------------------------------------------- var, std


def test_var_std_goldens() -> None:
    x = [[1, 2, 3, 4], [5, 5, 5, 5]]
    g = graph(T.int32, (2, 4), lambda x: (gd.ops.var(x, axis=1),
                                          gd.ops.var(x, axis=1, correction=1),
                                          gd.ops.std(x, axis=1), gd.ops.std(x)))  # fmt: skip
    # the sums (of the values, of the squared deviations from means 2.5, 5 and 3.75) are
    # exact (checked); a division and a square root then round once each
    exact(*x, [2.25, 0.25, 0.25, 2.25], [7.5625, 3.0625, 0.5625, 0.0625] + [1.5625] * 4)
    v0, v1, s0, s = both(g, x, ulps=2)
    check(v0, [1.25, 0.0], T.float32)
    for got, want in ((v1, [5 / 3, 0.0]), (s0, [math.sqrt(1.25), 0.0]),
                      (s, math.sqrt(np.var([1, 2, 3, 4, 5, 5, 5, 5])))):  # fmt: skip
        w = np.asarray(want, np.float64)  # (rounded once here too: an ulp of float64)
        b = floats.ulp_bound(w, np.float32, 0.5) + floats.ulp_bound(w, np.float64, 1)
        floats.assert_close(got.astype(np.float64), w, b)


def test_var_edge_cases() -> None:
    # empty sets: NaN; n <= correction: x / 0 (inf, or NaN for a zero sum of squares);
    # inf or NaN among the values: NaN
    g = graph(
        T.float64, (3, "n"), lambda x: (gd.ops.var(x, axis=1), gd.ops.std(x, axis=1, correction=2))
    )
    v, s = both(g, np.zeros((3, 0)))
    check(v, [nan, nan, nan], T.float64)
    exact([1.0, 3.0], [2.0, 2.0], [1.0, 1.0])  # the finite rows' sums and squared deviations
    v, s = both(g, [[1.0, 3.0], [2.0, 2.0], [inf, 1.0]])
    check(v, [1.0, 0.0, nan], T.float64)
    check(s, [inf, nan, nan], T.float64)


def test_var_keeps_float_dtypes_and_rounds_narrow_once() -> None:
    g = graph(T.float16, (4,), lambda x: (gd.ops.var(x), gd.ops.std(x, keepdims=True)))
    exact([1, 3, 1, 3], [1, 1, 1, 1])
    v, s = both(g, [1, 3, 1, 3])
    check(v, 1.0, T.float16)
    check(s, [1.0], T.float16)


# ---------------------------------------------------------------- logsumexp


def test_logsumexp_goldens() -> None:
    rows = [[1000.0, 1000.0], [-inf, -inf], [inf, 1.0], [inf, nan], [nan, 1.0],
            [-inf, -200.0], [-1000.0, -1000.0], [0.0, 0.0]]  # fmt: skip
    g = graph(T.float32, (8, 2), lambda x: gd.ops.logsumexp(x, axis=1))
    got = both(g, rows, ulps=2)[0]
    want = np.array([1000 + math.log(2), -inf, inf, nan, nan, -200.0, -1000 + math.log(2),
                     math.log(2)], np.float32)  # fmt: skip
    # want: the exact values rounded once (half an ulp); got: m + log(Σ exp(x - m)), exp and
    # log within an ulp of their values (at most the result's), the sum and add rounding
    floats.assert_close(got, want, floats.ulp_bound(want, np.float32, 2), "logsumexp")


def test_logsumexp_float64_empty_and_keepdims() -> None:
    g = graph(T.float64, (2, "n"), lambda x: gd.ops.logsumexp(x, axis=1, keepdims=True))
    check(both(g, np.zeros((2, 0)))[0], [[-inf], [-inf]], T.float64)
    got = both(g, [[-inf, -800.0], [-inf, -inf]], ulps=2)[0]
    check(got, [[-800.0], [-inf]], T.float64)


def test_logsumexp_of_integers_in_the_default_float() -> None:
    for policy in ("default", "jax"):
        g = graph(T.int16, (3,), lambda x: gd.ops.logsumexp(x), policy)
        want = gd.policy(policy).default_float
        assert g.outputs[0].dtype is want
        got = both(g, [0, 0, 0], ulps=2)[0]
        w = np.asarray(math.log(3), got.dtype)  # log(exp(0) * 3): log's ulp, rounded once
        floats.assert_close(got, w, floats.ulp_bound(w, got.dtype, 2), policy)


# ---------------------------------------------------------------- logsoftmax


@pytest.mark.parametrize("dt", [T.float32, T.float64, T.float16])
def test_logsoftmax_goldens(dt: DType) -> None:
    rows = [[0.0, 0.0, 0.0], [1000.0, -inf, 1000.0], [1.0, nan, 2.0], [inf, 1.0, 1.0],
            [-inf, -inf, -inf]]  # fmt: skip
    g = graph(dt, (5, 3), lambda x: gd.ops.logsoftmax(x))
    got = both(g, rows, ulps=2 if dt is not T.float16 else 0)[0]
    ln2, ln3 = math.log(2), math.log(3)
    want = np.array([[-ln3] * 3, [-ln2, -inf, -ln2], [nan] * 3, [nan] * 3, [nan] * 3])
    # x - max - log(Σ exp(x - max)) against the exact values: exp (a vectorized kernel's few
    # ulps), a sum of 3, log and a subtraction: 8 ulps of the compute dtype (float32 for
    # float16, then its rounding: half a float16 ulp)
    b = floats.ulp_bound(want, floats.compute_dtype(dt.np), 8)
    if dt is T.float16:
        b = b + floats.ulp_bound(want, np.float16, 0.5)
    floats.assert_close(got.astype(np.float64), want, b, "logsoftmax")


def test_logsoftmax_axis_and_empty() -> None:
    g = graph(T.float32, ("n", 2), lambda x: gd.ops.logsoftmax(x, axis=0))
    check(both(g, np.zeros((0, 2)))[0], np.zeros((0, 2)), T.float32)
    got = both(g, [[1.0, 5.0], [1.0, 5.0]], ulps=2)[0]
    want = np.full((2, 2), -math.log(2))  # as the goldens above: 8 ulps
    floats.assert_close(got.astype(np.float64), want, floats.ulp_bound(want, np.float32, 8))


# ---------------------------------------------------------------- type tables


def _all_dtypes(p: gd.Policy) -> list[DType]:
    return list(p.lattice.dtypes())


def _type_of(fn: Any, d: DType, p: str) -> Any:
    g = gd.Graph("t", input_types={"x": gd.TensorType(d, (2, 3))}, policy=p)
    try:
        out = fn(g.inputs[0])
    except gd.OpTypeError:
        return gd.OpTypeError
    return tuple(o.type for o in out) if isinstance(out, tuple) else out.type


@pytest.mark.parametrize("name", POLICIES)
def test_type_tables(name: str) -> None:
    """Each op's result type, derived from its rule: indices are int64 and the ordering ops
    take real dtypes and bool; cumsum keeps real dtypes but bool; any/all give bool for
    every dtype; the statistics keep floats and give integers and bool the default float."""
    p = gd.policy(name)
    failures = []
    for d in _all_dtypes(p):
        ordered = d.kind in (Kind.signed, Kind.unsigned, Kind.float, Kind.bool)
        real = d.kind in (Kind.signed, Kind.unsigned, Kind.float)
        stat = d if d.kind is Kind.float else p.default_float if ordered else gd.OpTypeError
        expect: dict[str, Any] = {
            "argmax": gd.TensorType(T.int64, (2,)) if ordered else gd.OpTypeError,
            "argmin": gd.TensorType(T.int64, (2, 1)) if ordered else gd.OpTypeError,
            "argsort": gd.TensorType(T.int64, (2, 3)) if ordered else gd.OpTypeError,
            "top_k": (gd.TensorType(d, (1, 3)), gd.TensorType(T.int64, (1, 3)))
            if ordered else gd.OpTypeError,
            # (max-graph types a bool cumsum as bool, as max.graph: computing it raises)
            "cumsum": gd.TensorType(d, (2, 3)) if real or (p.bool_arithmetic and d is T.bool)
            else gd.OpTypeError,
            "any": gd.TensorType(T.bool, ()),
            "all": gd.TensorType(T.bool, (2, 1)),
            "var": gd.TensorType(stat, (3,)) if stat is not gd.OpTypeError else stat,
            "std": gd.TensorType(stat, (2,)) if stat is not gd.OpTypeError else stat,
            "logsumexp": gd.TensorType(stat, ()) if stat is not gd.OpTypeError else stat,
            # (max-graph keeps a bool or integer dtype, as max.graph: float_math)
            "logsoftmax": gd.TensorType(d if p.name == "max-graph" and ordered else stat,
                                        (2, 3)) if stat is not gd.OpTypeError else stat,
        }  # fmt: skip
        builds: dict[str, Any] = {
            "argmax": lambda x: gd.ops.argmax(x),
            "argmin": lambda x: gd.ops.argmin(x, keepdims=True),
            "argsort": lambda x: gd.ops.argsort(x, axis=0),
            "top_k": lambda x: gd.ops.top_k(x, 1, axis=0),
            "cumsum": lambda x: gd.ops.cumsum(x, axis=0),
            "any": lambda x: gd.ops.any(x),
            "all": lambda x: gd.ops.all(x, axis=1, keepdims=True),
            "var": lambda x: gd.ops.var(x, axis=0, correction=1),
            "std": lambda x: gd.ops.std(x, axis=-1),
            "logsumexp": lambda x: gd.ops.logsumexp(x),
            "logsoftmax": lambda x: gd.ops.logsoftmax(x, axis=0),
        }
        for op, fn in builds.items():
            got = _type_of(fn, d, name)
            if got != expect[op]:
                failures.append(f"{name} {op}({d.name}): want {expect[op]}, got {got}")
    assert not failures, "\n".join(failures)


def test_ambiguous_values_keep_their_ambiguity() -> None:
    g = gd.Graph("t", input_types={"x": gd.TensorType(T.int8, (3,))})
    y = g.inputs[0] + np.int8(1) * 0 + 2.5  # float32? (a literal's type)
    assert y.type.ambiguous
    values, indices = gd.ops.top_k(y, 2)
    assert values.type == gd.TensorType(T.float32, (2,), True)
    assert not indices.type.ambiguous and not gd.ops.argmax(y).type.ambiguous
    assert gd.ops.cumsum(y).type.ambiguous


# ---------------------------------------------------------------- errors


def f32(shape: tuple[int | str, ...]) -> gd.Symbol:
    return gd.Graph("e", input_types={"x": gd.TensorType(T.float32, shape)}).inputs[0]


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: gd.ops.argmax(f32((2, 3)), axis=2), gd.ShapeError, "out of range"),
        (lambda: gd.ops.argmax(f32(())), gd.ShapeError, r"scalar.*rank >= 1.*expand_dims"),
        (
            lambda: gd.ops.argmin(f32((2, 0)), axis=1),
            gd.ShapeError,
            r"axis 1 of shape \(2, 0\) is empty.*non-empty axis",
        ),
        (
            lambda: gd.ops.argmax(f32((2, 3)), axis=1.0),
            gd.OpTypeError,
            r"axis must be a Python int, got 1.0 \(of type float\)",
        ),
        (
            lambda: gd.ops.top_k(f32((2, 3)), 4),
            gd.ShapeError,
            r"k=4 for axis 1 of shape \(2, 3\) \(size 3\); k must be between 0 and the axis size",
        ),
        (lambda: gd.ops.top_k(f32((2, 3)), -1), gd.ShapeError, "k must be between 0"),
        (lambda: gd.ops.top_k(f32((2, 3)), True), gd.OpTypeError, r"k must be a Python int"),
        (
            lambda: gd.ops.top_k(f32((2, 3)), f32(())),
            gd.OpTypeError,
            "tensor-valued arguments are not supported",
        ),
        (
            lambda: gd.ops.cumsum(f32((2,)) > 0),
            gd.OpTypeError,
            r"bool\[2\]: running sums of bool values are refused.*gd.ops.cast\(x, gd.int32\)",
        ),
        (lambda: gd.ops.cumsum(f32(())), gd.ShapeError, "rank >= 1"),
        (
            lambda: gd.ops.var(f32((2, 3)), correction=-1),
            gd.OpTypeError,
            r"correction must be a finite number >= 0.*got -1",
        ),
        (lambda: gd.ops.std(f32((2, 3)), correction="1"), gd.OpTypeError, "correction must"),
        (lambda: gd.ops.logsumexp(f32((2, 3)), axis=(0, 0)), gd.ShapeError, "repeated"),
        (lambda: gd.ops.logsoftmax(f32(())), gd.ShapeError, "rank >= 1"),
    ],
)
def test_user_errors_say_what_to_do(build: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        build()


def test_kind_errors_name_the_types_and_the_policy() -> None:
    g = gd.Graph("e", input_types={"z": gd.TensorType(T.complex64, (2,))}, policy="jax")
    (z,) = g.inputs
    for fn in (gd.ops.argmax, gd.ops.argsort, gd.ops.cumsum, gd.ops.var, gd.ops.logsumexp):
        with pytest.raises(gd.OpTypeError, match=r"complex64\[2\].*policy 'jax'.*gd.ops.cast"):
            fn(z)


def test_an_empty_axis_bound_at_run_time_is_an_error_of_the_reference() -> None:
    g = graph(T.float32, (2, "n"), lambda x: gd.ops.argmax(x))
    with pytest.raises(gd.ShapeError, match="empty at run time"):
        gd.evaluate(g, {"x": np.zeros((2, 0), np.float32)})


# ---------------------------------------------------------------- the export's structure


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_argmax_over_a_vocabulary_is_one_native_argmax() -> None:
    # node counts of the CPU target (CUDA has no integer ArgMax: it runs on the CPU there);
    # int64: ArgMax alone; float32: ArgMax and the first-NaN fix (IsNaN, ArgMax, ReduceMax,
    # Where and two casts); never a Scan, Loop or comparison chain
    for dt, want in ((T.int64, ["ArgMax"]), (T.int32, ["ArgMax"]),
                     (T.float32, ["ArgMax", "IsNaN", "Cast", "ArgMax", "ReduceMax", "Cast",
                                  "Where"])):  # fmt: skip
        g = graph(dt, (8, 50257), lambda x: gd.ops.argmax(x))
        m = export(g, target="cpu")
        assert _ops(m) == want, (dt, _ops(m))
        assert m.graph.node[0].input[0] == "x" and m.graph.node[0].op_type == "ArgMax"
    x = np.random.default_rng(0).integers(-50, 50, (8, 50257)).astype(np.float32)
    x[3, 4000] = nan
    got = run(export(graph(T.float32, (8, 50257), lambda x: gd.ops.argmax(x))), {"x": x})[0]
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))


def test_top_k_exports_one_topk_for_both_results() -> None:
    g = graph(T.float32, (2, 5), lambda x: (*gd.ops.top_k(x, 2), *gd.ops.top_k(x, 3)))
    assert _ops(export(g, target="cpu")).count("TopK") == 2  # one per (input, k, axis)
    g = graph(T.uint16, (2, 5), lambda x: gd.ops.top_k(x, 2))
    assert _ops(export(g, target="cpu")).count("TopK") == 1
    # an argsort of the whole axis in descending order shares a top_k of every element
    g = graph(T.int32, (2, 5), lambda x: (*gd.ops.top_k(x, 5), gd.ops.argsort(x, False)))
    assert (
        _ops(export(g, target="cpu")).count("TopK") == 1
    )  # (and an Identity: one value, two outputs)


def test_lowerings_node_counts_for_float32() -> None:
    want = {
        "argmin": (lambda x: gd.ops.argmin(x), 7),
        # a float64 key without NaN or infinities (_total_order_top_k), TopK, the values
        "top_k": (lambda x: gd.ops.top_k(x, 2)[0], 10),
        "argsort": (lambda x: gd.ops.argsort(x), 9),
        "cumsum": (lambda x: gd.ops.cumsum(x), 1),
        "cumsum_exclusive": (lambda x: gd.ops.cumsum(x, exclusive=True), 5),  # shifted
        "logsoftmax": (lambda x: gd.ops.logsoftmax(x), 1),
        "any": (lambda x: gd.ops.any(x, axis=1), 4),  # the truth cast, uint8, and back
        "var": (lambda x: gd.ops.var(x, axis=1), 6),
        "std": (lambda x: gd.ops.std(x, axis=1), 7),
        "logsumexp": (lambda x: gd.ops.logsumexp(x, axis=1), 9),
    }
    for op, (fn, n) in want.items():
        assert len(export(graph(T.float32, (3, 4), fn), target="cpu").graph.node) == n, op


# ---------------------------------------------------------------- onnxruntime, measured


def _ort(op: str, x: np.ndarray, attrs: dict[str, Any], extra: list[np.ndarray],
         out_types: list[int]) -> list[np.ndarray]:  # fmt: skip
    import onnxruntime as ort

    inits = [onnx.numpy_helper.from_array(e, f"e{i}") for i, e in enumerate(extra)]
    outs = [f"y{i}" for i in range(len(out_types))]
    node = helper.make_node(op, ["x", *(t.name for t in inits)], outs, **attrs)
    t = helper.np_dtype_to_tensor_dtype(x.dtype)
    g = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", t, None)],
        [helper.make_tensor_value_info(o, ot or t, None)
         for o, ot in zip(outs, out_types, strict=True)],
        inits,
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in sess.run(None, {"x": x})]


def test_onnxruntime_kernels_behave_as_the_lowerings_assume() -> None:
    """What the lowerings rely on or work around; a new onnxruntime that changes one of
    these fails here first (each lowering's comment names the measurement)."""
    int64 = onnx.TensorProto.INT64
    axis = {"axis": 1, "keepdims": 0}
    x = np.array([[1, nan, 3, nan], [nan, 1, 5, 0], [-0.0, 0.0, 2, 2]], np.float32)
    # ArgMax skips NaN unless it comes first; ties and zeros: the first index
    assert _ort("ArgMax", x, axis, [], [int64])[0].tolist() == [2, 0, 2]
    # (TopK's order of NaN is not relied on: it differs between onnxruntime 1.31 and 1.32,
    # and on CUDA; the lowering orders a NaN-free key: selection.py's _total_order_top_k)
    # ReduceLogSumExp does not shift a slice starting with -inf: log(exp(-200)) is -inf
    lse = _ort("ReduceLogSumExp", np.array([[-inf, -200.0]], np.float32), {"keepdims": 0},
               [np.array([1], np.int64)], [0])[0]  # fmt: skip
    assert lse.tolist() == [-inf]
    # double LogSoftmax keeps a NaN to its own element
    lsm = _ort("LogSoftmax", np.array([[1.0, nan]]), {"axis": 1}, [], [0])[0]
    assert not np.isnan(lsm[0, 0]) and np.isnan(lsm[0, 1])
    # CumSum: the exclusive sums start from +0.0; integers wrap
    cs = _ort("CumSum", np.array([-0.0, -0.0], np.float32), {"exclusive": 1},
              [np.array(0, np.int64)], [0])[0]  # fmt: skip
    assert np.signbit(cs).tolist() == [False, False]
    wrap = _ort("CumSum", np.array([2**31 - 1, 1], np.int32), {}, [np.array(0, np.int64)], [0])
    assert wrap[0].tolist() == [2**31 - 1, -(2**31)]


def test_integer_sum_over_a_zero_size_dimension_beside_a_symbolic_one() -> None:
    # the wrapping integer sum flattens the reduced axes with a Reshape to a computed size:
    # 0 there is zero elements (allowzero), not the input's dimension (found by the fuzzer
    # through top_k(x, 0): shape (n, 0, 3), n bound to 2, was reshaped to (2,) and failed)
    g = graph(T.int64, ("n", 0, 3), lambda x: gd.ops.sum(x, keepdims=True))
    for n in (2, 0):
        check(both(g, np.zeros((n, 0, 3)))[0], [[[0]]], T.int64)
