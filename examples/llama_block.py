"""A Llama decoder layer built natively: RMS norm, rotary position embeddings, grouped-query
causal attention and a SiLU-gated MLP, with batch and sequence length both symbolic.

The rotary tables are sin and cos of ``outer(range(0, seq), inv_freq)``, with the
positions taken from the input's own dimension; ``rotate_half`` is a split, a negation and
a concat. Four query heads share each of two key/value heads by broadcasting in the
matmul (no copies of K and V). Q/K/V and gate/up each come from one matmul on weights
concatenated once, split in the graph. The example exports the layer to ONNX, runs it on
onnxruntime's CPU provider, and compares it with ``gd.evaluate``.

    python examples/llama_block.py
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run


@dataclass(frozen=True)
class Config:
    d_model: int = 64
    n_head: int = 4
    n_kv_head: int = 2
    head_dim: int = 16
    hidden: int = 176
    eps: float = 1e-5
    rope_theta: float = 10000.0


def random_weights(cfg: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights with Hugging Face Llama's names, matrices stored [in, out]."""
    rng = np.random.default_rng(seed)
    d, hd = cfg.d_model, cfg.head_dim

    def normal(*shape: int, std: float = 0.1) -> np.ndarray:
        return rng.normal(scale=std, size=shape).astype(np.float32)

    return {
        "input_layernorm.weight": 1 + normal(d),
        "self_attn.q_proj.weight": normal(d, cfg.n_head * hd),
        "self_attn.k_proj.weight": normal(d, cfg.n_kv_head * hd),
        "self_attn.v_proj.weight": normal(d, cfg.n_kv_head * hd),
        "self_attn.o_proj.weight": normal(cfg.n_head * hd, d),
        "post_attention_layernorm.weight": 1 + normal(d),
        "mlp.gate_proj.weight": normal(d, cfg.hidden),
        "mlp.up_proj.weight": normal(d, cfg.hidden),
        "mlp.down_proj.weight": normal(cfg.hidden, d),
    }


def build(w: dict[str, np.ndarray], cfg: Config) -> gd.Graph:
    """The layer as a graph from float32 ``[batch, seq, d]`` to the same shape."""
    d, nh, nkv, hd, hidden = cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.head_dim, cfg.hidden
    rep = nh // nkv
    x_type = gd.TensorType(gd.float32, ("batch", "seq", d))
    with gd.Graph("llama_block", input_types={"x": x_type}) as g:
        (x,) = g.inputs
        qkv_w = np.concatenate([w[f"self_attn.{p}_proj.weight"] for p in "qkv"], axis=1)
        gate_up_w = np.concatenate([w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"]], axis=1)

        # rotary tables [seq, 1, hd]: angles pos * inv_freq, twice (HF's layout)
        pos = gd.ops.range(0, x.shape[1]).cast(gd.float32)
        inv_freq = (cfg.rope_theta ** (-np.arange(0, hd, 2) / hd)).astype(np.float32)
        angles = gd.ops.outer(pos, inv_freq)
        emb = gd.ops.concat([angles, angles], axis=-1)[:, None, :]
        cos, sin = gd.ops.cos(emb), gd.ops.sin(emb)

        def rope(t: gd.Symbol) -> gd.Symbol:  # t: [batch, seq, heads, hd]
            x1, x2 = gd.ops.split(t, [hd // 2, hd // 2], axis=-1)
            return t * cos + gd.ops.concat([-x2, x1], axis=-1) * sin

        # grouped-query causal attention
        a = gd.ops.rms_norm(x, g.constant(w["input_layernorm.weight"]), cfg.eps)
        q, k, v = gd.ops.split(a @ g.constant(qkv_w), [nh * hd, nkv * hd, nkv * hd], axis=-1)
        q = rope(q.reshape("batch", "seq", nh, hd))
        k = rope(k.reshape("batch", "seq", nkv, hd))
        # query head h = group * rep + r uses key/value head `group`: broadcast, no copies
        q = q.reshape("batch", "seq", nkv, rep, hd).permute(0, 2, 3, 1, 4)  # [b, g, r, s, hd]
        k = k.reshape("batch", "seq", nkv, 1, hd).permute(0, 2, 3, 4, 1)  # [b, g, 1, hd, s]
        v = v.reshape("batch", "seq", nkv, 1, hd).permute(0, 2, 3, 1, 4)  # [b, g, 1, s, hd]
        scores = (q @ k) * np.float32(1 / math.sqrt(hd))
        never = gd.ops.broadcast_to(g.constant(np.float32(-np.inf)), scores.shape)
        scores = scores + gd.ops.triu(never, 1)  # causal: -inf above the diagonal
        ctx = gd.ops.softmax(scores, axis=-1) @ v
        ctx = ctx.permute(0, 3, 1, 2, 4).reshape("batch", "seq", nh * hd)
        h = x + ctx @ g.constant(w["self_attn.o_proj.weight"])

        # SiLU-gated MLP
        y = gd.ops.rms_norm(h, g.constant(w["post_attention_layernorm.weight"]), cfg.eps)
        gate, up = gd.ops.split(y @ g.constant(gate_up_w), [hidden, hidden], axis=-1)
        g.output(h + (gd.ops.silu(gate) * up) @ g.constant(w["mlp.down_proj.weight"]))
    return g


def main() -> None:
    cfg = Config()
    g = build(random_weights(cfg), cfg)
    model = export(g, "llama_block.onnx")
    ops = Counter(n.op_type for n in model.graph.node)
    print(f"graph {g.name}: {len(g.nodes)} graphdsl nodes -> {len(model.graph.node)} ONNX nodes")
    print("ONNX ops:", ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
    rng = np.random.default_rng(1)
    for batch, seq in [(2, 16), (1, 1), (3, 7)]:
        x = rng.normal(size=(batch, seq, cfg.d_model)).astype(np.float32)
        (got,) = run("llama_block.onnx", {"x": x})
        (want,) = gd.evaluate(g, {"x": x})
        err = float(np.max(np.abs(got - want)))
        print(f"batch {batch}, seq {seq}: out {got.dtype}{list(got.shape)}, "
              f"max |onnxruntime - evaluate| = {err:.2e}")  # fmt: skip


if __name__ == "__main__":
    main()
