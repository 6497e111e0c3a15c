"""erf, gelu, layer_norm, rms_norm and group_norm: numpy goldens written from the formulas
(PyTorch's, GPT-2's, Llama's and Gemma's), epsilon, the type rule under every policy, the
shape and type errors, the export against the reference within tests/norm_bounds.py's bounds
(and the native kernels it uses), and the accuracy of the float64 erf composition.
"""

from __future__ import annotations

import math
from typing import Any

import floats
import ml_dtypes
import numpy as np
import pytest
from backend import cpu_only, export, run
from norm_bounds import bound, output_bound

import graphdsl as gd
from graphdsl import DType

F32, F64, F16, BF16 = gd.float32, gd.float64, gd.float16, gd.bfloat16
_erf = np.vectorize(math.erf, otypes=[np.float64])


def one(
    fn: Any, x: np.ndarray, *params: np.ndarray, policy: str = "default", **kw: Any
) -> gd.Graph:
    """A graph of ``fn`` on inputs of ``x``'s and ``params``' dtypes and shapes."""
    types = {
        f"in{k}": gd.TensorType(gd.dtype(a.dtype), a.shape) for k, a in enumerate([x, *params])
    }
    g = gd.Graph("t", input_types=types, policy=policy)
    g.output(fn(*g.inputs, **kw))
    return g


def evaluate(fn: Any, x: np.ndarray, *params: np.ndarray, **kw: Any) -> np.ndarray:
    return gd.evaluate(one(fn, x, *params, **kw), [x, *params])[0]


