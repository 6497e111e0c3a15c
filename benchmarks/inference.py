"""Inference speed of the example models (issue 18), side by side in one process.

For each example model (MLP, GPT-2 block, Llama block, CNN, int8 MLP) and its float32 /
bfloat16 / float16 variants, the median seconds per call (3 passes over every model, each
pass 11 rounds in which the ways of running one model take turns), all sessions on 1 thread
(the machine's 2 cores are shared; the passes, medians and turns are there for the same
reason):

- ``run()``: ``exporters.onnx.run`` of the graph (its session options: ORT_ENABLE_ALL less
  the optimizers that change results, docs/semantics.md);
- ``plain``: ``onnxruntime.InferenceSession`` of the same exported model with default
  options (every optimizer): its largest difference from ``gd.evaluate`` is reported beside;
- ``hand``: the same model written by hand with ``onnx.helper`` (benchmarks/handwritten.py
  for the blocks; here for the MLPs and the CNN), float32 models only;
- ``torch``: ``torch.onnx.export`` of benchmarks/torch_models.py's module (the ``bench``
  extra; n/a with the reason where it does not export or load);

``hand`` and ``torch`` run with run()'s options (``exporters.onnx.inference_session``); the
exported model is timed the same way (``ours``), so that ``ours / hand`` and
``ours / torch`` compare models and ``run() / plain`` compares options (and run()'s own
per-call checks). Then session start: a GPT-2-sized block's first ``run()`` against
``InferenceSession(path)``, in fresh processes.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import exporters.onnx._run as run_module
import graphdsl as gd
from exporters.onnx import export, inference_session, run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "examples"), str(HERE)]

import handwritten  # noqa: E402

# the examples (examples/ is not a package): their build functions and configs
cnn = importlib.import_module("cnn")
gpt2_block = importlib.import_module("gpt2_block")
llama_block = importlib.import_module("llama_block")
mlp_bf16 = importlib.import_module("mlp_bf16")

VARIANTS = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


@dataclass
class Case:
    """One model: its graph, inputs, and the hand-written and PyTorch versions if any."""

    name: str
    graph: gd.Graph
    feeds: dict[str, np.ndarray]
    hand: onnx.ModelProto | None = None
    torch: Callable[[], onnx.ModelProto] | None = None
    note: str = ""
    row: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """run()'s sessions (and inference_session's) on 1 thread while timing."""
    saved = run_module.session_options

    def options(opts: run_module.Options | None = None) -> ort.SessionOptions:
        so = saved(opts)
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        return so

    run_module.session_options = options
    try:
        yield
    finally:
        run_module.session_options = saved


def plain_session(model: onnx.ModelProto) -> Any:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def interleaved(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each function; the functions take turns, in alternating
    order, ``rounds`` times, each turn calling as many times as fill about 20 ms."""
    reps: dict[str, int] = {}
    for name, fn in fns.items():
        fn()
        t0 = time.perf_counter()
        fn()
        reps[name] = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-6)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            fn, n = fns[name], reps[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def deviation(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """Largest |got - want| over each output's largest |want| (NaN positions must agree)."""
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            return float("inf")
        scale = max(float(np.nanmax(np.abs(w64))) if w64.size else 0.0, 1e-30)
        if g64.size:
            worst = max(worst, float(np.nanmax(np.abs(g64 - w64))) / scale)
    return worst


# ---------------------------------------------------------------------------- hand-written


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
           inputs: list[onnx.ValueInfoProto], outputs: list[str]) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(nodes, "hand", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outputs], initializer=inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def mlp_hand(layers: list[tuple[np.ndarray, np.ndarray]], width: int) -> onnx.ModelProto:
    """MatMul, Add, Relu per layer, Softmax; float32 weights."""
    nodes, inits, h = [], [], "x"
    for k, (w, b) in enumerate(layers):
        inits += [numpy_helper.from_array(np.asarray(w, np.float32), f"w{k}"),
                  numpy_helper.from_array(np.asarray(b, np.float32), f"b{k}")]  # fmt: skip
        nodes += [helper.make_node("MatMul", [h, f"w{k}"], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"])]  # fmt: skip
        h = f"a{k}"
        if k < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [h], [f"r{k}"]))
            h = f"r{k}"
    nodes += [helper.make_node("Identity", [h], ["logits"]),
              helper.make_node("Softmax", [h], ["probs"], axis=-1)]  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])
    return _model(nodes, inits, [x], ["logits", "probs"])


