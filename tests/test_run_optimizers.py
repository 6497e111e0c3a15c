"""run()'s sessions keep onnxruntime's graph optimizations (ORT_ENABLE_ALL) and leave out the
optimizers that change results (exporters/onnx/_optimizers.py): for each one, a small model
where it changes the result (shown by putting it back into a session otherwise made as
run() makes its own) and run() gives the reference's; and which models the two conditional
ones are left out of. The (op, dtype) matrix and the fuzzer run through run() too, so they
check the whole list on every test run.

Pinned to onnxruntime's CPU provider whatever --provider says: run()'s list of onnxruntime
optimizers, compared with plain CPU sessions (tests/test_cuda_target.py covers CUDA's).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import floats
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphdsl as gd
from exporters.onnx import RunError, export, run
from exporters.onnx._optimizers import (
    ALWAYS_OFF,
    FOLD_DEQUANTIZED_BELOW,
    SOMETIMES_OFF,
    optimizers_off,
    session_config,
    session_settings,
)
from exporters.onnx._run import inference_session, session_options

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import cnn  # noqa: E402
import gpt2_block  # noqa: E402
import llama_block  # noqa: E402


def with_optimizer(model: onnx.ModelProto, name: str) -> ort.InferenceSession:
    """A session of ``model`` made as run() makes it, but with optimizer ``name`` back and
    without run()'s session config entries (``session.disable_quant_qdq``)."""
    off = optimizers_off(model) - {name}
    return ort.InferenceSession(
        model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"],
        disabled_optimizers=set(off),
    )  # fmt: skip


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values with NaN in the same places and zeros of the same sign (tests/floats.py's
    assert_bits), for the results an optimizer is shown to change."""
    try:
        floats.assert_bits(a, b)
    except AssertionError:
        return False
    return True


def _abs_conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Σ|x w| of each output of a stride-1 NCHW convolution (OIHW filter, zero padding),
    in float64: the magnitudes tests/floats.py's dot bound reads."""
    xp = np.pad(np.abs(x.astype(np.float64)), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    with np.errstate(all="ignore"):
        return np.einsum("nchwij,ocij->nohw", win, np.abs(w.astype(np.float64)))


def test_run_sessions_keep_every_graph_optimization() -> None:
    assert session_options().graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert set(ALWAYS_OFF) == {"ExpandElimination", "GatherToSliceFusion", "MatMulScaleFusion",
                               "NoopElimination", "NotWhereFusion",
                               "QDQSelectorActionTransformer"}  # fmt: skip
    assert set(SOMETIMES_OFF) == {"MatmulTransposeFusion", "NchwcTransformer",
                                  "SimplifiedLayerNormFusion"}  # fmt: skip


@pytest.mark.parametrize("dt", [gd.float16, gd.float8_e5m2fnuz])
def test_a_cast_of_a_transpose_into_a_matmul_keeps_the_session_alive(dt: gd.DType) -> None:
    """onnxruntime's MatmulTransposeFusion crashes the process (a segmentation fault while
    the session is made, 1.31 and 1.32) on MatMul(Cast(Transpose(x)), w): a narrow float
    transposed and multiplied in float32 (the fuzzer's graph, reduced). run() leaves it out of
    such a model, which then runs; the crash itself is shown in a child process."""
    g = gd.Graph("tm", input_types={"x": gd.TensorType(dt, ("n", 3, 4))})
    x = gd.ops.cast(gd.ops.transpose(g.inputs[0], [1, 0, 2]), gd.float32)
    g.output(x @ g.constant(np.arange(8, dtype=np.float32).reshape(4, 2)))
    model = export(g)
    assert "MatmulTransposeFusion" in optimizers_off(model)
    xs = np.arange(24).reshape(2, 3, 4).astype(dt.np)
    floats.assert_bits(run(model, {"x": xs})[0], gd.evaluate(g, {"x": xs})[0])  # exact sums
    code = ("import onnx, onnxruntime as ort, sys; "
            "ort.InferenceSession(onnx.load(sys.argv[1]).SerializeToString(), "
            "providers=['CPUExecutionProvider'])")  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(model, path)
        crashed = subprocess.run([sys.executable, "-c", code, path], capture_output=True)
    assert crashed.returncode != 0, "onnxruntime no longer crashes: the rule may go"


def test_gather_to_slice_fusion_turns_an_index_error_into_a_clamped_result() -> None:
    g = gd.Graph("pos", input_types={"ids": gd.TensorType(gd.int64, ("seq",))})
    with g:
        table = g.constant(np.arange(32, dtype=np.float32).reshape(16, 2))
        g.output(gd.ops.gather(table, gd.ops.range(0, g.inputs[0].shape[0])))
    model = export(g)
    ids = np.zeros(20, np.int64)  # a sequence longer than the table
    with pytest.raises(RunError, match="out of range"):
        run(model, {"ids": ids})
    assert with_optimizer(model, "GatherToSliceFusion").run(None, {"ids": ids})[0].shape == (16, 2)


def test_expand_elimination_turns_an_empty_expand_into_an_error() -> None:
    g = gd.Graph("rep", input_types={"x": gd.TensorType(gd.int8, (2,))})
    g.output(gd.ops.repeat_interleave(g.inputs[0], 0))  # an Expand to a shape with a 0
    model = export(g)
    x = np.array([3, -4], np.int8)
    (want,) = gd.evaluate(g, {"x": x})
    assert want.shape == (0,)
    floats.assert_bits(run(model, {"x": x})[0], want)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="Reshape"):
        with_optimizer(model, "ExpandElimination").run(None, {"x": x})