def agree(g: gd.Graph, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Reference and onnxruntime outputs of ``g``, asserting they agree within the bound."""
    want = gd.evaluate(g, inputs)[0]
    got = run(export(g, check="full"), inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    b = output_bound(g, inputs)
    assert b is not None and not b.overflows
    floats.assert_close(got, want, b.bound, g.outputs[0].op)
    return want, got


def f64_bound(op: str, attrs: dict[str, Any], operands: list[Any], ref: np.ndarray) -> np.ndarray:
    """tests/norm_bounds.py's bound for a float64 computation of ``op`` against another
    (float64 operands and result: its float64 case)."""
    args = [np.asarray(a, np.float64) for a in operands]
    return bound(op, attrs, args, np.asarray(ref, np.float64)).bound


def _far_from_ties(v: np.ndarray, bits: int, rel: float) -> bool:
    """Is every value of ``v`` farther than ``rel`` relatively from the midpoints between
    the floats of ``bits`` significand bits around it (so rounding it, or a value within
    ``rel`` of it, to them gives one result)?"""
    m, _ = np.frexp(np.abs(v[v != 0]))  # 0.5 <= m < 1: the significand
    frac = (m * 2.0**bits) % 1.0
    return bool(np.all(np.abs(frac - 0.5) > rel * 2.0**bits))


# ---------------------------------------------------------------------------- erf


def test_erf_values() -> None:
    x = np.array([0.0, -0.0, 0.5, -1.0, 2.0, 3.0, 6.0, np.inf, -np.inf, np.nan, 1e-300, 5e-324])
    got = evaluate(gd.ops.erf, x)
    # Abramowitz & Stegun, table 7.1 (erf(0.5), erf(1), erf(2), erf(3)); erf(x) ~ 2x/sqrt(pi)
    want = [0.0, -0.0, 0.5204998778130465, -0.8427007929497149, 0.9953222650189527,
            0.9999779095030014, 1.0, 1.0, -1.0, np.nan, 2 / math.sqrt(math.pi) * 1e-300,
            5e-324]  # fmt: skip
    # the reference rounds C's erf (within an ulp of the table's values)
    want = np.array(want)
    floats.assert_close(got, want, floats.ulp_bound(want, np.float64, 1), "erf")
    assert np.signbit(got[1]) and not np.signbit(got[0])
    assert evaluate(gd.ops.erf, x.astype(np.float32)).dtype == np.float32


def _ulps_f64(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.abs(got - want) / np.spacing(np.abs(want))
    return np.where((got == want) | (np.isnan(got) & np.isnan(want)), 0.0, e)


def test_erf_float64_composition_accuracy() -> None:
    """Cody's rationals in float64 ops against C's erf: within 3 eps relatively (4 ulps where
    erf(x) lies just below a power of two), over a dense grid, Cody's interval edges, tiny
    and subnormal arguments, and the special values."""
    edges = np.array([0.46875, 0.5, 4.0, 27.0, 28.0])
    near = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 99)])
    x = np.concatenate([
        np.linspace(-7, 7, 700_001), np.geomspace(1e-310, 7, 100_000), near,
        [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1e300, 26.5, 40.0],
    ])  # fmt: skip
    x = np.concatenate([x, -x])
    g = one(gd.ops.erf, x)
    got = run(export(g), [x])[0]
    want = _erf(x)
    number = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[number]), np.signbit(want[number]))  # erf(-0.0): -0.0
    # 3 eps relatively where erf(x) is normal, 4 ulps everywhere (subnormal results)
    normal = np.abs(want) >= np.finfo(np.float64).tiny
    with np.errstate(all="ignore"):
        rel = np.where(normal, 3 * np.finfo(np.float64).eps * np.abs(want), np.inf)
        ulps = 4 * np.spacing(np.abs(want))
    floats.assert_close(got, want, np.minimum(rel, ulps), "erf")
    assert float(np.nanmax(_ulps_f64(got, want))) <= 4.0


def test_erf_export_uses_the_float32_kernel() -> None:
    x = np.linspace(-5, 5, 100_001).astype(np.float32)
    g = one(gd.ops.erf, x)
    m = export(g)
    assert [n.op_type for n in export(g, target="cpu").graph.node] == ["Erf"]
    # within an ulp of the exact erf (the reference rounds C's erf once)
    got, want = run(m, [x])[0], gd.evaluate(g, [x])[0]
    floats.assert_close(got, want, np.spacing(np.abs(want)).astype(np.float64), "erf")
    bf16 = export(one(gd.ops.erf, x.astype(BF16.np)), target="cpu")  # (CUDA: in bfloat16)
    assert {n.op_type for n in bf16.graph.node} == {"Cast", "Erf"}


# ---------------------------------------------------------------------------- gelu


def _torch_gelu(x: np.ndarray) -> np.ndarray:
    """PyTorch's exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), in float64."""
    return x * 0.5 * (1 + _erf(x / math.sqrt(2)))


def _gelu_new(x: np.ndarray) -> np.ndarray:
    """GPT-2 / HF gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in float64."""
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def test_gelu_matches_the_published_formulas() -> None:
    x = np.linspace(-3, 3, 601)
    # two float64 compositions of the formula (erf, exp, tanh within an ulp; a few roundings
    # each): within 2 eps relatively (4e-16) plus 1e-16 where the value is tiny
    rel = lambda w: 4e-16 * np.abs(w)  # noqa: E731
    want = _torch_gelu(x)
    floats.assert_close(evaluate(gd.ops.gelu, x), want, rel(want) + 1e-16, "gelu")
    # HF's 1 + tanh(u) cancels for x < 0: it is within a few eps absolutely (times |x|)
    want = _gelu_new(x)
    floats.assert_close(evaluate(gd.ops.gelu, x, approximate="tanh"), want,
                        rel(want) + 4 * 2.2e-16 * 3, "gelu tanh")  # fmt: skip
    want = x / (1 + np.exp(-1.702 * x))
    floats.assert_close(evaluate(gd.ops.gelu, x, approximate="quick"), want,
                        rel(want) + 1e-16, "gelu quick")  # fmt: skip
    # HF's gelu_new(1.0) and PyTorch's gelu(1.0)
    one_ = np.array([1.0])
    floats.assert_close(evaluate(gd.ops.gelu, one_, approximate="tanh"),
                        np.array([0.8411919906082768]), 1e-16, "gelu_new(1)")  # fmt: skip
    # (x Phi(x) is 0.84134474606854294858...: within an ulp)
    floats.assert_close(evaluate(gd.ops.gelu, one_), np.array([0.8413447460685429]), 1.2e-16,
                        "gelu(1)")  # fmt: skip


def test_gelu_tail_is_computed_without_cancellation() -> None:
    # x * Phi(x) for x = -10, -20: 1 + erf(x / sqrt 2) is 0 in float64, erfc is not
    x = np.array([-10.0, -20.0, -40.0, -np.inf, np.inf, -0.0])
    got = evaluate(gd.ops.gelu, x)
    phi = [7.619853024160527e-24, 2.7536241186062337e-89]  # Phi(-10), Phi(-20)
    # x / sqrt 2 rounds, and erfc's condition number 2 t**2 makes that 1e-13 at t = 14
    want = np.array([-10 * phi[0], -20 * phi[1]])
    floats.assert_close(got[:2], want, 1e-13 * np.abs(want), "gelu's tail")
    assert got[2] == 0.0 and np.isnan(got[3]) and got[4] == np.inf  # -inf * 0 is NaN
    assert got[5] == 0.0 and np.signbit(got[5])
    tanh = evaluate(gd.ops.gelu, np.array([-10.0]), approximate="tanh")
    # x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): not 0 as 1 + tanh(u) would give
    u = math.sqrt(2 / math.pi) * (-10 + 0.044715 * -1000)
    want = np.array([-10 / (1 + math.exp(-2 * u))])
    floats.assert_close(tanh, want, 1e-14 * np.abs(want), "gelu tanh's tail")  # a few roundings


@pytest.mark.parametrize("approximate", ["none", "tanh", "quick"])
@pytest.mark.parametrize("dt", [F32, F16, BF16, F64])
def test_gelu_export_within_its_bound(approximate: str, dt: DType) -> None:
    x = np.concatenate([np.linspace(-12, 12, 24_001), [0.0, -0.0, np.inf, -np.inf, np.nan]])
    with np.errstate(all="ignore"):
        x = x.astype(dt.np)
    g = one(gd.ops.gelu, x, approximate=approximate)
    agree(g, [x])
    kinds = {n.op_type for n in export(g).graph.node}
    native = dt is not F64 and approximate != "quick"
    assert ("Gelu" in kinds) == native


@cpu_only
def test_gelu_float32_kernel_cancels_where_the_reference_does_not() -> None:
    # the documented difference: onnxruntime's float32 Gelu gives 0 at -7, the reference
    # x * Phi(x) = -9e-12; both within 4 u |x| of each other
    x = np.array([-7.0], np.float32)
    want, got = agree(one(gd.ops.gelu, x), [x])
    assert got[0] == 0.0 and want[0] == pytest.approx(-8.9586878e-12, rel=1e-6)


# ---------------------------------------------------------------------------- norms


def _layer_norm(x: np.ndarray, gamma: Any, beta: Any, eps: float) -> np.ndarray:
    """PyTorch's layer_norm over the last axis (biased variance), in float64."""
    x = np.asarray(x, np.float64)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * np.asarray(gamma) + np.asarray(beta)


def test_layer_norm_golden_and_epsilon() -> None:
    x = np.array([[0.0, 1.0], [2.0, 2.0], [1.0, 3.0]])
    gamma, beta = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    got = evaluate(gd.ops.layer_norm, x, gamma, beta, epsilon=0.25)
    # row 0: mean 0.5, var 0.25: (+-0.5) / sqrt(0.5); a constant row gives beta exactly
    s = math.sqrt(0.5)
    golden = np.array([[0.5 - 0.5 / s, -1 + 1 / s], [0.5, -1.0],
                       [0.5 - 1 / math.sqrt(1.25), -1 + 2 / math.sqrt(1.25)]])  # fmt: skip
    # the golden's own sqrt, division and add round, as the reference's two passes do
    b = f64_bound("layer_norm", {"epsilon": 0.25}, [x, gamma, beta], golden)
    floats.assert_close(got, golden, b + floats.ulp_bound(golden, np.float64, 2), "goldens")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    gamma, beta = (
        rng.standard_normal(7).astype(np.float32),
        rng.standard_normal(7).astype(np.float32),
    )
    want = _layer_norm(x, gamma.astype(np.float64), beta.astype(np.float64), 1e-5)
    # two float64 computations (their sums in their own orders), each rounded to float32
    got = evaluate(gd.ops.layer_norm, x, gamma, beta)
    want32 = want.astype(np.float32)
    b = f64_bound("layer_norm", {"epsilon": 1e-5}, [x, gamma, beta], want)
    u = floats.unit_roundoff(np.float32)
    floats.assert_close(got, want32, b + u * (np.abs(got) + np.abs(want32)), "float32")


def test_rms_norm_golden_llama_and_gemma() -> None:
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    w = np.array([1.0, -2.0])
    got = evaluate(gd.ops.rms_norm, x, w, epsilon=0.0625)
    r = math.sqrt(12.5 + 0.0625)
    # the goldens' sqrt and division round (2 ulps), the reference's sum of squares (exact
    # here), mean, sqrt, division and product (tests/norm_bounds.py's float64 bound)
    attrs = {"epsilon": 0.0625, "weight_offset": 0.0, "multiply_before_cast": False}
    golden = np.array([[3 / r, -8 / r], [0.0, 0.0]])
    b = f64_bound("rms_norm", attrs, [x, w], golden) + floats.ulp_bound(golden, np.float64, 2)
    floats.assert_close(got, golden, b, "Llama")
    gemma = evaluate(
        gd.ops.rms_norm, x, w, epsilon=0.0625, weight_offset=1.0, multiply_before_cast=True
    )  # x / rms * (w + 1)
    attrs = {**attrs, "weight_offset": 1.0, "multiply_before_cast": True}
    golden = np.array([[6 / r, -4 / r], [0.0, 0.0]])
    b = f64_bound("rms_norm", attrs, [x, w], golden) + floats.ulp_bound(golden, np.float64, 2)
    floats.assert_close(gemma, golden, b, "Gemma")


def test_rms_norm_rounding_points_in_bfloat16() -> None:
    """Llama rounds x / rms to bfloat16 and multiplies in bfloat16 (weight + offset rounded
    there too, the offset first); Gemma rounds once, after multiplying by weight + offset."""
    bf = ml_dtypes.bfloat16
    x = np.array([[1.0, 2.0, 3.0]], bf)
    w = np.array([1.25, 0.75, 1.5], bf)

    def rnd(v: Any) -> np.ndarray:
        return np.asarray(v).astype(bf).astype(np.float64)

    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    # bit for bit, exact by construction where it matters: the sum of squares is exact
    # (checked), and x / sqrt(mean + eps) in float32 and in float64 agree to 2**-22
    # relatively, far from the values' bfloat16 ties (checked), so both round alike
    assert floats.exactly_summable(x64**2, np.float32)
    n = x64 / np.sqrt(np.mean(x64**2) + 1e-6)
    assert _far_from_ties(n, 8, 2.0**-20)
    for offset in (0.0, 0.1):
        llama = evaluate(gd.ops.rms_norm, x, w, weight_offset=offset)
        weight = rnd(w64 + rnd(offset)) if offset else w64
        exact = rnd(n) * weight  # bfloat16 times bfloat16: exact in float32, rounded once
        assert np.array_equal(exact.astype(np.float32), exact)
        floats.assert_bits(llama.astype(np.float64), rnd(exact), "Llama")
        gemma = evaluate(gd.ops.rms_norm, x, w, weight_offset=offset, multiply_before_cast=True)
        assert _far_from_ties(n * (w64 + offset), 8, 2.0**-20)
        floats.assert_bits(gemma.astype(np.float64), rnd(n * (w64 + offset)), "Gemma")
    # they differ at 3 * 1.5: Llama's 1.5 * round(1.38873) = 1.5 * 1.390625 rounds to 2.09375,
    # Gemma's 1.5 * 1.38873 = 2.0831 to 2.078125
    assert not np.array_equal(evaluate(gd.ops.rms_norm, x, w), evaluate(
        gd.ops.rms_norm, x, w, multiply_before_cast=True))  # fmt: skip


def _group_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, groups: int,
                eps: float) -> np.ndarray:  # fmt: skip
    """PyTorch's group_norm: statistics over each group of channels and all positions."""
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(-1, keepdims=True)
    var = xg.var(-1, keepdims=True)
    y = ((xg - mu) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * gamma.reshape(shape) + beta.reshape(shape)


def test_group_norm_golden_and_special_groupings() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 3, 2))
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)
    # two float64 computations of the norm (sums in their own orders): tests/norm_bounds.py's
    # float64 bound for each, against the exact value
    for groups in (1, 2, 3, 6):
        got = evaluate(gd.ops.group_norm, x, gamma, beta, num_groups=groups)
        want = _group_norm(x, gamma, beta, groups, 1e-5)
        attrs = {"epsilon": 1e-5, "num_groups": groups}
        b = 2 * f64_bound("group_norm", attrs, [x, gamma, beta], want)
        floats.assert_close(got, want, b, f"{groups} groups")
    # one group: a layer norm of each sample; one group per channel: instance norm
    ones, zeros = np.ones(6), np.zeros(6)
    flat = x.reshape(2, -1)
    want = evaluate(gd.ops.layer_norm, flat, np.ones(36), np.zeros(36))
    b = 2 * f64_bound("layer_norm", {"epsilon": 1e-5}, [flat, np.ones(36), np.zeros(36)], want)
    got = evaluate(gd.ops.group_norm, x, ones, zeros, num_groups=1).reshape(2, -1)
    floats.assert_close(got, want, b, "one group")
    # [N, C] input: groups of consecutive channels
    x2 = np.array([[1.0, 3.0, 10.0, 10.0]])
    got = evaluate(gd.ops.group_norm, x2, np.ones(4), np.zeros(4), num_groups=2, epsilon=1.0)
    golden = np.array([[-1 / math.sqrt(2), 1 / math.sqrt(2), 0.0, 0.0]])
    attrs = {"epsilon": 1.0, "num_groups": 2}
    b = f64_bound("group_norm", attrs, [x2, np.ones(4), np.zeros(4)], golden)
    floats.assert_close(got, golden, b + floats.ulp_bound(golden, np.float64, 2), "[N, C]")


