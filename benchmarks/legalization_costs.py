"""What exactness costs: ONNX nodes and onnxruntime run time of each legalized float32 op,
exported with exact=True and exact=False, against the bare native operator, measured side by
side in one run on a (1, 12, 512, 512) attention-score tensor (the issue's masking case).

    python benchmarks/legalization_costs.py
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

import graphdsl as gd
from exporters.onnx import export

SHAPE = (1, 12, 512, 512)
RUNS = 20

Build = Callable[[gd.Symbol, gd.Symbol], gd.Symbol]
# (name, graphdsl builder on (x, y), the native ONNX op it replaces, its inputs)
CASES: list[tuple[str, Build, str, list[str]]] = [
    ("where(mask, x, -inf)", lambda x, y: gd.ops.where(y > 0, x, -np.inf), "Where",
     ["c", "x", "k"]),
    ("where(mask, -inf, x)", lambda x, y: gd.ops.where(y > 0, -np.inf, x), "Where",
     ["c", "k", "x"]),
    ("where(mask, x, y)", lambda x, y: gd.ops.where(y > 0, x, y), "Where", ["c", "x", "y"]),
    ("maximum(x, y)", gd.ops.maximum, "Max", ["x", "y"]),
    ("relu(x)", lambda x, y: gd.ops.relu(x), "Relu", ["x"]),
    ("max(x, axis=-1)", lambda x, y: gd.ops.max(x, axis=-1), "ReduceMax", ["x", "axes"]),
    ("x % y", lambda x, y: x % y, "Mod", ["x", "y"]),
    ("sigmoid(x)", lambda x, y: gd.ops.sigmoid(x), "Sigmoid", ["x"]),
]  # fmt: skip


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _native(op: str, inputs: list[str]) -> onnx.ModelProto:
    """The bare ONNX operator on the same tensors (ReduceMax over the last axis; Mod with
    fmod=1, the only float Mod onnxruntime runs)."""
    f = TensorProto.FLOAT
    infos = {"x": (f, list(SHAPE)), "y": (f, list(SHAPE)), "c": (TensorProto.BOOL, list(SHAPE))}
    inits = [
        helper.make_tensor("k", f, [], [-np.inf]),
        helper.make_tensor("axes", TensorProto.INT64, [1], [-1]),
    ]
    attrs: dict[str, Any] = {"fmod": 1} if op == "Mod" else {}
    if op == "ReduceMax":
        attrs["keepdims"] = 0
    node = helper.make_node(op, inputs, ["out"], **attrs)
    graph = helper.make_graph(
        [node], "native",
        [helper.make_tensor_value_info(n, *infos[n]) for n in ("x", "y", "c") if n in inputs],
        [helper.make_tensor_value_info("out", f, None)],
        initializer=[t for t in inits if t.name in inputs],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _time(sess: ort.InferenceSession, feeds: dict[str, np.ndarray]) -> float:
    names = {i.name for i in sess.get_inputs()}
    feeds = {k: v for k, v in feeds.items() if k in names}
    sess.run(None, feeds)
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    y = rng.standard_normal(SHAPE).astype(np.float32)
    print(f"onnxruntime {ort.__version__}, {platform.processor() or platform.machine()}, "
          f"float32 {SHAPE}, median of {RUNS} runs, graph optimizations off\n")  # fmt: skip
    print("| op | native ms | exact nodes | exact ms | exact/native | "
          "exact=False nodes | exact=False ms | ratio |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, build, op, inputs in CASES:
        row = [name]
        native_ms = _time(_session(_native(op, inputs)), {"x": x, "y": y, "c": y > 0})
        row.append(f"{native_ms:.2f}")
        for exact in (True, False):
            g = gd.Graph("cost", input_types={"x": gd.TensorType(gd.float32, SHAPE),
                                              "y": gd.TensorType(gd.float32, SHAPE)})  # fmt: skip
            a, b = g.inputs
            g.output(build(a, b))
            m = export(g, exact=exact)
            compute = [n for n in m.graph.node if n.op_type not in ("Cast",)]
            if name.startswith("where"):  # the mask's comparison is the user's, not a cost
                compute = [n for n in compute if n.op_type != "Greater"]
            ms = _time(_session(m), {"x": x, "y": y})
            row += [str(len(compute)), f"{ms:.2f}", f"{ms / native_ms:.2f}"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
