"""Every (op, dtype) the DSL accepts exports, runs on onnxruntime's CPU provider, and matches
``gd.evaluate`` on inputs with negatives, zeros, extremes, NaN and inf, by the suite's one
rule for floats (tests/floats.py), picked per op (:data:`INEXACT_OPS`):

- bit for bit, zero signs included (``floats.assert_bits``): integers and bool, and the float
  results of ops that round once (IEEE 754 rounds + - * / sqrt and casts correctly) or move
  data; every op not in INEXACT_OPS;
- ``"ulps"``: a kernel of libm type, within the ulps :data:`KERNEL_ULPS` states for it;
- ``"sum"``: a sum of n terms (reductions, matmul, windows, attention, convolutions), within
  ``floats.dot_bound`` of the real n and S = sum |terms|; exact (bound 0) per element where
  the terms are exactly summable; zero signs not compared (the order decides them);
- ``"softmax"``, ``"log_sum_exp"``, ``"moment"``, ``"gelu"``, ``"norm"``: the bounds derived
  below and in tests/norm_bounds.py (gelu's zero signs compared: it is elementwise);
  ``"exact_sum"``: a sum exact by construction (bound 0, zero signs aside); ``"draws"``:
  random values, of which only dtype, shape and bounds are compared.

Which (op, dtype) cells exist is pinned per op (:data:`ACCEPTED`): a cell dropped or added
fails with the op named.
"""

from __future__ import annotations

import math

import backend
import floats
import numpy as np
import pytest
from backend import export, run
from norm_bounds import moment_output_bound, output_bound
from onnx_cases import CASES as ALL_OPS
from onnx_cases import (
    DTYPES,
    FLUSHES_SUBNORMALS,
    RANDOM_DRAWS,
    WINDOW_TERMS,
    all_cases,
    build,
    case_inputs,
    describe,
    flushed_subnormals,
)

import graphdsl as gd
from graphdsl import DType
from graphdsl.ops.cast import cast_array

CASES = all_cases()

# ---------------------------------------------------------------- the cells, pinned per op

_ALL = frozenset(d.name for d in DTYPES)
# issue 30's dtypes: MAX's other small floats, and ONNX's int4/uint4
_SMALL = frozenset({"float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn",
                    "float6_e3m2fn", "float4_e2m1fn"})  # fmt: skip
_I4 = frozenset({"int4", "uint4"})
_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64", "float8_e4m3fn",
                     "float8_e5m2"}) | _SMALL  # fmt: skip
