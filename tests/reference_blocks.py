"""Numpy reference implementations of one GPT-2 block and one Llama block (issue 14).

These are the yardstick that graphdsl's own transformer blocks are checked against, so they
import nothing from graphdsl or exporters: numpy only, written from the published definitions
(Hugging Face ``transformers``' ``GPT2Block`` and ``LlamaDecoderLayer``).

Precision: every function takes and returns float32 arrays (the dtype of the ONNX models) but
computes in float64 inside, so the reference's own rounding error (about 1e-16 relative) is
negligible next to a float32 implementation's (about 1e-7 relative per operation): a
difference between the reference and a float32 model is the model's error.

Weight names follow Hugging Face's, without the ``h.0.`` / ``model.layers.0.`` prefix:

* GPT-2 uses ``Conv1D`` layers, stored ``[in, out]`` (``y = x @ W + b``), exactly as in HF.
* Llama's ``nn.Linear`` layers are stored ``[out, in]`` in HF; here they are stored
  **transposed, ``[in, out]``** (``y = x @ W``), like GPT-2's, so that both blocks read the
  same way. Transpose them when loading a real HF checkpoint.

>>> cfg = GPT2Config()
>>> w = gpt2_weights(cfg, seed=0)
>>> gpt2_block(np.zeros((2, 3), np.int64), w, cfg).shape
(2, 3, 64)
>>> lcfg = LlamaConfig()
>>> llama_block(np.zeros((1, 5, 64), np.float32), llama_weights(lcfg, seed=0), lcfg).dtype
dtype('float32')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "GPT2Config",
    "LlamaConfig",
    "apply_rotary",
    "causal_attention",
    "gelu_new",
    "gpt2_block",
    "gpt2_weights",
    "layer_norm",
    "llama_block",
    "llama_weights",
    "rms_norm",
    "rotary_cos_sin",
    "silu",
]

F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
Weights = dict[str, F32]


# ------------------------------------------------------------------------------ configs


@dataclass(frozen=True)
class GPT2Config:
    """Sizes of a (tiny) GPT-2 block; ``d_model`` must divide by ``n_head``."""

    vocab: int = 512
    n_ctx: int = 128
    d_model: int = 64
    n_head: int = 4
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        """Width of one attention head, ``d_model // n_head``."""
        return self.d_model // self.n_head


@dataclass(frozen=True)
class LlamaConfig:
    """Sizes of a (tiny) Llama block; ``n_head`` must divide by ``n_kv_head``."""

    d_model: int = 64
    n_head: int = 4
    n_kv_head: int = 2
    head_dim: int = 16
    hidden: int = 176
    eps: float = 1e-5
    rope_theta: float = 10000.0

    @property
    def n_rep(self) -> int:
        """How many query heads share one key/value head (``n_head // n_kv_head``)."""
        return self.n_head // self.n_kv_head


# ------------------------------------------------------------------------------ weights


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> F32:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def gpt2_weights(cfg: GPT2Config, seed: int) -> Weights:
    """Random float32 weights for :func:`gpt2_block`, with HF GPT-2's names and layouts.

    Scales keep every activation O(1): embeddings and projections are N(0, 0.1^2) (0.05 for
    the MLP's 4d-wide output projection), biases N(0, 0.02^2), layer-norm weights
    1 + N(0, 0.1^2) and layer-norm biases N(0, 0.05^2).
    """
    if cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model={cfg.d_model} does not divide by n_head={cfg.n_head}")
    rng = np.random.default_rng(seed)
    d = cfg.d_model
    return {
        "wte": _normal(rng, (cfg.vocab, d), 0.1),
        "wpe": _normal(rng, (cfg.n_ctx, d), 0.1),
        "ln_1.weight": 1 + _normal(rng, (d,), 0.1),
        "ln_1.bias": _normal(rng, (d,), 0.05),
        "attn.c_attn.weight": _normal(rng, (d, 3 * d), 0.1),
        "attn.c_attn.bias": _normal(rng, (3 * d,), 0.02),
        "attn.c_proj.weight": _normal(rng, (d, d), 0.1),
        "attn.c_proj.bias": _normal(rng, (d,), 0.02),
        "ln_2.weight": 1 + _normal(rng, (d,), 0.1),
        "ln_2.bias": _normal(rng, (d,), 0.05),
        "mlp.c_fc.weight": _normal(rng, (d, 4 * d), 0.1),
        "mlp.c_fc.bias": _normal(rng, (4 * d,), 0.02),
        "mlp.c_proj.weight": _normal(rng, (4 * d, d), 0.05),
        "mlp.c_proj.bias": _normal(rng, (d,), 0.02),
    }