@pytest.mark.parametrize("dt", [F32, F16, BF16, F64])
def test_norms_export_within_their_bounds(dt: DType) -> None:
    rng = np.random.default_rng(list(DType).index(dt))
    # rows with offsets up to 1e4 times their spread: condition numbers up to 1e4
    x = rng.standard_normal((64, 12)) * 2 + rng.choice([0.0, 3.0, 100.0, 1e4], (64, 1))
    x, g_, b_ = x.astype(dt.np), rng.standard_normal(12).astype(dt.np), rng.standard_normal(
        12).astype(dt.np)  # fmt: skip
    agree(one(gd.ops.layer_norm, x, g_, b_), [x, g_, b_])
    agree(one(gd.ops.rms_norm, x, g_), [x, g_])
    agree(one(gd.ops.rms_norm, x, g_, weight_offset=0.3), [x, g_])
    agree(one(gd.ops.rms_norm, x, g_, weight_offset=1.0, multiply_before_cast=True), [x, g_])
    x4 = x.reshape(16, 4, 3, 4)
    g4, b4 = g_[:4], b_[:4]
    agree(one(gd.ops.group_norm, x4, g4, b4, num_groups=2), [x4, g4, b4])


def test_norm_exports_and_their_node_counts() -> None:
    x, w = np.ones((2, 8), np.float32), np.ones(8, np.float32)

    def ops(fn: Any, *a: np.ndarray, **kw: Any) -> list[str]:
        return [n.op_type for n in export(one(fn, *a, **kw)).graph.node]

    assert ops(gd.ops.layer_norm, x, w, w) == ["LayerNormalization"]
    # float64: LayerNormalization's epsilon is a float32 attribute; composed in two passes
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert ops(gd.ops.layer_norm, x64, w64, w64) == [
        "ReduceMean",
        "Sub",
        "Mul",
        "ReduceMean",
        "Add",
        "Sqrt",
        "Div",
        "Mul",
        "Add",
    ]
    # the pattern onnxruntime's optimizer fuses into SimplifiedLayerNormalization
    assert ops(gd.ops.rms_norm, x, w) == ["Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"]
    assert "LayerNormalization" in ops(gd.ops.group_norm, x.reshape(2, 4, 2), w[:4], w[:4],
                                       num_groups=2)  # fmt: skip


