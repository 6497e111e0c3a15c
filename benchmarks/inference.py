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
per-call checks); ``exact=False`` is the model exported with ``exact=False``, beside the
same two. Then session start: a GPT-2-sized block's first ``run()`` against
``InferenceSession(path)``, in fresh processes.

``--provider cuda`` (onnxruntime-gpu and a GPU; elsewhere it says CUDA is unavailable and
exits with status 2) runs every session on the CUDA provider (the CPU provider behind it,
TF32 off), exports for ``target="cuda"``, and adds, per model: the nodes each model runs on
the CPU provider (``exporters.onnx.cpu_nodes``: the kernel tables' placement), the exported
model with its inputs and outputs on the GPU (``exporters.onnx.Session`` with OrtValues:
``device``) and PyTorch eager on the GPU (``eager``: benchmarks/torch_models.py's module
moved with ``.to("cuda")``, CUDA tensors in and out, synchronized), and the bfloat16 GPT-2
block at batch 8, sequence 1024 and GPT-2 medium's width (1024, 16 heads), all in bfloat16
and exported with ``exact=False`` (half MatMuls), against PyTorch eager bfloat16.
``--eager`` adds the eager column on the CPU too; ``--only TEXT`` times the models whose
name holds TEXT; ``--no-start`` leaves out the session-start processes.
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

from exporters.onnx import Session, cpu_nodes  # noqa: E402

# the examples (examples/ is not a package): their build functions and configs
cnn = importlib.import_module("cnn")
gpt2_block = importlib.import_module("gpt2_block")
llama_block = importlib.import_module("llama_block")
mlp_bf16 = importlib.import_module("mlp_bf16")

VARIANTS = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
PROVIDERS = {"cpu": ["CPUExecutionProvider"],
             "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}  # fmt: skip


@dataclass(frozen=True)
class Setup:
    """Where the models run: ``provider`` ("cpu" or "cuda", the export target too), with
    PyTorch eager (``eager``) and the large bfloat16 GPT-2 block (``half_block``)."""

    provider: str = "cpu"
    eager: bool = False
    half_block: bool = False
    only: str = ""

    @property
    def providers(self) -> list[str]:
        return PROVIDERS[self.provider]


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
    # PyTorch eager: the module (made on the CPU) and the dtype its float inputs take
    module: Callable[[], Any] | None = None
    exact: bool = True  # False: only the exact=False export (the large half block)


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


def plain_session(model: onnx.ModelProto, providers: list[str]) -> Any:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=providers)


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


def cases(quick: bool, setup: Setup = Setup()) -> list[Case]:
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
        make = partial(_mlp, rounded)
        out.append(Case(
            f"mlp {variant} weights", mlp_bf16.build(layers), {"x": x},
            hand=mlp_hand(rounded, sizes[0]),
            torch=_torch(make, {"x": x}, {"x": {0: "batch"}}), module=make,
        ))  # fmt: skip

    # GPT-2 block: GPT-2 small's sizes; the variants store and compute in that dtype (the
    # example's float32 -inf mask makes the attention scores float32)
    gcfg = gpt2_block.Config() if quick else gpt2_block.Config(50257, 1024, 768, 12)
    gw = gpt2_block.random_weights(gcfg)
    ids = rng.integers(0, gcfg.vocab, (1, seq))
    for variant, dt in VARIANTS.items():
        w = {k: v.astype(dt) for k, v in gw.items()}
        hand = handwritten.gpt2_block_model(gw, gcfg) if variant == "float32" else None
        make = partial(_gpt2, w, gcfg, variant)
        out.append(Case(
            f"gpt2 block {variant}", gpt2_block.build(w, gcfg), {"ids": ids}, hand=hand,
            torch=_torch(make, {"ids": ids}, {"ids": {0: "batch", 1: "seq"}}), module=make,
        ))  # fmt: skip

    # Llama block: float32 activations (the example's input type), weights in the variant
    lcfg = llama_block.Config() if quick else llama_block.Config(512, 8, 4, 64, 1376)
    lw = llama_block.random_weights(lcfg)
    xl = rng.standard_normal((1, seq, lcfg.d_model)).astype(np.float32)
    for variant, dt in VARIANTS.items():
        w = {k: v.astype(dt) for k, v in lw.items()}
        widened = {k: v.astype(np.float32) for k, v in w.items()}
        make = partial(_llama, widened, lcfg)
        out.append(Case(
            f"llama block {variant} weights", llama_block.build(w, lcfg), {"x": xl},
            hand=handwritten.llama_block_model(widened, lcfg),
            torch=_torch(make, {"x": xl}, {"x": {0: "batch", 1: "seq"}}), module=make,
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
    make_cnn = partial(_cnn, cw, ccfg)
    out.append(Case(
        "cnn NCHW float32", cnn.build(cw, ccfg, "NCHW"), {"images": nchw},
        hand=cnn_hand(cw, ccfg),
        torch=_torch(make_cnn, {"images": nchw}, {"images": {0: "batch"}}), module=make_cnn,
    ))  # fmt: skip
    out[-2].torch, out[-2].module = out[-1].torch, make_cnn

    # int8 MLP (examples/int8_mlp.py)
    try:
        int8_mlp = importlib.import_module("int8_mlp")
    except ImportError:  # the example is not there
        return _chosen(out, setup)
    layers8 = int8_mlp.quantize_weights(int8_mlp.float_weights(rng))
    x8 = rng.standard_normal((64, int8_mlp.SIZES[0])).astype(np.float32)
    make8 = partial(_int8, layers8)
    out.append(Case(
        "int8 mlp", int8_mlp.build(layers8), {"x": x8}, hand=int8_hand(layers8),
        torch=_torch(make8, {"x": x8}, {"x": {0: "batch"}}), module=make8,
    ))  # fmt: skip

    if setup.half_block:  # issue 24: bfloat16 throughout, half MatMuls, against eager
        hcfg = gpt2_block.Config(50257, 1024, 1024, 16)  # GPT-2 medium's width
        batch, length = (2, 64) if quick else (8, 1024)
        hw = {k: v.astype(ml_dtypes.bfloat16) for k, v in gpt2_block.random_weights(hcfg).items()}
        hids = rng.integers(0, hcfg.vocab, (batch, length))
        out.append(Case(
            f"gpt2 block bfloat16 (width 1024, batch {batch}, seq {length}, exact=False)",
            gpt2_block.build(hw, hcfg, ml_dtypes.bfloat16), {"ids": hids},
            module=partial(_gpt2, hw, hcfg, "bfloat16"), exact=False,
        ))  # fmt: skip
    return _chosen(out, setup)


def _chosen(out: list[Case], setup: Setup) -> list[Case]:
    return [c for c in out if setup.only in c.name]


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
    case: Case, log: Callable[[str], None], setup: Setup = Setup()
) -> tuple[dict[str, Any], dict[str, Callable[[], object]]]:
    """Node counts and deviations of one case, and the calls to time (see the module doc)."""
    row: dict[str, Any] = {"name": case.name, "note": case.note}
    g, feeds = case.graph, case.feeds
    providers, cuda = setup.providers, setup.provider == "cuda"
    model = export(g, target=setup.provider, exact=case.exact)
    row["nodes"] = len(model.graph.node)
    inits = {t.name for t in model.graph.initializer}
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    row["casts"] = len(casts)
    row["constant_casts"] = sum(n.input[0] in inits for n in casts)  # folded at load
    if cuda:
        row["cpu_nodes"] = {"ours": _on_cpu(model)}
    hand_feeds = case.row.get("hand_feeds", feeds)
    fns: dict[str, Callable[[], object]] = {}
    want: list[np.ndarray] = []  # the reference's outputs (exact cases: every other one)
    with one_thread():
        ours = inference_session(model, providers)
        fns["ours"] = lambda: ours.run(None, feeds)
        if case.exact:  # (the large half block: its reference would take minutes)
            want = gd.evaluate(g, feeds)
            plain = plain_session(model, providers)
            row["plain_dev"] = deviation(plain.run(None, feeds), want)
            fns["run()"] = lambda: run(g, feeds, providers=providers)
            row["run_dev"] = deviation(run(g, feeds, providers=providers), want)
            fns["plain"] = lambda: plain.run(None, feeds)
            # without the zero-sign, NaN-payload and NaN-pooling repairs (half MatMuls on CUDA)
            loose = export(g, target=setup.provider, exact=False)
            if loose.graph != model.graph:
                row["loose_nodes"] = len(loose.graph.node)
                loose_sess = inference_session(loose, providers)
                fns["exact=False"] = lambda: loose_sess.run(None, feeds)
        if cuda:  # inputs and outputs left on the GPU
            bound = Session(model, providers)
            on_device = {k: bound.ortvalue(v) for k, v in feeds.items()}
            fns["device"] = lambda: bound.run_with_ortvalues(on_device)
        if case.hand is not None:
            hand = inference_session(case.hand, providers)
            row["hand_nodes"] = len(case.hand.graph.node)
            row["hand_dev"] = deviation(hand.run(None, hand_feeds), want)
            fns["hand"] = lambda: hand.run(None, hand_feeds)
            if cuda:
                row["cpu_nodes"]["hand"] = _on_cpu(case.hand)
        tfeeds = hand_feeds if case.note else feeds
        if case.torch is not None:
            try:
                log(f"{case.name}: torch.onnx.export")
                tmodel = case.torch()
                tsess = inference_session(tmodel, providers)
                row["torch_dev"] = deviation(tsess.run(None, tfeeds), want)
                row["torch_nodes"] = len(tmodel.graph.node)
                fns["torch"] = lambda: tsess.run(None, tfeeds)
                if cuda:
                    row["cpu_nodes"]["torch"] = _on_cpu(tmodel)
            except Exception as e:  # a module that does not export, or a model that cannot load
                row["torch_error"] = _first_line(e)
        if case.module is not None and (setup.eager or cuda):
            try:
                fns["eager"] = eager(case.module, tfeeds, "cuda" if cuda else "cpu")
            except Exception as e:  # a module PyTorch cannot run on the device
                row["eager_error"] = _first_line(e)
        for fn in fns.values():  # every session made (and warm) inside one_thread()
            fn()
    return row, fns


def _first_line(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first[:90]}"


def _on_cpu(model: onnx.ModelProto) -> int | str:
    """How many of the model's nodes a CUDA session runs on the CPU provider (the kernel
    tables' placement: exporters.onnx.cpu_nodes)."""
    try:
        return len(cpu_nodes(model))
    except Exception as e:  # a model whose types onnx's shape inference cannot follow
        return f"? ({type(e).__name__})"


def eager(factory: Callable[[], Any], feeds: dict[str, np.ndarray],
          device: str) -> Callable[[], object]:  # fmt: skip
    """A call of PyTorch eager on ``device``: the module moved there, the inputs made there
    once, the result waited for (CUDA: synchronized)."""
    import torch

    if device == "cpu":
        torch.set_num_threads(1)  # as the sessions (one_thread)
    module = factory().eval().to(device)
    inputs = [torch.from_numpy(np.ascontiguousarray(v)).to(device) for v in feeds.values()]
    sync = torch.cuda.synchronize if device == "cuda" else None

    def call() -> object:
        with torch.inference_mode():
            out = module(*inputs)
        if sync is not None:
            sync()
        return out

    return call


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


def _ratio(t: dict[str, float], a: str, b: str) -> float | None:
    return t[a] / t[b] if a in t and b in t else None


def _loose(t: dict[str, float]) -> dict[str, float]:
    """``t`` with the exact=False time (the model's own where exact=False changes nothing)."""
    return {**t, "loose": t.get("exact=False", t["ours"])} if "ours" in t else t


def report(rows: list[dict[str, Any]], start: dict[str, float] | None,
           setup: Setup = Setup()) -> list[str]:  # fmt: skip
    cuda = setup.provider == "cuda"
    where = ("CUDA provider (the CPU provider behind it), TF32 off" if cuda else
             "CPU provider, 1 thread each")  # fmt: skip
    lines = [f"### Inference: run() against a plain session, hand-written ONNX and "
             f"torch.onnx.export (issues 18, 24): {setup.provider}\n",
             f"ms per call, {where}: the median of 3 passes over every model, each pass the "
             "median of 11 interleaved rounds. `ours`: the exported "
             "model in a session with run()'s options; `hand` and `torch` with the same "
             "options; `exact=False`: the model exported with exact=False (its ratios to "
             "`hand` and `torch` beside). Casts of constants are folded by onnxruntime at "
             "load. Deviation: largest |difference from gd.evaluate| over the output's "
             "largest magnitude.\n"]  # fmt: skip
    head = ["model", "run()", "plain", "ours", "hand", "torch", "run() / plain", "ours / hand",
            "ours / torch", "exact=False / hand", "exact=False / torch",
            "nodes (ours / hand / torch)", "Casts (of constants)", "plain's deviation",
            "ours, exact=False (nodes)"]  # fmt: skip
    if cuda:
        head += ["CPU-provider nodes (ours / hand / torch)", "device", "eager",
                 "device / eager"]  # fmt: skip
    elif any("eager" in r["times"] for r in rows):
        head += ["eager", "ours / eager"]
    lines += ["| " + " | ".join(head) + " |",
              "|" + "|".join("---" if h in ("model",) or "nodes" in h else "---:"
                             for h in head) + "|"]  # fmt: skip

    def ms(t: dict[str, float], k: str) -> str:
        return _ms(t[k]) if k in t else "n/a"

    def ratio(t: dict[str, float], a: str, b: str) -> str:
        v = _ratio(t, a, b)
        return "n/a" if v is None else f"{v:.3f}"

    for r in rows:
        t = _loose(r["times"])
        nodes = f"{r['nodes']} / {r.get('hand_nodes', '-')} / {r.get('torch_nodes', '-')}"
        name = r["name"] + (f" ({r['note']})" if r["note"] else "")
        loose = (f"{_ms(t['exact=False'])} ({r['loose_nodes']})" if "exact=False" in t
                 else "same model")  # fmt: skip
        dev = f"{r['plain_dev']:.2g}" if "plain_dev" in r else "n/a"
        cells = [name, ms(t, "run()"), ms(t, "plain"), ms(t, "ours"), ms(t, "hand"),
                 ms(t, "torch"), ratio(t, "run()", "plain"), ratio(t, "ours", "hand"),
                 ratio(t, "ours", "torch"), ratio(t, "loose", "hand"),
                 ratio(t, "loose", "torch"), nodes,
                 f"{r['casts']} ({r['constant_casts']})", dev, loose]  # fmt: skip
        if cuda:
            on_cpu = r.get("cpu_nodes", {})
            cells += [" / ".join(str(on_cpu.get(k, "-")) for k in ("ours", "hand", "torch")),
                      ms(t, "device"), ms(t, "eager"), ratio(t, "device", "eager")]  # fmt: skip
        elif "eager" in head:
            cells += [ms(t, "eager"), ratio(t, "ours", "eager")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += targets(rows, start, setup)
    for key, what in (("torch_error", "torch n/a"), ("eager_error", "eager n/a")):
        errors = [(r["name"], r[key]) for r in rows if key in r]
        if errors:
            lines.append(f"\n{what}: " + "; ".join(f"{n}: {e}" for n, e in errors))
    if start is not None:
        lines.append("\n### Session start (GPT-2 small's sizes, 186 MB of float32 weights; "
                     "medians of fresh processes)\n")  # fmt: skip
        lines.append(f"InferenceSession(path): {_ms(start['plain'])} ms; first run(path): "
                     f"{_ms(start['run_path'])} ms ({start['run_path'] / start['plain']:.2f}x); "
                     f"first run(graph), export included: {_ms(start['run_graph'])} ms; "
                     f"export(graph, path) then run(): "
                     f"{_ms(start['export_path_run'])} ms")  # fmt: skip
    return lines


def targets(rows: list[dict[str, Any]], start: dict[str, float] | None,
            setup: Setup = Setup()) -> list[str]:  # fmt: skip
    """Issues 18's and 24's targets, each measured above: met or not, with the ratios."""

    def worst(key: Callable[[dict[str, float]], float | None],
              among: Callable[[str], bool] = lambda name: True) -> tuple[float, str]:  # fmt: skip
        found = [(v, r["name"]) for r in rows
                 if among(r["name"]) and (v := key(_loose(r["times"]))) is not None]  # fmt: skip
        return max(found) if found else (float("nan"), "")

    def ratio(a: str, b: str) -> Callable[[dict[str, float]], float | None]:
        return lambda t: _ratio(t, a, b)

    cnn = lambda name: name.startswith("cnn")  # noqa: E731
    half = lambda name: "exact=False)" in name  # noqa: E731
    checks: list[tuple[str, tuple[float, str], float]] = [
        ("run() within 5% of a plain default session (the worst model)",
         worst(ratio("run()", "plain")), 1.05),
        ("exported model no slower than hand-written (<= 1.05, the worst model)",
         worst(ratio("ours", "hand")), 1.05),
        ("exported model no slower than torch.onnx.export (<= 1.05, the worst model)",
         worst(ratio("ours", "torch")), 1.05),
        ("exact=False no slower than hand-written (<= 1.05, the worst model)",
         worst(ratio("loose", "hand")), 1.05),
        ("exact=False no slower than torch.onnx.export (<= 1.05, the worst model)",
         worst(ratio("loose", "torch")), 1.05),
        ("the CNN, exact=False, against hand-written and torch.onnx (<= 1.05, the worse)",
         max(worst(ratio("loose", "hand"), cnn), worst(ratio("loose", "torch"), cnn)), 1.05),
    ]  # fmt: skip
    if setup.provider == "cuda":
        checks.append(("bfloat16 GPT-2 block (width 1024, batch 8, seq 1024), device tensors, "
                       "within 1.2x of PyTorch eager bfloat16",
                       worst(ratio("device", "eager"), half), 1.2))  # fmt: skip
    out = ["\n### Targets (issues 18, 24)\n", "| target | measured | met |", "|---|---|---|"]
    for what, (value, name), limit in checks:
        if name:
            out.append(f"| {what} | {value:.3f} ({name}) | "
                       f"{'yes' if value <= limit else 'NO'} |")  # fmt: skip
    if setup.provider == "cuda":
        on_cpu = [(r["name"], r["cpu_nodes"].get("ours")) for r in rows if "cpu_nodes" in r]
        listed = [f"{n}: {c}" for n, c in on_cpu if c != 0]
        out.append(f"| no node of an example model on the CPU provider | "
                   f"{'; '.join(listed) or 'none'} | {'NO' if listed else 'yes'} |")  # fmt: skip
    if start is not None:
        first = start["run_path"] / start["plain"]
        out.append(f"| first run(path) within 1.2x of InferenceSession(path) | {first:.2f}x | "
                   f"{'yes' if first <= 1.2 else 'NO'} |")  # fmt: skip
        both = start["run_graph"]
        out.append(f"| GPT-2 block exported and started (run(graph)) under 1 s | "
                   f"{both:.2f} s | {'yes' if both < 1 else 'NO'} |")  # fmt: skip
    return out


def machine(setup: Setup) -> str:
    """The machine and versions, for the report's first line."""
    import os
    import platform

    try:
        import torch

        tv = f"torch {torch.__version__}"
    except ImportError:
        tv = "torch not installed"
    gpu = ""
    if setup.provider == "cuda":
        try:
            import torch

            gpu = f", GPU {torch.cuda.get_device_name(0)}"
        except Exception:
            gpu = ", GPU (name unknown without torch.cuda)"
    return (f"Machine: {platform.machine()}, {os.cpu_count()} cores{gpu}, Python "
            f"{platform.python_version()}; onnx {onnx.__version__}, onnxruntime "
            f"{ort.__version__} ({', '.join(ort.get_available_providers())}), {tv}, numpy "
            f"{np.__version__}; {time.strftime('%Y-%m-%d')}.")  # fmt: skip


def main(quick: bool, log: Callable[[str], None], setup: Setup = Setup(),
         start_processes: bool = True) -> tuple[list[str], dict[str, Any]]:  # fmt: skip
    """Every case prepared, then timed in ``passes`` passes over all of them (so that each
    model's samples spread over the whole run, not one moment of the shared machine's
    load), each pass ``rounds`` interleaved rounds; a time is the median of the passes'
    medians."""
    prepared = []
    for case in cases(quick, setup):
        log(f"inference: {case.name}")
        prepared.append(prepare(case, log, setup))
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
    start = None
    if start_processes:
        log("inference: session start in fresh processes")
        start = session_start(3 if quick else 5)
    return report(rows, start, setup), {"rows": rows, "start": start}


def cli(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="small sizes, fewer rounds")
    p.add_argument("--provider", choices=sorted(PROVIDERS), default="cpu")
    p.add_argument("--eager", action="store_true", help="PyTorch eager too (on with cuda)")
    p.add_argument("--half-block", action="store_true",
                   help="the bfloat16 GPT-2 block of width 1024 (on with cuda)")  # fmt: skip
    p.add_argument("--only", default="", help="only the models whose name holds this")
    p.add_argument("--no-start", action="store_true", help="no session-start processes")
    args = p.parse_args(argv)
    cuda = args.provider == "cuda"
    if cuda and "CUDAExecutionProvider" not in ort.get_available_providers():
        print(f"--provider cuda: onnxruntime has no CUDA provider here (available: "
              f"{ort.get_available_providers()}); install onnxruntime-gpu on a machine with "
              "a GPU (the figures need one)", file=sys.stderr)  # fmt: skip
        return 2
    setup = Setup(args.provider, args.eager or cuda, args.half_block or cuda, args.only)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    lines, _ = main(args.quick, log, setup, start_processes=not args.no_start)
    print(machine(setup) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
