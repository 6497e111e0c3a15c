"""Benchmarks: graphdsl against raw onnx.helper, spox and ndonnx, measured side by side.

    pip install -e '.[bench]'
    python benchmarks/run.py            # everything; rewrites the table in benchmarks/README.md
    python benchmarks/run.py --quick    # smaller sizes, no README update
    python benchmarks/run.py --inference  # only the inference benchmark (issue 18)

For each graph (the promotion chain ``y = y * 1.0001 + n``, an MLP-like graph with bfloat16
weights, a wide graph of literal-heavy expressions) every library builds the same
computation as an ONNX ModelProto; graphdsl's time includes building, implicit_cast, the
pass pipeline, lowering and ``onnx.checker`` (everything ``export`` does). Then: cost per
node from 10k to 1M nodes (time and peak RSS, in a subprocess), onnxruntime run time of
exported models against hand-written ones, and ``run()``'s overhead per call.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, Literal

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import graphdsl as gd
from exporters.onnx import export, run

HERE = os.path.dirname(os.path.abspath(__file__))
Builder = Callable[[int], onnx.ModelProto]


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- chain


def chain_graphdsl(steps: int, check: bool | Literal["full"] = True) -> onnx.ModelProto:
    g = gd.Graph("chain", input_types={"x": gd.TensorType(gd.float32, (1024,)),
                                       "n": gd.TensorType(gd.int16, (1024,))})  # fmt: skip
    x, n = g.inputs
    y = x
    for _ in range(steps):
        y = y * 1.0001 + n
    g.output(y)
    return export(g, check=check)


def chain_helper(steps: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT)]
    init = [numpy_helper.from_array(np.array(1.0001, np.float32), "c")]
    prev = "x"
    for i in range(steps):
        nodes.append(helper.make_node("Mul", [prev, "c"], [f"m{i}"]))
        nodes.append(helper.make_node("Add", [f"m{i}", "nf"], [f"a{i}"]))
        prev = f"a{i}"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024]),
         helper.make_tensor_value_info("n", TensorProto.INT16, [1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024])], initializer=init,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def chain_spox(steps: int) -> onnx.ModelProto:
    import spox.opset.ai.onnx.v21 as op
    from spox import Tensor, argument, build

    x = argument(Tensor(np.float32, (1024,)))
    n = argument(Tensor(np.int16, (1024,)))
    nf = op.cast(n, to=np.float32)  # spox does no promotion: one hand-written Cast
    c = op.constant(value=np.array(1.0001, np.float32))
    y = x
    for _ in range(steps):
        y = op.add(op.mul(y, c), nf)
    model: onnx.ModelProto = build({"x": x, "n": n}, {"y": y})
    return model


def chain_ndonnx(steps: int) -> onnx.ModelProto:
    import ndonnx as ndx

    x = ndx.argument(shape=(1024,), dtype=ndx.float32)
    n = ndx.argument(shape=(1024,), dtype=ndx.int16)
    y = x
    for _ in range(steps):
        y = y * 1.0001 + n
    model: onnx.ModelProto = ndx.build({"x": x, "n": n}, {"y": y})
    return model


# ---------------------------------------------------------------------------- mlp

WIDTH = 128


def _weights(layers: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((WIDTH, WIDTH)) / 16).astype(ml_dtypes.bfloat16)
            for _ in range(layers)]  # fmt: skip


def mlp_graphdsl(layers: int) -> onnx.ModelProto:
    g = gd.Graph("mlp", input_types={"x": gd.TensorType(gd.float32, ("batch", WIDTH))})
    h = g.inputs[0]
    for w in _weights(layers):
        h = gd.ops.relu(h @ g.constant(w) + 0.5)  # bfloat16 weights join float32
    g.output(gd.ops.softmax(h))
    return export(g)


def mlp_helper(layers: int) -> onnx.ModelProto:
    nodes, init = [], [numpy_helper.from_array(np.array(0.5, np.float32), "b")]
    prev = "x"
    for i, w in enumerate(_weights(layers)):
        init.append(helper.make_tensor(f"w{i}", TensorProto.BFLOAT16, w.shape,
                                       w.view(np.uint16).tobytes(), raw=True))  # fmt: skip
        nodes += [
            helper.make_node("Cast", [f"w{i}"], [f"wf{i}"], to=TensorProto.FLOAT),
            helper.make_node("MatMul", [prev, f"wf{i}"], [f"mm{i}"]),
            helper.make_node("Add", [f"mm{i}", "b"], [f"ad{i}"]),
            helper.make_node("Relu", [f"ad{i}"], [f"h{i}"]),
        ]
        prev = f"h{i}"
    nodes.append(helper.make_node("Softmax", [prev], ["y"], axis=-1))
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", WIDTH])], initializer=init,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def mlp_spox(layers: int) -> onnx.ModelProto:
    import spox.opset.ai.onnx.v21 as op
    from spox import Tensor, argument, build

    x = argument(Tensor(np.float32, ("batch", WIDTH)))
    b = op.constant(value=np.array(0.5, np.float32))
    h = x
    for w in _weights(layers):
        wf = op.cast(op.constant(value=w), to=np.float32)
        h = op.relu(op.add(op.matmul(h, wf), b))
    model: onnx.ModelProto = build({"x": x}, {"y": op.softmax(h, axis=-1)})
    return model


def mlp_ndonnx(layers: int) -> onnx.ModelProto:
    import ndonnx as ndx

    x = ndx.argument(shape=("batch", WIDTH), dtype=ndx.float32)
    h = x
    for w in _weights(layers):  # ndonnx has no bfloat16: float16 weights stand in
        wc = ndx.asarray(w.astype(np.float16))
        h = ndx.maximum(h @ wc + 0.5, 0.0)
    e = ndx.exp(h - ndx.max(h, axis=-1, keepdims=True))
    model: onnx.ModelProto = ndx.build({"x": x}, {"y": e / ndx.sum(e, axis=-1, keepdims=True)})
    return model


# ---------------------------------------------------------------------------- wide


def wide_graphdsl(count: int) -> onnx.ModelProto:
    g = gd.Graph("wide", input_types={"x": gd.TensorType(gd.float32, (16,)),
                                      "k": gd.TensorType(gd.int32, (16,))})  # fmt: skip
    x, k = g.inputs
    outs = [(x * (i % 7 + 1) + k * 2 - i % 5) * 0.5 for i in range(count)]
    g.output(gd.ops.concat(outs))
    return export(g)


def wide_helper(count: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT)]
    init: dict[str, Any] = {}

    def c(v: float) -> str:
        name = f"c{v}".replace(".", "_").replace("-", "m")
        if name not in init:
            init[name] = numpy_helper.from_array(np.array(v, np.float32), name)
        return name

    outs = []
    for i in range(count):
        nodes += [
            helper.make_node("Mul", ["x", c(i % 7 + 1)], [f"a{i}"]),
            helper.make_node("Mul", ["kf", c(2.0)], [f"b{i}"]),
            helper.make_node("Add", [f"a{i}", f"b{i}"], [f"s{i}"]),
            helper.make_node("Sub", [f"s{i}", c(float(i % 5))], [f"d{i}"]),
            helper.make_node("Mul", [f"d{i}", c(0.5)], [f"o{i}"]),
        ]
        outs.append(f"o{i}")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=0))
    graph = helper.make_graph(
        nodes, "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16]),
         helper.make_tensor_value_info("k", TensorProto.INT32, [16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16 * count])],
        initializer=list(init.values()),
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def wide_spox(count: int) -> onnx.ModelProto:
    import spox.opset.ai.onnx.v21 as op
    from spox import Tensor, argument, build

    x = argument(Tensor(np.float32, (16,)))
    k = argument(Tensor(np.int32, (16,)))
    kf = op.cast(k, to=np.float32)

    def c(v: float) -> Any:
        return op.constant(value=np.array(v, np.float32))

    outs = [op.mul(op.sub(op.add(op.mul(x, c(i % 7 + 1)), op.mul(kf, c(2.0))), c(float(i % 5))),
                   c(0.5)) for i in range(count)]  # fmt: skip
    model: onnx.ModelProto = build({"x": x, "k": k}, {"y": op.concat(outs, axis=0)})
    return model


def wide_ndonnx(count: int) -> onnx.ModelProto:
    import ndonnx as ndx

    x = ndx.argument(shape=(16,), dtype=ndx.float32)
    k = ndx.argument(shape=(16,), dtype=ndx.int32)
    outs = [(x * (i % 7 + 1) + k * 2 - i % 5) * 0.5 for i in range(count)]
    model: onnx.ModelProto = ndx.build({"x": x, "k": k}, {"y": ndx.concat(outs)})
    return model


# ---------------------------------------------------------------------------- measuring


def measure(
    fns: dict[str, Builder], size: int, repeat: int = 5, budget_s: float = 2.0
) -> dict[str, dict[str, Any]]:
    """Per library: the best of up to ``repeat`` runs (fewer once its runs took
    ``budget_s``) in seconds, and the model's node and Cast counts.

    The libraries take turns, in alternating order, so that drifts in the machine's speed
    fall on all of them alike; each run starts from a collected heap, so that no run pays
    for the garbage of the one before. A library that fails gets ``{"error": ...}``.
    """
    times: dict[str, list[float]] = {lib: [] for lib in fns}
    models: dict[str, onnx.ModelProto] = {}
    errors: dict[str, str] = {}
    for r in range(repeat):
        for lib in list(fns) if r % 2 == 0 else list(reversed(fns)):
            if lib in errors or sum(times[lib]) >= budget_s:
                continue
            progress(f"{lib}, run {r + 1}")
            gc.collect()
            try:
                t0 = time.perf_counter()
                models[lib] = fns[lib](size)
                times[lib].append(time.perf_counter() - t0)
            except Exception as e:  # a peer that cannot express the graph
                errors[lib] = f"{type(e).__name__}: {str(e)[:60]}"
    out: dict[str, dict[str, Any]] = {}
    for lib in fns:
        if lib in errors:
            out[lib] = {"error": errors[lib]}
            continue
        model, best = models[lib], min(times[lib])
        nodes = len(model.graph.node)
        casts = sum(1 for n in model.graph.node if n.op_type == "Cast")
        out[lib] = {"s": best, "us_per_node": best / max(nodes, 1) * 1e6, "nodes": nodes,
                    "casts": casts, "model": model}  # fmt: skip
    return out


def peak_rss_child(steps: int, check: bool | Literal["full"] = True) -> dict[str, Any]:
    """Time and peak-RSS growth of building and exporting the chain, in a fresh process."""
    code = f"""