def int8_hand(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> onnx.ModelProto:
    """DequantizeLinear (per column) + MatMul + Add per layer, Relu between."""
    nodes, inits, h = [], [], "x"
    for k, (q, scale, b) in enumerate(layers):
        inits += [numpy_helper.from_array(q, f"q{k}"), numpy_helper.from_array(scale, f"s{k}"),
                  numpy_helper.from_array(b, f"b{k}")]  # fmt: skip
        nodes += [helper.make_node("DequantizeLinear", [f"q{k}", f"s{k}"], [f"w{k}"], axis=1),
                  helper.make_node("MatMul", [h, f"w{k}"], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"])]  # fmt: skip
        h = f"a{k}"
        if k < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [h], [f"r{k}"]))
            h = f"r{k}"
    nodes.append(helper.make_node("Identity", [h], ["y"]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", layers[0][0].shape[0]])
    return _model(nodes, inits, [x], ["y"])


def cnn_hand(w: dict[str, np.ndarray], cfg: Any) -> onnx.ModelProto:
    """NCHW: Conv (batch norm folded, with bias), MaxPool, Relu, a residual block,
    GlobalAveragePool, Flatten, MatMul, Add."""
    nodes, inits = [], []
    for name in ("stem", "block1", "block2"):
        f, b = cnn.fold_batch_norm(w, name, cfg.bn_epsilon)
        oihw = np.ascontiguousarray(f.transpose(3, 2, 0, 1))
        inits += [numpy_helper.from_array(oihw, f"{name}_w"),
                  numpy_helper.from_array(b, f"{name}_b")]  # fmt: skip
    inits += [numpy_helper.from_array(w["dense.weight"], "dw"),
              numpy_helper.from_array(w["dense.bias"], "db")]  # fmt: skip
    pads = [1, 1, 1, 1]
    nodes += [
        helper.make_node("Conv", ["images", "stem_w", "stem_b"], ["c0"], pads=pads),
        helper.make_node("MaxPool", ["c0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=pads),
        helper.make_node("Relu", ["p0"], ["h0"]),
        helper.make_node("Conv", ["h0", "block1_w", "block1_b"], ["c1"], pads=pads),
        helper.make_node("Relu", ["c1"], ["h1"]),
        helper.make_node("Conv", ["h1", "block2_w", "block2_b"], ["c2"], pads=pads),
        helper.make_node("Add", ["c2", "h0"], ["s2"]),
        helper.make_node("Relu", ["s2"], ["h2"]),
        helper.make_node("GlobalAveragePool", ["h2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "dw"], ["m"]),
        helper.make_node("Add", ["m", "db"], ["logits"]),
    ]  # fmt: skip
    x = helper.make_tensor_value_info(
        "images", TensorProto.FLOAT, ["batch", cfg.channels, cfg.image, cfg.image]
    )
    return _model(nodes, inits, [x], ["logits"])


# ---------------------------------------------------------------------------- the models


def _torch(factory: Callable[[], Any], feeds: dict[str, np.ndarray],
           dynamic: dict[str, dict[int, str]]) -> Callable[[], onnx.ModelProto]:  # fmt: skip
    def make() -> onnx.ModelProto:
        import torch
        import torch_models

        example = tuple(torch.from_numpy(v) for v in feeds.values())
        return torch_models.export_onnx(factory(), example, list(feeds), dynamic)

    return make


def _torch_dtype(variant: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[variant]


def cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    out: list[Case] = []
    seq = 16 if quick else 64

    # MLP (examples/mlp_bf16.py's build: float32 activations, weights in the variant's dtype)
    sizes = (mlp_bf16.SIZES[0], 256, 256, 10) if quick else (mlp_bf16.SIZES[0], 1024, 1024, 10)
    f32 = [((rng.standard_normal((a, b)) * a**-0.5).astype(np.float32),
            (rng.standard_normal(b) * 0.1).astype(np.float32))
           for a, b in itertools.pairwise(sizes)]  # fmt: skip
    x = rng.standard_normal((64, sizes[0])).astype(np.float32)
    for variant, dt in VARIANTS.items():
        layers = [(w.astype(dt), b.astype(dt)) for w, b in f32]
        rounded = [(w.astype(np.float32), b.astype(np.float32)) for w, b in layers]
        out.append(Case(
            f"mlp {variant} weights", mlp_bf16.build(layers), {"x": x},
            hand=mlp_hand(rounded, sizes[0]),
            torch=_torch(partial(_mlp, rounded), {"x": x}, {"x": {0: "batch"}}),
        ))  # fmt: skip

    # GPT-2 block: GPT-2 small's sizes; the variants store and compute in that dtype (the
    # example's float32 -inf mask makes the attention scores float32)
    gcfg = gpt2_block.Config() if quick else gpt2_block.Config(50257, 1024, 768, 12)
    gw = gpt2_block.random_weights(gcfg)
    ids = rng.integers(0, gcfg.vocab, (1, seq))
    for variant, dt in VARIANTS.items():
        w = {k: v.astype(dt) for k, v in gw.items()}
        hand = handwritten.gpt2_block_model(gw, gcfg) if variant == "float32" else None
        out.append(Case(
            f"gpt2 block {variant}", gpt2_block.build(w, gcfg), {"ids": ids}, hand=hand,
            torch=_torch(partial(_gpt2, w, gcfg, variant), {"ids": ids},
                         {"ids": {0: "batch", 1: "seq"}}),
        ))  # fmt: skip

    # Llama block: float32 activations (the example's input type), weights in the variant
    lcfg = llama_block.Config() if quick else llama_block.Config(512, 8, 4, 64, 1376)
    lw = llama_block.random_weights(lcfg)
    xl = rng.standard_normal((1, seq, lcfg.d_model)).astype(np.float32)
    for variant, dt in VARIANTS.items():
        w = {k: v.astype(dt) for k, v in lw.items()}
        widened = {k: v.astype(np.float32) for k, v in w.items()}
        out.append(Case(
            f"llama block {variant} weights", llama_block.build(w, lcfg), {"x": xl},
            hand=handwritten.llama_block_model(widened, lcfg),
            torch=_torch(partial(_llama, widened, lcfg), {"x": xl},
                         {"x": {0: "batch", 1: "seq"}}),
        ))  # fmt: skip

    # CNN, both layouts (PyTorch's module and the hand-written model are channels first)
    ccfg = cnn.Config()
    cw = cnn.init_weights(ccfg)
    images = rng.standard_normal((8, ccfg.image, ccfg.image, ccfg.channels)).astype(np.float32)
    nchw = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    out.append(Case("cnn NHWC float32", cnn.build(cw, ccfg, "NHWC"), {"images": images},
                    note="hand and torch: NCHW"))  # fmt: skip
    out[-1].hand = cnn_hand(cw, ccfg)
    out[-1].row["hand_feeds"] = {"images": nchw}
    out.append(Case(
        "cnn NCHW float32", cnn.build(cw, ccfg, "NCHW"), {"images": nchw},
        hand=cnn_hand(cw, ccfg),
        torch=_torch(partial(_cnn, cw, ccfg), {"images": nchw}, {"images": {0: "batch"}}),
    ))  # fmt: skip
    out[-2].torch = out[-1].torch

    # int8 MLP (examples/int8_mlp.py)
    try:
        int8_mlp = importlib.import_module("int8_mlp")
    except ImportError:  # the example is not there
        return out
    layers8 = int8_mlp.quantize_weights(int8_mlp.float_weights(rng))
    x8 = rng.standard_normal((64, int8_mlp.SIZES[0])).astype(np.float32)
    out.append(Case(
        "int8 mlp", int8_mlp.build(layers8), {"x": x8}, hand=int8_hand(layers8),
        torch=_torch(partial(_int8, layers8), {"x": x8}, {"x": {0: "batch"}}),
    ))  # fmt: skip
    return out


def _mlp(layers: list[tuple[np.ndarray, np.ndarray]]) -> Any:
    import torch
    import torch_models

    return torch_models.MLP(layers, torch.float32)


def _gpt2(w: dict[str, np.ndarray], cfg: Any, variant: str) -> Any:
    import torch_models

    return torch_models.GPT2Block(w, cfg.n_head, cfg.eps, _torch_dtype(variant))


def _llama(w: dict[str, np.ndarray], cfg: Any) -> Any:
    import torch
    import torch_models

    return torch_models.LlamaBlock(w, cfg, torch.float32)


def _cnn(w: dict[str, np.ndarray], cfg: Any) -> Any:
    import torch
    import torch_models

    return torch_models.CNN(w, cfg.bn_epsilon, torch.float32)


def _int8(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Any:
    import torch_models

    return torch_models.Int8MLP(layers)


# ---------------------------------------------------------------------------- measuring


def prepare(
    case: Case, log: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, Callable[[], object]]]:
    """Node counts and deviations of one case, and the calls to time (see the module doc)."""
    row: dict[str, Any] = {"name": case.name, "note": case.note}
    g, feeds = case.graph, case.feeds
    model = export(g)
    want = gd.evaluate(g, feeds)
    row["nodes"] = len(model.graph.node)
    inits = {t.name for t in model.graph.initializer}
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    row["casts"] = len(casts)
    row["constant_casts"] = sum(n.input[0] in inits for n in casts)  # folded at load
    plain = plain_session(model)
    row["plain_dev"] = deviation(plain.run(None, feeds), want)
    hand_feeds = case.row.get("hand_feeds", feeds)
    fns: dict[str, Callable[[], object]] = {}
    with one_thread():
        fns["run()"] = lambda: run(g, feeds)
        row["run_dev"] = deviation(run(g, feeds), want)
        ours = inference_session(model)
        fns["ours"] = lambda: ours.run(None, feeds)
        fns["plain"] = lambda: plain.run(None, feeds)
        loose = export(g, exact=False)  # without the zero-sign and NaN-payload repairs
        if loose.graph != model.graph:
            row["loose_nodes"] = len(loose.graph.node)
            loose_sess = inference_session(loose)
            fns["exact=False"] = lambda: loose_sess.run(None, feeds)
        if case.hand is not None:
            hand = inference_session(case.hand)
            row["hand_nodes"] = len(case.hand.graph.node)
            row["hand_dev"] = deviation(hand.run(None, hand_feeds), want)
            fns["hand"] = lambda: hand.run(None, hand_feeds)
        if case.torch is not None:
            try:
                log(f"{case.name}: torch.onnx.export")
                tmodel = case.torch()
                tsess = inference_session(tmodel)
                tfeeds = hand_feeds if case.note else feeds
                row["torch_dev"] = deviation(tsess.run(None, tfeeds), want)
                row["torch_nodes"] = len(tmodel.graph.node)
                fns["torch"] = lambda: tsess.run(None, tfeeds)
            except Exception as e:  # a module that does not export, or a model that cannot load
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                row["torch_error"] = f"{type(e).__name__}: {first[:90]}"
        for fn in fns.values():  # every session made (and warm) inside one_thread()
            fn()
    return row, fns


_START = """
import json, os, sys, tempfile, time
sys.path[:0] = [{examples!r}]
import numpy as np, onnxruntime as ort
import gpt2_block as gb
from exporters.onnx import export, run
cfg = gb.Config(50257, 1024, 768, 12)
w = gb.random_weights(cfg)
ids = np.random.default_rng(0).integers(0, cfg.vocab, (1, 64))
folder = tempfile.mkdtemp()
path = os.path.join(folder, "gpt2.onnx")
export(gb.build(w, cfg), path)
out = {{}}
def t(name, fn):
    t0 = time.perf_counter(); fn(); out[name] = time.perf_counter() - t0
steps = [("plain", lambda: ort.InferenceSession(path, providers=["CPUExecutionProvider"])),
         ("run_path", lambda: run(path, {{"ids": ids}}))]
for name, fn in (steps if {order} == 0 else steps[::-1]):
    t(name, fn)
g = gb.build(w, cfg)
t("run_graph", lambda: run(g, {{"ids": ids}}))  # export, session, first call
g2 = gb.build(w, cfg)
path2 = os.path.join(folder, "gpt2b.onnx")
t("export_path_run", lambda: run(export(g2, path2), {{"ids": ids}}))
print(json.dumps(out))
"""


def session_start(processes: int) -> dict[str, float]:
    """Medians over fresh processes (the two orders alternating) of: InferenceSession(path),
    the first run(path) (session and first call), the first run(graph) (export, session,
    call) and export(graph, path) then run() of the proto it returns."""
    samples: dict[str, list[float]] = {}
    for k in range(processes):
        code = _START.format(examples=str(ROOT / "examples"), order=k % 2)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, cwd=str(ROOT))  # fmt: skip
        for name, s in json.loads(proc.stdout.strip().splitlines()[-1]).items():
            samples.setdefault(name, []).append(s)
    return {name: statistics.median(s) for name, s in samples.items()}


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f}"


def report(rows: list[dict[str, Any]], start: dict[str, float] | None) -> list[str]:
    lines = ["### Inference: run() against a plain session, hand-written ONNX and "
             "torch.onnx.export (issue 18)\n",
             "ms per call, 1 thread each: the median of 3 passes over every model, each pass the "
             "median of 11 interleaved rounds. `ours`: the exported "
             "model in a session with run()'s options; `hand` and `torch` with the same "
             "options. Casts of constants are folded by onnxruntime at load. "
             "Deviation: largest |difference from gd.evaluate| over the output's "
             "largest magnitude.\n",
             "| model | run() | plain | ours | hand | torch | run() / plain | ours / hand | "
             "ours / torch | nodes (ours / hand / torch) | Casts (of constants) | "
             "plain's deviation | "
             "ours, exact=False (nodes) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]  # fmt: skip
    for r in rows:
        t = r["times"]
        hand = _ms(t["hand"]) if "hand" in t else "n/a"
        torch = _ms(t["torch"]) if "torch" in t else "n/a"
        vs_hand = f"{t['ours'] / t['hand']:.3f}" if "hand" in t else "n/a"
        vs_torch = f"{t['ours'] / t['torch']:.3f}" if "torch" in t else "n/a"
        nodes = f"{r['nodes']} / {r.get('hand_nodes', '-')} / {r.get('torch_nodes', '-')}"
        name = r["name"] + (f" ({r['note']})" if r["note"] else "")
        loose = (f"{_ms(t['exact=False'])} ({r['loose_nodes']})" if "exact=False" in t
                 else "same model")  # fmt: skip
        lines.append(f"| {name} | {_ms(t['run()'])} | {_ms(t['plain'])} | {_ms(t['ours'])} | "
                     f"{hand} | {torch} | {t['run()'] / t['plain']:.3f} | {vs_hand} | "
                     f"{vs_torch} | {nodes} | {r['casts']} ({r['constant_casts']}) | "
                     f"{r['plain_dev']:.2g} | {loose} |")  # fmt: skip
    lines += targets(rows, start)
    errors = [(r["name"], r["torch_error"]) for r in rows if "torch_error" in r]
    if errors:
        lines.append("\ntorch n/a: " + "; ".join(f"{n}: {e}" for n, e in errors))
    if start is not None:
        lines.append("\n### Session start (GPT-2 small's sizes, 186 MB of float32 weights; "
                     "medians of fresh processes)\n")  # fmt: skip
        lines.append(f"InferenceSession(path): {_ms(start['plain'])} ms; first run(path): "
                     f"{_ms(start['run_path'])} ms ({start['run_path'] / start['plain']:.2f}x); "
                     f"first run(graph), export included: {_ms(start['run_graph'])} ms; "
                     f"export(graph, path) then run(): "
                     f"{_ms(start['export_path_run'])} ms")  # fmt: skip
    return lines


def targets(rows: list[dict[str, Any]], start: dict[str, float] | None) -> list[str]:
    """Issue 18's targets, each measured above: met or not, with the ratios."""

    def worst(key: Callable[[dict[str, float]], float | None]) -> tuple[float, str]:
        found = [(v, r["name"]) for r in rows if (v := key(r["times"])) is not None]
        return max(found) if found else (float("nan"), "")

    def ratio(a: str, b: str) -> Callable[[dict[str, float]], float | None]:
        return lambda t: t[a] / t[b] if a in t and b in t else None

    out = ["\n### Targets (issue 18)\n", "| target | measured | met |", "|---|---|---|"]
    for what, (value, name) in [
        ("run() within 5% of a plain default session (the worst model)",
         worst(ratio("run()", "plain"))),
        ("exported model no slower than hand-written (<= 1.05, the worst model)",
         worst(ratio("ours", "hand"))),
        ("exported model no slower than torch.onnx.export (<= 1.05, the worst model)",
         worst(ratio("ours", "torch"))),
    ]:  # fmt: skip
        out.append(f"| {what} | {value:.3f} ({name}) | {'yes' if value <= 1.05 else 'NO'} |")
    if start is not None:
        first = start["run_path"] / start["plain"]
        out.append(f"| first run(path) within 1.2x of InferenceSession(path) | {first:.2f}x | "
                   f"{'yes' if first <= 1.2 else 'NO'} |")  # fmt: skip
        both = start["run_graph"]
        out.append(f"| GPT-2 block exported and started (run(graph)) under 1 s | "
                   f"{both:.2f} s | {'yes' if both < 1 else 'NO'} |")  # fmt: skip
    return out


def main(quick: bool, log: Callable[[str], None]) -> tuple[list[str], dict[str, Any]]:
    """Every case prepared, then timed in ``passes`` passes over all of them (so that each
    model's samples spread over the whole run, not one moment of the shared machine's
    load), each pass ``rounds`` interleaved rounds; a time is the median of the passes'
    medians."""
    prepared = []
    for case in cases(quick):
        log(f"inference: {case.name}")
        prepared.append(prepare(case, log))
    passes, rounds = (2, 5) if quick else (3, 11)
    samples: list[dict[str, list[float]]] = [{} for _ in prepared]
    for k in range(passes):
        for (row, fns), times in zip(prepared, samples, strict=True):
            log(f"pass {k + 1}/{passes}: timing {row['name']}: {', '.join(fns)}")
            gc.collect()
            for name, t in interleaved(fns, rounds).items():
                times.setdefault(name, []).append(t)
    rows = []
    for (row, _), times in zip(prepared, samples, strict=True):
        row["times"] = {name: statistics.median(ts) for name, ts in times.items()}
        rows.append(row)
    log("inference: session start in fresh processes")
    start = session_start(3 if quick else 5)
    return report(rows, start), {"rows": rows, "start": start}


if __name__ == "__main__":
    quick = "--quick" in sys.argv

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    print("\n".join(main(quick, log)[0]))
