"""Every (op, dtype) the DSL accepts exports, runs on onnxruntime's CPU provider, and matches
``gd.evaluate``: exactly for integers and bool, to the dtype's rounding for floats, with NaN
in the same places; on inputs with negatives, zeros, extremes, NaN and inf.
"""

from __future__ import annotations

import backend
import numpy as np
import pytest
from backend import export, run
from norm_bounds import NORM_OPS, output_bound
from onnx_cases import (
    FLUSHES_SUBNORMALS,
    ORDER_DEPENDENT,
    WINDOW_TERMS,
    all_cases,
    build,
    describe,
    flushed_subnormals,
    inputs,
    ulp_close,
)

import graphdsl as gd
from graphdsl import DType

CASES = all_cases()
# transcendental ops: onnxruntime's and numpy's libm differ by a few ulps
INEXACT_OPS = {"exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "softmax", "mean", "pow",
               "sum", "prod", "matmul", "div", "mean_all_keepdims", "sum_all_keepdims",
               "prod_all_keepdims",
               "silu", "tan", "sinh", "cosh", "log1p", "expm1", "atanh",
               "atan", "asin", "acos",
               # exp and log (libm) and sums in another order: logsumexp, logsoftmax; sums in
               # another order (numpy's are pairwise): var, std (std's sqrt is exact)
               "logsumexp", "logsumexp_all_keepdims", "logsoftmax", "logsoftmax_axis0",
               "var", "var_all_keepdims", "var_correction", "std", "std_all_keepdims",
               "std_correction",
               # erf: onnxruntime's float32 Erf (within an ulp), Cody's rationals in float64
               # (within 3); gelu and the norms: float32 kernels against a float64 reference,
               # within the bounds tests/norm_bounds.py derives (checked below)
               "erf", "gelu", "gelu_tanh", "gelu_quick", "layer_norm", "rms_norm",
               "rms_norm_offset", "rms_norm_gemma", "group_norm",
               # window sums in another order (onnxruntime's in float32, the reference's in
               # float64, rounded once): convolutions, average pools, bilinear resize
               *WINDOW_TERMS,
               # matmul's sums with a dequantized weight (the dequantization is exact)
               "qmatmul", "qmatmul_blocked_zp"}  # fmt: skip


@pytest.mark.parametrize(("op", "dt"), CASES, ids=[f"{o}-{d.name}" for o, d in CASES])
def test_op_dtype_matches_reference(op: str, dt: DType) -> None:
    check_case(op, dt, exact=True)


