# mypy: disable-error-code="no-any-return"
# (a module call returns Any, as torch.nn.Module.__call__ does)
"""A Hugging Face Llama ported with graphdsl.nn, exported with its KV cache, generating text.

The model is written the way transformers writes ``LlamaForCausalLM`` (the same module
names, so its ``state_dict()`` and safetensors load as they are): token embeddings, decoder
layers of RMS norm, grouped-query attention with rotary positions and a SwiGLU MLP, a final
norm and the LM head (tied to the embeddings or not). q/k/v biases (``attention_bias``) make
it a Qwen2-style model with the same layers.

The exported decoder takes ``input_ids``, ``attention_mask`` (``past + seq``: left padding
masked), ``position_ids`` and each layer's ``past_key_<i>``/``past_value_<i>``, and gives
``logits`` and ``present_key_<i>``/``present_value_<i>`` (``exporters.onnx.Generator``'s
signature). The prompt is the same model with a past of length 0. Attention is
``bottom_right`` causal (the queries follow the cached keys) with padding masked, and a fully
padded query gives zeros instead of NaN (``fully_masked="zero"``), so padding never reaches
the cache as NaN.

``main()`` builds a small ``transformers.LlamaForCausalLM`` with random weights (nothing is
downloaded), loads its ``state_dict()``, checks the logits against transformers', and
generates greedily with ``exporters.onnx.Generator`` for one prompt and a left-padded batch
of two, comparing the tokens with ``hf.generate(do_sample=False)``. Without torch and
transformers (``pip install -e '.[models]'``) it loads random weights and compares the tokens
with those of the model run again on the whole sequence at each step, without the cache.

    python examples/hf_llama.py
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import graphdsl as gd
from exporters.onnx import Generator, export, run
from graphdsl import nn
from graphdsl.dims import Dim

S = gd.Symbol


@dataclass(frozen=True)
class Config:  # the LlamaConfig (and Qwen2Config) fields the model reads
    vocab_size: int = 2000
    hidden_size: int = 256
    intermediate_size: int = 688
    num_hidden_layers: int = 4
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    head_dim: int | None = None
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = field(default=None, hash=False)
    max_position_embeddings: int = 512
    tie_word_embeddings: bool = False
    attention_bias: bool = False


# ---- model code: begin (what porting the model takes; counted by tests/test_hf_llama.py)
class Attention(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        d, self.nh, self.nkv = c.hidden_size, c.num_attention_heads, c.num_key_value_heads
        self.hd, bias = c.head_dim or d // self.nh, c.attention_bias
        self.q_proj = nn.Linear(d, self.nh * self.hd, bias)
        self.k_proj = nn.Linear(d, self.nkv * self.hd, bias)
        self.v_proj = nn.Linear(d, self.nkv * self.hd, bias)
        self.o_proj = nn.Linear(self.nh * self.hd, d, bias=False)

    def forward(self, x: S, cos: S, sin: S, mask: S, past_k: S, past_v: S) -> tuple[S, S, S]:
        b, s = x.shape[0], x.shape[1]

        def heads(t: S, n: int) -> S:  # (b, s, n * hd) -> (b, n, s, hd)
            return t.reshape(b, s, n, self.hd).permute(0, 2, 1, 3)

        q = gd.ops.rotary_embedding(heads(self.q_proj(x), self.nh), cos, sin)
        k = gd.ops.rotary_embedding(heads(self.k_proj(x), self.nkv), cos, sin)
        k = gd.ops.concat([past_k, k], axis=2)
        v = gd.ops.concat([past_v, heads(self.v_proj(x), self.nkv)], axis=2)
        ctx = gd.ops.scaled_dot_product_attention(q, k, v, mask=mask, is_causal="bottom_right",
                                                  enable_gqa=True, fully_masked="zero")
        return self.o_proj(ctx.permute(0, 2, 1, 3).reshape(b, s, self.nh * self.hd)), k, v


class DecoderLayer(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = nn.GatedMLP(c.hidden_size, c.intermediate_size)
        self.input_layernorm = nn.RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(c.hidden_size, eps=c.rms_norm_eps)

    def forward(self, x: S, cos: S, sin: S, mask: S, past_k: S, past_v: S) -> tuple[S, S, S]:
        a, k, v = self.self_attn(self.input_layernorm(x), cos, sin, mask, past_k, past_v)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), k, v


class LlamaModel(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = nn.RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.rotary_emb = nn.RotaryEmbedding(
            c.head_dim or c.hidden_size // c.num_attention_heads, c.max_position_embeddings,
            c.rope_theta, c.rope_scaling)  # fmt: skip


class LlamaForCausalLM(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.model, self.tied = LlamaModel(c), c.tie_word_embeddings
        if not self.tied:
            self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def forward(self, input_ids: S, attention_mask: S, position_ids: S,
                past: list[tuple[S, S]]) -> tuple[S, list[S]]:  # fmt: skip
        m = self.model
        cos, sin = m.rotary_emb(position_ids)
        cos, sin = cos[:, None], sin[:, None]  # (b, 1, s, hd): one table for every head
        mask = (attention_mask != 0)[:, None, None, :]  # (b, 1, 1, past + s): padding
        x, presents = m.embed_tokens(input_ids), []
        for layer, (pk, pv) in zip(m.layers, past, strict=True):
            x, k, v = layer(x, cos, sin, mask, pk, pv)
            presents += [k, v]
        h = m.norm(x)  # (an untied head is a Linear: nn.quantize makes it int4 too)
        return gd.ops.linear(h, m.embed_tokens.weight) if self.tied else self.lm_head(h), presents
# ---- model code: end


def load_hf(model: LlamaForCausalLM, state: dict[str, Any]) -> None:
    """A transformers state dict (or safetensors) as it is; a tied model's ``lm_head.weight``
    (in ``state_dict()``, not in the safetensors file) is the embeddings, not a parameter."""
    if model.tied:
        state = {k: v for k, v in state.items() if k != "lm_head.weight"}
    model.load_state_dict(state)


def build(model: LlamaForCausalLM, c: Config) -> gd.Graph:
    """The decoder with its KV cache, as exporters.onnx.Generator takes it."""
    kv, hd = c.num_key_value_heads, c.head_dim or c.hidden_size // c.num_attention_heads
    i64, cache = gd.int64, gd.TensorType(gd.float32, ("batch", kv, "past", hd))
    types: dict[str, gd.TensorType] = {
        "input_ids": gd.TensorType(i64, ("batch", "seq")),
        "attention_mask": gd.TensorType(i64, ("batch", Dim("past") + Dim("seq"))),
        "position_ids": gd.TensorType(i64, ("batch", "seq")),
    }
    for i in range(c.num_hidden_layers):
        types |= {f"past_key_{i}": cache, f"past_value_{i}": cache}
    with gd.Graph("llama", input_types=types) as g:
        ids, mask, pos, *flat = g.inputs
        logits, presents = model(ids, mask, pos, list(zip(flat[::2], flat[1::2], strict=True)))
        names = [f"present_{kv}_{i}" for i in range(c.num_hidden_layers) for kv in ("key", "value")]
        g.output(logits=logits, **dict(zip(names, presents, strict=True)))
    return g


def build_buffered(model: LlamaForCausalLM, c: Config) -> gd.Graph:
    """The same decoder with its cache in buffers of a fixed length, as onnxruntime-genai
    runs it (exporters.onnx.Generator's second signature): each layer's attention is
    ``gd.ops.group_query_attention`` (onnxruntime's GroupQueryAttention under
    ``export(exact=False)``: rotary inside, past and present one buffer), rows right-padded,
    ``attention_mask`` counting each row's tokens. The modules (and weights) are the port's;
    this is its forward with the attention, the rotary positions and the mask in that form.
    The logits are each row's last token's only, ``(batch, 1, vocab)``, as MAX's pipelines
    return them: the head reads one position per row, not the whole prompt."""
    kv, hd = c.num_key_value_heads, c.head_dim or c.hidden_size // c.num_attention_heads
    cache = gd.TensorType(gd.float32, ("batch", kv, "buffer", hd))
    types = {"input_ids": gd.TensorType(gd.int64, ("batch", "seq")),
             "attention_mask": gd.TensorType(gd.int64, ("batch", "total"))}  # fmt: skip
    for i in range(c.num_hidden_layers):
        types |= {f"past_key_{i}": cache, f"past_value_{i}": cache}
    m = model.model
    cos, sin = m.rotary_emb.tables()

    def forward(ids: S, mask: S, *flat: S) -> tuple[S, dict[str, S]]:
        tokens = mask.sum(axis=1)  # each row's tokens, cached and new
        lengths = (tokens - 1).cast(gd.int32)
        x, presents = m.embed_tokens(ids), {}
        for i, layer in enumerate(m.layers):
            a, h = layer.self_attn, layer.input_layernorm(x)
            y, presents[f"present_key_{i}"], presents[f"present_value_{i}"] = (
                gd.ops.group_query_attention(a.q_proj(h), a.k_proj(h), a.v_proj(h), flat[2 * i],
                                             flat[2 * i + 1], lengths, cos, sin,
                                             num_heads=a.nh, kv_num_heads=a.nkv))  # fmt: skip
            x = x + a.o_proj(y)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        last = gd.ops.minimum(tokens, ids.shape[1]) - 1  # each row's last new token
        h = m.norm(gd.ops.gather_nd(x, last[:, None, None], batch_dims=1))
        return gd.ops.linear(h, m.embed_tokens.weight) if model.tied else model.lm_head(h), presents

    with gd.Graph("llama", input_types=types) as g:
        logits, presents = model.call(forward, *g.inputs)  # (the port's weight names)
        g.output(logits=logits, **presents)
    return g


def torch_model(c: Config) -> Any:
    """transformers' LlamaForCausalLM (Qwen2ForCausalLM with attention_bias) of ``c`` with
    random weights (seeded), in eval mode."""
    import torch
    from transformers import LlamaConfig, Qwen2Config, Qwen2ForCausalLM
    from transformers import LlamaForCausalLM as HF

    torch.manual_seed(0)
    fields = {k: v for k, v in vars(c).items() if v is not None and k != "attention_bias"}
    if c.attention_bias:  # Qwen2: q/k/v biases
        model: Any = Qwen2ForCausalLM(Qwen2Config(**fields, use_sliding_window=False))
    else:
        model = HF(LlamaConfig(**fields, attention_bias=False, mlp_bias=False))
    for p in model.parameters():  # (a random init whose logits spread: greedy ties are rare)
        torch.nn.init.normal_(p, std=0.2 if p.ndim > 1 else 1.0)
    return model.eval()


def random_state(model: nn.Module, seed: int = 0) -> dict[str, np.ndarray]:
    """Random data for every parameter (where transformers is not installed)."""
    rng = np.random.default_rng(seed)
    return {n: (rng.normal(scale=0.2, size=p.shape) + n.endswith("norm.weight")).astype("f4")
            for n, p in model.named_parameters()}  # fmt: skip


def no_cache_greedy(onnx_model: Any, c: Config, prompt: np.ndarray, new: int) -> np.ndarray:
    """Greedy tokens the slow way: the whole sequence again at each step, past 0."""
    hd = c.head_dim or c.hidden_size // c.num_attention_heads
    empty = np.zeros((1, c.num_key_value_heads, 0, hd), np.float32)
    ids = prompt[None]
    for _ in range(new):
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "position_ids": np.arange(ids.shape[1])[None]}  # fmt: skip
        feeds |= {f"past_{kv}_{i}": empty for i in range(c.num_hidden_layers)
                  for kv in ("key", "value")}  # fmt: skip
        logits = run(onnx_model, feeds, threads=1)[0]
        ids = np.concatenate([ids, logits[:, -1].argmax(-1)[:, None]], axis=1)
    return ids[0]


def main() -> None:
    c = Config()
    model = LlamaForCausalLM(c)
    try:
        import torch

        hf = torch_model(c)
        load_hf(model, {k: v.detach().numpy() for k, v in hf.state_dict().items()})
    except ImportError as e:
        hf = None
        print(f"{e.name} is not installed (pip install -e '.[models]'): random weights, "
              "the cache checked against recomputing without it")  # fmt: skip
        load_hf(model, random_state(model))
    onnx_model = export(build(model, c), weights=model.weights())
    print(f"exported: {len(onnx_model.graph.node)} ONNX nodes, outputs "
          f"{[o.name for o in onnx_model.graph.output][:3]}...")  # fmt: skip
    gen = Generator(onnx_model, threads=1, max_length=c.max_position_embeddings)
    prompts = np.random.default_rng(2).integers(1, c.vocab_size, size=(2, 8))
    mask = np.ones_like(prompts)
    mask[1, :3] = 0  # the second prompt is 5 tokens, left-padded
    prompts[1, :3] = 0
    if hf is None:
        ours = gen.generate(prompts[:1], max_new_tokens=16)
        same = np.array_equal(ours[0], no_cache_greedy(onnx_model, c, prompts[0], 16))
        print(f"batch 1: greedy tokens equal those without the cache: {same}")
        return
    ids = np.random.default_rng(1).integers(0, c.vocab_size, size=(2, 12))
    hd = c.head_dim or c.hidden_size // c.num_attention_heads
    empty = np.zeros((2, c.num_key_value_heads, 0, hd), np.float32)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
             "position_ids": np.broadcast_to(np.arange(12), ids.shape).copy()}  # fmt: skip
    feeds |= {f"past_{kv}_{i}": empty for i in range(c.num_hidden_layers)
              for kv in ("key", "value")}  # fmt: skip
    logits = run(onnx_model, feeds, threads=1)[0]
    with torch.no_grad():
        want = hf(torch.from_numpy(ids)).logits.numpy()
    print(f"logits: max |onnxruntime - transformers| = {np.max(np.abs(logits - want)):.2e} "
          f"(largest |logit| {np.max(np.abs(want)):.1f})")  # fmt: skip
    for rows in ([0], [0, 1]):
        ours = gen.generate(prompts[rows], mask[rows], max_new_tokens=24)
        with torch.no_grad():
            theirs = hf.generate(torch.from_numpy(prompts[rows]),
                                 attention_mask=torch.from_numpy(mask[rows]), do_sample=False,
                                 max_new_tokens=24, min_new_tokens=24, pad_token_id=0).numpy()
        print(f"batch {len(rows)}: greedy tokens equal transformers': "
              f"{np.array_equal(ours, theirs)}")  # fmt: skip


if __name__ == "__main__":
    main()
