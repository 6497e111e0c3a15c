"""A GPT-2 block built natively: token and position embeddings, layer norm, causal
multi-head attention and a GELU MLP, with batch and sequence length both symbolic.

The token ids are int64 ``[batch, seq]``. The embeddings are gathers; the positions are
``range(0, seq)`` of the input's own dimension (no extra input); Q, K and V come from one
fused matmul split in the graph; heads are a reshape and a permute; the causal mask is a
``triu`` (a ``band_part``) of -inf added to the scores. The example exports the block to
ONNX, runs it on onnxruntime's CPU provider, and compares it with ``gd.evaluate``.

    python examples/gpt2_block.py
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run


@dataclass(frozen=True)
class Config:
    vocab: int = 512
    n_ctx: int = 128
    d_model: int = 64
    n_head: int = 4
    eps: float = 1e-5


def random_weights(cfg: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights with Hugging Face GPT-2's names and layouts ([in, out] matrices)."""
    rng = np.random.default_rng(seed)
    d = cfg.d_model

    def normal(*shape: int, std: float = 0.1) -> np.ndarray:
        return rng.normal(scale=std, size=shape).astype(np.float32)

    return {
        "wte": normal(cfg.vocab, d, std=0.5), "wpe": normal(cfg.n_ctx, d, std=0.2),
        "ln_1.weight": 1 + normal(d), "ln_1.bias": normal(d),
        "attn.c_attn.weight": normal(d, 3 * d), "attn.c_attn.bias": normal(3 * d),
        "attn.c_proj.weight": normal(d, d), "attn.c_proj.bias": normal(d),
        "ln_2.weight": 1 + normal(d), "ln_2.bias": normal(d),
        "mlp.c_fc.weight": normal(d, 4 * d), "mlp.c_fc.bias": normal(4 * d),
        "mlp.c_proj.weight": normal(4 * d, d), "mlp.c_proj.bias": normal(d),
    }  # fmt: skip


def build(w: dict[str, np.ndarray], cfg: Config, mask_dtype: Any = np.float32) -> gd.Graph:
    """The block as a graph from int64 ids ``[batch, seq]`` to ``[batch, seq, d]``.

    ``mask_dtype``: the causal mask's -inf. float32 (the default) makes the attention scores
    and all after them float32 whatever the weights' dtype (a float32 result); the weights'
    own dtype keeps the whole block in it (bfloat16 weights: a bfloat16 block, as PyTorch
    computes one)."""
    d, nh = cfg.d_model, cfg.n_head
    hd = d // nh
    ids_type = gd.TensorType(gd.int64, ("batch", "seq"))
    with gd.Graph("gpt2_block", input_types={"ids": ids_type}) as g:
        (ids,) = g.inputs
        p = {name: g.constant(value) for name, value in w.items()}

        pos = gd.ops.range(0, ids.shape[1])  # 0..seq-1, from the input's own dimension
        h = gd.ops.gather(p["wte"], ids) + gd.ops.gather(p["wpe"], pos)

        # causal self-attention
        a = gd.ops.layer_norm(h, p["ln_1.weight"], p["ln_1.bias"], cfg.eps)
        qkv = a @ p["attn.c_attn.weight"] + p["attn.c_attn.bias"]
        q, k, v = (t.reshape("batch", "seq", nh, hd).permute(0, 2, 1, 3)
                   for t in gd.ops.split(qkv, [d, d, d], axis=-1))  # fmt: skip
        scores = (q @ k.transpose(-1, -2)) * np.float32(1 / math.sqrt(hd))
        # -inf above the diagonal (a query never sees a later key), 0 on and below it
        never = gd.ops.broadcast_to(g.constant(np.asarray(-np.inf, mask_dtype)), scores.shape)
        scores = scores + gd.ops.triu(never, 1)
        ctx = gd.ops.softmax(scores, axis=-1) @ v
        ctx = ctx.permute(0, 2, 1, 3).reshape("batch", "seq", d)
        x = h + (ctx @ p["attn.c_proj.weight"] + p["attn.c_proj.bias"])

        # MLP
        m = gd.ops.layer_norm(x, p["ln_2.weight"], p["ln_2.bias"], cfg.eps)
        f = gd.ops.gelu(m @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"], approximate="tanh")
        g.output(x + (f @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]))
    return g


def main() -> None:
    cfg = Config()
    w = random_weights(cfg)
    g = build(w, cfg)
    model = export(g, "gpt2_block.onnx")
    ops = Counter(n.op_type for n in model.graph.node)
    print(f"graph {g.name}: {len(g.nodes)} graphdsl nodes -> {len(model.graph.node)} ONNX nodes")
    print("ONNX ops:", ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
    rng = np.random.default_rng(1)
    for batch, seq in [(2, 16), (1, 1), (3, 7)]:
        ids = rng.integers(0, cfg.vocab, size=(batch, seq))
        (got,) = run("gpt2_block.onnx", {"ids": ids})
        (want,) = gd.evaluate(g, {"ids": ids})
        err = float(np.max(np.abs(got - want)))
        print(f"batch {batch}, seq {seq}: out {got.dtype}{list(got.shape)}, "
              f"max |onnxruntime - evaluate| = {err:.2e}")  # fmt: skip


if __name__ == "__main__":
    main()
