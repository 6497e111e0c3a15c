"""run() never copies a model's weights twice (exporters/onnx/_skeleton.py): a model file's
structure is read without its weights' bytes, and a ModelProto's large weights reach
onnxruntime as arrays (add_external_initializers) instead of in one serialized string.
The results are the same as a session of the whole model, dtype for dtype.

Pinned to onnxruntime's CPU provider whatever --provider says: run() reading model files and
handing weights to onnxruntime, compared with plain CPU sessions (tests/test_cuda_target.py
covers CUDA's).
"""

from __future__ import annotations

from pathlib import Path

import floats
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphdsl as gd
from exporters.onnx import RunError, export, inference_session, run
from exporters.onnx._optimizers import optimizers_off
from exporters.onnx._run import session_options
from exporters.onnx._skeleton import KEEP_BELOW, WALK_AT_MOST, read_skeleton, split_weights

RNG = np.random.default_rng(0)


def _tensor(name: str, value: np.ndarray, onnx_type: int | None = None) -> TensorProto:
    if onnx_type is None:
        return numpy_helper.from_array(value, name)
    raw = value.view(np.uint16 if value.itemsize == 2 else np.uint8).tobytes()
    return helper.make_tensor(name, onnx_type, value.shape, raw, raw=True)


def weights_model() -> onnx.ModelProto:
    """x [2, 128] through a MatMul per weight dtype (each weight 64 KiB or more, so each one
    moves), a Conv, and a small constant that stays; every result cast to float32."""
    nodes, inits, outs = [], [], []
    big = {"f32": (np.float32, None), "f16": (np.float16, None),
           "bf16": (ml_dtypes.bfloat16, TensorProto.BFLOAT16),
           "f8": (ml_dtypes.float8_e4m3fn, TensorProto.FLOAT8E4M3FN),
           "f64": (np.float64, None)}  # fmt: skip
    for name, (dt, onnx_type) in big.items():
        w = (RNG.standard_normal((128, 512)) / 8).astype(dt)
        inits.append(_tensor(f"w_{name}", w, onnx_type))
        f32 = TensorProto.FLOAT
        nodes += [helper.make_node("Cast", [f"w_{name}"], [f"wf_{name}"], to=f32),
                  helper.make_node("MatMul", ["x", f"wf_{name}"], [f"y_{name}"])]  # fmt: skip
        outs.append(f"y_{name}")
    q = RNG.integers(-128, 128, (128, 512)).astype(np.int8)
    inits += [numpy_helper.from_array(q, "q"), numpy_helper.from_array(np.float32(0.01), "s")]
    nodes += [helper.make_node("DequantizeLinear", ["q", "s"], ["qf"]),
              helper.make_node("MatMul", ["x", "qf"], ["y_q"])]  # fmt: skip
    outs.append("y_q")
    filt = RNG.standard_normal((256, 2, 8, 8)).astype(np.float32)  # 128 KiB: a Conv filter
    inits.append(numpy_helper.from_array(filt, "filt"))
    nodes += [helper.make_node("Reshape", ["x", "img_shape"], ["img"]),
              helper.make_node("Conv", ["img", "filt"], ["y_conv"], pads=[1, 1, 1, 1])]  # fmt: skip
    inits.append(numpy_helper.from_array(np.array([1, 2, 8, 16], np.int64), "img_shape"))
    outs.append("y_conv")
    graph = helper.make_graph(
        nodes, "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 128])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        initializer=inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def whole_session(model: onnx.ModelProto) -> ort.InferenceSession:
    """A session of the whole serialized model, with run()'s options."""
    return ort.InferenceSession(
        model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"],
        disabled_optimizers=set(optimizers_off(model)),
    )  # fmt: skip


def test_split_weights_runs_like_the_whole_model() -> None:
    model = weights_model()
    before = model.SerializeToString()
    serialized, names, _ = split_weights(model)
    assert model.SerializeToString() == before  # the caller's proto is not changed
    assert sorted(names) == ["filt", "q", "w_bf16", "w_f16", "w_f32", "w_f64", "w_f8"]
    assert len(serialized) < KEEP_BELOW  # only the structure and the small constants
    x = RNG.standard_normal((2, 128)).astype(np.float32)
    want = whole_session(model).run(None, {"x": x})
    got = inference_session(model).run(None, {"x": x})
    for k, (w, r) in enumerate(zip(want, got, strict=True)):
        # (not exact sums: the same model on the same onnxruntime, its weights read two ways)
        floats.assert_bits(r, w, f"output {k}")


def test_run_of_a_proto_with_narrow_float_weights_matches_the_reference() -> None:
    w = (RNG.standard_normal((256, 256)) / 16).astype(ml_dtypes.bfloat16)  # 128 KiB
    g = gd.Graph("bf16", input_types={"x": gd.TensorType(gd.bfloat16, ("b", 256))})
    g.output(g.inputs[0] @ g.constant(w))
    model = export(g)
    assert split_weights(model)[1]  # the weight moves
    x = RNG.standard_normal((3, 256)).astype(ml_dtypes.bfloat16)
    (want,) = gd.evaluate(g, {"x": x})
    (got,) = run(model, {"x": x})
    floats.assert_matmul(got, want, x, w)  # sums of 256 in float32, rounded to bfloat16


def test_read_skeleton_keeps_all_but_the_large_weights_bytes(tmp_path: Path) -> None:
    model = weights_model()
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    skeleton = read_skeleton(path)
    whole = onnx.load(path)
    assert skeleton.graph.node == whole.graph.node
    assert skeleton.graph.input == whole.graph.input
    assert skeleton.graph.output == whole.graph.output
    assert skeleton.opset_import == whole.opset_import and skeleton.ir_version == 10
    for s, w in zip(skeleton.graph.initializer, whole.graph.initializer, strict=True):
        assert (s.name, list(s.dims), s.data_type) == (w.name, list(w.dims), w.data_type)
        if s.name in ("filt", "img_shape", "s"):  # the Conv filter and the small ones
            assert s == w
        else:
            assert not s.raw_data and w.raw_data


def test_run_of_a_path_reads_no_weights_but_checks_the_file(tmp_path: Path) -> None:
    model = weights_model()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = RNG.standard_normal((2, 128)).astype(np.float32)
    want = whole_session(model).run(None, {"x": x})
    for k, (w, r) in enumerate(zip(want, run(str(path), {"x": x}), strict=True)):
        floats.assert_bits(r, w, f"output {k}")  # the same model on the same onnxruntime
    data = path.read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])  # truncated inside a weight
    with pytest.raises(RunError, match="cannot read an ONNX model"):
        run(str(cut), {"x": x})
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff" * 100)
    with pytest.raises(RunError, match="cannot read an ONNX model"):
        run(str(garbage), {"x": x})