# a case's literal the type cannot hold: e8m0 (no 0, no negatives), float4 (7, 10)
_NO_E8M0 = _ALL - {"float8_e8m0fnu"}
_GROUPS: list[tuple[frozenset[str], str]] = [
    (_ALL, """
    div maximum minimum equal not_equal less less_equal greater greater_equal
    logical_and logical_or logical_xor logical_not exp log sqrt rsqrt sin cos tanh
    sigmoid softmax silu tan sinh cosh log1p expm1 atanh atan asin acos sum
    sum_all_keepdims prod prod_all_keepdims max max_all_keepdims min min_all_keepdims
    mean mean_all_keepdims where clip_max_only
    reshape transpose broadcast_to concat expand_dims squeeze gather gather_axis1
    gather_nd gather_nd_negative scatter scatter_nd slice_tensor slice_tensor_int
    slice_tensor_mixed band_part band_part_exclude split tile any any_all_keepdims all
    all_all_keepdims var var_all_keepdims std std_all_keepdims logsumexp
    logsumexp_all_keepdims var_correction std_correction argmax argmax_axis0_keepdims
    argmin argmin_axis0_keepdims top_k top_k_indices top_k_axis0_all argsort
    argsort_descending_axis0 logsoftmax logsoftmax_axis0 erf gelu gelu_tanh gelu_quick
    layer_norm rms_norm rms_norm_offset rms_norm_gemma group_norm avg_pool2d
    avg_pool2d_exclusive max_pool2d max_pool2d_dilated pad pad_reflect pad_edge resize
    resize_bilinear linear linear_no_bias batch_norm batch_norm_nhwc adaptive_avg_pool2d
    adaptive_avg_pool2d_divides adaptive_avg_pool2d_global scaled_dot_product_attention
    scaled_dot_product_attention_causal scaled_dot_product_attention_mask call
    cond cond_literal while_loop
    while_loop_never cast_to_bool cast_to_int8 cast_to_int16 cast_to_int32 cast_to_int64
    cast_to_uint8 cast_to_uint16 cast_to_uint32 cast_to_uint64 cast_to_float16
    cast_to_bfloat16 cast_to_float32 cast_to_float64 cast_to_float8_e4m3fn
    cast_to_float8_e5m2 cast_to_float8_e4m3fnuz cast_to_float8_e5m2fnuz cast_to_float8_e8m0fnu
    cast_to_float6_e2m3fn cast_to_float6_e3m2fn cast_to_float4_e2m1fn cast_to_int4
    cast_to_uint4 bottom_k bottom_k_indices bottom_k_axis0_all nonzero rebind dynamic_slice dim_size
    group_query_attention group_query_attention_present_value
    """),
    # a join with int16 (JAX's lattice: int4 and uint4 are leaves, joining nothing else)
    (_ALL - _I4, "cond_join while_loop_join call_promoted"),
    (_ALL - {"float4_e2m1fn"}, "clip_tensor_min"),
    (_NO_E8M0 - {"float4_e2m1fn"}, "clip"),
    (_NO_E8M0 - _I4, "clip_float_bounds"),
    (_ALL - {"bool"}, """
    add sub mul floordiv mod pow matmul negative abs sign relu floor ceil round trunc
    is_nan is_inf scatter_add scatter_nd_add range cumsum cumsum_exclusive_reverse
    scatter_max scatter_nd_max scatter_min scatter_nd_min scatter_mul scatter_nd_mul
    """),
    (_NO_E8M0 - {"bool", "float4_e2m1fn"}, "dynamic_range"),
    (_FLOATS, """
    range_float conv2d conv2d_nchw_groups conv3d conv2d_transpose batch_norm_conv fold
    """),
    # e8m0 refused: draws and regions need zero and negatives
    (_FLOATS - {"float8_e8m0fnu"}, "roi_align random_uniform random_normal"),
    (frozenset({"float16", "bfloat16", "float32"}), """
    quantize quantize_uint8_axis quantize_blocked qmatmul qmatmul_blocked_zp
    """),
    (_ALL - _FLOATS, "bitwise_and bitwise_or bitwise_xor bitwise_not"),
    (frozenset({"int8", "uint8"}) | _I4,
     "dequantize dequantize_axis_float16 dequantize_blocked_bfloat16"),
    (_ALL - {"float8_e4m3fn", "float8_e5m2"} - _SMALL - _I4,
     "scaled_dot_product_attention_float_mask"),
]  # fmt: skip
# op -> the names of the dtypes the matrix runs it on (4436 cells)
ACCEPTED: dict[str, frozenset[str]] = {op: dts for dts, ops in _GROUPS for op in ops.split()}


def test_each_op_runs_on_exactly_its_pinned_dtypes() -> None:
    """Every op of tests/onnx_cases.py is a row of ACCEPTED, and the matrix runs it on exactly
    those dtypes: a dtype the DSL starts or stops accepting, or a case that stops building,
    fails here with the op named (a build failure other than the DSL refusing the dtype
    already fails collection, in onnx_cases.build)."""
    assert len(ACCEPTED) == sum(len(ops.split()) for _, ops in _GROUPS), "an op pinned twice"
    ran: dict[str, set[str]] = {op: set() for op in ALL_OPS}
    for op, dt in CASES:
        ran[op].add(dt.name)
    problems = [f"{op}: not pinned in ACCEPTED (runs on {sorted(ran[op])})"
                for op in ran if op not in ACCEPTED]  # fmt: skip
    problems += [f"{op}: pinned, but not a case of tests/onnx_cases.py" for op in ACCEPTED
                 if op not in ran]  # fmt: skip
    for op in ran.keys() & ACCEPTED.keys():
        if ran[op] != ACCEPTED[op]:
            lost, new = sorted(ACCEPTED[op] - ran[op]), sorted(ran[op] - ACCEPTED[op])
            problems.append(f"{op}: dropped {lost}, added {new}")
    assert not problems, "\n".join(problems)
    assert len(CASES) == sum(len(d) for d in ACCEPTED.values()) == 4436


def test_range_and_the_ops_without_a_symbol_operand_run() -> None:
    # they raised OpTypeError outside ``with graph:``, which the matrix took for a refusal
    ran = {op for op, _ in CASES}
    assert {"range", "range_float", "dynamic_range", "random_uniform", "random_normal",
            "roi_align"} <= ran  # fmt: skip
    assert ("range", DType.uint8) in CASES and ("dynamic_range", DType.uint64) in CASES


