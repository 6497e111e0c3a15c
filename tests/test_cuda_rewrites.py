"""The CUDA target's rewrites (exporters/onnx/_targets.py: CUDA_BROKEN, CUDA_QUIRKS), each on
the inputs that showed the CUDA kernel wrong on an H200 (shared/gpu/cuda-h200-2026-11-26.tsv).

Each case is checked twice: on onnxruntime's CUDA provider where one is present (skipped,
with the reason, where not), and, everywhere, the model exported for CUDA on the CPU
provider (where the CPU has the kernels the CUDA model uses): the rewrite's arithmetic
equals the reference there too, so a rewrite that is wrong fails on any machine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import floats
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from norm_bounds import output_bound

import graphdsl as gd
from exporters.onnx import RunError, cpu_nodes, export, options, run
from exporters.onnx._optimizers import optimizers_off
from exporters.onnx._run import _entries

HAS_CUDA = "CUDAExecutionProvider" in ort.get_available_providers()
CUDA = ["CUDAExecutionProvider", "CPUExecutionProvider"]
CPU = ["CPUExecutionProvider"]
nan, inf = np.nan, np.inf


def one(dt: gd.DType, shape: tuple[Any, ...], fn: Callable[[gd.Symbol], gd.Symbol]) -> gd.Graph:
    g = gd.Graph("case", input_types={"x": gd.TensorType(dt, shape)})
    g.output(fn(g.inputs[0]))
    return g


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit: dtype, shape, values, zero signs and NaN places (tests/floats.py; for
    results exact by construction only)."""
    floats.assert_bits(got, want)


def _softmax_bound(want: np.ndarray, dt: gd.DType) -> np.ndarray:
    """softmax and logsoftmax of a row of n <= 3 (tests/floats.py's rule): exp and log each
    within an ulp (2u relatively), the sum of n positive terms within γ_n <= 3u, the division
    (or subtraction of the log, whose value here is exact: its arguments are) rounding once:
    2u (numerator) + 2u + 3u (denominator) + u = 8u per evaluation, so two evaluations in
    their own orders are within 16u = 8 ulps of the result (eps = 2u)."""
    return floats.ulp_bound(want, dt, 8)