def test_norms_on_symbolic_and_empty_shapes() -> None:
    g = gd.Graph("t", input_types={"x": gd.TensorType(F32, ("n", 4, "h")),
                                   "c": gd.TensorType(F32, (4,)),
                                   "w": gd.TensorType(F32, ("h",))})  # fmt: skip
    x, c, w = g.inputs
    g.output(gd.ops.group_norm(x, c, c, num_groups=2), gd.ops.layer_norm(x, w, w),
             gd.ops.rms_norm(x, w))  # fmt: skip
    model = export(g)
    rng = np.random.default_rng(2)
    for n, h in ((2, 3), (0, 3), (1, 0), (3, 1)):
        xs = [rng.standard_normal(s).astype(np.float32) for s in ((n, 4, h), (4,), (h,))]
        want = gd.evaluate(g, xs)
        got = run(model, xs)
        x_, c_, w_ = xs
        rms = {"epsilon": 1e-6, "weight_offset": 0.0, "multiply_before_cast": False}
        bounds = [
            bound("group_norm", {"epsilon": 1e-5, "num_groups": 2}, [x_, c_, c_], want[0]),
            bound("layer_norm", {"epsilon": 1e-5}, [x_, w_, w_], want[1]),
            bound("rms_norm", rms, [x_, w_], want[2]),
        ]
        for k, (v, r, b) in enumerate(zip(want, got, bounds, strict=True)):
            assert r.shape == v.shape == (n, 4, h)
            assert not b.overflows
            floats.assert_close(r, v, b.bound, f"output {k}")  # tests/norm_bounds.py