def test_a_large_exported_graph_runs_from_its_path_and_its_proto(tmp_path: Path) -> None:
    c = np.arange(64 * 1024, dtype=np.float32).reshape(256, 256) / 65536
    g = gd.Graph("big", input_types={"x": gd.TensorType(gd.float32, ("b", 256))})
    g.output(gd.ops.relu(g.inputs[0] @ g.constant(c)))
    path = str(tmp_path / "big.onnx")
    model = export(g, path)
    x = RNG.standard_normal((2, 256)).astype(np.float32)
    (want,) = gd.evaluate(g, {"x": x})
    s = np.abs(x.astype(np.float64)) @ np.abs(c.astype(np.float64))  # ReLU: 1-Lipschitz
    for source in (g, model, path):
        (got,) = run(source, {"x": x})
        floats.assert_close(got, want, floats.dot_bound(s, 256, np.float32, got, want))


def test_a_model_of_many_nodes_is_parsed_whole(tmp_path: Path) -> None:
    # walking 2 us per field in Python loses to onnx's parser where nodes, not weights, fill
    # the file: past WALK_AT_MOST fields the skeleton is onnx.load's model
    n = WALK_AT_MOST + 1
    nodes = [helper.make_node("Neg", [f"v{i}"], [f"v{i + 1}"]) for i in range(n)]
    big = numpy_helper.from_array(np.ones(KEEP_BELOW, np.float32), "w")
    nodes.append(helper.make_node("Add", [f"v{n}", "w"], ["y"]))
    graph = helper.make_graph(
        nodes, "long", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [KEEP_BELOW])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [KEEP_BELOW])], initializer=[big],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    path = str(tmp_path / "long.onnx")
    onnx.save(model, path)
    assert read_skeleton(path) == onnx.load(path)
    x = np.full(KEEP_BELOW, 2.0, np.float32)
    assert run(path, {"v0": x})[0].tolist() == [-1.0] * KEEP_BELOW  # 20001 negations, + 1