F32, F64, F16 = gd.float32, gd.float64, gd.float16
# (name, dtype, shape, op, input): one case per measured CUDA failure
CASES: list[tuple[str, gd.DType, tuple[Any, ...], Callable[[gd.Symbol], gd.Symbol], list[Any]]] = [
    ("sign-nan", F32, (3,), gd.ops.sign, [nan, -0.0, -2.0]),
    ("quantize-nan-inf", F32, (4,), lambda x: gd.ops.quantize(x, np.float32(2.0)),
     [nan, inf, -inf, 3.0]),
    ("argsort-nan", F64, (2, 4), gd.ops.argsort, [[nan, 3.0, -inf, 1.0], [0.1, -0.0, 0.0, nan]]),
    ("argsort-descending-nan-inf", F32, (6,), lambda x: gd.ops.argsort(x, ascending=False),
     [inf, nan, 1.0, inf, nan, -0.0]),
    ("top_k-ties", F32, (2, 4), lambda x: gd.ops.top_k(x, 3)[1],
     [[3.0, 3.0, nan, 3.0], [-0.0, 0.0, -0.0, 1.0]]),
    ("top_k-float64-nan", F64, (5,), lambda x: gd.ops.top_k(x, 3)[0],
     [1.0, nan, inf, nan, 1.0]),
    ("max_pool-neg-inf", F64, (1, 1, 2, 2),
     lambda x: gd.ops.max_pool2d(x, (2, 2), padding=1, input_layout="NCHW"),
     [[[[-inf, -inf], [-inf, 1.0]]]]),
    ("conv-inf-filter-over-padding", F32, (1, 1, 2, 2),
     lambda x: gd.ops.conv2d(x, np.full((1, 1, 2, 2), inf, np.float32), padding=(1, 1, 1, 1),
                             input_layout="NCHW"),
     [[[[1.0, 2.0], [3.0, 4.0]]]]),
    ("logsoftmax-large", F32, (2, 2), gd.ops.logsoftmax,
     [[65534.0, 65534.0], [2147483647.0, 2147483647.0]]),
    ("softmax-float64", F64, (1, 3), gd.ops.softmax, [[-7.0, 3.0, 0.5]]),
    ("cumsum-reverse", F32, (3,), lambda x: gd.ops.cumsum(x, reverse=True),
     [0.1, 0.2, 0.3]),
    ("cumsum-negative-zero", F32, (3,), gd.ops.cumsum, [-0.0, -0.0, 1.0]),
    ("prod-negative-zero", F64, (2, 2), lambda x: gd.ops.prod(x, axis=1),
     [[-0.0, 2.0], [0.0, -3.0]]),
    ("sum-int64-wraps", gd.int64, (2,), lambda x: gd.ops.sum(x, axis=0),
     [2**63 - 1, 3]),
    ("max-empty-axis", F32, (2, 0), lambda x: gd.ops.max(x, axis=1), np.zeros((2, 0))),
    ("mean-empty-axis", F32, (0, 3), lambda x: gd.ops.mean(x, axis=0), np.zeros((0, 3))),
    ("scatter-repeated", F32, (2, 3), lambda x: gd.ops.scatter(
        x, np.array([[1.0, 2.0, 3.0]], np.float32), np.array([[0, 0, 0]]), axis=1),
     [[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]]),
    ("scatter_nd_add-int32", gd.int32, (3,), lambda x: gd.ops.scatter_nd_add(
        x, np.array([5, 7, 9], np.int32), np.array([[1], [1], [0]])), [1, 2, 3]),
    ("scatter_nd_add-float64", F64, (3,), lambda x: gd.ops.scatter_nd_add(
        x, np.array([0.5, 0.25, 1.0]), np.array([[2], [2], [0]])), [1.0, 2.0, 3.0]),
    ("cast-double-to-float8", F64, (3,), lambda x: gd.ops.cast(x, gd.float8_e4m3fn),
     [400.00001, 464.0, -1e-300]),
    ("cast-float8-to-double", gd.float8_e5m2, (2,), lambda x: gd.ops.cast(x, gd.float64),
     [1.5, -57344.0]),
    ("cast-float8-to-bfloat16", gd.float8_e4m3fn, (2,), lambda x: gd.ops.cast(x, gd.bfloat16),
     [10.0, 0.5]),
    ("rms-norm-int16", gd.int16, (2, 3), lambda x: gd.ops.rms_norm(x, np.ones(3, np.float32)),
     [[1, 2, 3], [-4, 5, 6]]),
]


def _inputs(dt: gd.DType, shape: tuple[Any, ...], values: Any) -> list[np.ndarray]:
    if dt.is_integer:
        return [np.asarray(values, dt.np).reshape(shape)]
    return [np.asarray(values, np.float64).astype(dt.np).reshape(shape)]


def _cumsum_terms(x: np.ndarray, reverse: bool = False) -> np.ndarray:
    """The terms of each prefix (suffix) sum of 1-D ``x``, zeros for the others: [n, n]."""
    n = len(x)
    keep = np.triu(np.ones((n, n), bool)) if reverse else np.tril(np.ones((n, n), bool))
    return np.where(keep, x.astype(np.float64)[None, :], 0.0)


