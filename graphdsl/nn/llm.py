"""Layers of decoder language models, with Hugging Face's names: ``RotaryEmbedding`` (Llama's
rotary tables, with ``rope_theta``, the llama3 ``rope_scaling`` and partial rotary) and
``GatedMLP`` (Llama's and Qwen2's SwiGLU MLP: ``down(act(gate(x)) * up(x))``).

Attention itself is ``gd.ops.scaled_dot_product_attention`` (``enable_gqa`` for grouped
query heads, ``is_causal="bottom_right"`` for queries after a KV cache) on projections made
with :class:`~graphdsl.nn.Linear`; examples/hf_llama.py ports ``LlamaForCausalLM`` with these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from graphdsl import ops
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.nn.layers import Linear, _dtype
from graphdsl.nn.module import Module
from graphdsl.types import OpTypeError

__all__ = ["GatedMLP", "RotaryEmbedding", "rope_inv_freq"]

DTypeLike = DType | str


def rope_inv_freq(
    dim: int, base: float = 10000.0, rope_scaling: Mapping[str, Any] | None = None
) -> np.ndarray:
    """Llama's inverse frequencies, float32 ``(dim // 2,)``: ``1 / base ** (2i / dim)``, as
    transformers computes them (in float32), then reshaped by ``rope_scaling`` when its
    ``rope_type`` is ``"llama3"`` (Llama 3.1's smooth interpolation between ``factor`` for
    long wavelengths and 1 for short ones) or ``"linear"`` (all divided by ``factor``).
    ``None`` and ``"default"`` leave them.

    >>> rope_inv_freq(4, 100.0)
    array([1. , 0.1], dtype=float32)
    """
    exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim)
    inv: np.ndarray = (np.float32(1.0) / np.power(np.float32(base), exponents)).astype(np.float32)
    kind = (rope_scaling or {}).get("rope_type", (rope_scaling or {}).get("type", "default"))
    if kind == "default":
        return inv
    if rope_scaling is None:  # (for mypy: kind is "default" then)
        return inv
    factor = float(rope_scaling["factor"])
    if kind == "linear":
        linear: np.ndarray = (inv / np.float32(factor)).astype(np.float32)
        return linear
    if kind != "llama3":
        raise OpTypeError(
            f"RotaryEmbedding: rope_scaling type {kind!r} is not supported; graphdsl has "
            "'default', 'linear' and 'llama3'"
        )
    low, high = float(rope_scaling["low_freq_factor"]), float(rope_scaling["high_freq_factor"])
    old = float(rope_scaling["original_max_position_embeddings"])
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = np.float32(2 * math.pi) / inv
    scaled = np.where(wavelen > low_wavelen, inv / np.float32(factor), inv)
    smooth = (np.float32(old) / wavelen - np.float32(low)) / np.float32(high - low)
    smoothed = (1 - smooth) * scaled / np.float32(factor) + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    llama3: np.ndarray = np.where(medium, smoothed, scaled).astype(np.float32)
    return llama3


class RotaryEmbedding(Module):
    """Llama's rotary tables: ``forward(position_ids)`` (integers ``(batch, seq)``) gives
    ``(cos, sin)``, each ``(batch, seq, rot)`` in ``dtype``, for
    ``gd.ops.rotary_embedding(x, cos[:, None], sin[:, None])`` on ``(batch, heads, seq,
    head_dim)`` queries and keys. ``rot`` is ``int(dim * partial_rotary_factor)``; angles
    are ``position * inv_freq`` in float32 (transformers' computation), twice over
    (``rotate_half``'s layout). No parameters: the tables are made in the graph from the
    positions, so any position up to the int range works.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> rope = nn.RotaryEmbedding(4, base=100.0)
    >>> g = gd.Graph("rope", input_types={"pos": gd.TensorType(gd.int64, ("b", "s"))})
    >>> cos, sin = rope(g.inputs[0])
    >>> g.output(cos, sin)
    >>> [a.round(4) for a in gd.evaluate(g, [np.array([[0, 1]])])][1]
    array([[[0.    , 0.    , 0.    , 0.    ],
            [0.8415, 0.0998, 0.8415, 0.0998]]], dtype=float32)
    """

    def __init__(self, dim: int, max_position_embeddings: int = 2048, base: float = 10000.0,
                 rope_scaling: Mapping[str, Any] | None = None,
                 partial_rotary_factor: float = 1.0,
                 dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        self.rot = int(dim * partial_rotary_factor)
        if self.rot < 2 or self.rot % 2:
            raise OpTypeError(
                f"RotaryEmbedding: {dim} * partial_rotary_factor {partial_rotary_factor} "
                f"gives {self.rot} rotated features; it must be even and at least 2"
            )
        self.max_position_embeddings = max_position_embeddings
        self.inv_freq = rope_inv_freq(self.rot, base, rope_scaling)
        self.dt = _dtype(dtype)

    def forward(self, position_ids: Symbol) -> tuple[Symbol, Symbol]:
        angles = ops.mul(ops.cast(position_ids, DType.float32)[..., None], self.inv_freq)
        emb = ops.concat([angles, angles], axis=-1)
        cos, sin = ops.cos(emb), ops.sin(emb)
        if self.dt is not DType.float32:
            cos, sin = ops.cast(cos, self.dt), ops.cast(sin, self.dt)
        return cos, sin

    def tables(self, positions: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(cos, sin)`` of positions ``0 .. positions - 1`` (default
        ``max_position_embeddings``), each ``(positions, rot / 2)`` in ``dtype``: each angle
        once, the tables ``gd.ops.group_query_attention`` takes. The angles are
        :meth:`forward`'s (``position * inv_freq`` in float32); numpy's cos and sin of them.

        >>> from graphdsl import nn
        >>> cos, sin = nn.RotaryEmbedding(4, base=100.0).tables(2)
        >>> sin.round(4)
        array([[0.    , 0.    ],
               [0.8415, 0.0998]], dtype=float32)
        """
        n = self.max_position_embeddings if positions is None else positions
        angles = np.arange(n, dtype=np.float32)[:, None] * self.inv_freq.astype(np.float32)
        dt = self.dt.np
        return np.cos(angles).astype(dt), np.sin(angles).astype(dt)

    def extra_repr(self) -> str:
        return f"rot={self.rot}"


class GatedMLP(Module):
    """The SwiGLU MLP of Llama, Mistral and Qwen2 (``LlamaMLP``): ``down_proj(act(gate_proj(x))
    * up_proj(x))``, with their parameter names; ``act`` is ``"silu"`` (SwiGLU) or
    ``"gelu"``/``"gelu_tanh"`` (GeGLU).

    >>> from graphdsl import nn
    >>> [n for n, _ in nn.GatedMLP(4, 6).named_parameters()]
    ['gate_proj.weight', 'up_proj.weight', 'down_proj.weight']
    """

    def __init__(self, hidden_size: int, intermediate_size: int, bias: bool = False,
                 act: str = "silu", dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        if act not in ("silu", "gelu", "gelu_tanh"):
            raise OpTypeError(f"GatedMLP: act must be 'silu', 'gelu' or 'gelu_tanh', got {act!r}")
        self.act = act
        self.gate_proj = Linear(hidden_size, intermediate_size, bias, dtype)
        self.up_proj = Linear(hidden_size, intermediate_size, bias, dtype)
        self.down_proj = Linear(intermediate_size, hidden_size, bias, dtype)

    def forward(self, x: Symbol) -> Symbol:
        gate = self.gate_proj(x)
        if self.act == "silu":
            gate = ops.silu(gate)
        else:
            gate = ops.gelu(gate, approximate="tanh" if self.act == "gelu_tanh" else "none")
        y: Symbol = self.down_proj(ops.mul(gate, self.up_proj(x)))
        return y

    def extra_repr(self) -> str:
        return f"act={self.act!r}"
