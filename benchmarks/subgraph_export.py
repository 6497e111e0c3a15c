"""A 24-layer transformer built from one layer subgraph: export as ONNX local functions
against inlined, side by side.

    python benchmarks/subgraph_export.py                  # 24 layers, d_model 64
    python benchmarks/subgraph_export.py --d-model 256    # weights 16 times larger

The layer (GPT-2's: layer norm, causal multi-head attention with a fused QKV matmul, a
tanh-GELU MLP, residuals) is one ``g.subgraph``, called once per layer with that layer's
weights (``g.weight``, loaded from a ``.safetensors`` file). Each model is exported to a
path (weights to the external data file) with ``functions=True`` (one local function, 24
calls) and ``functions=False`` (24 copies of the layer's nodes); the script prints the
export time (median of ``--repeat``), the model file's size (the data file is the same
for both), the ONNX node counts, onnxruntime's load and run times, and the largest
difference between the two models' outputs (none: onnxruntime inlines the functions) and
from ``gd.evaluate``. A one-layer model, inlined, gives the floor: "one layer plus 24
calls".
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import onnx

import graphdsl as gd
from exporters.onnx import export, run


@dataclass(frozen=True)
class Config:
    layers: int = 24
    d_model: int = 256
    n_head: int = 4
    eps: float = 1e-5


# a layer's weights: name -> shape (d = d_model), GPT-2's names and [in, out] layouts
def weight_shapes(d: int) -> dict[str, tuple[int, ...]]:
    return {
        "ln_1.weight": (d,), "ln_1.bias": (d,),
        "attn.c_attn.weight": (d, 3 * d), "attn.c_attn.bias": (3 * d,),
        "attn.c_proj.weight": (d, d), "attn.c_proj.bias": (d,),
        "ln_2.weight": (d,), "ln_2.bias": (d,),
        "mlp.c_fc.weight": (d, 4 * d), "mlp.c_fc.bias": (4 * d,),
        "mlp.c_proj.weight": (4 * d, d), "mlp.c_proj.bias": (d,),
    }  # fmt: skip


def random_weights(cfg: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Every layer's weights, named ``h.{layer}.{name}``."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(cfg.layers):
        for name, shape in weight_shapes(cfg.d_model).items():
            base = 1.0 if name.startswith("ln_") and name.endswith("weight") else 0.0
            std = 0.3 / math.sqrt(shape[0]) if len(shape) == 2 else 0.05
            out[f"h.{i}.{name}"] = (base + rng.normal(scale=std, size=shape)).astype(np.float32)
    return out


def layer(g: gd.Graph, cfg: Config) -> gd.Graph:
    """One GPT-2 layer as a subgraph of ``g``: x [batch, seq, d] and the layer's weights."""
    d, nh = cfg.d_model, cfg.n_head
    hd = d // nh
    types = {"x": gd.TensorType(gd.float32, ("batch", "seq", d))}
    types.update({name.replace(".", "_"): gd.TensorType(gd.float32, shape)
                  for name, shape in weight_shapes(d).items()})  # fmt: skip
    with g.subgraph("gpt2_layer", types) as sub:
        x, *ws = sub.inputs
        p = dict(zip(weight_shapes(d), ws, strict=True))
        a = gd.ops.layer_norm(x, p["ln_1.weight"], p["ln_1.bias"], cfg.eps)
        qkv = a @ p["attn.c_attn.weight"] + p["attn.c_attn.bias"]
        q, k, v = (t.reshape("batch", "seq", nh, hd).permute(0, 2, 1, 3)
                   for t in gd.ops.split(qkv, [d, d, d], axis=-1))  # fmt: skip
        scores = (q @ k.transpose(-1, -2)) * np.float32(1 / math.sqrt(hd))
        never = gd.ops.broadcast_to(sub.constant(np.float32(-np.inf)), scores.shape)
        scores = scores + gd.ops.triu(never, 1)  # causal: -inf above the diagonal
        ctx = (gd.ops.softmax(scores, axis=-1) @ v).permute(0, 2, 1, 3).reshape("batch", "seq", d)
        h = x + (ctx @ p["attn.c_proj.weight"] + p["attn.c_proj.bias"])
        m = gd.ops.layer_norm(h, p["ln_2.weight"], p["ln_2.bias"], cfg.eps)
        f = gd.ops.gelu(m @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"], approximate="tanh")
        sub.output(h + (f @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]))
    return sub


