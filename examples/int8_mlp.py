"""Weight-only int8 MLP: int8 weights with per-output-channel float32 scales, float32
activations and biases, a symbolic batch.

The float32 weights of three layers are quantized symmetrically per output channel (scale =
max|w| / 127, with ``gd.ops.quantize``), and each layer is ``gd.ops.qmatmul(h, q, scale)``
(h @ dequantize(q)) plus a bias, ReLU between them. The example exports the model and prints
its file size against the bytes of the int8 weights (and of the same weights in float32),
the ONNX nodes and initializers, then runs it on onnxruntime for two batch sizes, compares
with ``gd.evaluate`` and prints run times:

- ``exporters.onnx.run``: onnxruntime's constant folding dequantizes each int8 weight once,
  when the session starts (run() turns its Q/DQ fusions off, so that the product stays the
  reference's float32 one; the file and the model stay int8), then MatMul per call;
- a plain onnxruntime session with its default optimizations (the nodes it runs are
  printed): it fuses a DequantizeLinear + MatMul into MatMulNBits (the weight kept as 8
  bits), but where a bias follows, MatMul + Add become a Gemm first and DequantizeLinear
  stays (onnxruntime 1.32 fuses only the last layer here); at accuracy level 0 (float32
  arithmetic, session config ``session.qdq_matmulnbits_accuracy_level``) and at
  onnxruntime's default level 4, whose MatMulNBits quantizes the activations to int8 too
  (faster, but not the reference's product: its difference is printed, not required);
- for comparison, the same model with the dequantized weights stored as float32 (4 times
  the bytes), with ``exporters.onnx.run``.

    python examples/int8_mlp.py
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import ModelProto, TensorProto

import graphdsl as gd
from exporters.onnx import export, run

SIZES = (512, 1024, 512, 10)  # input features, two hidden layers, classes
BATCHES = (1, 64)
TOLERANCE = 1e-4  # of the largest output: float32 sums of 1024 terms in another order
REPEATS = 30

Layer = tuple[np.ndarray, np.ndarray, np.ndarray]  # int8 weight [K, N], scale [N], bias [N]


def float_weights(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight [K, N], bias [N]) per layer, float32."""
    return [
        (rng.normal(scale=fan_in**-0.5, size=(fan_in, fan_out)).astype(np.float32),
         rng.normal(scale=0.1, size=fan_out).astype(np.float32))
        for fan_in, fan_out in itertools.pairwise(SIZES)
    ]  # fmt: skip


def quantize_weights(layers: list[tuple[np.ndarray, np.ndarray]]) -> list[Layer]:
    """Symmetric int8 per output channel: scale = max|w| / 127 of each column, q = w / scale
    rounded half to even (graphdsl's quantize, evaluated once)."""
    out = []
    for w, b in layers:
        scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        g = gd.Graph("quantize_weight", input_types={"w": gd.TensorType(gd.float32, w.shape)})
        g.output(gd.ops.quantize(g.inputs[0], scale, axis=1))
        (q,) = gd.evaluate(g, {"w": w})
        out.append((q, scale, b))
    return out


def build(layers: list[Layer], dequantized: bool = False) -> gd.Graph:
    """The MLP; with ``dequantized``, its weights as float32 constants (q * scale) instead."""
    name = "float32_mlp" if dequantized else "int8_mlp"
    g = gd.Graph(name, input_types={"x": gd.TensorType(gd.float32, ("batch", SIZES[0]))})
    (h,) = g.inputs
    for k, (q, scale, b) in enumerate(layers):
        if dequantized:
            h = h @ g.constant(q.astype(np.float32) * scale)
        else:
            h = gd.ops.qmatmul(h, g.constant(q), g.constant(scale))
        h = h + g.constant(b)
        if k < len(layers) - 1:
            h = gd.ops.relu(h)
    g.output(h)
    return g


def seconds_per_call(fn: Callable[[], object]) -> float:
    fn()  # warm up (first call allocates)
    start = time.perf_counter()
    for _ in range(REPEATS):
        fn()
    return (time.perf_counter() - start) / REPEATS


def run_first(model: ModelProto, x: np.ndarray) -> np.ndarray:
    return run(model, {"x": x})[0]


def session_first(s: Any, x: np.ndarray) -> np.ndarray:
    return np.asarray(s.run(None, {"x": x})[0])


def session(path: str, optimized: str = "", **config: str) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if optimized:
        so.optimized_model_filepath = optimized
    for key, value in config.items():
        so.add_session_config_entry(key, value)
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main() -> None:
    rng = np.random.default_rng(0)
    layers = quantize_weights(float_weights(rng))
    g = build(layers)
    print(g)

    path = "int8_mlp.onnx"
    model = export(g, path)
    size = os.path.getsize(path)
    weight_bytes = sum(q.nbytes for q, _, _ in layers)
    other = sum(s.nbytes + b.nbytes for _, s, b in layers)
    print(f"\nint8 weights: {weight_bytes} bytes; float32 scales and biases: {other} bytes")
    print(f"exported {path}: {size} bytes = {size / weight_bytes:.3f} x the int8 weights "
          f"(as float32 the weights alone would be {4 * weight_bytes} bytes)")  # fmt: skip
    print("ONNX nodes:", dict(Counter(n.op_type for n in model.graph.node)))
    inits = [(tuple(t.dims), TensorProto.DataType.Name(t.data_type))
             for t in model.graph.initializer]  # fmt: skip
    print("initializers:", ", ".join(f"{t}{list(d)}" for d, t in inits))

    float32_model = export(build(layers, dequantized=True), "float32_mlp.onnx")
    print(f"(float32_mlp.onnx, the weights dequantized: {os.path.getsize('float32_mlp.onnx')} "
          "bytes)")  # fmt: skip

    level0 = session(path, **{"session.qdq_matmulnbits_accuracy_level": "0"})
    default = session(path, "int8_mlp.optimized.onnx")
    fused = onnx.load("int8_mlp.optimized.onnx")
    print("onnxruntime's optimized nodes:", [n.op_type for n in fused.graph.node])
    ok = True
    for batch in BATCHES:
        x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
        reference = gd.evaluate(g, {"x": x})[0]
        top = float(np.max(np.abs(reference)))
        outputs = {
            "exporters.onnx.run": partial(run_first, model, x),
            "onnxruntime, fused, accuracy level 0": partial(session_first, level0, x),
            "onnxruntime, fused, default level": partial(session_first, default, x),
            "float32 weights, exporters.onnx.run": partial(run_first, float32_model, x),
        }
        print(f"\nbatch {batch}: reference (gd.evaluate) {reference.dtype}{list(reference.shape)}")
        for name, call in outputs.items():
            got = call()
            diff = float(np.max(np.abs(got.astype(np.float64) - reference)))
            within = diff <= TOLERANCE * top
            if name == "exporters.onnx.run":
                ok &= within and got.dtype == reference.dtype and got.shape == reference.shape
            us = seconds_per_call(call) * 1e6
            print(f"  {name:38s} {us:9.1f} us/call  max |diff| = {diff:.3g} "
                  f"({'within' if within else 'beyond'} {TOLERANCE:g} x max|output|)")  # fmt: skip
        t_eval = seconds_per_call(partial(gd.evaluate, g, {"x": x}))
        print(f"  {'gd.evaluate (numpy)':38s} {t_eval * 1e6:9.1f} us/call")
    print(f"\nexporters.onnx.run matches gd.evaluate within {TOLERANCE:g} x max|output|: {ok}")
    if not ok:
        raise SystemExit("onnxruntime and the numpy reference disagree")


if __name__ == "__main__":
    main()
