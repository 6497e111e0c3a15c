"""graphdsl.max.engine and graphdsl.max.driver: MAX's InferenceSession, Model and Buffer on
onnxruntime, and the MAX Graph's two sides (MAX's values, graphdsl's core graph).

The error messages checked here are max 26.7.0's, as its CPU engine raised them for the same
calls (``Model.execute`` with a wrong count, dtype or shape, a list, a non-contiguous array;
a weight missing from ``weights_registry``; ``Buffer`` indexing and ``item``); where
graphdsl's differ (a graph on a GPU the session lacks, a weight of the wrong shape, which
MAX's load takes) the test says so.
"""

from __future__ import annotations

import re
import runpy
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl.max import (
    BufferType,
    DeviceRef,
    DType,
    Graph,
    TensorType,
    TensorValue,
    UnsupportedError,
    Weight,
    ops,
)
from graphdsl.max.driver import (
    CPU,
    Accelerator,
    Buffer,
    Device,
    DLPackArray,
    accelerator_api,
    accelerator_count,
)
from graphdsl.max.engine import CompiledModel, InferenceSession, Model, TensorSpec

ROOT = Path(__file__).resolve().parent.parent
HAS_CUDA = "CUDAExecutionProvider" in ort.get_available_providers()
cpu = DeviceRef.CPU()
F32 = TensorType(DType.float32, [1], cpu)


def add_model() -> Model:
    with Graph("simple_add_graph", input_types=(F32, F32)) as graph:
        lhs, rhs = graph.inputs
        graph.output(ops.add(lhs, rhs))
    return InferenceSession(devices=[CPU()]).load(graph)


@pytest.fixture(scope="module")
def model() -> Model:
    return add_model()


# ---------------------------------------------------------------------------- the tutorial


