"""What finding max pooling's NaN windows costs in the example CNN: the hand-written model of
benchmarks/inference.py (NCHW, 12 nodes) with its stem's MaxPool followed by each way of
putting NaN where a window holds one, timed side by side under run()'s session options
(1 thread, onnxruntime's blocked NCHWc layout on), and checked on a tensor of NaN windows.

    python benchmarks/maxpool_nan_check.py [--rounds N]

Variants (x: the stem convolution's output, r: MaxPool(x)):
- none: r (onnxruntime's MaxPool skips NaN: wrong where a window holds one);
- isnan: Where(MaxPool(Cast(IsNaN(x))) > 0.5, NaN, r), the exporter's check before;
- squares: r * (1x1 MaxPool of Where(IsNaN(AveragePool(x * x)), NaN, 1)), the exporter's
  check now (exporters/onnx/_lower/vision.py);
- tanh: r * Conv(Tanh(x), zeros, bias 1) over the windows: no IsNaN, but Tanh's NaN
  handling is MLAS's, which differs between its kernels for each instruction set (not used).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "examples")]

import cnn  # noqa: E402
import inference  # noqa: E402

from exporters.onnx import _run  # noqa: E402

POOL: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}


def variant(base: onnx.ModelProto, kind: str, channels: int) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(base)
    nodes = list(m.graph.node)
    assert nodes[1].op_type == "MaxPool" and nodes[1].output[0] == "p0"
    nodes[1].output[0] = "r"

    def const(name: str, value: Any) -> None:
        m.graph.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))

    const("nan", np.nan)
    const("one", 1.0)
    node = helper.make_node
    check = {
        "none": [node("Identity", ["r"], ["p0"])],
        "isnan": [
            node("IsNaN", ["c0"], ["n"]),
            node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
            node("MaxPool", ["nf"], ["pf"], **POOL),
            node("Cast", ["pf"], ["any"], to=TensorProto.BOOL),
            node("Where", ["any", "nan", "r"], ["p0"]),
        ],
        "squares": [
            node("Mul", ["c0", "c0"], ["sq"]),
            node("AveragePool", ["sq"], ["mean"], **POOL),
            node("IsNaN", ["mean"], ["n"]),
            node("Where", ["n", "nan", "one"], ["poison"]),
            node("MaxPool", ["poison"], ["poison1"], kernel_shape=[1, 1]),
            node("Mul", ["r", "poison1"], ["p0"]),
        ],
        "tanh": [
            node("Tanh", ["c0"], ["t"]),
            node("Conv", ["t", "zeros", "ones"], ["poison"], group=channels, **POOL),
            node("Mul", ["r", "poison"], ["p0"]),
        ],
    }[kind]
    if kind == "tanh":
        const("zeros", np.zeros((channels, 1, 3, 3)))
        const("ones", np.ones(channels))
    del m.graph.node[:]
    m.graph.node.extend([*nodes[:2], *check, *nodes[2:]])
    return m


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    so = _run.session_options()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def nan_windows_kept(kind: str, channels: int) -> str:
    """The pool alone (Conv identity per channel, then the variant), on an image with NaN in
    random places: how many of the reference's NaN windows come out NaN."""
    x = np.random.default_rng(2).normal(size=(1, channels, 8, 8)).astype(np.float32)
    x[np.random.default_rng(3).random(x.shape) < 0.05] = np.nan
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    want = np.isnan(windows[:, :, ::2, ::2]).any(axis=(-1, -2))
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c0"], group=channels),
         helper.make_node("MaxPool", ["c0"], ["p0"], **POOL),
         helper.make_node("Identity", ["p0"], ["y"])],
        "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((channels, 1, 1, 1), np.float32), "w"),
         numpy_helper.from_array(np.zeros(channels, np.float32), "b")],
    )  # fmt: skip
    base = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    got = np.isnan(session(variant(base, kind, channels)).run(None, {"x": x})[0])
    extra = int((got & ~want).sum())
    return f"{int((got & want).sum())} of {int(want.sum())}" + (f", {extra} more" if extra else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args()
    cfg = cnn.Config()
    base = inference.cnn_hand(cnn.init_weights(cfg), cfg)
    images = np.random.default_rng(1).normal(size=(8, cfg.channels, cfg.image, cfg.image))
    feed = {"images": images.astype(np.float32)}
    kinds = ["none", "isnan", "squares", "tanh"]
    sessions = {k: session(variant(base, k, cfg.width)) for k in kinds}

    def runner(s: ort.InferenceSession) -> Callable[[], object]:
        return lambda: s.run(None, feed)

    times = inference.interleaved({k: runner(s) for k, s in sessions.items()}, args.rounds)
    print(f"onnxruntime {ort.__version__}, 1 thread, median of {args.rounds} interleaved rounds")
    print("| check | ms | / none | NaN windows kept |\n|---|---:|---:|---|")
    for k in kinds:
        print(f"| {k} | {1000 * times[k]:.3f} | {times[k] / times['none']:.3f} | "
              f"{nan_windows_kept(k, cfg.width)} |")  # fmt: skip


if __name__ == "__main__":
    main()
