"""export() and run(): model contents, the CUDA kernel check, sessions, providers, big models."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from backend import export, run
from onnx import TensorProto
from onnx_cases import all_cases, build

import graphdsl as gd
from exporters.onnx import ExportError, RunError, cpu_nodes
from exporters.onnx import _run as run_module
from exporters.onnx._lower.quant import MEASURED_CPU as QUANT_CPU
from exporters.onnx._lower.vision import MEASURED_CPU as VISION_CPU
from exporters.onnx._placement import kernel_key, typed_nodes
from exporters.onnx._targets import CUDA_BROKEN, TARGETS


def small_graph() -> gd.Graph:
    g = gd.Graph("small", input_types={"x": gd.TensorType(gd.float32, ("batch", 3)),
                                       "n": gd.TensorType(gd.int16, ())})  # fmt: skip
    x, n = g.inputs
    g.output(x * 2 + n, gd.ops.sum(x, axis=1))
    return g


def test_model_names_metadata_and_dim_params() -> None:
    m = export(small_graph())
    assert m.graph.name == "small"
    assert [i.name for i in m.graph.input] == ["x", "n"]
    assert [o.name for o in m.graph.output] == ["output0", "output1"]
    dims = m.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 3
    assert m.graph.output[1].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert m.producer_name == "graphdsl" and "small" in m.doc_string
    assert {p.key: p.value for p in m.metadata_props}["graphdsl.policy"] == "default"
    assert m.opset_import[0].version == 21
    onnx.checker.check_model(m, full_check=True)


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: f"{c[0]}-{c[1].name}")
def test_cuda_export_runs_each_node_on_a_working_kernel(case: tuple[str, gd.DType]) -> None:
    """Statically, without a GPU: target='cuda' exports every case the CPU target exports,
    and each node has a working CUDA kernel (OperatorKernels.md less the pairs measured
    broken on an H200: exporters/onnx/_targets.py), or CUDA registers none and the CPU
    provider has one (onnxruntime runs it there; cpu_nodes lists exactly those)."""
    op, dt = case
    g = build(op, dt)
    assert g is not None
    m = export(g, target="cuda")
    nodes, types = typed_nodes(m)
    cuda, cpu = TARGETS["cuda"], TARGETS["cpu"]
    measured = {**VISION_CPU, **QUANT_CPU}
    # broken pairs a lowering uses only where they are right, repairing the rest: Sign but for
    # NaN (unary.py puts NaN back)
    repaired = {"Sign": CUDA_BROKEN["Sign"]}
    wrong, fallback = [], []
    unchecked = ("Shape", "Gather", "Scan", "Slice", "If", "Loop", "Constant")
    for node in nodes:
        if node.op_type in unchecked:
            continue  # shape data, control flow, a function's constants (initializers)
        key, needed = kernel_key(node, types)
        for t in needed:
            if cuda.has(key, t) or t in repaired.get(key, ()):
                continue
            on_cpu = cpu.has(key, t) or t in measured.get(key, frozenset())
            if cuda.registers(key, t) or not on_cpu:
                wrong.append(f"{key}[{t}]")
            else:
                fallback.append(f"{key}[{t}]")
    assert not wrong, f"nodes without a working kernel on CUDA or the CPU behind it: {wrong}"
    placed = [f"{n.key}[{t}]" for n in cpu_nodes(m) for t in n.types if n.key not in unchecked]
    assert sorted(placed) == sorted(fallback)


def test_sessions_are_cached() -> None:
    g = small_graph()
    m = export(g)
    feeds = {"x": np.ones((2, 3), np.float32), "n": np.int16(1)}
    run(m, feeds)
    cached = dict(run_module._model_sessions)
    run(m, feeds)
    assert dict(run_module._model_sessions).keys() == cached.keys()
    assert any(v[1] is s[1] for v in run_module._model_sessions.values() for s in cached.values())


def test_run_graph_model_and_path_agree(tmp_path: Path) -> None:
    g = small_graph()
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "n": np.array(-2, np.int16)}
    want = gd.evaluate(g, feeds)
    path = tmp_path / "small.onnx"
    m = export(g, path)
    for model in (g, m, str(path), path):
        got = run(model, feeds)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
    # plain onnxruntime, no graphdsl: the saved file is an ordinary model
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, feeds)[0], want[0])


def test_run_checks_inputs_before_onnxruntime() -> None:
    m = export(small_graph())
    ok = {"x": np.ones((2, 3), np.float32), "n": np.int16(1)}
    with pytest.raises(RunError, match="missing"):
        run(m, {"x": ok["x"]})
    with pytest.raises(RunError, match="unexpected"):
        run(m, {**ok, "z": ok["x"]})
    with pytest.raises(RunError, match="expected dtype float32, got float64"):
        run(m, {**ok, "x": np.ones((2, 3))})
    with pytest.raises(RunError, match="expected shape"):
        run(m, {**ok, "x": np.ones((2, 4), np.float32)})
    with pytest.raises(RunError, match="no model file"):
        run("/nonexistent/model.onnx", ok)


def test_missing_provider_warns_once_and_runs_on_cpu() -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("a CUDA provider is available here: the fallback path is not taken")
    m = export(small_graph())
    feeds = {"x": np.ones((1, 3), np.float32), "n": np.int16(0)}
    run_module._warned_fallback = False
    with pytest.warns(RuntimeWarning, match="not available"):
        out = run(m, feeds, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    np.testing.assert_array_equal(out[0], [[2, 2, 2]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(export(small_graph()), feeds, providers=["CUDAExecutionProvider"])


def test_export_refuses_bad_targets_and_opsets() -> None:
    with pytest.raises(ExportError, match="unknown target 'tpu'"):
        export(small_graph(), target="tpu")
    with pytest.raises(ExportError, match="opset 17 is not supported"):
        export(small_graph(), opset=17)


_BIG = """
import numpy as np, graphdsl as gd, os, sys
from exporters.onnx import export, run
n = 2**31 + 2**20                      # just over 2 GiB of uint8 constants
big = np.zeros(n, np.uint8); big[-1] = 7
g = gd.Graph("big", input_types={"x": gd.uint8})
g.output(gd.ops.max(g.constant(big)) + g.inputs[0])
path = os.path.join(sys.argv[1], "big.onnx")
export(g, path)
assert os.path.getsize(path) < 1 << 20 and os.path.getsize(path + ".data") > 1 << 31
print(run(path, {"x": np.uint8(1)})[0])
"""


def _memory_available() -> int | None:
    """Bytes of memory available to a new process now (Linux's MemAvailable; None where
    /proc/meminfo does not say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@pytest.mark.skipif(
    sys.platform != "linux",
    reason="Linux only: its free memory is read from /proc/meminfo, and the >2 GiB model is "
    "written to the temporary directory",
)
def test_model_over_2gib_exports_reloads_and_runs(tmp_path: Path) -> None:
    free = _memory_available()
    if free is None or free < 8 << 30:
        have = "does not say" if free is None else f"has {free / (1 << 30):.1f} GiB"
        pytest.skip(f"needs ~8 GiB of free memory, this machine {have} (MemAvailable)")
    disk = shutil.disk_usage(tmp_path).free
    if disk < 3 << 30:
        pytest.skip(f"needs ~3 GiB free on {tmp_path}'s disk, it has {disk / (1 << 30):.1f} GiB")
    # in a subprocess so that its ~7 GiB peak is returned to the system at once
    root = os.path.dirname(os.path.dirname(__file__))
    r = subprocess.run([sys.executable, "-c", _BIG, str(tmp_path)], capture_output=True,
                       text=True, check=False, cwd=root)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "8"


@pytest.mark.parametrize("dt", [gd.float16, gd.bfloat16])
def test_narrow_float_chains_round_after_every_op(dt: gd.DType) -> None:
    # onnxruntime's own float16 kernels compute a whole chain in float32 and round once;
    # the exporter's explicit casts keep the reference's rounding after every op.
    g = gd.Graph("chain", input_types={"x": gd.TensorType(dt, (64,))})
    y = g.inputs[0]
    for i in range(50):
        y = y * 1.0009765625 + 0.0078125 * (i % 3)
    g.output(y)
    x = np.linspace(-3, 3, 64).astype(dt.np)
    want = gd.evaluate(g, [x])[0]
    got = run(export(g), [x])[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    # and the per-op rounding matters: a float32 chain rounded once differs somewhere
    y32 = x.astype(np.float32)
    for i in range(50):
        y32 = y32 * np.float32(1.0009765625) + np.float32(0.0078125 * (i % 3))
    assert not np.array_equal(y32.astype(dt.np).astype(np.float32), want.astype(np.float32))


def _broken_add(monkeypatch: pytest.MonkeyPatch, mistake: str) -> gd.Graph:
    """A graph whose add lowers wrongly: one input too many, or a float64 operand."""
    from exporters.onnx._builder import Builder, V
    from exporters.onnx._lower import LOWER

    def lower(b: Builder, node: gd.Symbol, args: list[V], dims: object) -> V:
        x, y = (a.name for a in args)
        if mistake == "arity":  # Add takes two inputs
            return b.node("Add", [x, y, y], args[0].dtype)
        wide = b.node("Cast", [y], gd.float64, to=TensorProto.DOUBLE)
        return b.node("Add", [x, wide.name], args[0].dtype)

    monkeypatch.setitem(LOWER, "add", lower)
    g = gd.Graph("broken", input_types={"x": gd.TensorType(gd.float32, (3,))})
    g.output(g.inputs[0] + g.inputs[0])
    return g


def test_default_check_is_structural_and_full_adds_type_inference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a node against its schema: both modes catch it, check=False does not look
    with pytest.raises(onnx.checker.ValidationError, match="Add"):
        export(_broken_add(monkeypatch, "arity"))
    assert len(export(_broken_add(monkeypatch, "arity"), check=False).graph.node) == 1
    # operand types disagree (float32 + float64): only strict type inference sees it
    assert [n.op_type for n in export(_broken_add(monkeypatch, "types")).graph.node] == [
        "Cast", "Add"]  # fmt: skip
    with pytest.raises(onnx.shape_inference.InferenceError, match="Add"):
        export(_broken_add(monkeypatch, "types"), check="full")
    with pytest.raises(ExportError, match="use True"):
        export(small_graph(), check="fast")  # type: ignore[arg-type]


def test_outputs_named_in_order_whatever_makes_them() -> None:
    """Outputs are output0..k: an input, a constant, a value returned twice, a value used
    again after it is made, and the last node; producers are renamed, others get Identity."""
    g = gd.Graph("outs", input_types={"x": gd.TensorType(gd.int32, (3,))})
    x = g.inputs[0]
    early = x * 3  # an output that later nodes also use
    late = early + 1
    g.output(x, g.constant(np.array([7, 8, 9], np.int32)), early, late, early, late * 2)
    m = export(g, check="full")
    assert [o.name for o in m.graph.output] == [f"output{k}" for k in range(6)]
    assert [n.op_type for n in m.graph.node].count("Identity") == 3  # x, the constant, early again
    made = {o for n in m.graph.node for o in n.output}
    assert {f"output{k}" for k in range(6)} <= made
    xs = {"x": np.array([1, -2, 3], np.int32)}
    for got, want in zip(run(m, xs), gd.evaluate(g, xs), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


def test_a_flattened_concat_exports_its_size_distributed() -> None:
    types = {"x": gd.TensorType(gd.float32, ("n", 3)), "y": gd.TensorType(gd.float32, (1, 3))}
    g = gd.Graph("cat", input_types=types)
    flat = gd.ops.reshape(gd.ops.concat(g.inputs, axis=0), (-1,))  # (n+1)*3 elements
    g.output(flat, gd.ops.reshape(flat, (-1, 3)))
    m = export(g, check="full")
    assert m.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "n*3+3"
    xs = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.ones((1, 3), np.float32)}
    got, want = run(m, xs), gd.evaluate(g, xs)
    assert [a.shape for a in got] == [(9,), (3, 3)]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)


def test_derived_dimensions_export_and_run() -> None:
    g = gd.Graph("flat", input_types={"x": gd.TensorType(gd.float32, ("batch", 4))})
    x = g.inputs[0]
    flat = gd.ops.reshape(x, (-1,))
    g.output(flat, gd.ops.reshape(flat, (-1, 2)), gd.ops.reshape(flat, (-1, 4)) + x)
    m = export(g, check="full")
    dims = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in m.graph.output]  # fmt: skip
    assert dims == [["batch*4"], ["batch*2", 2], ["batch", 4]]
    xs = {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}
    got, want = run(m, xs), gd.evaluate(g, xs)
    assert [a.shape for a in got] == [(12,), (6, 2), (3, 4)]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)