def check_case(op: str, dt: DType, exact: bool) -> None:
    """Export (op, dt) with ``exact``, run it on the special values, compare with evaluate."""
    g = build(op, dt)
    assert g is not None
    base_op = op.split("_all")[0]
    # float accumulation order is free; integer sums and products are exact at any extreme
    moderate = base_op in ORDER_DEPENDENT and (
        dt.is_inexact or base_op == "mean" or op in WINDOW_TERMS
    )
    # the norms square their inputs in float32: finite extremes (int64's too) would overflow
    moderate |= g.outputs[0].op in NORM_OPS
    xs = inputs(g, seed=len(op) * 31 + list(DType).index(dt), moderate=moderate)
    ordered = moderate and base_op in ORDER_DEPENDENT
    scale = gd.evaluate(g, [np.abs(x) for x in xs]) if ordered else None
    want = gd.evaluate(g, xs)
    # onnx.checker with strict type and shape inference
    model = export(g, check="full", exact=exact)
    got = run(model, xs)
    for k, (w, r) in enumerate(zip(want, got, strict=True)):
        assert r.dtype == w.dtype, f"dtype: onnxruntime {r.dtype}, reference {w.dtype}"
        assert r.shape == w.shape
        out_dt = gd.dtype(w.dtype)
        if out_dt.is_float and op in INEXACT_OPS:
            ok = ulp_close(r, w, out_dt, ulps=4 if out_dt in (DType.float32, DType.float64) else 1)
        else:
            ok = ulp_close(r, w, out_dt, ulps=0)
        if scale is not None and out_dt.is_float:
            # a sum of n terms in any order is within n * eps * sum(|terms|) of the exact one
            n = WINDOW_TERMS.get(op) or max(x.size for x in xs) // max(w.size, 1) + 2
            eps = float(np.finfo(np.float32 if out_dt.bits <= 32 else np.float64).eps)
            with np.errstate(all="ignore"):
                bound = n * eps * scale[k].astype(np.float64)
                ok |= np.abs(r.astype(np.float64) - w.astype(np.float64)) <= bound
        if op.startswith("logsoftmax") and out_dt.is_float:
            # y = (x - max) - log(sum): a sum of n exps in any order is within (n + 1) eps
            # of its value relative to it, so log(sum) within (n + 1) eps absolutely, and
            # near y = 0 (the largest element of a slice whose other terms are small) that
            # is many ulps of y: the bound of the sum, as sums get, for either side's order
            # (the CPU kernel sums as numpy does; CUDA's kernel in its own order)
            node = g.outputs[0]
            n = int(node.inputs[0].shape[node.attrs["axis"]])
            eps = float(np.finfo(np.float32 if out_dt.bits <= 32 else np.float64).eps)
            with np.errstate(all="ignore"):
                bound = 2 * ((n + 2) * eps * (1 + np.log(n)) + eps * np.abs(w.astype(np.float64)))
                ok |= np.abs(r.astype(np.float64) - w.astype(np.float64)) <= bound
        if base_op in FLUSHES_SUBNORMALS and out_dt.is_float:
            # processor-dependent: +-0 for a float32 subnormal (AVX2 and SSE kernels)
            ok |= flushed_subnormals(r, w)
        stated = output_bound(g, xs) if k == 0 else None
        if stated is not None:  # the norms' and gelu's bounds, from the math
            assert not stated.overflows, "moderate inputs overflow float32"
            with np.errstate(all="ignore"):
                ok |= np.abs(r.astype(np.float64) - w.astype(np.float64)) <= stated.bound
        if not exact and base_op.startswith("max_pool") and out_dt.is_float:
            # exact=False is onnxruntime's MaxPool: a window holding a NaN gives NaN or the
            # largest of some of its other values (the CPU kernel: of those it meets after
            # the last NaN), so a value of the input (or the padding's -inf) no larger than
            # the largest of them all
            others = gd.evaluate(g, [_without_nan(x) for x in xs])[k].astype(np.float64)
            r64 = r.astype(np.float64)
            seen = np.isin(r64, np.append(xs[0].astype(np.float64), -np.inf))
            with np.errstate(all="ignore"):
                ok |= np.isnan(w) & (np.isnan(r64) | (seen & (r64 <= others)))
            if backend.target() == "cuda":  # and CUDA's kernel: the lowest finite value for
                # a window of -inf (and padding) alone, where the reference has -inf
                lowest = float(np.asarray(gd.dtype(w.dtype).min).astype(np.float64))
                ok |= (w.astype(np.float64) == -np.inf) & (r64 == lowest)
        if exact and out_dt.is_float:
            # bit for bit: zeros carry the reference's sign (exact=False may differ there)
            with np.errstate(all="ignore"):
                both_zero = (r.astype(np.float64) == 0) & (w.astype(np.float64) == 0)
            same_sign = np.signbit(r.astype(np.float64)) == np.signbit(w.astype(np.float64))
            ok &= ~both_zero | same_sign
        if not ok.all():
            bad = ~ok
            raise AssertionError(
                f"{int(bad.sum())} of {bad.size} elements differ\n"
                f"inputs: {[describe(x[bad]) for x in xs] if xs[0].shape == w.shape else ''}\n"
                f"onnxruntime: {describe(r[bad])}\nreference:   {describe(w[bad])}"
            )


def _without_nan(x: np.ndarray) -> np.ndarray:
    """``x`` with each NaN made -inf (the lowest finite value in a dtype without infinities),
    which no max picks over another value."""
    if not gd.dtype(x.dtype).is_float:
        return x
    lowest = -np.inf if np.isinf(np.asarray(-np.inf).astype(x.dtype)) else gd.dtype(x.dtype).min
    return np.where(np.isnan(x), np.asarray(lowest).astype(x.dtype), x)


def test_flushed_subnormals_accepts_exactly_a_zero_of_the_same_sign() -> None:
    want = np.array([7.47e-43, -7.47e-43, 7.47e-43, 1e-30, 7.47e-43, 0.0], np.float32)
    got = np.array([0.0, -0.0, -0.0, 0.0, 1.4e-45, 0.0], np.float32)
    # a subnormal against 0 of its sign: yes; the wrong sign, a normal value, another
    # subnormal, or an exact zero (which compares equal anyway): no
    assert flushed_subnormals(got, want).tolist() == [True, True, False, False, False, False]


def _lowered_differently(op: str, dt: DType) -> bool:
    """Does export(exact=False) give another model than the default for (op, dtype)?"""
    g = build(op, dt)
    assert g is not None
    return bool(export(g).graph != export(g, exact=False).graph)


NOT_EXACT = [(op, dt) for op, dt in CASES if _lowered_differently(op, dt)]


@pytest.mark.parametrize(("op", "dt"), NOT_EXACT, ids=[f"{o}-{d.name}" for o, d in NOT_EXACT])
def test_not_exact_export_matches_up_to_signed_zeros_and_nan_payloads(op: str, dt: DType) -> None:
    # the same comparison without the zero-sign check (NaN payloads are never compared)
    check_case(op, dt, exact=False)


def test_not_exact_export_drops_only_zero_sign_legalizations() -> None:
    ops = {op for op, _ in NOT_EXACT}
    # where the exact lowering repairs -0.0 (Where, max/min, %, //, relu) the other differs
    assert {"where", "maximum", "max", "mod", "floordiv", "relu"} <= ops
    assert not ops & {"add", "matmul", "exp", "cast_to_int8", "gather"}


def test_matrix_is_not_empty() -> None:
    ops = {op for op, _ in CASES}
    assert len(CASES) > 400 and "floordiv" in ops and "cast_to_int8" in ops
    assert ("matmul", DType.int8) in CASES and ("sum", DType.uint64) in CASES