# ---------------------------------------------------------------------------- type rules


FLOATS = [F16, BF16, F32, F64]


@pytest.mark.parametrize("policy", gd.policy_names())
def test_type_rules_under_every_policy(policy: str) -> None:
    """Integers and bool compute in the policy's default float; gamma/beta/weight promote with
    the input exactly as the policy joins them (the type of x * gamma, made floating)."""
    pol = gd.policy(policy)
    dtypes = [gd.bool, gd.int8, gd.uint8, gd.int32, gd.int64, F16, BF16, F32, F64]
    for xd in dtypes:
        for pd in dtypes:
            types = {"x": gd.TensorType(xd, (2, 4)), "p": gd.TensorType(pd, (4,))}
            g = gd.Graph("t", input_types=types, policy=policy)
            x, p = g.inputs
            try:
                joined = pol.promote_types(xd, pd)
            except gd.PromotionError:
                with pytest.raises(gd.PromotionError):
                    gd.ops.rms_norm(x, p)
                continue
            want = joined if joined.is_float else pol.default_float
            for built in (gd.ops.layer_norm(x, p, p), gd.ops.rms_norm(x, p),
                          gd.ops.group_norm(x, p, p, num_groups=2)):  # fmt: skip
                assert built.type == gd.TensorType(want, (2, 4)), (policy, xd, pd, built.type)
            # erf and gelu are typed as the other floating functions of one operand are
            # (max-graph keeps an integer dtype there)
            for approximate in ("none", "tanh", "quick"):
                assert gd.ops.gelu(x, approximate).type == gd.ops.tanh(x).type
            assert gd.ops.erf(x).type == gd.ops.tanh(x).type
            if policy != "max-graph":
                assert gd.ops.tanh(x).dtype == (xd if xd.is_float else pol.default_float)