def _cumsum_reverse(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    # 0.1 + 0.2 + 0.3 in float32 rounds: within sum_bound in any order. (So the case no
    # longer tells cumsum_order's order, 0.6000000238 for 0.5999999046, from the reference's:
    # the order of a sum is not promised, tests/floats.py.)
    terms = _cumsum_terms(x, reverse=True)
    assert not floats.exactly_summable(terms, x.dtype)
    bound = floats.sum_bound(np.abs(terms).sum(axis=-1), len(x), x.dtype, got, want)
    floats.assert_close(got, want, bound, "cumsum reverse")


def _cumsum_negative_zero(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    # -0.0, -0.0, 1.0: exact sums (checked); then the zero signs, which the library promises
    # for a prefix of -0.0 alone (docs/semantics.md, cumsum_order: "sign repaired"), beyond
    # tests/floats.py's rule for a sum in general
    floats.assert_exact_sum(got, want, _cumsum_terms(x), "cumsum")
    floats.assert_bits(got, want, "cumsum's zero signs")


def _scatter_nd_add(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    # [1, 2, 3] + 1.0 at 0, 0.5 and 0.25 at 2: each sum exact in float32 already (checked),
    # so in float64 too (more bits, a smaller smallest subnormal); exactly_summable does not
    # tell float64 terms' exactness itself
    terms = np.array([[1.0, 1.0, 0.0], [2.0, 0.0, 0.0], [3.0, 0.5, 0.25]])
    assert np.array_equal(terms.sum(axis=-1), want) and floats.exactly_summable(terms, F32)
    floats.assert_close(got, want, 0.0, "scatter_nd_add")


SUMS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], None]] = {
    "cumsum-reverse": _cumsum_reverse,
    "cumsum-negative-zero": _cumsum_negative_zero,
    "scatter_nd_add-float64": _scatter_nd_add,
}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("provider", ["cuda", "cpu"])
def test_cuda_models_equal_the_reference(case: Any, provider: str) -> None:
    name, dt, shape, fn, values = case
    if provider == "cuda" and not HAS_CUDA:
        pytest.skip("no CUDA provider here (onnxruntime-gpu and a GPU): the CUDA run is skipped")
    g = one(dt, shape, fn)
    xs = _inputs(dt, shape, values)
    (want,) = gd.evaluate(g, xs)
    model = export(g, target="cuda")
    (got,) = run(model, xs, providers=CUDA if provider == "cuda" else CPU)
    if name in ("logsoftmax-large", "softmax-float64"):  # exp, log and a sum: a bound
        floats.assert_close(got, want, _softmax_bound(want, gd.dtype(want.dtype)), name)
        return
    if name == "rms-norm-int16":  # a sum of squares, a square root: tests/norm_bounds.py's
        b = output_bound(g, xs)
        assert b is not None and not b.overflows
        floats.assert_close(got, want, b.bound, name)
        return
    if name in SUMS:  # a sum: exact by construction where the helper finds it so, else a bound
        SUMS[name](got, want, xs[0])
        return
    if name == "conv-inf-filter-over-padding":
        # every window holds an inf tap (Σ|x w| = inf: the bound of a sum is vacuous); what is
        # checked is NaN where the reference's inf * padding's 0 gives NaN, inf elsewhere
        assert np.isnan(want).sum() == 8 and np.isinf(want).sum() == 1
        floats.assert_close(got, want, np.inf, name)
        return
    same(got, want)


@pytest.mark.parametrize("provider", ["cuda", "cpu"])
def test_an_index_out_of_range_is_a_run_error_on_cuda_models(provider: str) -> None:
    if provider == "cuda" and not HAS_CUDA:
        pytest.skip("no CUDA provider here: the CUDA run is skipped")
    g = gd.Graph("pos", input_types={"ids": gd.TensorType(gd.int64, ("seq",))})
    with g:
        table = g.constant(np.arange(16 * 2, dtype=np.float32).reshape(16, 2))
        pos = gd.ops.range(0, g.inputs[0].shape[0])
        g.output(gd.ops.gather(table, pos) + gd.ops.gather(table, g.inputs[0]))
    model = export(g, target="cuda")
    ok = np.zeros(16, np.int64)
    run(model, [ok], providers=CUDA if provider == "cuda" else CPU)
    for bad in (np.zeros(20, np.int64), np.array([0, 16])):
        with pytest.raises(RunError, match=r"gather at test_cuda_rewrites.py:\d+: .*out of range"):
            run(model, [bad], providers=CUDA if provider == "cuda" else CPU)
    # a Graph: the reference's own words (which index, which axis)
    with pytest.raises(RunError, match="index 16 is out of range for axis 0 of size 16"):
        run(g, [np.array([0, 16])], providers=CUDA if provider == "cuda" else CPU)