# ---------------------------------------------------------------- how floats compare

# Kernels of libm type (not correctly rounded), each taken to be within this many ulps
# (units of floats.ulp_bound: eps |x| + the smallest subnormal) of the function for float32
# and float64 results; onnxruntime's and the reference's may differ by twice that (the 4 the
# matrix has allowed them; measured at most 1.05 between the two over the matrix's inputs on
# an AVX-512 AMD EPYC). A float16, bfloat16 or float8 result computes in float32 (or
# float64) and rounds once: the two results are within 1 ulp of the narrow dtype (each
# within half an ulp of a float32 value a few float32 ulps from the function's).
KERNEL_ULPS = {
    # onnxruntime's Exp, Log, Sin, Cos, Tanh (MLAS's float32 kernels, Eigen's float64;
    # float64 Sin and Cos: within about an eps absolutely, activation.py) and numpy's
    # (SIMD float32 kernels, the C library's float64)
    "exp": 2, "log": 2, "sin": 2, "cos": 2, "tanh": 2,
    # the reference's steps around one Exp (sigmoid: e = exp(-|x|), 1 / (1 + e) or
    # e / (1 + e); silu: x / (1 + exp(-x))): Exp's error, then correctly rounded steps that
    # do not amplify it by more than 2
    "sigmoid": 2, "silu": 2,
    # Pow: onnxruntime's (the C library's pow) and numpy's (the same, or its own)
    "pow": 2,
    # composed in float64 from Exp, Log, Sin, Cos, Div (exporters/onnx/_lower/activation.py:
    # within about 2.5 ulps (cosh, sinh), 3 (sinh below 1), a few (log1p, expm1, atanh,
    # asin, acos), a couple (atan), tan within a few but off by eps (1 + tan**2) absolutely
    # near k pi / 2 for float64); float32 and narrower round that once
    "tan": 2, "sinh": 2, "cosh": 2, "log1p": 2, "expm1": 2, "atanh": 2, "atan": 2, "asin": 2,
    "acos": 2,
    # erf: onnxruntime's float32 Erf (within an ulp, measured, activation.py), Cody's
    # rationals in float64 (within 3 eps relatively: 4 ulps below a power of two)
    "erf": 2,
}  # fmt: skip
_SUMS = ["sum", "sum_all_keepdims", "mean", "mean_all_keepdims", "prod", "prod_all_keepdims",
         "matmul", "qmatmul", "qmatmul_blocked_zp", *WINDOW_TERMS]  # fmt: skip
# op -> how its float results compare (module docstring); any other op: bit for bit
INEXACT_OPS: dict[str, str] = {
    **dict.fromkeys(KERNEL_ULPS, "ulps"),
    # a sum of n terms (products: matmul, convolutions, linear, attention's weighted values;
    # taps: pools, resize, fold; a product of n factors for prod), each order within
    # gamma_n S of the exact value
    **dict.fromkeys(_SUMS, "sum"),
    # exp(x - max) / sum: Exp's ulps and the sum's gamma_n, relatively (_softmax_bound)
    "softmax": "softmax",
    # log(sum(exp(x - max))): Exp's and Log's ulps and the sum's gamma_n (_log_sum_exp_bound)
    **dict.fromkeys(["logsumexp", "logsumexp_all_keepdims", "logsoftmax", "logsoftmax_axis0"],
                    "log_sum_exp"),
    # two sums (of x, of the squared deviations) in another order, and std's sqrt:
    # tests/norm_bounds.py's moment_bound
    **dict.fromkeys(["var", "var_all_keepdims", "var_correction", "std", "std_all_keepdims",
                     "std_correction"], "moment"),
    # float32 kernels against a float64 reference: tests/norm_bounds.py's bounds; gelu's
    # (Erf or Tanh, elementwise) and the norms' (sums)
    **dict.fromkeys(["gelu", "gelu_tanh", "gelu_quick"], "gelu"),
    **dict.fromkeys(["layer_norm", "rms_norm", "rms_norm_offset", "rms_norm_gemma",
                     "group_norm"], "norm"),
    # bilinear taps of weight exactly 1 and 0 (each bin one pixel, sampled at its center):
    # each sum has one nonzero term, exact in any order; the sign of a zero is the order's
    "roi_align": "exact_sum",
    # random values: onnxruntime's differ from the reference's (onnx_cases.RANDOM_DRAWS)
    **dict.fromkeys(RANDOM_DRAWS, "draws"),
}  # fmt: skip
# elementwise results whose zeros' signs the math decides (sin(-0.0) is -0.0): compared
_SIGNED_ZEROS = {"ulps", "gelu"}