import resource, time, json, sys
sys.path.insert(0, {HERE!r})
import run as b
b.chain_graphdsl(10)  # warm up: lazy imports, first-call caches
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the peak so far, in KiB
t0 = time.perf_counter()
m = b.chain_graphdsl({steps}, check={check!r})
t = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"s": t, "nodes": len(m.graph.node), "kb": max(peak - base, 0)}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {"s": r["s"], "nodes": r["nodes"], "us_per_node": r["s"] / r["nodes"] * 1e6,
            "bytes_per_node": r["kb"] * 1024 / r["nodes"], "check": check}  # fmt: skip


def peak_memory_child(graph: str, lib: str, size: int) -> float:
    """Peak RSS growth in bytes while ``lib`` builds ``graph(size)``, in a fresh process.

    A thread samples the resident set every 0.2 ms from just before the build (after a
    small warm-up build and a collection) until the model is made; the run is not timed.
    """
    code = f"""
import gc, json, sys, threading, time
import psutil
sys.path.insert(0, {HERE!r})
import run as b
fn = b.LIBS[{graph!r}][{lib!r}]
fn(b.WARM_UP[{graph!r}])  # imports, first-call caches
proc = psutil.Process()
gc.collect()
base = proc.memory_info().rss
peak = base
done = threading.Event()
def sample() -> None:
    global peak
    while not done.is_set():
        peak = max(peak, proc.memory_info().rss)
        time.sleep(0.0002)
t = threading.Thread(target=sample)
t.start()
m = fn({size})
done.set()
t.join()
peak = max(peak, proc.memory_info().rss)
print(json.dumps({{"bytes": peak - base}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["bytes"])


def ort_times(
    models: list[onnx.ModelProto], feeds: dict[str, np.ndarray], iters: int, rounds: int = 21
) -> list[float]:
    """Median seconds per ``InferenceSession.run`` of each model (1 thread).

    The models take turns, in alternating order, ``rounds`` times, so that drifts of the
    machine's speed fall on all of them alike.
    """
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sessions = [ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
                for m in models]  # fmt: skip
    for sess in sessions:
        sess.run(None, feeds)
    samples: list[list[float]] = [[] for _ in sessions]
    for r in range(rounds):
        order = range(len(sessions)) if r % 2 == 0 else reversed(range(len(sessions)))
        for k in order:
            sess = sessions[k]
            t0 = time.perf_counter()
            for _ in range(iters):
                sess.run(None, feeds)
            samples[k].append((time.perf_counter() - t0) / iters)
    return [statistics.median(x) for x in samples]


def run_overhead(iters: int, folder: str) -> dict[str, float]:
    """µs per call on a tiny model: InferenceSession.run, and run() of the Graph, of the
    saved path and of the ModelProto (which run() compares with the proto its session was
    made from, at every call, so that a proto changed in place is never served stale)."""
    g = gd.Graph("tiny", input_types={"x": gd.TensorType(gd.float32, (4,))})
    g.output(g.inputs[0] + 1.0)
    path = os.path.join(folder, "tiny.onnx")
    model = export(g, path)
    x = np.ones(4, np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    calls: dict[str, Callable[[], object]] = {
        "direct": lambda: sess.run(None, {"x": x}),
        "graph": lambda: run(g, {"x": x}),
        "path": lambda: run(path, {"x": x}),
        "proto": lambda: run(model, {"x": x}),
    }
    res = {}
    for name, fn in calls.items():
        fn()
        samples = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            samples.append((time.perf_counter() - t0) / iters * 1e6)
        res[name] = statistics.median(samples)
    return res


# ---------------------------------------------------------------------------- main

WARM_UP = {"chain": 10, "mlp": 1, "wide": 5}  # small builds that load what each library needs

LIBS: dict[str, dict[str, Builder]] = {
    "chain": {"graphdsl": chain_graphdsl, "onnx.helper": chain_helper, "spox": chain_spox,
              "ndonnx": chain_ndonnx},
    "mlp": {"graphdsl": mlp_graphdsl, "onnx.helper": mlp_helper, "spox": mlp_spox,
            "ndonnx": mlp_ndonnx},
    "wide": {"graphdsl": wide_graphdsl, "onnx.helper": wide_helper, "spox": wide_spox,
             "ndonnx": wide_ndonnx},
}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes; README not updated")
    ap.add_argument("--inference", action="store_true",
                    help="only the inference benchmark (benchmarks/inference.py)")  # fmt: skip
    args = ap.parse_args()
    q = args.quick
    if args.inference:
        return inference_section(q)
    sizes = {"chain": [2000] if q else [2000, 10000], "mlp": [20 if q else 50],
             "wide": [300 if q else 2000]}  # fmt: skip
    lines: list[str] = []
    results: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for graph, libs in LIBS.items():
        for size in sizes[graph]:
            progress(f"{graph}({size}): time, the libraries taking turns")
            row = measure(libs, size)
            for lib, r in row.items():
                if "error" not in r:
                    progress(f"{graph}({size}): peak memory of {lib}")
                    r["peak_mb"] = peak_memory_child(graph, lib, size) / 2**20
            results[graph, size] = row
    lines.append("### Build + export to ModelProto (seconds, best of up to 5 runs, libraries "
                 "taking turns)\n")
    lines.append("peak MB: how far the resident set grows while the library builds the model, "
                 "in a fresh process after a small warm-up build (sampled every 0.2 ms).\n")
    lines.append("| graph | library | s | µs/node | peak MB | nodes | Casts |")
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    for (graph, size), row in results.items():
        for lib, r in row.items():
            if "error" in r:
                lines.append(f"| {graph}({size}) | {lib} | n/a: {r['error']} | | | | |")
            else:
                lines.append(f"| {graph}({size}) | {lib} | {r['s']:.3f} | {r['us_per_node']:.1f} "
                             f"| {r['peak_mb']:.1f} | {r['nodes']} | {r['casts']} |")  # fmt: skip
    lines.append("\n### Ratios (same run)\n")
    lines.append("| graph | graphdsl / onnx.helper | spox / graphdsl | ndonnx / graphdsl |")
    lines.append("|---|---:|---:|---:|")
    for (graph, size), row in results.items():
        def ratio(lib: str, inverse: bool, row: dict[str, dict[str, Any]] = row) -> str:
            r, gdt = row.get(lib, {}), row["graphdsl"]["s"]
            if "s" not in r:
                return "n/a"
            return f"{(r['s'] / gdt if inverse else gdt / r['s']):.2f}"

        lines.append(f"| {graph}({size}) | {ratio('onnx.helper', False)} | "
                     f"{ratio('spox', True)} | {ratio('ndonnx', True)} |")  # fmt: skip

    progress("scaling: chain to 10k and 1M nodes in fresh processes")
    big_steps = 50000 if q else 500000
    # each size's best of 3 processes, the sizes taking turns: interference from the rest
    # of the machine only adds time, and drifts fall on both sizes alike
    pairs = [(peak_rss_child(5000), peak_rss_child(big_steps)) for _ in range(3)]
    small = min((p[0] for p in pairs), key=lambda r: r["s"])
    big = min((p[1] for p in pairs), key=lambda r: r["s"])
    scaling = [small, big, peak_rss_child(big_steps, check="full"),
               peak_rss_child(big_steps, check=False)]  # fmt: skip
    # a 10k build stays under the process's start-up peak, which ru_maxrss cannot see past:
    # sample that size's resident set instead (in another process: sampling costs time)
    small["bytes_per_node"] = peak_memory_child("chain", "graphdsl", 5000) / small["nodes"]
    lines.append("\n### Cost per node as graphs grow (fresh process each)\n")
    lines.append("| nodes | export(check=...) | s | µs/node | peak RSS growth / node |")
    lines.append("|---:|---|---:|---:|---:|")
    for r in scaling:
        checker = {True: "True (default: structure)", "full": "'full'", False: "False"}[r["check"]]
        lines.append(f"| {r['nodes']} | {checker} | {r['s']:.2f} | {r['us_per_node']:.1f} | "
                     f"{r['bytes_per_node']:.0f} B |")  # fmt: skip
    lines.append("\n(The default rows are the best of 3 processes for each size, the sizes "
                 "taking turns; the others are one process each. Peak RSS growth is measured "
                 "above the process's peak after start-up; at 10k nodes, which stay under that "
                 "peak, by sampling the resident set in a separate run, as for peak MB above.)")
    scale_ratio = big["us_per_node"] / small["us_per_node"]
    lines.append(f"\nTime per node at {big['nodes']} / at {small['nodes']}: {scale_ratio:.2f}x")

    progress("onnxruntime run time: exported vs hand-written models")
    lines.append("\n### onnxruntime run time (1 thread, median of 21 interleaved rounds)\n")
    lines.append("| graph | graphdsl model | onnx.helper model | ratio | nodes (ours / helper) |")
    lines.append("|---|---:|---:|---:|---|")
    rng = np.random.default_rng(0)
    feeds: dict[tuple[str, int], dict[str, np.ndarray]] = {
        ("chain", 2000): {"x": rng.standard_normal(1024).astype(np.float32),
                          "n": rng.integers(-5, 5, 1024).astype(np.int16)},
        ("mlp", sizes["mlp"][0]): {"x": rng.standard_normal((64, WIDTH)).astype(np.float32)},
        ("wide", sizes["wide"][0]): {"x": rng.standard_normal(16).astype(np.float32),
                                     "k": rng.integers(-5, 5, 16).astype(np.int32)},
    }  # fmt: skip
    ort_rows: list[tuple[float, int, int]] = []
    for key, fd in feeds.items():
        row = results[key]
        a, b = ort_times([row["graphdsl"]["model"], row["onnx.helper"]["model"]], fd, 20)
        ort_rows.append((a / b, row["graphdsl"]["nodes"], row["onnx.helper"]["nodes"]))
        lines.append(f"| {key[0]}({key[1]}) | {a * 1e3:.3f} ms | {b * 1e3:.3f} ms | {a / b:.3f} | "
                     f"{row['graphdsl']['nodes']} / {row['onnx.helper']['nodes']} |")  # fmt: skip

    progress("run() overhead on a tiny model")
    with tempfile.TemporaryDirectory() as folder:
        ov = run_overhead(2000, folder)
    lines.append("\n### run() overhead per call (tiny model, median of 7)\n")
    lines.append(f"InferenceSession.run: {ov['direct']:.1f} µs; run(graph): {ov['graph']:.1f} µs "
                 f"({ov['graph'] / ov['direct']:.2f}x); run(path): {ov['path']:.1f} µs "
                 f"({ov['path'] / ov['direct']:.2f}x: one stat of the file per call, so that a "
                 f"file written again is never served stale); run(ModelProto): "
                 f"{ov['proto']:.1f} µs ({ov['proto'] / ov['direct']:.2f}x: the proto is "
                 "compared with its session's at every call, so that one changed in place is "
                 "never served stale)")  # fmt: skip
    run_ratio = ov["graph"] / ov["direct"]

    chain = results["chain", max(sizes["chain"])]
    chain_ratio = chain["graphdsl"]["s"] / chain["onnx.helper"]["s"]
    ort_ratios = ort_rows
    targets = [
        (f"chain({max(sizes['chain'])}): graphdsl within 3x of onnx.helper",
         f"{chain_ratio:.2f}x", chain_ratio <= 3),
        ("time per node at 1M nodes within 1.5x of 10k", f"{scale_ratio:.2f}x",
         scale_ratio <= 1.5),
        ("under 2 KB per node at 1M nodes (default export)",
         f"{big['bytes_per_node']:.0f} B", big["bytes_per_node"] < 2048),
        ("onnxruntime time within 5% of the hand-written model, no more nodes",
         ", ".join(f"{a:.3f} ({n} / {m} nodes)" for a, n, m in ort_ratios),
         all(a <= 1.05 and n <= m for a, n, m in ort_ratios)),
        ("run(graph) per call within 1.2x of InferenceSession.run (path and proto above)",
         f"{run_ratio:.2f}x", run_ratio <= 1.2),
    ]  # fmt: skip
    lines.append("\n### Targets (issue 6)\n")
    lines.append("| target | measured | met |")
    lines.append("|---|---|---|")
    for what, got, ok in targets:
        lines.append(f"| {what} | {got} | {'yes' if ok else 'NO'} |")

    header = (f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}; onnx {onnx.__version__}, onnxruntime "
              f"{ort.__version__}, numpy {np.__version__}; {datetime.date.today()}.\n")  # fmt: skip
    report = header + "\n" + "\n".join(lines) + "\n"
    print(report)
    inference_section(q)
    if not q:
        readme = os.path.join(HERE, "README.md")
        with open(readme) as f:
            text = f.read()
        start, end = "<!-- results:start -->", "<!-- results:end -->"
        text = re.sub(f"{start}.*{end}", f"{start}\n{report}{end}", text, flags=re.S)
        with open(readme, "w") as f:
            f.write(text)
        progress(f"updated {readme}")
    return 0


def inference_section(q: bool) -> int:
    """benchmarks/inference.py's tables (issue 18): printed, and written between the
    README's inference markers unless ``q``."""
    import inference

    lines, _ = inference.main(q, progress)
    header = (f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
              f"{platform.python_version()}; onnx {onnx.__version__}, onnxruntime "
              f"{ort.__version__}, torch {_torch_version()}, numpy {np.__version__}; "
              f"{datetime.date.today()}.\n")  # fmt: skip
    report = header + "\n" + "\n".join(lines) + "\n"
    print(report)
    if not q:
        readme = os.path.join(HERE, "README.md")
        with open(readme) as f:
            text = f.read()
        start, end = "<!-- inference:start -->", "<!-- inference:end -->"
        text = re.sub(f"{start}.*{end}", f"{start}\n{report}{end}", text, flags=re.S)
        with open(readme, "w") as f:
            f.write(text)
        progress(f"updated {readme}")
    return 0


def _torch_version() -> str:
    try:
        import torch
    except ImportError:
        return "not installed"
    return str(torch.__version__)


if __name__ == "__main__":
    sys.exit(main())