def llama_weights(cfg: LlamaConfig, seed: int) -> Weights:
    """Random float32 weights for :func:`llama_block`, with HF Llama's names.

    The projections are stored ``[in, out]`` (HF's ``nn.Linear`` stores ``[out, in]``):
    ``q_proj`` is ``[d_model, n_head * head_dim]``, ``k_proj`` and ``v_proj``
    ``[d_model, n_kv_head * head_dim]``, ``o_proj`` ``[n_head * head_dim, d_model]``,
    ``gate_proj`` and ``up_proj`` ``[d_model, hidden]``, ``down_proj`` ``[hidden, d_model]``.
    Projections are N(0, 0.1^2) (0.05 for ``down_proj``), RMSNorm weights 1 + N(0, 0.1^2).
    """
    if cfg.n_head % cfg.n_kv_head:
        raise ValueError(f"n_head={cfg.n_head} does not divide by n_kv_head={cfg.n_kv_head}")
    if cfg.head_dim % 2:
        raise ValueError(f"rotary embeddings need an even head_dim, got {cfg.head_dim}")
    rng = np.random.default_rng(seed)
    d, hd, h = cfg.d_model, cfg.head_dim, cfg.hidden
    return {
        "input_layernorm.weight": 1 + _normal(rng, (d,), 0.1),
        "self_attn.q_proj.weight": _normal(rng, (d, cfg.n_head * hd), 0.1),
        "self_attn.k_proj.weight": _normal(rng, (d, cfg.n_kv_head * hd), 0.1),
        "self_attn.v_proj.weight": _normal(rng, (d, cfg.n_kv_head * hd), 0.1),
        "self_attn.o_proj.weight": _normal(rng, (cfg.n_head * hd, d), 0.1),
        "post_attention_layernorm.weight": 1 + _normal(rng, (d,), 0.1),
        "mlp.gate_proj.weight": _normal(rng, (d, h), 0.1),
        "mlp.up_proj.weight": _normal(rng, (d, h), 0.1),
        "mlp.down_proj.weight": _normal(rng, (h, d), 0.05),
    }


# ------------------------------------------------------------------------------ pieces


def _f64(a: npt.ArrayLike) -> F64:
    return np.asarray(a, dtype=np.float64)


def layer_norm(x: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike, eps: float) -> F64:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (biased variance)."""
    x = _f64(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return _f64((x - mean) / np.sqrt(var + eps) * _f64(weight) + _f64(bias))


def rms_norm(x: npt.ArrayLike, weight: npt.ArrayLike, eps: float) -> F64:
    """Llama's RMSNorm: ``x / sqrt(mean(x^2) + eps) * weight`` over the last axis."""
    x = _f64(x)
    return _f64(x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * _f64(weight))


def gelu_new(x: npt.ArrayLike) -> F64:
    """GELU, tanh approximation (HF's ``gelu_new``, ONNX ``Gelu(approximate="tanh")``)."""
    x = _f64(x)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def silu(x: npt.ArrayLike) -> F64:
    """``x * sigmoid(x)``."""
    x = _f64(x)
    return x / (1.0 + np.exp(-x))


def _softmax(x: F64) -> F64:
    e = np.exp(x - x.max(axis=-1, keepdims=True))  # exp(-inf) == 0: masked entries vanish
    return _f64(e / e.sum(axis=-1, keepdims=True))