@pytest.mark.parametrize(("op", "dt"), CASES, ids=[f"{o}-{d.name}" for o, d in CASES])
def test_op_dtype_matches_reference(op: str, dt: DType) -> None:
    check_case(op, dt, exact=True)


def check_case(op: str, dt: DType, exact: bool) -> None:
    """Export (op, dt) with ``exact``, run it on the special values, compare with evaluate
    by the op's rule (INEXACT_OPS). ``exact=False`` compares no zero signs."""
    g = build(op, dt)
    assert g is not None
    xs = case_inputs(g, op, dt)
    want = gd.evaluate(g, xs)
    # onnx.checker with strict type and shape inference
    model = export(g, check="full", exact=exact)
    got = run(model, xs)
    rule = INEXACT_OPS.get(op, "bits")
    for k, (w, r) in enumerate(zip(want, got, strict=True)):
        what = f"{op}-{dt.name}, output {k} ({rule})"
        if rule == "draws":
            _check_draws(op, r, w, what)
            continue
        if not gd.dtype(w.dtype).is_float:
            floats.assert_bits(r, w, what)
            continue
        r = _accepted(op, g, xs, k, r, w, exact)
        try:
            _compare(op, rule, g, xs, k, r, w, exact, what)
        except AssertionError as e:
            same = xs[0].shape == w.shape
            shown = [describe(x) for x in xs] if same else ""
            raise AssertionError(f"{e}\ninputs: {shown}") from None


def _compare(op: str, rule: str, g: gd.Graph, xs: list[np.ndarray], k: int, r: np.ndarray,
             w: np.ndarray, exact: bool, what: str) -> None:  # fmt: skip
    out = gd.dtype(w.dtype)
    if rule == "bits":
        if exact:
            floats.assert_bits(r, w, what)
        else:  # the same comparison, zero signs aside (NaN payloads are never compared)
            floats.assert_close(r, w, 0.0, what)
        return
    if rule == "exact_sum":
        floats.assert_close(r, w, 0.0, what)
        return
    if rule == "ulps":
        wide = out in (DType.float32, DType.float64)
        bound = floats.ulp_bound(w, out, 2 * KERNEL_ULPS[op] if wide else 1)
    elif rule == "sum":
        bound = _sum_bound(op, g, xs, k, r, w)
    elif rule == "softmax":
        bound = _softmax_bound(g, r, w)
    elif rule == "log_sum_exp":
        bound = _log_sum_exp_bound(g, r, w)
    elif rule == "moment":
        stated = moment_output_bound(g, xs)
        assert stated is not None and not stated.overflows, "moderate inputs overflow float32"
        bound = stated.bound
    else:  # "gelu", "norm": tests/norm_bounds.py's bounds, from the math
        stated = output_bound(g, xs) if k == 0 else None
        assert stated is not None and not stated.overflows, "moderate inputs overflow float32"
        bound = stated.bound
    floats.assert_close(r, w, bound, what)
    if exact and rule in _SIGNED_ZEROS:  # and a zero of the reference's sign
        zero = np.asarray(w.astype(np.float64) == 0)
        floats.assert_bits(r[zero], w[zero], f"{what}: the signs of zeros")


def _terms(op: str, xs: list[np.ndarray], w: np.ndarray) -> int:
    """n, the number of terms each element of the "sum" op's result sums (or multiplies)."""
    if op in WINDOW_TERMS:
        return WINDOW_TERMS[op]
    if op == "matmul":
        return int(xs[0].shape[-1])
    if op.startswith("qmatmul"):  # and the rounding of each dequantized weight
        return int(xs[0].shape[-1]) + 1
    n = xs[0].size // max(w.size, 1)  # the reductions (of the one input)
    return n + 1 if op.startswith("mean") else n  # and mean's division