@pytest.mark.parametrize("scale", ["mul_inf", "div_zero"])
def test_matmul_scale_fusion_moves_the_scale_past_the_sum(scale: str) -> None:
    g = gd.Graph("scaled", input_types={"x": gd.TensorType(gd.float32, (1, 2))})
    (x,) = g.inputs
    scaled = x * float("inf") if scale == "mul_inf" else x / 0.0
    g.output(scaled @ g.constant(np.ones((2, 1), np.float32)))
    model = export(g)
    x_in = np.array([[2.0, -1.0]], np.float32)  # [inf, -inf] @ [1, 1]: inf + -inf = NaN
    assert np.isnan(gd.evaluate(g, {"x": x_in})[0]).all()
    assert np.isnan(run(model, {"x": x_in})[0]).all()
    got = with_optimizer(model, "MatMulScaleFusion").run(None, {"x": x_in})[0]
    assert got.tolist() == [[np.inf]]  # inf * (2 - 1)


@pytest.mark.parametrize("dt", [gd.float16, gd.bfloat16])
def test_noop_elimination_drops_the_zero_that_makes_negative_zero_positive(dt: gd.DType) -> None:
    g = gd.Graph("plus_zero", input_types={"x": gd.TensorType(dt, (2,))})
    g.output(1.0 / (g.inputs[0] + 0.0))
    model = export(g)
    x = np.array([-0.0, 0.0], dt.np)
    want = np.array([np.inf, np.inf], dt.np)  # -0.0 + 0.0 is +0.0
    floats.assert_bits(gd.evaluate(g, {"x": x})[0], want)
    floats.assert_bits(run(model, {"x": x})[0], want)
    if dt is gd.float16:  # (bfloat16 inputs need run()'s conversion)
        got = with_optimizer(model, "NoopElimination").run(None, {"x": x})[0]
        assert got.tolist() == [-np.inf, np.inf]