def test_cpu_nodes_lists_what_cuda_runs_on_the_cpu() -> None:
    g = gd.Graph("mixed", input_types={"x": gd.TensorType(gd.int8, (4,)),
                                       "y": gd.TensorType(gd.float32, (4,))})  # fmt: skip
    x, y = g.inputs
    g.output((x & 3) + 1, y * 2)
    with pytest.warns(UserWarning, match=r"1 node\(s\) run on CPUExecutionProvider"):
        model = export(g, target="cuda")
    found = cpu_nodes(model)
    assert [(n.key, n.types) for n in found] == [("BitwiseAnd", ("INT8",))]
    assert found[0].name.startswith("bitwise_and at test_cuda_rewrites.py:")
    # its input is a graph input and its output feeds an Add on the GPU: one copy
    assert found[0].copies == 1
    assert cpu_nodes(export(g, target="cpu"), "cpu") == []


def test_tf32_is_off_unless_asked() -> None:
    entries = _entries(CUDA, None, tf32=False)
    assert entries[0] == ("CUDAExecutionProvider", {"use_tf32": "0"})
    assert _entries(CUDA, None, tf32=True)[0][1] == {"use_tf32": "1"}
    # an explicit provider option wins over tf32=
    given = _entries(CUDA, {"CUDAExecutionProvider": {"use_tf32": 1, "device_id": 0}}, False)
    assert given[0][1] == {"use_tf32": "1", "device_id": "0"}
    assert _entries(CPU, None, False) == [("CPUExecutionProvider", {})]


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA provider here: TF32 is a CUDA matter")
def test_float32_matmul_on_cuda_is_exact_without_tf32() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(64, 256)).astype(np.float32), rng.normal(size=(256, 64))
    g = gd.Graph("mm", input_types={"a": gd.TensorType(gd.float32, (64, 256))})
    g.output(g.inputs[0] @ b.astype(np.float32))
    exact = a.astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    off = run(g, [a], providers=CUDA)[0]
    on = run(g, [a], providers=CUDA, tf32=True)[0]
    # float32 sums of 256 products within γ_256 Σ|a b| of the exact ones (tests/floats.py's
    # rule, one evaluation, its rounding included); TF32's 10-bit products are not
    s = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float32).astype(np.float64))
    bound = floats.gamma(256, np.float32) * s * (1 + 2.0**-40)
    floats.assert_close(off.astype(np.float64), exact, bound, "TF32 off")
    assert (np.abs(on - exact) > bound).any()


def test_options_key_the_session_cache() -> None:
    g = one(gd.float32, (3,), lambda x: x * 2)
    x = [np.ones(3, np.float32)]
    assert options(threads=1) == options(threads=1) != options(threads=2)
    assert run(g, x, threads=1)[0].tolist() == run(g, x, threads=2)[0].tolist() == [2.0] * 3
    from exporters.onnx import _run

    assert {o.threads for o in _run._graph_sessions[g]} == {1, 2}


def test_a_model_with_external_data_runs_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = gd.Graph("w", input_types={"x": gd.TensorType(gd.float32, (2, 4))})
    g.output(g.inputs[0] @ g.weight("w", gd.float32, (4, 4)))
    w = np.arange(16, dtype=np.float32).reshape(4, 4)
    (tmp_path / "models").mkdir()
    model = export(g, tmp_path / "models" / "w.onnx", weights={"w": w})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # onnxruntime would look for w.onnx.data here
    x = np.ones((2, 4), np.float32)
    floats.assert_exact_sum(run(model, [x])[0], x @ w, floats.matmul_terms(x, w))  # integers


