"""exporters.onnx.Session (issue 24, part 3): run()'s session for one model, called as run()
is, and with onnxruntime's IO binding: numpy arrays, OrtValues and DLPack tensors in,
OrtValues on the provider's device (or numpy) out, every input checked and every output's
shape checked as run() checks them. On the CPU provider here; on CUDA with ``--provider
cuda`` (outputs bound to CUDA device 0)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import floats
import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from backend import Session, export, run

import graphdsl as gd
from exporters.onnx import RunError
from exporters.onnx import _run as run_module

RNG = np.random.default_rng(24)


def _affine() -> gd.Graph:
    """Two inputs sharing the dimension name 'b', two outputs."""
    types = {"x": gd.TensorType(gd.float32, ("b", 3)), "w": gd.TensorType(gd.float32, (3, 2)),
             "bias": gd.TensorType(gd.float32, ("b", 2))}  # fmt: skip
    g = gd.Graph("affine", input_types=types)
    x, w, bias = g.inputs
    y = gd.ops.tanh(x @ w + bias)
    g.output(y, y * 2)
    return g


def _feeds(b: int = 4) -> dict[str, np.ndarray]:
    return {"x": RNG.normal(size=(b, 3)).astype(np.float32),
            "w": RNG.normal(size=(3, 2)).astype(np.float32),
            "bias": RNG.normal(size=(b, 2)).astype(np.float32)}  # fmt: skip


def _equal(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    """Bit for bit (tests/floats.py's assert_bits): not a claim of exact sums, but of one
    computation: a Session and run() give the same model to the same onnxruntime session
    code, and what is compared is how their values come back."""
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        floats.assert_bits(a, b, f"output {k}")


def test_call_is_run() -> None:
    g, feeds = _affine(), _feeds()
    s = Session(g)
    _equal(s(feeds), run(g, feeds))
    _equal(s([feeds["x"], feeds["w"], feeds["bias"]]), run(g, feeds))
    assert s.input_names == ["x", "w", "bias"]
    assert s.providers[-1] == "CPUExecutionProvider"


@pytest.mark.parametrize("source", ["graph", "proto", "path"])
def test_ortvalue_round_trip_equals_run(source: str, tmp_path: Path) -> None:
    g, feeds = _affine(), _feeds()
    want = run(g, feeds)
    model: Any = {"graph": g, "proto": export(g), "path": tmp_path / "affine.onnx"}[source]
    if source == "path":
        export(g, model)
    s = Session(model)
    outs = s.run_with_ortvalues(feeds)  # numpy in, OrtValues out
    assert all(isinstance(o, ort.OrtValue) for o in outs)
    assert {o.device_name().lower() for o in outs} == {s.device[0]}
    _equal([o.numpy() for o in outs], want)
    on_device = {k: s.ortvalue(v) for k, v in feeds.items()}  # OrtValues in
    assert {v.device_name().lower() for v in on_device.values()} == {s.device[0]}
    _equal([o.numpy() for o in s.run_with_ortvalues(on_device)], want)
    _equal(s.run_with_ortvalues(on_device, outputs="numpy"), want)
    # a symbolic batch: the same session, another size
    other = _feeds(1)
    _equal(s.run_with_ortvalues(other, outputs="numpy"), run(g, other))


def test_a_cpu_ortvalue_shares_the_arrays_memory() -> None:
    s = Session(_affine(), ["CPUExecutionProvider"])
    x = np.ones((2, 3), np.float32)
    assert s.device == ("cpu", 0)
    assert s.ortvalue(x).data_ptr() == x.ctypes.data


def test_bfloat16_inputs_and_outputs() -> None:
    g = gd.Graph("half", input_types={"x": gd.TensorType(gd.bfloat16, ("n",))})
    x = g.inputs[0]
    g.output(x * 3, gd.ops.cast(x, gd.float32) + 0.5)
    feeds = {"x": RNG.normal(size=5).astype(ml_dtypes.bfloat16)}
    want = run(g, feeds)
    s = Session(g)
    _equal(s.run_with_ortvalues(feeds, outputs="numpy"), want)
    outs = s.run_with_ortvalues([s.ortvalue(feeds["x"])])
    assert [o.data_type() for o in outs] == ["tensor(bfloat16)", "tensor(float)"]
    again = s.run_with_ortvalues([outs[0]], outputs="numpy")  # x * 3 fed back
    _equal(again, run(g, {"x": want[0]}))


def test_inputs_are_checked_before_onnxruntime_sees_them() -> None:
    s = Session(_affine())
    feeds = _feeds()
    with pytest.raises(RunError, match=r"input 'x': expected tensor\(float\), got tensor\(double"):
        s.run_with_ortvalues({**feeds, "x": feeds["x"].astype(np.float64)})
    with pytest.raises(RunError, match=r"input 'w': expected shape \[3, 2\], got \[2, 3\]"):
        s.run_with_ortvalues({**feeds, "w": s.ortvalue(feeds["w"].T.copy())})
    with pytest.raises(RunError, match=r"input 'bias': dimension 'b' is 3, but an earlier input "
                                       r"bound it to 4"):  # fmt: skip
        s.run_with_ortvalues({**feeds, "bias": feeds["bias"][:3]})
    with pytest.raises(RunError, match="missing 'bias'"):
        s.run_with_ortvalues({"x": feeds["x"], "w": feeds["w"]})
    with pytest.raises(RunError, match="input 'x': expected a numpy array, an OrtValue or a "
                                       "DLPack tensor, got list"):  # fmt: skip
        s.run_with_ortvalues({**feeds, "x": feeds["x"].tolist()})
    with pytest.raises(ValueError, match="outputs='torch'"):
        s.run_with_ortvalues(feeds, outputs="torch")  # type: ignore[arg-type]


def test_onnxruntime_errors_are_run_errors() -> None:
    g = gd.Graph("pos", input_types={"ids": gd.TensorType(gd.int64, ("seq",))})
    with g:
        table = g.constant(np.arange(32, dtype=np.float32).reshape(16, 2))
        g.output(gd.ops.gather(table, gd.ops.range(0, g.inputs[0].shape[0])))
    s = Session(export(g))
    assert s.run_with_ortvalues([np.zeros(16, np.int64)])[0].shape() == [16, 2]
    with pytest.raises(RunError, match=r"gather at test_session.py:\d+: .*out of range"):
        s.run_with_ortvalues([np.zeros(20, np.int64)])


def test_output_shapes_are_checked() -> None:
    """A model (not graphdsl's) that declares [n] but returns 3 elements: run()'s check."""
    from onnx import TensorProto, helper

    start, end = (helper.make_tensor(k, TensorProto.INT64, [1], [v]) for k, v in
                  (("s", 0), ("e", 3)))  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e"], ["y"])], "clamps",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], [start, end],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    s = Session(model)
    assert s.run_with_ortvalues([np.ones(3, np.float32)])[0].shape() == [3]
    with pytest.raises(RunError, match=r"output 'y': onnxruntime returned shape \(3,\)"):
        s.run_with_ortvalues([np.ones(5, np.float32)])
    assert s.run_with_ortvalues([np.ones(5, np.float32)], check=False)[0].shape() == [3]


def _step(d: int) -> tuple[gd.Graph, np.ndarray, np.ndarray]:
    """A recurrent step: state [batch, d] -> tanh(state @ w + b), same type in and out."""
    w = (RNG.normal(size=(d, d)) / np.sqrt(d)).astype(np.float32)
    b = RNG.normal(size=d).astype(np.float32)
    g = gd.Graph("step", input_types={"state": gd.TensorType(gd.float32, ("batch", d))})
    g.output(gd.ops.tanh(g.inputs[0] @ w + b))
    return g, w, b


def test_decode_loop_feeds_outputs_back_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    g, _, _ = _step(16)
    start = RNG.normal(size=(3, 16)).astype(np.float32)
    s = Session(g)
    state = s.ortvalue(start)
    want = start
    for _ in range(8):
        (want,) = run(g, {"state": want})

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a numpy conversion inside the loop")

    with monkeypatch.context() as m:  # nothing in the loop converts to or from numpy
        for name in ("numpy", "ortvalue_from_numpy", "ortvalue_from_numpy_with_onnx_type"):
            m.setattr(ort.OrtValue, name, refuse)
        m.setattr(run_module, "_from_ortvalue", refuse)
        for _ in range(8):
            (state,) = s.run_with_ortvalues([state])
            assert isinstance(state, ort.OrtValue)
    _equal([state.numpy()], [want])


def test_torch_cpu_tensors_in_and_out_without_copies() -> None:
    torch = pytest.importorskip("torch", reason="torch is the bench extra (not installed here)")
    g, feeds = _affine(), _feeds()
    s = Session(g)
    tensors = {k: torch.from_numpy(v) for k, v in feeds.items()}
    assert s.ortvalue(tensors["x"]).data_ptr() == tensors["x"].data_ptr()  # DLPack: shared
    outs = s.run_with_ortvalues(tensors)
    _equal([o.numpy() for o in outs], run(g, feeds))
    if s.device[0] == "cpu":
        back = torch.from_dlpack(outs[0])
        assert back.data_ptr() == outs[0].data_ptr()
        _equal([back.numpy()], [outs[0].numpy()])  # the same memory
    with pytest.raises(RunError, match=r"input 'x': .*contiguous"):
        s.run_with_ortvalues({**tensors, "x": torch.from_numpy(feeds["x"].T.copy()).T})


def test_decode_loop_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/decode_loop.py on a few steps: both loops end with the same ids; without a
    CUDA provider, --provider cuda says so and fails."""
    from script_modules import load_script

    bench = load_script("benchmarks/decode_loop.py", "decode_loop_benchmark")
    assert bench.main(["--steps", "3", "--rounds", "1", "--batch", "2", "--prompt", "4"]) == 0
    out = capsys.readouterr().out
    assert "final ids equal: True" in out
    assert re.search(r"device / numpy: \d+\.\d+", out)
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        assert bench.main(["--provider", "cuda"]) == 2
        assert "no CUDA provider here" in capsys.readouterr().err