def build(cfg: Config) -> gd.Graph:
    """``cfg.layers`` calls of one layer subgraph, each with its own weights."""
    g = gd.Graph("gpt2", input_types={"x": gd.TensorType(gd.float32, ("batch", "seq",
                                                                     cfg.d_model))})  # fmt: skip
    sub = layer(g, cfg)
    (y,) = g.inputs
    for i in range(cfg.layers):
        ws = [g.weight(f"h.{i}.{name}", gd.float32, shape)
              for name, shape in weight_shapes(cfg.d_model).items()]  # fmt: skip
        out = gd.ops.call(sub, y, *ws)
        assert isinstance(out, gd.Symbol)
        y = out
    g.output(y)
    return g


def nodes(model: onnx.ModelProto) -> tuple[int, int]:
    """ONNX nodes in the main graph, and in the local functions' bodies."""
    return len(model.graph.node), sum(len(f.node) for f in model.functions)


def graph_bytes(model: onnx.ModelProto) -> int:
    """The model's bytes without its initializers (each a reference to the data file)."""
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.graph.initializer[:]
    return int(bare.ByteSize())


@dataclass
class Row:
    export_s: float  # median of the repeats
    model_bytes: int  # the .onnx file
    graph_bytes: int  # the model without its initializers
    data_bytes: int  # the external data file (the weights)
    main_nodes: int
    function_nodes: int
    load_run_s: float  # onnxruntime session creation (loading, inlining) and a first run
    run_s: float  # median of 5 runs after it
    out: np.ndarray


def measure(cfg: Config, weights: str, folder: str, functions: bool, repeat: int) -> Row:
    """Export ``repeat`` times, then the files, the node counts, onnxruntime's times."""
    path = os.path.join(folder, f"gpt2_{cfg.layers}_{'functions' if functions else 'inline'}.onnx")
    times = []
    model = None
    for _ in range(repeat):
        g = build(cfg)  # (export freezes a graph: a fresh one each time, not timed)
        w = gd.load_weights(weights)
        start = time.perf_counter()
        model = export(g, path, weights=w, functions=functions)
        times.append(time.perf_counter() - start)
    assert model is not None
    main, inside = nodes(model)
    x = np.random.default_rng(1).normal(size=(2, 16, cfg.d_model)).astype(np.float32)
    start = time.perf_counter()
    (out,) = run(path, [x])
    first = time.perf_counter() - start
    again = []
    for _ in range(5):
        start = time.perf_counter()
        run(path, [x])
        again.append(time.perf_counter() - start)
    return Row(statistics.median(times), os.path.getsize(path), graph_bytes(model),
               os.path.getsize(path + ".data"), main, inside, first, statistics.median(again),
               out)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cfg = Config(layers=args.layers, d_model=args.d_model)
    one = Config(layers=1, d_model=args.d_model)
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "gpt2.safetensors")
        gd.save_weights(weights, random_weights(cfg))
        one_weights = os.path.join(tmp, "gpt2_1.safetensors")
        gd.save_weights(one_weights, random_weights(one))
        rows = {"functions": measure(cfg, weights, tmp, True, args.repeat),
                "inlined": measure(cfg, weights, tmp, False, args.repeat),
                "1 layer, inlined": measure(one, one_weights, tmp, False, args.repeat)}  # fmt: skip
        x = np.random.default_rng(1).normal(size=(2, 16, cfg.d_model)).astype(np.float32)
        (want,) = gd.evaluate(build(cfg), [x], weights=weights)
    f, i = rows["functions"], rows["inlined"]
    print(f"{cfg.layers} GPT-2 layers from one subgraph, d_model {cfg.d_model}, {cfg.n_head} "
          f"heads; {f.data_bytes / 1e6:.1f} MB of weights (external data)")  # fmt: skip
    print(f"{'':<18} {'export s':>9} {'model KB':>9} {'graph KB':>9} {'main nodes':>11} "
          f"{'fn nodes':>9} {'load+run s':>11} {'run s':>7}")  # fmt: skip
    for label, r in rows.items():
        print(f"{label:<18} {r.export_s:>9.3f} {r.model_bytes / 1e3:>9.1f} "
              f"{r.graph_bytes / 1e3:>9.1f} {r.main_nodes:>11} {r.function_nodes:>9} "
              f"{r.load_run_s:>11.3f} {r.run_s:>7.4f}")  # fmt: skip
    print(f"inlined / functions: export {i.export_s / f.export_s:.1f}x, model file "
          f"{i.model_bytes / f.model_bytes:.1f}x, graph {i.graph_bytes / f.graph_bytes:.1f}x "
          "(the model file holds the graph and one entry per weight pointing into the data "
          "file)")  # fmt: skip
    same = np.array_equal(f.out, i.out)
    err = float(np.max(np.abs(f.out - want)))
    print(f"outputs: functions and inlined equal bit for bit: {same}; max |onnxruntime - "
          f"evaluate| = {err:.2e}")  # fmt: skip


if __name__ == "__main__":
    main()