def test_not_where_fusion_swaps_the_branch_that_keeps_negative_zero() -> None:
    g = gd.Graph("zero_sign", input_types={"a": gd.TensorType(gd.float32, (4,)),
                                           "b": gd.TensorType(gd.float32, (4,))})  # fmt: skip
    a, b = g.inputs
    g.output(a % b, a // b)
    model = export(g)
    feeds = {"a": np.array([0.0, -0.0, 3.0, -3.0], np.float32),
             "b": np.array([-2.0, 2.0, -3.0, 3.0], np.float32)}  # fmt: skip
    mod = np.array([-0.0, 0.0, -0.0, 0.0], np.float32)  # numpy: the divisor's sign
    floordiv = np.array([-0.0, -0.0, -1.0, -1.0], np.float32)
    for got in (gd.evaluate(g, feeds), run(model, feeds)):
        floats.assert_bits(got[0], mod, "mod")
        floats.assert_bits(got[1], floordiv, "floordiv")
    fused = with_optimizer(model, "NotWhereFusion").run(None, feeds)
    assert not same_bits(fused[0], mod) and not same_bits(fused[1], floordiv)


def _dequantize_matmul(k: int, n: int, seed: int) -> tuple[onnx.ModelProto, np.ndarray]:
    """DequantizeLinear(int8 [k, n], per-column scales) then MatMul, written by hand;
    with the weight as float64 for the reference."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    scale = rng.uniform(0.01, 0.03, n).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "scale"], ["wf"], axis=1),
         helper.make_node("MatMul", ["x", "wf"], ["y"])],
        "dq_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "scale")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return model, w.astype(np.float64) * scale.astype(np.float64)


def test_qdq_fusion_quantizes_the_activations() -> None:
    model, w = _dequantize_matmul(256, 64, seed=0)
    x = np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32)
    # each dequantized weight rounds once to float32 (0.5 ulp), and a float32 sum of 256
    # terms in any order is within 256 eps of the sum of the magnitudes
    want = x.astype(np.float64) @ w
    eps = float(np.finfo(np.float32).eps)
    bound = 257 * eps * (np.abs(x).astype(np.float64) @ np.abs(w))
    floats.assert_close(run(model, {"x": x})[0].astype(np.float64), want, bound, "MatMul")
    fused = with_optimizer(model, "QDQSelectorActionTransformer").run(None, {"x": x})[0]
    beyond = np.abs(fused - want) / bound  # int8 activations: most elements, some 10x over
    assert (beyond > 1).mean() > 0.5 and (beyond > 10).any()


def _conv(filt: np.ndarray, padding: int) -> gd.Graph:
    g = gd.Graph("conv", input_types={"x": gd.TensorType(gd.float32, ("b", 6, 6, 8))})
    g.output(gd.ops.conv2d(g.inputs[0], filt, padding=(padding,) * 4))
    return g


def _nchwc_runs(model: onnx.ModelProto, tmp_path: Path) -> bool:
    """Does onnxruntime give ``model`` NCHWc kernels here (AVX2 and AVX-512 machines)?"""
    so = session_options()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    optimized = onnx.load(so.optimized_model_filepath)
    return any(n.domain == "com.microsoft.nchwc" for n in optimized.graph.node)


def test_nchwc_is_left_out_where_a_padded_filter_holds_inf(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    filt = rng.normal(size=(3, 3, 8, 16)).astype(np.float32)
    finite = export(_conv(filt, 1))
    assert "NchwcTransformer" not in optimizers_off(finite)
    filt[0, 0, 0, 0] = np.inf
    g = _conv(filt, 1)
    model = export(g)
    assert "NchwcTransformer" in optimizers_off(model)
    x = rng.normal(size=(1, 6, 6, 8)).astype(np.float32)
    (want,) = gd.evaluate(g, {"x": x})
    assert np.isnan(want).any()  # the padding's 0 times inf
    got = run(model, {"x": x})[0]
    assert np.array_equal(np.isnan(got), np.isnan(want))
    if _nchwc_runs(finite, tmp_path):
        nchwc = with_optimizer(model, "NchwcTransformer").run(None, {"x": x})[0]
        assert not np.array_equal(np.isnan(nchwc), np.isnan(want))


def test_nchwc_is_left_out_where_a_filter_holds_nan(tmp_path: Path) -> None:
    # found by the fuzzer: a window of padding only (the right column here) is NaN in the
    # reference (0 * NaN), the bias alone in NCHWc
    filt = np.array([np.nan, -1.875], np.float32).reshape(1, 1, 1, 2)  # RSCF: 2 outputs
    g = gd.Graph("conv", input_types={"x": gd.TensorType(gd.float32, (1, 3, 3, 1))})
    g.output(gd.ops.conv2d(g.inputs[0], filt, padding=(0, 0, 0, 1), bias=np.ones(2, np.float32)))
    model = export(g)
    assert "NchwcTransformer" in optimizers_off(model)
    x = np.ones((1, 3, 3, 1), np.float32)
    (want,) = gd.evaluate(g, {"x": x})
    assert np.isnan(want[..., 0]).all() and not np.isnan(want[..., 1]).any()
    got = run(model, {"x": x})[0]
    floats.assert_bits(np.isnan(got[..., 0]), np.isnan(want[..., 0]))
    # the other output: one product (x or the padding's 0 times -1.875) plus the bias, a
    # sum exact by construction (checked)
    terms = np.stack([np.pad(x[0, ..., 0], ((0, 0), (0, 1))) * -1.875, np.ones((3, 4))], -1)
    floats.assert_exact_sum(got[0, ..., 1], want[0, ..., 1], terms, "the finite filter")
    if _nchwc_runs(model, tmp_path):
        nchwc = with_optimizer(model, "NchwcTransformer").run(None, {"x": x})[0]
        assert not same_bits(nchwc, want)


def test_a_filter_computed_from_a_graph_input_is_never_nchwc(tmp_path: Path) -> None:
    # channels first: the filter reaches Conv as it is (channels last transposes it)
    types = {"x": gd.TensorType(gd.float32, (1, 8, 6, 6)),
             "f": gd.TensorType(gd.float32, (4, 8, 3, 3))}  # fmt: skip
    g = gd.Graph("conv_of_input", input_types=types)
    x, f = g.inputs
    g.output(gd.ops.conv2d(x, f, padding=(1, 1, 1, 1), input_layout="NCHW"))
    assert "NchwcTransformer" not in optimizers_off(export(g))  # a graph input: never NCHWc
    h = gd.Graph("conv_of_sum", input_types=types)
    x, f = h.inputs
    h.output(gd.ops.conv2d(x, f + 1.0, padding=(1, 1, 1, 1), input_layout="NCHW"))
    model = export(h)
    assert "NchwcTransformer" not in optimizers_off(model)  # computed from one: never folded
    assert not _nchwc_runs(model, tmp_path)
    feeds = {"x": np.ones((1, 8, 6, 6), np.float32),
             "f": np.full((4, 8, 3, 3), np.inf, np.float32)}  # fmt: skip
    # every window sums inf terms (Σ|x w| = inf: the dot bound is vacuous): inf, or NaN over
    # the padding (0 * inf); checked: NaN where NaN, infinities equal
    want = gd.evaluate(h, feeds)[0]
    assert np.isnan(want).any() and np.isinf(want).any()
    floats.assert_close(run(model, feeds)[0], want, np.inf, "a filter of inf")


def _scaled_conv(scale: float) -> gd.Graph:
    """A Conv whose filter is computed from constants (folded by onnxruntime at load)."""
    filt = np.random.default_rng(3).normal(size=(4, 8, 3, 3)).astype(np.float32)
    filt[0, 0, 0, 0] = 3e38
    g = gd.Graph("conv_of_constants", input_types={"x": gd.TensorType(gd.float32, (1, 8, 6, 6))})
    w = g.constant(filt) * g.constant(np.float32(scale))
    g.output(gd.ops.conv2d(g.inputs[0], w, padding=(1, 1, 1, 1), input_layout="NCHW"))
    return g


def test_a_filter_computed_from_constants_is_evaluated(tmp_path: Path) -> None:
    # a batch norm folded into its convolution computes the filter this way: finite, NCHWc
    # stays on (ResNet-18 runs 1.3x faster); inf once folded (3e38 * 2), it is left out
    finite = export(_scaled_conv(1.0))
    assert "NchwcTransformer" not in optimizers_off(finite)
    g = _scaled_conv(2.0)
    model = export(g)
    assert "NchwcTransformer" in optimizers_off(model)
    x = np.random.default_rng(4).normal(size=(1, 8, 6, 6)).astype(np.float32)
    (want,) = gd.evaluate(g, {"x": x})
    assert np.isnan(want).any()  # the padding's 0 times inf
    got = run(model, {"x": x})[0]  # a sum in another order: NaN where the reference's is
    assert np.array_equal(np.isnan(got), np.isnan(want))
    # within tests/floats.py's dot bound of 72 terms, with the filter as folded (3e38 * 2 =
    # inf: the channels it reaches are inf or NaN, checked as such)
    with np.errstate(over="ignore"):
        filt = np.random.default_rng(3).normal(size=(4, 8, 3, 3)).astype(np.float32)
        filt[0, 0, 0, 0] = 3e38
        filt = filt * np.float32(2.0)
    bound = floats.dot_bound(_abs_conv(x, filt, 1), 72, np.float32, got, want)
    floats.assert_close(got, want, bound, "conv")
    if _nchwc_runs(finite, tmp_path):
        nchwc = with_optimizer(model, "NchwcTransformer").run(None, {"x": x})[0]
        assert not np.array_equal(np.isnan(nchwc), np.isnan(want))


def test_a_conv_in_an_onnx_function_is_checked(tmp_path: Path) -> None:
    # a subgraph called twice is one ONNX function; onnxruntime inlines it at load, and its
    # Conv then reads the caller's filter: an inf there leaves NCHWc out as anywhere else
    filt = np.random.default_rng(5).normal(size=(8, 8, 3, 3)).astype(np.float32)
    filt[0, 0, 0, 0] = np.inf
    t = gd.TensorType(gd.float32, (1, 8, 6, 6))
    g = gd.Graph("blocks", input_types={"x": t})
    block = g.subgraph("block", {"x": t, "w": gd.TensorType(gd.float32, (8, 8, 3, 3))})
    bx, bw = block.inputs
    block.output(gd.ops.conv2d(bx, bw, padding=(1, 1, 1, 1), input_layout="NCHW"))
    w = g.constant(filt)
    g.output(gd.ops.call(block, gd.ops.call(block, g.inputs[0], w), w))
    model = export(g)
    assert model.functions and not any(n.op_type == "Conv" for n in model.graph.node)
    assert "NchwcTransformer" in optimizers_off(model)
    x = np.random.default_rng(6).normal(size=(1, 8, 6, 6)).astype(np.float32)
    got, want = run(model, {"x": x})[0], gd.evaluate(g, {"x": x})[0]
    assert np.isnan(want).any() and np.array_equal(np.isnan(got), np.isnan(want))
    filt[0, 0, 0, 0] = 1.0
    finite = gd.Graph("blocks", input_types={"x": t})
    w = finite.constant(filt)
    finite.output(gd.ops.call(block, gd.ops.call(block, finite.inputs[0], w), w))
    assert "NchwcTransformer" not in optimizers_off(export(finite))


def test_rms_norm_fusion_is_left_out_where_the_axis_may_be_empty() -> None:
    g = gd.Graph("rms", input_types={"x": gd.TensorType(gd.float32, ("n", "h")),
                                     "w": gd.TensorType(gd.float32, ("h",))})  # fmt: skip
    g.output(gd.ops.rms_norm(*g.inputs))
    model = export(g)
    assert "SimplifiedLayerNormFusion" in optimizers_off(model)
    feeds = {"x": np.ones((2, 0), np.float32), "w": np.ones(0, np.float32)}
    assert run(model, feeds)[0].shape == (2, 0) == gd.evaluate(g, feeds)[0].shape
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="at least 1"):
        with_optimizer(model, "SimplifiedLayerNormFusion").run(None, feeds)
    # a statically empty axis exports no norm at all (the empty result is the input: onnxruntime
    # 1.31 fails the norm's reductions of an empty value beside others), so nothing to fuse
    static = gd.Graph("rms", input_types={"x": gd.TensorType(gd.float32, ("n", 0))})
    static.output(gd.ops.rms_norm(static.inputs[0], np.ones(0, np.float32)))
    empty = export(static)
    assert not {"ReduceMean", "Pow", "Sqrt"} & {n.op_type for n in empty.graph.node}
    assert run(empty, {"x": np.ones((3, 0), np.float32)})[0].shape == (3, 0)


def test_the_example_models_keep_every_optimizer_that_does_not_change_them() -> None:
    c = gpt2_block.Config()
    gpt2 = export(gpt2_block.build(gpt2_block.random_weights(c), c))
    lc = llama_block.Config()
    llama = export(llama_block.build(llama_block.random_weights(lc), lc))
    nc = cnn.Config()
    convnet = export(cnn.build(cnn.init_weights(nc), nc))
    for model in (gpt2, llama, convnet):
        assert optimizers_off(model) == set(ALWAYS_OFF)


def test_a_conv_filter_in_external_data_is_read_to_check_it(tmp_path: Path) -> None:
    filt = np.random.default_rng(3).normal(size=(3, 3, 8, 64)).astype(np.float32)
    filt[0, 0, 1, 1] = -np.inf  # a corner tap: it meets the padding
    path = str(tmp_path / "conv.onnx")
    onnx.save_model(export(_conv(filt, 1)), path, save_as_external_data=True,
                    size_threshold=0, location="conv.onnx.data")  # fmt: skip
    stored = onnx.load(path, load_external_data=False)
    assert any(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer)
    assert "NchwcTransformer" in optimizers_off(stored, str(tmp_path))
    assert "NchwcTransformer" in optimizers_off(stored, None)  # data not found: unknown
    x = np.ones((1, 6, 6, 8), np.float32)
    assert np.isnan(run(path, {"x": x})[0]).any()
    assert os.path.exists(str(tmp_path / "conv.onnx.data"))


def test_inference_session_is_run_s_session(tmp_path: Path) -> None:
    g = gd.Graph("plus_zero", input_types={"x": gd.TensorType(gd.float16, (2,))})
    g.output(1.0 / (g.inputs[0] + 0.0))
    path = str(tmp_path / "m.onnx")
    model = export(g, path)
    x = np.array([-0.0, 0.0], np.float16)
    for sess in (inference_session(model), inference_session(path)):
        assert sess.run(None, {"x": x})[0].tolist() == [np.inf, np.inf]


def test_a_run_error_from_a_fused_kernel_never_reaches_run() -> None:
    # the symbolic rms_norm above, through run() of the Graph
    g = gd.Graph("rms", input_types={"x": gd.TensorType(gd.float32, ("n", "h")),
                                     "w": gd.TensorType(gd.float32, ("h",))})  # fmt: skip
    g.output(gd.ops.rms_norm(*g.inputs))
    try:
        out = run(g, {"x": np.ones((3, 0), np.float32), "w": np.ones(0, np.float32)})
    except RunError as e:  # pragma: no cover - the failure this test is for
        pytest.fail(f"run() refused an empty axis: {e}")
    assert out[0].shape == (3, 0)


def test_constant_int8_weights_are_dequantized_once_at_load(tmp_path: Path) -> None:
    model, _ = _dequantize_matmul(256, 64, seed=4)
    assert session_config(model) == {"session.disable_quant_qdq": "1"}
    so = session_options()
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"],
                         disabled_optimizers=set(optimizers_off(model)))  # fmt: skip
    optimized = onnx.load(so.optimized_model_filepath)
    assert "DequantizeLinear" not in {n.op_type for n in optimized.graph.node}  # folded
    # the same values as dequantizing at every call (no optimization at all)
    none = ort.SessionOptions()
    none.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    per_call = ort.InferenceSession(model.SerializeToString(), none,
                                    providers=["CPUExecutionProvider"])  # fmt: skip
    x = np.random.default_rng(5).standard_normal((3, 256)).astype(np.float32)
    # the folded weight is DequantizeLinear's, bit for bit (a product rounded once), and the
    # products' sums within tests/floats.py's dot bound (their order is the kernel's)
    w = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "w"))
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "scale"))
    dequantized = w.astype(np.float32) * scale
    (folded,) = [numpy_helper.to_array(t) for t in optimized.graph.initializer
                 if t.data_type == TensorProto.FLOAT and tuple(t.dims) == w.shape]  # fmt: skip
    floats.assert_bits(folded, dequantized, "the folded weight")
    floats.assert_matmul(run(model, {"x": x})[0], per_call.run(None, {"x": x})[0], x, dequantized)


def test_int8_weights_too_large_for_float32_stay_int8() -> None:
    big = TensorProto(name="w", data_type=TensorProto.INT8, dims=[1 << 15, 1 << 13])  # no data
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"]),
         helper.make_node("MatMul", ["x", "wf"], ["y"])],
        "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1 << 15])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1 << 13])],
        initializer=[big, numpy_helper.from_array(np.float32(0.5), "s")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    assert FOLD_DEQUANTIZED_BELOW <= 4 * (1 << 28)  # a GiB as float32
    assert session_config(model) == {"session.disable_quant_qdq": "1"}
    assert "ConstantFolding" in optimizers_off(model)  # dequantized at every call


def test_qdq_optimizations_are_off_where_a_model_quantizes() -> None:
    # found by the fuzzer: onnxruntime's Q/DQ passes put a QuantizeLinear/DequantizeLinear
    # pair around the Unsqueeze, and QDQS8ToU8Transformer left the model unloadable
    g = gd.Graph("dq", input_types={"q": gd.TensorType(gd.int8, (1, 1))})
    scale = np.array([[0.5322265625]], np.float16)
    zero = np.array([[60]], np.int8)
    dq = gd.ops.dequantize(g.inputs[0], scale, zero, axis=1, block_size=3)
    g.output(gd.ops.expand_dims(dq, (0, 1)))
    model = export(g)
    assert session_config(model) == {"session.disable_quant_qdq": "1"}
    assert "ConstantFolding" not in optimizers_off(model)
    q = np.array([[12]], np.int8)
    want = np.array((12 - 60) * 0.5322265625, np.float16).reshape(1, 1, 1, 1)
    floats.assert_bits(gd.evaluate(g, {"q": q})[0], want)
    floats.assert_bits(run(model, {"q": q})[0], want)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="QuantizeLinear"):
        with_optimizer(model, "")  # every Q/DQ optimization on (session config not set)


def test_session_settings_are_the_config_and_the_optimizers_off() -> None:
    # run() reads a model once for both (functions inlined once): the same answers
    filt = np.random.default_rng(7).normal(size=(3, 3, 8, 16)).astype(np.float32)
    filt[0, 0, 0, 0] = np.inf
    q = gd.Graph("q", input_types={"x": gd.TensorType(gd.float32, (4,))})
    q.output(gd.ops.quantize(q.inputs[0], np.float32(0.5), np.int8(0), dtype=gd.int8))
    for model in (export(_conv(filt, 1)), export(_scaled_conv(1.0)), export(q)):
        for providers in ((), ("CUDAExecutionProvider",)):
            want = (session_config(model), optimizers_off(model, providers=providers))
            assert session_settings(model, providers=providers) == want
    assert session_settings(export(q))[0] == {"session.disable_quant_qdq": "1"}

