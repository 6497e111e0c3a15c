# mypy: disable-error-code="no-any-return"
# (a module call returns Any, as torch.nn.Module.__call__ does)
"""GPT-2 ported from Hugging Face transformers with graphdsl.nn, checked against it.

The model is written the way transformers writes ``GPT2Model`` (the same module names, so
its ``state_dict()`` loads as it is): token and position embeddings, blocks of layer norm,
causal self-attention through ``Conv1D`` projections (weights stored (in, out)) and a
tanh-GELU MLP, a final layer norm. Each of the identical blocks is one subgraph, called with
its weights by name: the ONNX model has one function ``Block`` called ``n_layer`` times.

``main()`` builds a ``transformers.GPT2Model`` from a small ``GPT2Config`` with random weights
(nothing is downloaded), loads its ``state_dict()`` into the graphdsl model, exports it, runs
it on onnxruntime and prints the largest difference from PyTorch's output. Without torch and
transformers (``pip install -e '.[models]'``) it loads random weights of the same names and
compares with ``gd.evaluate`` instead.

    python examples/hf_gpt2.py
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl import nn


@dataclass(frozen=True)
class Config:  # the GPT2Config fields the model reads
    vocab_size: int = 5000
    n_positions: int = 256
    n_embd: int = 256
    n_head: int = 8
    n_layer: int = 4
    layer_norm_epsilon: float = 1e-5


# ---- model code: begin (what porting the model takes; counted by tests/test_hf_examples.py)
class Attention(nn.Module):
    def __init__(self, d: int, n_head: int) -> None:
        super().__init__()
        self.d, self.n_head = d, n_head
        self.c_attn = nn.Conv1D(3 * d, d)  # transformers' Conv1D(nf, nx): weight (in, out)
        self.c_proj = nn.Conv1D(d, d)

    def forward(self, x: gd.Symbol) -> gd.Symbol:
        b, s, d = x.shape[0], x.shape[1], self.d
        q, k, v = (t.reshape(b, s, self.n_head, d // self.n_head).permute(0, 2, 1, 3)
                   for t in gd.ops.split(self.c_attn(x), [d, d, d], axis=-1))  # fmt: skip
        ctx = gd.ops.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(ctx.permute(0, 2, 1, 3).reshape(b, s, d))


class MLP(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.c_fc, self.c_proj = nn.Conv1D(4 * d, d), nn.Conv1D(d, 4 * d)

    def forward(self, x: gd.Symbol) -> gd.Symbol:
        return self.c_proj(gd.ops.gelu(self.c_fc(x), approximate="tanh"))  # gelu_new


class Block(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.attn = Attention(cfg.n_embd, cfg.n_head)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.mlp = MLP(cfg.n_embd)

    def forward(self, x: gd.Symbol) -> gd.Symbol:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)

    def forward(self, ids: gd.Symbol) -> gd.Symbol:
        h = self.wte(ids) + self.wpe(gd.ops.range(0, ids.shape[1]))  # positions 0..seq-1
        for block in self.h:
            h = block(h)
        return self.ln_f(h)
# ---- model code: end


def build(model: GPT2Model) -> gd.Graph:
    """The model as a graph from int64 token ids [batch, seq] to [batch, seq, n_embd]."""
    with gd.Graph("gpt2", input_types={"ids": gd.TensorType(gd.int64, ("batch", "seq"))}) as g:
        g.output(model(g.inputs[0]))
    return g


def torch_model(cfg: Config) -> Any:
    """transformers' GPT2Model of ``cfg`` with random weights (seeded), in eval mode."""
    import torch
    from transformers import GPT2Config
    from transformers import GPT2Model as HFModel

    torch.manual_seed(0)
    hf_cfg = GPT2Config(**vars(cfg), bos_token_id=0, eos_token_id=0)
    model: Any = HFModel(hf_cfg)  # (transformers' eval() is untyped)
    return model.eval()


def random_state(model: nn.Module, seed: int = 0) -> dict[str, np.ndarray]:
    """Random data for every parameter (where transformers is not installed)."""
    rng = np.random.default_rng(seed)
    return {name: (rng.normal(scale=0.2, size=p.shape) + name.endswith("ln_1.weight")
                   ).astype(p.dtype.np) for name, p in model.named_parameters()}  # fmt: skip


def main() -> None:
    cfg = Config()
    model = GPT2Model(cfg)
    try:
        import torch

        hf = torch_model(cfg)
    except ImportError as e:
        hf = None
        print(f"{e.name} is not installed (pip install -e '.[models]'): random weights, "
              "compared with gd.evaluate only")  # fmt: skip
    model.load_state_dict(hf.state_dict() if hf is not None else random_state(model))
    g = build(model)
    onnx_model = export(g, weights=model.weights())
    ops = Counter(n.op_type for n in onnx_model.graph.node)
    print(f"graph {g.name}: {len(g.weights)} weights, ONNX nodes {dict(sorted(ops.items()))}, "
          f"functions {[f.name for f in onnx_model.functions]}")  # fmt: skip
    rng = np.random.default_rng(1)
    worst = 0.0
    for batch, seq in [(2, 16), (1, 1), (3, 7)]:
        ids = rng.integers(0, cfg.vocab_size, size=(batch, seq))
        (got,) = run(onnx_model, {"ids": ids}, threads=1)
        if hf is not None:
            with torch.no_grad():
                want = hf(torch.from_numpy(ids)).last_hidden_state.numpy()
            against = "torch"
        else:
            (want,) = gd.evaluate(g, {"ids": ids}, weights=model.weights())
            against = "evaluate"
        err = float(np.max(np.abs(got - want)))
        worst = max(worst, err)
        print(f"batch {batch}, seq {seq}: {got.dtype}{list(got.shape)}, "
              f"max |onnxruntime - {against}| = {err:.2e}")  # fmt: skip
    print(f"largest difference: {worst:.2e}")


if __name__ == "__main__":
    main()