def _sum_terms(op: str, xs: list[np.ndarray], w: np.ndarray) -> np.ndarray | None:
    """The terms of each element's sum (shape [w.size, n], exact in float64) where the op
    sums its inputs' values or products (sum, mean: the reduced axes are the last ones;
    matmul), else None."""
    if op in ("sum", "sum_all_keepdims", "mean", "mean_all_keepdims"):
        return np.asarray(xs[0], np.float64).reshape(w.size, -1)
    if op == "matmul":
        return floats.matmul_terms(xs[0], xs[1]).reshape(w.size, -1)
    return None


def _sum_bound(op: str, g: gd.Graph, xs: list[np.ndarray], k: int, r: np.ndarray,
               w: np.ndarray) -> np.ndarray:  # fmt: skip
    """floats.dot_bound with S = the reference on |inputs|, which is sum |terms| for each
    "sum" op: its terms' magnitudes are the inputs' magnitudes or their products with
    non-negative constants (qmatmul's weights and scales, the pools' and resize's taps,
    attention's weights), and the cases give batch_norm_conv negative means and positive
    gammas and betas (so (|x| - mean) gamma + beta = |x - mean| |gamma| + |beta|; the integer
    cases of batch_norm do not: there S comes from its operands); for prod, S =
    prod |x_i| (a product of n factors in any order is within gamma_n of it). S itself is a
    sum of n non-negative terms, rounded: at least S (1 - gamma_n)(1 - u_out), so divided by
    that. Exact (0) per element whose terms are exactly summable (floats.exactly_summable:
    sum and matmul; mean, then one correctly rounded division)."""
    out = gd.dtype(w.dtype)
    n = _terms(op, xs, w)
    c = floats.compute_dtype(out)
    if op in ("batch_norm", "batch_norm_nhwc"):
        s_rounded = _batch_norm_terms(g, xs)
    else:
        # (np.abs of ml_dtypes' int4 gives int8: back to the input's dtype, as int8's -128
        # stays -128)
        s_rounded = gd.evaluate(g, [np.abs(x).astype(x.dtype) for x in xs])[k].astype(np.float64)
    s = s_rounded / ((1 - floats.gamma(n, c)) * (1 - floats.unit_roundoff(out)))
    bound = floats.dot_bound(s, n, out, r, w)
    terms = _sum_terms(op, xs, w)
    if terms is not None:
        narrow = out if out.np.itemsize <= c.itemsize else c
        exact = [floats.exactly_summable(t, narrow) for t in terms]
        bound = np.where(np.reshape(exact, w.shape), 0.0, bound)
    return np.asarray(bound)


def _batch_norm_terms(g: gd.Graph, xs: list[np.ndarray]) -> np.ndarray:
    """|x - mean| |gamma| / sqrt(var + epsilon) + |beta| in float64 from the batch_norm node's
    operands (their integer means need not be negative: unsigned ones wrap), laid out as the
    case's result (NHWC: the node's NCHW result transposed back)."""
    from fuzz_graphs import intermediates  # a test helper module, as this one

    names = [s.attrs["name"] for s in g.inputs]
    env = intermediates(g, dict(zip(names, xs, strict=True)))
    node = next(n for n in g.used() if n.op == "batch_norm")
    x, mean, var, gamma, beta = (
        cast_array(np.asarray(env[id(i)]), d).astype(np.float64)
        for i, d in zip(node.inputs, node.in_dtypes, strict=True)
    )
    per_channel = (-1,) + (1,) * (x.ndim - 2)
    with np.errstate(all="ignore"):
        scale = np.abs(gamma) / np.sqrt(var + float(node.attrs["epsilon"]))
        s = np.abs(x - mean.reshape(per_channel)) * scale.reshape(per_channel)
        s = (s + np.abs(beta).reshape(per_channel)) * (1 + 2.0**-40)
    out = g.outputs[0]
    return s.transpose(out.attrs["perm"]) if out.op == "transpose" else s


def _axis_size(g: gd.Graph) -> int:
    node = g.outputs[0]
    axes = node.attrs["axis"]
    axes = axes if isinstance(axes, tuple) else (axes,)
    return math.prod(int(node.inputs[0].shape[a]) for a in axes)