def test_type_goldens_default_policy() -> None:
    g = gd.Graph("t", input_types={"h": gd.TensorType(F16, (2, 4)),
                                   "f": gd.TensorType(F32, (4,)),
                                   "i": gd.TensorType(gd.int32, (2, 4)),
                                   "b": gd.TensorType(BF16, (4,))})  # fmt: skip
    h, f, i, b = g.inputs
    assert str(gd.ops.layer_norm(h, f, f).type) == "float32[2, 4]"
    assert str(gd.ops.rms_norm(h, h[0]).type) == "float16[2, 4]"
    assert str(gd.ops.rms_norm(i, f).type) == "float32[2, 4]"
    assert str(gd.ops.layer_norm(h, b, b).type) == "float32[2, 4]"  # float16 v bfloat16
    assert str(gd.ops.gelu(i).type) == "float32[2, 4]"


# ---------------------------------------------------------------------------- errors


def _graph(**types: tuple[DType, tuple[int | str, ...]]) -> list[gd.Symbol]:
    g = gd.Graph("t", input_types={k: gd.TensorType(d, s) for k, (d, s) in types.items()})
    return list(g.inputs)


@pytest.mark.parametrize(
    ("build", "error", "says"),
    [
        (
            lambda x, g4, g3, c: gd.ops.layer_norm(x, g3, g4),
            gd.ShapeError,
            [
                "layer_norm of input float32[2, 4]",
                "gamma and beta must be 1-D of the last dimension (4)",
                "gamma (3,), beta (4,)",
                "shape (4,)",
            ],
        ),
        (
            lambda x, g4, g3, c: gd.ops.rms_norm(x, g4[None]),
            gd.ShapeError,
            ["weight must be 1-D", "weight (1, 4)"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.rms_norm(x[0, 0], g4),
            gd.ShapeError,
            ["input float32[] is a scalar", "expand_dims"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.group_norm(x[0], g4, g4, 2),
            gd.ShapeError,
            ["rank >= 2", "channels second"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.group_norm(gd.ops.transpose(x), g4, g4, 2),
            gd.ShapeError,
            ["gamma and beta must be 1-D of the channel count (2)"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.group_norm(x, g4, g4, 3),
            gd.ShapeError,
            ["4 channels (axis 1) do not split into 3 groups", "num_groups must divide"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.layer_norm(x, 1.0, 0.5),
            gd.ShapeError,
            ["gamma (), beta ()", "pass values of shape (4,)"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.group_norm(c, g4, g4, 2),
            gd.ShapeError,
            ["must be a static size"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.group_norm(x, g4[:2], g4[:2], 0),
            gd.OpTypeError,
            ["num_groups must be a positive int, got 0"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.layer_norm(x, g4, g4, 0.0),
            gd.OpTypeError,
            ["layer_norm's epsilon must be positive and finite, got 0.0"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.rms_norm(x, g4, float("nan")),
            gd.OpTypeError,
            ["epsilon must be positive and finite, got nan"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.rms_norm(x, g4, "small"),
            gd.OpTypeError,
            ["epsilon must be a number, got 'small'"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.rms_norm(x, g4, multiply_before_cast=1),
            gd.OpTypeError,
            ["multiply_before_cast must be a bool, got 1"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.rms_norm(x, g4, weight_offset=float("inf")),
            gd.OpTypeError,
            ["weight_offset must be finite"],
        ),
        (
            lambda x, g4, g3, c: gd.ops.gelu(x, "erf"),
            gd.OpTypeError,
            ["gelu's approximate must be one of 'none', 'tanh', 'quick', got 'erf'"],
        ),
    ],
)
def test_errors_name_the_problem(build: Any, error: type[Exception], says: list[str]) -> None:
    x, g4, g3, c = _graph(x=(F32, (2, 4)), g4=(F32, (4,)), g3=(F32, (3,)), c=(F32, (2, "c")))
    with pytest.raises(error) as info:
        build(x, g4, g3, c)
    msg = str(info.value)
    for s in says:
        assert s in msg, f"{s!r} not in {msg!r}"
    assert "(at " in msg  # the user's line


def test_complex_operands_are_refused_with_their_types() -> None:
    x, p = _graph(x=(gd.complex64, (2, 4)), p=(F32, (4,)))
    with pytest.raises(gd.OpTypeError, match=r"complex64\[2, 4\], float32\[4\].*floating"):
        gd.ops.rms_norm(x, p)


@cpu_only
def test_residual_rms_norm_is_skip_simplified_layer_norm_under_exact_false() -> None:
    """rms_norm(x + a, w) under export(exact=False) is onnxruntime's
    SkipSimplifiedLayerNormalization, which also gives the sum x + a (read again below): the
    sum bit for bit (the same float32 addition), the norm within rms_norm's bound. Where the
    sum is read before the norm, or the norm has an offset, the composed lowering stays."""
    t = gd.TensorType(gd.float32, ("b", "s", 64))
    g = gd.Graph("residual", input_types={"x": t, "a": t, "w": gd.TensorType(gd.float32, (64,))})
    x, a, w = g.inputs
    total = x + a
    g.output(gd.ops.rms_norm(total, w, 1e-6), total * 2)
    model = export(g, exact=False)
    fused = [n.op_type for f in model.functions for n in f.node]
    assert fused == ["SkipSimplifiedLayerNormalization"]
    assert "Add" not in [n.op_type for n in model.graph.node]
    rng = np.random.default_rng(12)
    xs = [rng.normal(size=(2, 3, 64)).astype(np.float32) * 3,
          rng.normal(size=(2, 3, 64)).astype(np.float32),
          rng.normal(size=64).astype(np.float32)]  # fmt: skip
    want, got = gd.evaluate(g, xs), run(model, xs)
    floats.assert_bits(got[1], want[1], "2 (x + a)")
    norm = bound("rms_norm", g.outputs[0].attrs, [xs[0] + xs[1], xs[2]], want[0])
    floats.assert_close(got[0], want[0], norm.bound, "rms_norm(x + a)")

    g2 = gd.Graph("read_first", input_types={"x": t, "a": t, "w": gd.TensorType(gd.float32, (64,))})
    x, a, w = g2.inputs
    total = x + a
    doubled = total * 2  # the sum read before the norm: the Add stays where it is
    g2.output(gd.ops.rms_norm(total, w, 1e-6), doubled,
              gd.ops.rms_norm(x + a, w, 1e-6, weight_offset=1.0))  # fmt: skip
    assert not any(n.domain == "com.microsoft"
                   for f in export(g2, exact=False).functions for n in f.node)  # fmt: skip