def causal_attention(q: npt.ArrayLike, k: npt.ArrayLike, v: npt.ArrayLike) -> F64:
    """Causal scaled dot-product attention with grouped-query sharing of key/value heads.

    ``q`` is ``[batch, n_head, seq, hd]``; ``k`` and ``v`` are ``[batch, n_kv_head, seq, hd]``
    with ``n_head`` a multiple of ``n_kv_head``. Key/value head ``j`` is repeated
    ``n_head // n_kv_head`` times, so query head ``h`` uses key/value head
    ``h // (n_head // n_kv_head)`` (HF's ``repeat_kv``); ``n_kv_head == n_head`` is plain
    multi-head attention. Scores are ``q @ k^T / sqrt(hd)``, entries above the diagonal
    (a query attending to a later key) are set to -inf before the softmax. Returns
    ``[batch, n_head, seq, hd]``.
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    n_head, n_kv, seq, hd = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    if n_head % n_kv:
        raise ValueError(f"{n_head} query heads do not divide into {n_kv} key/value heads")
    k = np.repeat(k, n_head // n_kv, axis=1)  # [b, kv, ...] -> [b, kv * n_rep, ...], kv-major
    v = np.repeat(v, n_head // n_kv, axis=1)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(hd)
    above = np.triu(np.ones((seq, seq), dtype=bool), k=1)  # key index > query index
    scores = np.where(above, -np.inf, scores)
    return _f64(_softmax(scores) @ v)


def rotary_cos_sin(positions: npt.ArrayLike, head_dim: int, theta: float) -> tuple[F64, F64]:
    """HF Llama's rotary tables: ``cos`` and ``sin`` of ``[len(positions), head_dim]``.

    ``inv_freq[i] = theta ** (-2i / head_dim)`` for ``i < head_dim / 2``; the angles
    ``pos * inv_freq`` are concatenated with themselves (``concat(angles, angles)``), so
    dimension ``i`` and ``i + head_dim / 2`` rotate together.
    """
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = _f64(positions)[:, None] * inv_freq[None, :]
    emb = np.concatenate([angles, angles], axis=-1)
    return np.cos(emb), np.sin(emb)


def _rotate_half(x: F64) -> F64:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary(x: npt.ArrayLike, cos: npt.ArrayLike, sin: npt.ArrayLike) -> F64:
    """``x * cos + rotate_half(x) * sin`` with ``rotate_half(x) = concat(-x2, x1)``.

    ``x`` is ``[..., seq, head_dim]``; ``cos`` and ``sin`` are ``[seq, head_dim]``.
    """
    x = _f64(x)
    return x * _f64(cos) + _rotate_half(x) * _f64(sin)


def _heads(x: F64, n: int) -> F64:
    """``[batch, seq, n * hd]`` -> ``[batch, n, seq, hd]``."""
    b, s, _ = x.shape
    return _f64(x.reshape(b, s, n, -1).transpose(0, 2, 1, 3))


def _merge(x: F64) -> F64:
    """``[batch, n, seq, hd]`` -> ``[batch, seq, n * hd]``."""
    b, n, s, hd = x.shape
    return _f64(x.transpose(0, 2, 1, 3).reshape(b, s, n * hd))


# ------------------------------------------------------------------------------ blocks


def gpt2_block(ids: npt.ArrayLike, w: Weights, cfg: GPT2Config) -> F32:
    """Embeddings plus one GPT-2 block: ``int64 [batch, seq]`` token ids -> ``float32 [b, s, d]``.

    ``h = wte[ids] + wpe[0..seq-1]``; ``x = h + attn(ln_1(h))``; ``out = x + mlp(ln_2(x))``,
    with causal multi-head attention (q, k, v from the fused ``c_attn``, then ``c_proj``)
    and ``mlp(y) = c_proj(gelu_new(c_fc(y)))``. Computed in float64, returned as float32.
    """
    ids = np.asarray(ids)
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be an integer [batch, seq] array, got {ids.dtype}{ids.shape}")
    seq = ids.shape[1]
    if seq > cfg.n_ctx:
        raise ValueError(f"seq={seq} is longer than n_ctx={cfg.n_ctx}")
    if ids.size and (ids.min() < 0 or ids.max() >= cfg.vocab):
        raise ValueError(f"token ids must lie in [0, {cfg.vocab})")
    d = cfg.d_model
    p = {name: _f64(a) for name, a in w.items()}

    h = p["wte"][ids] + p["wpe"][np.arange(seq)]
    a = layer_norm(h, p["ln_1.weight"], p["ln_1.bias"], cfg.eps)
    qkv = a @ p["attn.c_attn.weight"] + p["attn.c_attn.bias"]
    q, k, v = (_heads(t, cfg.n_head) for t in np.split(qkv, [d, 2 * d], axis=-1))
    attn = _merge(causal_attention(q, k, v)) @ p["attn.c_proj.weight"] + p["attn.c_proj.bias"]
    x = h + attn
    m = layer_norm(x, p["ln_2.weight"], p["ln_2.bias"], cfg.eps)
    f = gelu_new(m @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"])
    out = x + f @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]
    return np.asarray(out, dtype=np.float32)


def llama_block(x: npt.ArrayLike, w: Weights, cfg: LlamaConfig) -> F32:
    """One Llama decoder layer: ``float32 [batch, seq, d_model]`` -> the same shape.

    ``h = x + o_proj(attn(rope(q), rope(k), v))`` on ``input_layernorm(x)`` (RMSNorm), with
    grouped-query causal attention (positions 0..seq-1, see :func:`causal_attention` and
    :func:`rotary_cos_sin`); ``out = h + down(silu(gate(y)) * up(y))`` with
    ``y = post_attention_layernorm(h)``. Weights are ``[in, out]`` (see the module
    docstring). Computed in float64, returned as float32.
    """
    x = _f64(x)
    if x.ndim != 3 or x.shape[-1] != cfg.d_model:
        raise ValueError(f"x must be [batch, seq, {cfg.d_model}], got {x.shape}")
    p = {name: _f64(a) for name, a in w.items()}

    a = rms_norm(x, p["input_layernorm.weight"], cfg.eps)
    q = _heads(a @ p["self_attn.q_proj.weight"], cfg.n_head)
    k = _heads(a @ p["self_attn.k_proj.weight"], cfg.n_kv_head)
    v = _heads(a @ p["self_attn.v_proj.weight"], cfg.n_kv_head)
    cos, sin = rotary_cos_sin(np.arange(x.shape[1]), cfg.head_dim, cfg.rope_theta)
    q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
    h = x + _merge(causal_attention(q, k, v)) @ p["self_attn.o_proj.weight"]
    y = rms_norm(h, p["post_attention_layernorm.weight"], cfg.eps)
    mlp = (silu(y @ p["mlp.gate_proj.weight"]) * (y @ p["mlp.up_proj.weight"])) @ p[
        "mlp.down_proj.weight"
    ]
    return (h + mlp).astype(np.float32)
