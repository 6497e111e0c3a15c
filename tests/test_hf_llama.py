"""examples/hf_llama.py against transformers: LlamaForCausalLM (grouped-query heads, untied
head, llama3 rope scaling) and a Qwen2-style model (q/k/v biases, tied embeddings), loaded
from ``state_dict()`` and from safetensors as they are; logits and greedy tokens (batch 1 and
a left-padded batch of 2) against ``hf.generate(do_sample=False)``. Skipped where the
``models`` extra (torch, transformers) is not installed; CI installs it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REASON = "needs the models extra: pip install -e '.[models]' (torch, transformers)"
torch = pytest.importorskip("torch", reason=REASON)
pytest.importorskip("transformers", reason=REASON)

import floats  # noqa: E402

from exporters.onnx import Generator, export, run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples")]
hf_llama: Any = importlib.import_module("hf_llama")

SMALL = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 16}  # fmt: skip
CONFIGS = {
    "llama-gqa": hf_llama.Config(**SMALL),
    "llama3-scaled": hf_llama.Config(**SMALL, rope_theta=500000.0, rope_scaling=LLAMA3),
    "qwen2-bias-tied": hf_llama.Config(**SMALL, attention_bias=True, tie_word_embeddings=True),
}


def _feeds(c: Any, ids: np.ndarray) -> dict[str, np.ndarray]:
    hd = c.head_dim or c.hidden_size // c.num_attention_heads
    empty = np.zeros((ids.shape[0], c.num_key_value_heads, 0, hd), np.float32)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
             "position_ids": np.broadcast_to(np.arange(ids.shape[1]), ids.shape).copy()}
    return feeds | {f"past_{kv}_{i}": empty for i in range(c.num_hidden_layers)
                    for kv in ("key", "value")}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_logits_and_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    c = CONFIGS[name]
    hf = hf_llama.torch_model(c)
    model = hf_llama.LlamaForCausalLM(c)
    if name.startswith("qwen2"):  # from the safetensors file save_pretrained writes
        from safetensors.numpy import load_file

        hf.save_pretrained(tmp_path)
        state = load_file(tmp_path / "model.safetensors")
        assert c.tie_word_embeddings and "lm_head.weight" not in state
    else:
        state = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    hf_llama.load_hf(model, state)
    onnx_model = export(hf_llama.build(model, c), weights=model.weights())
    ids = np.random.default_rng(1).integers(0, c.vocab_size, size=(2, 24))  # past 16 tokens
    (logits,) = run(onnx_model, _feeds(c, ids))[:1]
    with torch.no_grad():
        want = hf(torch.from_numpy(ids)).logits.numpy()
    # (two decoder layers and the head in float32 against torch's float32 kernels: the
    # suite's figure for composed layers, 1e-5 of the logits' scale, as test_hf_examples)
    floats.assert_close(logits, want, 1e-5 * (1 + np.abs(want).max()), "logits")
    _greedy_equals_transformers(Generator(onnx_model, threads=1), hf, c, seed=2, length=7,
                                padding=3, new=20)  # fmt: skip


def _greedy_equals_transformers(gen: Generator, hf: Any, c: Any, seed: int, length: int,
                                padding: int, new: int) -> None:  # fmt: skip
    """Greedy tokens equal hf.generate's for one prompt and for a batch of two whose second
    prompt is left-padded by ``padding``."""
    prompts = np.random.default_rng(seed).integers(1, c.vocab_size, size=(2, length))
    mask = np.ones_like(prompts)
    mask[1, :padding] = 0
    prompts[1, :padding] = 0
    for rows in ([0], [0, 1]):
        ours = gen.generate(prompts[rows], mask[rows], max_new_tokens=new)
        with torch.no_grad():
            theirs = hf.generate(torch.from_numpy(prompts[rows]),
                                 attention_mask=torch.from_numpy(mask[rows]), do_sample=False,
                                 max_new_tokens=new, min_new_tokens=new,
                                 pad_token_id=0)  # fmt: skip
        np.testing.assert_array_equal(ours, theirs.numpy())


def test_tied_state_dict_loads_as_it_is() -> None:
    """transformers' state_dict() of a tied model names the embeddings twice; the port takes
    it as it is (the head reads the embeddings)."""
    c = CONFIGS["qwen2-bias-tied"]
    hf = hf_llama.torch_model(c)
    model = hf_llama.LlamaForCausalLM(c)
    hf_llama.load_hf(model, {k: v.detach().numpy() for k, v in hf.state_dict().items()})
    names = {n for n, _ in model.named_parameters()}
    assert "lm_head.weight" not in names and "model.layers.0.self_attn.q_proj.bias" in names


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffered_decoder_generates_transformers_tokens(name: str, exact: bool) -> None:
    """build_buffered: the port's modules with each layer's attention as
    gd.ops.group_query_attention, the cache a fixed buffer. exact=False makes each
    onnxruntime's GroupQueryAttention, and the Generator binds past and present to one
    buffer; exact=True is standard ONNX, two buffers taking turns. Either way, greedy tokens
    equal hf.generate's at batch 1 and for a left-padded batch of 2."""
    c = CONFIGS[name]
    hf = hf_llama.torch_model(c)
    model = hf_llama.LlamaForCausalLM(c)
    hf_llama.load_hf(model, {k: v.detach().numpy() for k, v in hf.state_dict().items()})
    onnx_model = export(hf_llama.build_buffered(model, c), weights=model.weights(), exact=exact)
    fused = [n.op_type for f in onnx_model.functions for n in f.node if n.domain == "com.microsoft"]
    # (and the residual sums with the norms after them: SkipSimplifiedLayerNormalization; the
    # linears: FusedMatMul)
    assert sorted(set(fused)) == ([] if exact else ["FusedMatMul", "GroupQueryAttention",
                                                    "SkipSimplifiedLayerNormalization"])
    # the prefill's logits: each row's last token's (a row right-padded by 3), as torch's
    ids = np.random.default_rng(4).integers(1, c.vocab_size, size=(2, 11))
    counts = np.ones_like(ids)
    counts[1, -3:] = 0
    hd = c.head_dim or c.hidden_size // c.num_attention_heads
    empty = np.zeros((2, c.num_key_value_heads, 16, hd), np.float32)
    (logits,) = run(onnx_model, {"input_ids": ids, "attention_mask": counts} | {
        f"past_{kv}_{i}": empty for i in range(c.num_hidden_layers) for kv in ("key", "value")})[:1]
    with torch.no_grad():
        want = np.stack([hf(torch.from_numpy(ids[:1])).logits.numpy()[0, -1],
                         hf(torch.from_numpy(ids[1:, :-3])).logits.numpy()[0, -1]])[:, None]
    floats.assert_close(logits, want, 1e-5 * (1 + np.abs(want).max()), "last logits")
    gen = Generator(onnx_model, threads=1)
    assert gen.buffered and gen.shares is not exact
    _greedy_equals_transformers(gen, hf, c, seed=3, length=9, padding=4, new=16)
