"""4-bit weights at run time: one [K, N] = [2048, 5632] layer (an MLP projection of a
1B-parameter LLM) at batch 1 (decode-shaped) and 32, side by side in one run.

    python benchmarks/int4_matmul.py [--threads 1] [--rounds 15] [--block 32]

Variants, each exported by graphdsl and run on onnxruntime's CPU provider:

- ``float32``: ``x @ w`` with w a float32 constant (MatMul).
- ``int4 exact, run()``: ``gd.ops.qmatmul`` of w quantized by ``gd.ops.quantize_weights``
  (int4, symmetric, blocks of 32 along K), ``export(exact=True)``: an INT4 initializer,
  DequantizeLinear (blocked), MatMul; in run()'s session, whose constant folding
  dequantizes the weight once at load (float32 in memory, exporters/onnx/_optimizers.py).
- ``int4 exact, per call``: the same model with constant folding and onnxruntime's Q/DQ
  fusions off: DequantizeLinear at every call, the weight 4-bit in memory.
- ``MatMulNBits level 0`` / ``level 4``: ``export(exact=False, accuracy_level=0)`` /
  ``4``: onnxruntime's MatMulNBits, the weight 4-bit in memory;
  level 0 computes in float32, level 4 quantizes x to int8 per block (bounds:
  exporters/onnx/_lower/nbits.py).

A figure is the median over ``--rounds`` rounds of one call's time (each round times every
variant in turn, ``--calls`` calls each after a warm-up). "MB" is the model file's size
(export to a path). "max err" is the largest |y - reference| over the largest |reference|,
the reference being gd.evaluate of the int4 graph (for float32: of the float32 graph).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort

import graphdsl as gd
from exporters.onnx import export, inference_session

K, N = 2048, 5632
BATCHES = (1, 32)


def graphs(block: int, seed: int = 0) -> tuple[gd.Graph, gd.Graph]:
    """The float32 layer and its int4 form (the same weight, quantized)."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    q, scale, zp = gd.ops.quantize_weights(w, "int4", block, 0, symmetric=True)
    f32 = gd.Graph("f32", input_types={"x": gd.TensorType(gd.float32, ("batch", K))})
    f32.output(f32.inputs[0] @ w)
    q4 = gd.Graph("int4", input_types={"x": gd.TensorType(gd.float32, ("batch", K))})
    q4.output(gd.ops.qmatmul(q4.inputs[0], q, scale, zp, axis=0, block_size=block))
    return f32, q4


def saved(g: gd.Graph, folder: str, name: str, **kwargs: Any) -> tuple[str, float]:
    """Export ``g`` to ``folder/name.onnx``; its path and size in MB (with any data file)."""
    path = os.path.join(folder, f"{name}.onnx")
    export(g, path, **kwargs)
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if f.startswith(name))  # fmt: skip
    return path, size / 1e6


def per_call_session(path: str, threads: int) -> Any:
    """DequantizeLinear kept at run time: constant folding off (it would dequantize the
    constant weight at load), onnxruntime's Q/DQ fusions off (they make it MatMulNBits at
    accuracy level 4, quantizing x)."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=["ConstantFolding"])  # fmt: skip


def timer(session: Any, x: np.ndarray, calls: int) -> Callable[[], float]:
    """One round of ``calls`` calls: the median seconds per call."""
    name = session.get_inputs()[0].name

    def once() -> float:
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            session.run(None, {name: x})
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    return once


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=10, help="calls per round and variant")
    p.add_argument("--block", type=int, default=32, help="block size along K")
    a = p.parse_args()
    f32, q4 = graphs(a.block)
    with tempfile.TemporaryDirectory() as folder:
        path_f32, mb_f32 = saved(f32, folder, "f32")
        path_q4, mb_q4 = saved(q4, folder, "q4_exact")
        path_n0, mb_n0 = saved(q4, folder, "q4_nbits0", exact=False, accuracy_level=0)
        path_n4, mb_n4 = saved(q4, folder, "q4_nbits4", exact=False, accuracy_level=4)
        t = a.threads
        variants: dict[str, tuple[Any, float, gd.Graph]] = {
            "float32 MatMul": (inference_session(path_f32, threads=t), mb_f32, f32),
            "int4 exact, run()": (inference_session(path_q4, threads=t), mb_q4, q4),
            "int4 exact, per call": (per_call_session(path_q4, t), mb_q4, q4),
            "MatMulNBits level 0": (inference_session(path_n0, threads=t), mb_n0, q4),
            "MatMulNBits level 4": (inference_session(path_n4, threads=t), mb_n4, q4),
        }
        rng = np.random.default_rng(1)
        xs = {m: rng.standard_normal((m, K)).astype(np.float32) for m in BATCHES}
        errors: dict[tuple[str, int], float] = {}
        for m, x in xs.items():  # each variant's result against its graph's reference
            want = {id(g): gd.evaluate(g, {"x": x})[0] for g in (f32, q4)}
            for name, (session, _, g) in variants.items():
                got = session.run(None, {session.get_inputs()[0].name: x})[0]
                ref = want[id(g)].astype(np.float64)
                errors[name, m] = float(np.abs(got - ref).max() / np.abs(ref).max())
        timers = {(name, m): timer(v[0], xs[m], a.calls) for name, v in variants.items()
                  for m in BATCHES}  # fmt: skip
        for once in timers.values():  # warm-up
            once()
        samples: dict[tuple[str, int], list[float]] = {key: [] for key in timers}
        for r in range(a.rounds):
            keys = list(timers) if r % 2 == 0 else list(reversed(timers))
            for key in keys:
                samples[key].append(timers[key]())
    median = {key: statistics.median(v) for key, v in samples.items()}
    print(
        f"[M, {K}] x [{K}, {N}], int4 in blocks of {a.block} along K; onnxruntime "
        f"{ort.__version__}, CPU, {a.threads} thread(s); median of {a.rounds} rounds x "
        f"{a.calls} calls"
    )
    head = f"{'variant':<22}{'MB':>7}{'x f32':>7}"
    for m in BATCHES:
        head += f"{f'M={m} ms':>11}{'x f32':>7}{'max err':>10}"
    print(head)
    for name, (_, mb, _) in variants.items():
        row = f"{name:<22}{mb:>7.1f}{mb / mb_f32:>7.3f}"
        for m in BATCHES:
            ms = median[name, m] * 1e3
            ratio = median[name, m] / median["float32 MatMul", m]
            row += f"{ms:>11.3f}{ratio:>7.2f}{errors[name, m]:>10.1e}"
        print(row)


if __name__ == "__main__":
    main()