def test_the_tutorial_program_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/max_tutorial.py: MAX's program with only its imports changed, its results
    checked against numpy inside it (and against max 26.7.0's when it was written)."""
    runpy.run_path(str(ROOT / "examples" / "max_tutorial.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "name: input0, shape: [1], dtype: DType.float32" in out
    assert "result: [2.]" in out and out.rstrip().endswith("all results match numpy")


def test_the_tutorial_changes_only_imports() -> None:
    source = (ROOT / "examples" / "max_tutorial.py").read_text()
    body = source.split('"""', 2)[2]
    lines = [ln for ln in body.splitlines() if "graphdsl" in ln and not ln.startswith("#")]
    assert lines == [
        "from graphdsl.max import BufferType, DeviceRef, DType, Graph, TensorType, Weight, ops",
        "from graphdsl.max.driver import CPU, Buffer, accelerator_count",
        "from graphdsl.max.engine import InferenceSession",
    ]


# ---------------------------------------------------------------------------- execute


def test_execute_takes_numpy_buffers_and_scalars(model: Model) -> None:
    a, b = np.array([1.5], np.float32), np.array([2.0], np.float32)
    for args in [(a, b), (Buffer.from_numpy(a), b), (Buffer.from_numpy(a), Buffer.from_numpy(b))]:
        (out,) = model.execute(*args)
        assert isinstance(out, Buffer) and out.dtype is DType.float32
        assert out.shape == (1,) and out.device == CPU() and out.to_numpy().tolist() == [3.5]
    assert model(a, input1=b)[0].item() == 3.5  # __call__: by position or name, as MAX's
    with pytest.raises(TypeError, match="multiple values for argument 'input0'"):
        model(a, input0=b)
    with pytest.raises(TypeError, match="missing a required argument: 'input1'"):
        model(a)


def test_a_python_scalar_is_a_rank_0_tensor_of_the_inputs_dtype() -> None:
    t = TensorType(DType.int16, [], cpu)
    with Graph("scalars", input_types=[t, TensorType(DType.float64, [], cpu)]) as g:
        x, y = g.inputs
        g.output(x * 2, y + 1)
    m = InferenceSession().load(g)
    i, f = m.execute(7, np.float64(0.5))
    assert (i.dtype, i.item(), f.dtype, f.item()) == (DType.int16, 14, DType.float64, 1.5)
    with pytest.raises(ValueError, match=r"Buffer of type \[\(1\), si16\] does not match"):
        m.execute(np.array([7], np.int16), 0.5)


def test_metadata(model: Model) -> None:
    spec = TensorSpec([1], DType.float32, "input0")
    assert model.input_metadata == [spec, TensorSpec([1], DType.float32, "input1")]
    assert model.output_metadata == [TensorSpec([1], DType.float32, "output0")]
    assert repr(model) == (
        "Model(inputs=[TensorSpec(shape=[1], dtype=DType.float32, name=input0), "
        "TensorSpec(shape=[1], dtype=DType.float32, name=input1)])"
    )  # (MAX's text)
    assert str(spec) == "1xfloat32" and str(TensorSpec([None, 2], DType.bool, "x")) == "-1x2xbool"
    assert str(model.signature) == "(input0, input1)" and model.name == "simple_add_graph"
    assert model.input_devices == [CPU(), CPU()] and model.output_devices == [CPU()]
    assert model.devices == [CPU()]
    with Graph("sym", input_types=[TensorType(DType.int32, ["n", 4], cpu)]) as g:
        g.output(g.inputs[0].tensor > 0)
    m = InferenceSession().load(g)
    assert m.input_metadata == [TensorSpec([None, 4], DType.int32, "input0")]
    assert m.output_metadata == [TensorSpec([None, 4], DType.bool, "output0")]


def test_wrong_inputs_raise_maxs_errors_at_the_call(model: Model) -> None:
    a = np.array([1.0], np.float32)
    with pytest.raises(ValueError, match=r"^Number of inputs \(1\) does not match expected "
                       r"number \(2\) for model$"):  # fmt: skip
        model.execute(a)
    with pytest.raises(ValueError, match=r"Number of inputs \(3\)"):
        model.execute(a, a, a)
    cases = {  # argument 0 -> MAX's message
        "[(1), f64]": a.astype(np.float64),
        "[(1), si32]": a.astype(np.int32),
        "[(1), bool]": np.array([True]),
        "[(2), f32]": np.ones(2, np.float32),
        "[(1, 1), f32]": np.ones((1, 1), np.float32),
        "[(), f32]": 1.0,
    }
    for shown, arg in cases.items():
        msg = (f"Input at position 0: Buffer of type {shown} does not match expected type "
               "[(1), f32]")  # fmt: skip
        with pytest.raises(ValueError, match=f"^{re.escape(msg)}$"):
            model.execute(arg, a)
    with pytest.raises(ValueError, match="All positional arguments must be of the type "
                       r"`max.driver.Buffer` .* inputs of the type <class 'list'>\."):  # fmt: skip
        model.execute([1.0], a)
    strided = Buffer.from_numpy(np.ones((2, 2), np.float32))[0:1, 0]
    assert not strided.is_contiguous
    with pytest.raises(ValueError, match="Max does not currently support executing "
                       "non-contiguous tensors"):  # fmt: skip
        model.execute(strided, a)


def test_symbolic_dimensions_bind_across_inputs() -> None:
    t = TensorType(DType.int32, ["n"], cpu)
    with Graph("two", input_types=[t, t]) as g:
        a, b = g.inputs
        g.output(a + b, a > b)
    m = InferenceSession().load(g)
    s, gt = m.execute(np.array([1, 5], np.int32), np.array([3, 2], np.int32))
    assert s.to_numpy().tolist() == [4, 7] and gt.dtype is DType.bool
    assert gt.to_numpy().tolist() == [False, True]
    with pytest.raises(ValueError, match="symbolic dimension 'n' for input 1 does not match "
                       "prior uses of that dimension"):  # fmt: skip
        m.execute(np.ones(2, np.int32), np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"\[\(3, 5\), si32\] does not match expected type "
                       r"\[\(\*\), si32\]"):  # fmt: skip
        m.execute(np.ones((3, 5), np.int32), np.ones(3, np.int32))
    empty = m.execute(np.ones(0, np.int32), np.ones(0, np.int32))[0]
    assert empty.shape == (0,)


def test_buffer_inputs_are_updated_in_place() -> None:
    """As MAX 26.7 does: the buffer's new value lands in the Buffer (and in a numpy array
    passed for it), and only the graph's own outputs are returned."""
    with Graph("acc", input_types=[BufferType(DType.float32, [3], cpu), F32]) as g:
        state, row = g.inputs
        old = state.buffer[...]
        state.buffer[...] = old + row.tensor
        g.output(old * 2)
    m = InferenceSession().load(g)
    assert [s.name for s in m.input_metadata] == ["input0", "input1"]
    assert len(m.output_metadata) == 1
    array = np.zeros(3, np.float32)
    buffer = Buffer.from_numpy(array)
    (out,) = m.execute(buffer, np.ones(1, np.float32))
    assert out.to_numpy().tolist() == [0, 0, 0] and array.tolist() == [1, 1, 1]
    (out,) = m.execute(buffer, np.ones(1, np.float32))
    assert out.to_numpy().tolist() == [2, 2, 2] and buffer.to_numpy().tolist() == [2, 2, 2]
    plain = np.zeros(3, np.float32)
    m.execute(plain, np.full(1, 5, np.float32))
    assert plain.tolist() == [5, 5, 5]


def test_bfloat16_inputs_and_outputs() -> None:
    t = TensorType(DType.bfloat16, [2], cpu)
    with Graph("bf", input_types=[t]) as g:
        x = g.inputs[0].tensor
        g.output(x * 2, x.cast(DType.float32))
    m = InferenceSession().load(g)
    doubled, wide = m.execute(np.array([1.5, -3], ml_dtypes.bfloat16))
    assert doubled.dtype is DType.bfloat16 and wide.dtype is DType.float32
    assert doubled.to_numpy().astype(np.float32).tolist() == [3, -6]
    assert wide.to_numpy().tolist() == [1.5, -3]
    with pytest.raises(ValueError, match=r"\[\(2\), f32\] does not match expected type "
                       r"\[\(2\), bf16\]"):  # fmt: skip
        m.execute(np.ones(2, np.float32))


def test_a_graphdsl_graph_loads_too() -> None:
    g = gd.Graph("plain", input_types={"x": gd.TensorType(gd.int8, ("n",))})
    g.output(g.inputs[0] * 3)
    m = InferenceSession().load(g)
    assert m.input_metadata == [TensorSpec([None], DType.int8, "x")]
    assert m.execute(np.array([1, 50], np.int8))[0].to_numpy().tolist() == [3, -106]


def test_compile_then_init() -> None:
    """MAX's two-step load: compile checks the graph, init binds its weights (each init
    exports the graph with its own)."""
    session = InferenceSession(devices=[CPU()])
    compiled = session.compile(mlp_graph())
    assert isinstance(compiled, CompiledModel) and repr(compiled) == "CompiledModel()"
    x = np.ones((1, 4), np.float32)
    for scale in (1.0, 2.0):
        w1, b1 = np.full((4, 8), scale, np.float32), np.zeros(8, np.float32)
        m = session.init(compiled, weights_registry={"w1": w1, "b1": b1})
        assert m.execute(x)[0].to_numpy().tolist() == [[4 * scale] * 8]
    with pytest.raises(UnsupportedError, match=r"\.mef"):
        compiled.export_mef("model.mef")
    with Graph("gpu", input_types=[TensorType(DType.float32, [2], DeviceRef.GPU())]) as g:
        g.output(g.inputs[0].tensor)
    with pytest.raises(RuntimeError, match="Failed to compile the model"):
        session.compile(g)


# ---------------------------------------------------------------------------- weights


def mlp_graph() -> Graph:
    with Graph("mlp", input_types=[TensorType(DType.float32, ["batch", 4], cpu)]) as g:
        w1 = g.add_weight(Weight("w1", DType.float32, [4, 8], cpu))
        b1 = g.add_weight(Weight("b1", DType.float32, [8], cpu))
        g.output(ops.relu(g.inputs[0].tensor @ w1 + b1))
    return g


def test_weights_registry() -> None:
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((4, 8)).astype(np.float32)
    b1 = rng.standard_normal(8).astype(np.float32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    want = np.maximum(x @ w1 + b1, 0)
    session = InferenceSession(devices=[CPU()])
    g = mlp_graph()
    registries: list[dict[str, Any]] = [
        {"w1": w1, "b1": b1},
        {"w1": Buffer.from_numpy(w1), "b1": b1, "unused": b1},  # extra names: ignored, as MAX
    ]
    for registry in registries:
        got = session.load(g, weights_registry=registry).execute(x)[0].to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=r"^Weight 'b1' is not in the weights registry\.$"):
        session.load(g, weights_registry={"w1": w1})
    with pytest.raises(ValueError, match=r"^Weight 'w1' is not in the weights registry\.$"):
        session.load(g)
    # MAX's load takes a weight of another shape or dtype; graphdsl checks it
    with pytest.raises(gd.WeightError, match="'b1' has shape"):
        session.load(g, weights_registry={"w1": w1, "b1": np.ones(3, np.float32)})
    with pytest.raises(gd.WeightError, match="'b1' is float64"):
        session.load(g, weights_registry={"w1": w1, "b1": b1.astype(np.float64)})


# ---------------------------------------------------------------------------- DLPack


def test_dlpack_round_trips_with_numpy() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = Buffer.from_dlpack(a)
    assert isinstance(b, DLPackArray) and b.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(b)
    assert back.tolist() == a.tolist() and back.dtype == a.dtype
    a[0, 0] = 42  # shared memory both ways
    assert back[0, 0] == 42 and b.to_numpy()[0, 0] == 42
    assert np.from_dlpack(Buffer.from_numpy(np.array([True, False]))).tolist() == [True, False]
    with pytest.raises(ValueError, match="only accepts contiguous arrays"):
        Buffer.from_dlpack(a[:, ::2])
    assert Buffer.from_numpy(a[:, ::2]).to_numpy().tolist() == [[42, 2], [3, 5]]  # (copied)
    copied = Buffer.from_dlpack(a, copy=True)
    a[0, 0] = 0
    assert copied.to_numpy()[0, 0] == 42
    with pytest.raises(ValueError, match="supports the `copy` flag only"):
        Buffer.from_dlpack(ort.OrtValue.ortvalue_from_numpy(a), copy=False)
    from_ort = Buffer.from_dlpack(ort.OrtValue.ortvalue_from_numpy(a))
    assert from_ort.shape == (2, 3) and from_ort.device == CPU()


def test_dlpack_round_trips_with_torch(model: Model) -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor([2.0], dtype=torch.float32)
    (out,) = model.execute(t, Buffer.from_dlpack(torch.tensor([0.25])))
    back = torch.from_dlpack(out)
    assert back.tolist() == [2.25] and back.dtype == torch.float32


def test_model_outputs_are_dlpack_tensors(model: Model) -> None:
    (out,) = model.execute(np.array([1.0], np.float32), np.array([2.0], np.float32))
    assert np.from_dlpack(out).tolist() == [3.0]


# ---------------------------------------------------------------------------- devices


def test_devices() -> None:
    assert CPU() == CPU(1) == Device.cpu() and hash(CPU()) == hash(CPU(1))
    assert repr(CPU()) == "Device(type=cpu,id=0)" and CPU().label == "cpu"
    assert CPU().api == "cpu" and CPU().is_host and CPU().model_name == "cpu"
    with pytest.raises(ValueError, match="Not implemented for device: cpu"):
        CPU().architecture_name  # noqa: B018
    with pytest.raises(TypeError, match="no constructor"):
        Device()
    session = InferenceSession(devices=[CPU(), CPU()], num_threads=1)
    assert session.devices == [CPU()] and session.num_threads == 1
    with pytest.raises(TypeError, match="driver devices"):
        InferenceSession(devices=[DeviceRef.CPU()])  # type: ignore[list-item]


@pytest.mark.skipif(HAS_CUDA, reason="onnxruntime has its CUDA provider here")
def test_no_accelerator_without_cuda() -> None:
    assert accelerator_count() == 0 and accelerator_api() == "cpu"
    with pytest.raises(ValueError, match='No supported "gpu" device available') as e:
        Accelerator()
    assert "onnxruntime has no CUDA provider here" in str(e.value)
    assert "onnxruntime-gpu" in str(e.value)


def test_what_maxs_engine_does_and_onnxruntime_cannot() -> None:
    with Graph("gpu", input_types=[TensorType(DType.float32, [2], DeviceRef.GPU())]) as g:
        g.output(g.inputs[0].tensor * 2)
    # MAX: RuntimeError "Failed to compile the model." (it compiles for a GPU it lacks)
    with pytest.raises(RuntimeError, match=r"Failed to compile the model: .*gpu:0.*Accelerator"):
        InferenceSession(devices=[CPU()]).load(g)
    t0 = TensorType(DType.float32, [2], DeviceRef.GPU(0))
    with Graph("two_gpus", input_types=[t0]) as g2:
        g2.output(g2.inputs[0].tensor.to(DeviceRef.GPU(1)))
    with pytest.raises(UnsupportedError, match=r"GPUs \[0, 1\].*one device"):
        InferenceSession().load(g2)
    with pytest.raises(UnsupportedError, match="Mojo custom kernels"):
        InferenceSession(custom_extensions=["kernels.mojopkg"])
    with pytest.raises(UnsupportedError, match="Mojo custom kernels"):
        InferenceSession().load(mlp_graph(), custom_extensions=["kernels.mojopkg"])
    with pytest.raises(UnsupportedError, match=r"\.mef"):
        InferenceSession().load("model.mef")
    with pytest.raises(UnsupportedError, match="compiled-graph artifacts"):
        InferenceSession(precompiled_mefs="artifacts/")


# ---------------------------------------------------------------------------- buffers


def test_buffer_api() -> None:
    z = Buffer.zeros([2, 3], DType.float32)
    assert (z.shape, z.rank, z.num_elements, z.element_size) == ((2, 3), 2, 6, 4)
    assert z.strides == (3, 1) and z.is_contiguous and z.is_host and not z.pinned
    assert repr(z) == "Buffer(DType.float32, (2, 3), cpu[0])"
    assert str(Buffer.from_numpy(np.array([3.0], np.float32))) == (
        "Buffer([3.], dtype=DType.float32, shape=(1,), device=Device(type=cpu,id=0))"
    )  # (MAX's str)
    z[0, 1] = 5.0
    assert z.to_numpy().tolist() == [[0, 5, 0], [0, 0, 0]]
    assert z[0, 1].shape == () and z[0, 1].item() == 5.0 and z[1, :].shape == (3,)
    with pytest.raises(ValueError, match=r"the provided number of indices \(1\) is not equal "
                       r"to the tensor rank \(2\)"):  # fmt: skip
        z[0]
    with pytest.raises(ValueError, match="calling `item` on a tensor with 6 items but expected "
                       "only 1"):  # fmt: skip
        z.item()
    assert Buffer(DType.int32, [2]).to_numpy().tolist() == [0, 0]
    assert Buffer.scalar(3, DType.uint8).item() == 3
    assert z.to(CPU()) is z and z.copy() is not z and z.to([CPU()])[0] is z
    assert z.view(DType.int32).dtype is DType.int32
    assert Buffer.from_numpy(np.zeros((2, 4), np.uint8)).view(DType.int32).shape == (2, 1)
    dst = Buffer.zeros([3], DType.int64)
    dst.inplace_copy_from(Buffer.from_numpy(np.arange(3)))
    assert dst.to_numpy().tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="Cannot copy buffers of different dtypes"):
        dst.inplace_copy_from(Buffer.zeros([3], DType.int32))
    assert Buffer.from_numpy(np.zeros(2, ml_dtypes.bfloat16)).dtype is DType.bfloat16
    with pytest.raises(ValueError, match="unsupported NumPy dtype"):
        Buffer.from_numpy(np.zeros(2, np.complex64))
    read_only = np.ones(2, np.float32)
    read_only.flags.writeable = False
    b = Buffer.from_numpy(read_only)  # copied (MAX copies a read-only array too)
    b[0] = 5.0
    assert read_only.tolist() == [1, 1]


# ---------------------------------------------------------------------------- the graph


def test_max_code_always_gets_max_values() -> None:
    """``graph.inputs`` are MAX's values whoever asks (no look at the caller's module);
    graphdsl's modules read ``graph.core_graph``, whose inputs are graphdsl's symbols."""
    with Graph("g", input_types=[TensorType(DType.int8, [3], cpu)]) as g:
        g.output(g.inputs[0].tensor + 1)
    for module in ("graphdsl.evaluate", "exporters.onnx._export", "user_code"):
        seen = eval("g.inputs", {"__name__": module, "g": g})  # as if that module asked
        assert [type(v) for v in seen] == [TensorValue]
    core = g.core_graph
    assert isinstance(core, gd.Graph) and [type(s) for s in core.inputs] == [gd.Symbol]
    assert core.inputs[0] is g.inputs[0].symbol is g.core_inputs[0]
    assert all(n.graph is core for n in core.nodes) and g.nodes is core.nodes
    assert g.outputs is core.outputs and g.policy is core.policy and str(g) == str(core)
    core.verify()
    g.verify()  # (graphdsl's methods of a MAX graph act on its core graph)
    x = np.array([1, 2, 127], np.int8)
    for got in (gd.evaluate(g, [x]), run(g, [x]), run(export(g), [x])):
        assert np.asarray(got[0]).tolist() == [2, 3, -128]
    assert gd.passes.canonicalize(g).inputs[0].type == gd.TensorType(gd.int8, (3,))


def test_a_max_graph_writes_through_to_its_core() -> None:
    g = Graph("w", input_types=[F32])
    g.warn_lossy = True  # (an attribute of graphdsl's Graph: it is the core graph's)
    assert g.core_graph.warn_lossy is True
    with g:
        g.output(g.inputs[0].tensor)
    export(g)
    with pytest.raises(gd.GraphError, match="frozen"), g:
        g.output(g.inputs[0].tensor * 2)


# ---------------------------------------------------------------------------- the GPU path


def fake_gpu() -> Accelerator:
    """An Accelerator as graphdsl makes one, without asking for CUDA: the GPU code path
    runs on the CPU provider (onnxruntime falls back to it), its OrtValues on the CPU."""
    gpu = object.__new__(Accelerator)
    gpu._label, gpu._id = "gpu", 0
    return gpu


def test_buffers_holding_ortvalues() -> None:
    gpu = fake_gpu()
    value = ort.OrtValue.ortvalue_from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = Buffer._of_ortvalue(value, gpu, DType.float32)
    assert (b.shape, b.dtype, b.device, b.is_host) == ((2, 3), DType.float32, gpu, False)
    assert repr(b) == "Buffer(DType.float32, (2, 3), gpu[0])" and b.strides == (3, 1)
    assert b.to_numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.from_dlpack(b).tolist() == b.to_numpy().tolist()  # onnxruntime's DLPack
    host = b.to(CPU())
    assert host.is_host and host.to_numpy().tolist() == b.to_numpy().tolist()
    with pytest.raises(UnsupportedError, match="move it to the host first"):
        b[0, 0]
    assert Buffer.from_dlpack(value).device == CPU()  # (a CPU OrtValue's DLPack device)


def test_the_gpu_execution_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph on a GPU loads on onnxruntime's CUDA provider (exported for the ``cuda``
    target) and executes with IO binding: OrtValues in and out, buffers updated in place.
    Without CUDA here, onnxruntime falls back to its CPU provider (with run()'s warning)."""
    import graphdsl.max.engine as engine

    gpu = fake_gpu()
    monkeypatch.setattr(engine, "_device_for", lambda graph, session: gpu)
    g_ref = DeviceRef.GPU()
    state_type = BufferType(DType.float32, [2], g_ref)
    with Graph("on_gpu", input_types=[state_type, TensorType(DType.float32, [2], g_ref)]) as g:
        state, x = g.inputs
        total = state.buffer[...] + x.tensor
        state.buffer[...] = total
        g.output(total * 2)
    with pytest.warns(RuntimeWarning, match="not available") if not HAS_CUDA else nullcontext():
        monkeypatch.setattr("exporters.onnx._run._warned_fallback", False)
        model = InferenceSession(devices=[CPU()]).load(g)
    assert model.devices == [gpu] and model.input_devices == [gpu, gpu]
    buffer = Buffer.from_numpy(np.zeros(2, np.float32))
    (out,) = model.execute(buffer, np.array([1, 2], np.float32))
    assert out.device == gpu and out.to_numpy().tolist() == [2, 4]
    assert buffer.to_numpy().tolist() == [1, 2]
    (again,) = model.execute(buffer, out)  # an output goes back in as it is
    assert again.to_numpy().tolist() == [6, 12] and buffer.to_numpy().tolist() == [3, 6]