def test_onnxruntime_errors_at_load_are_run_errors() -> None:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv at net.py:7/y")
    vi = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, [1, 1, 2, 2]) for n in "xw"]
    out = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [1, 1, 3, 3])
    graph = helper.make_graph([node], "g", vi, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    with pytest.raises(RunError, match=r"could not load model 'g' at node 'deconv at net.py:7'"):
        run(model, [np.ones((1, 1, 2, 2))] * 2)


# (name, input type, op, inputs): graphs whose sizes are bound at run time, empty ones too
SYMBOLIC: list[tuple[str, gd.TensorType, Callable[[gd.Symbol], gd.Symbol], list[np.ndarray]]] = [
    # CUDA's Trilu fails on an empty tensor: a mask of positions where a size may be 0
    ("band_part-empty", gd.TensorType(F32, ("n", 3, 4)),
     lambda x: gd.ops.band_part(x, 1, 0, exclude=True),
     [np.zeros((0, 3, 4), np.float32), np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5]),
    # CUDA's Gelu refuses rank 0
    ("gelu-scalar", gd.TensorType(F32, ()), gd.ops.gelu, [np.array(1.5, np.float32)]),
    # onnxruntime 1.31's MatMul cannot broadcast a matrix against an empty batch
    ("matmul-empty-batch", gd.TensorType(gd.int64, ("n", 2, 3)),
     lambda x: gd.ops.matmul(np.array([[1, -2]], np.int64), x),
     [np.zeros((0, 2, 3), np.int64), np.arange(12).reshape(2, 2, 3)]),
]


@pytest.mark.parametrize("case", SYMBOLIC, ids=[c[0] for c in SYMBOLIC])
@pytest.mark.parametrize("provider", ["cuda", "cpu"])
def test_cuda_models_of_run_time_sizes_equal_the_reference(case: Any, provider: str) -> None:
    _, t, fn, values = case
    if provider == "cuda" and not HAS_CUDA:
        pytest.skip("no CUDA provider here (onnxruntime-gpu and a GPU): the CUDA run is skipped")
    g = gd.Graph("case", input_types={"x": t})
    g.output(fn(g.inputs[0]))
    model = export(g, target="cuda")
    for x in values:
        (want,) = gd.evaluate(g, [x])
        (got,) = run(model, [x], providers=CUDA if provider == "cuda" else CPU)
        if x.dtype.kind == "f" and fn is gd.ops.gelu:  # erf in float32: tests/norm_bounds.py
            b = output_bound(g, [x])
            assert b is not None
            floats.assert_close(got, want, b.bound, "gelu")
            continue
        same(got, want)


def test_the_explicit_padding_survives_the_session_optimizers(tmp_path: Path) -> None:
    """The Pad that the exporter writes before a CUDA Conv (a filter with inf: 0 * inf is NaN
    over the padding) stays a Pad in the session: onnxruntime's Pad fusion (rule name
    "Pad_Fusion"; the H200 run showed that leaving out "PadFusion", its class's name, left it
    on) would move it back into the Conv, whose cuDNN kernel leaves padding out of its sums.
    The fusion runs on the CPU provider too, so the optimized model is read here."""
    g = one(F32, (1, 1, 2, 2), lambda x: gd.ops.conv2d(
        x, np.full((1, 1, 2, 2), inf, np.float32), padding=(1, 1, 1, 1),
        input_layout="NCHW", filter_layout="FCRS"))  # fmt: skip
    model = export(g, target="cuda")
    assert [n.op_type for n in model.graph.node if n.op_type in ("Pad", "Conv")] == ["Pad", "Conv"]

    def optimized(off: frozenset[str]) -> list[str]:
        so = ort.SessionOptions()
        so.optimized_model_filepath = str(tmp_path / "opt.onnx")
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        ort.InferenceSession(model.SerializeToString(), so, CPU, disabled_optimizers=off)
        return [n.op_type for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node
                if n.op_type in ("Pad", "Conv")]  # fmt: skip

    off = optimizers_off(model, providers=CUDA)
    assert "Pad_Fusion" in off
    assert optimized(off) == ["Pad", "Conv"]
    assert optimized(off - {"Pad_Fusion"}) == ["Conv"]  # (what the fusion does otherwise)