def _softmax_bound(g: gd.Graph, r: np.ndarray, w: np.ndarray) -> np.ndarray:
    """softmax = e_i / s with e_j = exp(t_j), t_j = x_j - max (rounded alike on both sides:
    one correctly rounded subtraction), s = sum e_j, all terms positive. Each side: e_j
    within kappa = KERNEL_ULPS["exp"] eps relatively (and the smallest subnormal absolutely,
    over s >= 1), s within kappa + gamma_(n-1) (a weighted mean of the e_j's errors, the
    sum's), the division (or reciprocal and product: onnxruntime's) 2 u: within
    rel = 2 kappa + gamma_(n+1) of e_i / s relatively; two sides: twice that, and each
    rounding to the result."""
    out = gd.dtype(w.dtype)
    c = floats.compute_dtype(out)
    n = _axis_size(g)
    kappa = KERNEL_ULPS["exp"] * 2 * floats.unit_roundoff(c)
    rel = 2 * kappa + floats.gamma(n + 1, c)
    rel = rel / (1 - rel)
    sub = float(np.finfo(c).smallest_subnormal)
    with np.errstate(all="ignore"):
        y = np.maximum(np.abs(r.astype(np.float64)), np.abs(w.astype(np.float64)))
        tiny = floats.dot_bound(np.zeros(w.shape), 1, out, r, w)  # the roundings to out
        return np.asarray((2 * rel * y / (1 - rel) + 4 * sub + tiny) * (1 + 2.0**-40))


def _log_sum_exp_bound(g: gd.Graph, r: np.ndarray, w: np.ndarray) -> np.ndarray:
    """logsumexp = m + log(s), logsoftmax = t_i - log(s), with t_j = x_j - m (rounded alike on
    both sides), s = sum exp(t_j) in [1, n] (exp(0) is 1). Each side: s within
    theta = kappa_exp + gamma_n relatively, so log(s) within theta / (1 - theta) absolutely,
    and Log's kappa_log |log s| <= kappa_log (log n + theta) more; the last add rounds once
    (u |result|). Two sides: twice the first terms; each rounding, and each to the result."""
    out = gd.dtype(w.dtype)
    c = floats.compute_dtype(out)
    u = floats.unit_roundoff(c)
    n = _axis_size(g)
    theta = KERNEL_ULPS["exp"] * 2 * u + floats.gamma(n, c)
    theta = theta / (1 - theta)
    log_err = theta + KERNEL_ULPS["log"] * 2 * u * (math.log(n) + theta)
    with np.errstate(all="ignore"):
        mag = np.abs(r.astype(np.float64)) + np.abs(w.astype(np.float64))
        rounding = floats.dot_bound(np.zeros(w.shape), 1, out, r, w)
        return np.asarray((2 * log_err + u * mag + rounding) * (1 + 2.0**-40))


def _accepted(op: str, g: gd.Graph, xs: list[np.ndarray], k: int, r: np.ndarray,
              w: np.ndarray, exact: bool) -> np.ndarray:  # fmt: skip
    """``r`` with the reference's value where a kernel's documented behaviour differs from it
    and the difference is accepted (a mask of accepted elements: they compare equal)."""
    base_op = op.split("_all")[0]
    ok = np.zeros(w.shape, bool)
    if base_op in FLUSHES_SUBNORMALS:
        # processor-dependent: +-0 for a float32 subnormal (AVX2 and SSE kernels)
        ok |= flushed_subnormals(r, w)
    if not exact and base_op.startswith("max_pool"):
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
    return np.where(ok, w, r) if ok.any() else r


def _check_draws(op: str, r: np.ndarray, w: np.ndarray, what: str) -> None:
    """Random draws: onnxruntime's and the reference's values differ; both are of the
    graph's dtype and shape, finite, within [low, high], and not all one value."""
    assert r.dtype == w.dtype and r.shape == w.shape, (
        f"{what}: {r.dtype}{list(r.shape)}, reference {w.dtype}{list(w.shape)}"
    )
    low, high = RANDOM_DRAWS[op]
    for name, v in (("onnxruntime", r), ("reference", w)):
        v64 = v.astype(np.float64)
        assert np.all(np.isfinite(v64)), f"{what}: {name}'s draws {describe(v)}"
        assert np.all((v64 >= low) & (v64 <= high)), f"{what}: {name}'s draws {describe(v)}"
        assert np.unique(v64).size > 1, f"{what}: {name}'s draws are all {v64.flat[0]}"


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


def test_correctly_rounded_ops_compare_bit_for_bit() -> None:
    # IEEE 754 rounds + - * / sqrt once: no tolerance may hide a lowering such as x * (1/y)
    assert not {"add", "sub", "mul", "div", "sqrt", "rsqrt", "floordiv"} & INEXACT_OPS.keys()
    assert set(INEXACT_OPS) <= set(ALL_OPS)


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
