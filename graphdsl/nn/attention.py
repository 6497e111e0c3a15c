"""``MultiheadAttention`` as ``torch.nn.MultiheadAttention`` (batch first), on
``gd.ops.scaled_dot_product_attention``, with PyTorch's masks (``attn_mask``,
``key_padding_mask``: bool True where attention is *not* allowed, or float added)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl import ops
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.nn.layers import DTypeLike, Linear, _dtype
from graphdsl.nn.module import Module, Parameter
from graphdsl.types import OpTypeError

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """``torch.nn.MultiheadAttention`` (self- or cross-attention, q, k and v of one width):
    ``in_proj_weight`` (3E, E), ``in_proj_bias`` (3E,), ``out_proj`` a Linear(E, E).
    ``forward(query, key, value, key_padding_mask=None, need_weights=False, attn_mask=None,
    is_causal=False)`` returns ``(output, None)``: the averaged attention weights are not
    built. Inputs are (L, N, E), or (N, L, E) with ``batch_first=True``. As PyTorch's, a bool
    ``attn_mask`` or ``key_padding_mask`` is True where attention is *not* allowed (a float
    one is added); ``is_causal=True`` applies the causal mask.

    With identity projections and keys all alike, each query attends evenly to the values:
    the output is their mean (over the keys a padding mask leaves).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> mha = nn.MultiheadAttention(2, num_heads=2, batch_first=True)
    >>> [(n, p.shape) for n, p in mha.named_parameters()]
    [('in_proj_weight', (6, 2)), ('in_proj_bias', (6,)),
     ('out_proj.weight', (2, 2)), ('out_proj.bias', (2,))]
    >>> eye, zeros = np.eye(2, dtype=np.float32), np.zeros(6, np.float32)
    >>> mha.load_state_dict({"in_proj_weight": np.vstack([eye] * 3), "in_proj_bias": zeros,
    ...                      "out_proj.weight": eye, "out_proj.bias": zeros[:2]})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("mha", input_types={"q": gd.TensorType(gd.float32, (1, 1, 2)),
    ...                                  "v": gd.TensorType(gd.float32, (1, 3, 2))})
    >>> q, v = g.inputs
    >>> out, weights = mha(q, v * 0, v)
    >>> padded, _ = mha(q, v * 0, v, key_padding_mask=np.array([[False, False, True]]))
    >>> g.output(out, padded)
    >>> values = np.array([[[1, 0], [0, 1], [2, 2]]], np.float32)
    >>> gd.evaluate(g, [np.ones((1, 1, 2), np.float32), values], weights=mha.weights())
    [array([[[1., 1.]]], dtype=float32), array([[[0.5, 0.5]]], dtype=float32)]
    """

    in_proj_weight: Any  # a Parameter; in forward, the weight's value
    in_proj_bias: Any  # a Parameter; in forward, the weight's value

    subgraph = False  # (its one submodule is out_proj: a layer, not a block)

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False, dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        if embed_dim % num_heads:
            raise OpTypeError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        dt = _dtype(dtype)
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        self.has_bias = bias
        self.in_proj_weight = Parameter((3 * embed_dim, embed_dim), dt)
        if bias:
            self.in_proj_bias = Parameter((3 * embed_dim,), dt)
        self.out_proj = Linear(embed_dim, embed_dim, bias, dt)

    def forward(self, query: Symbol, key: Symbol, value: Symbol,
                key_padding_mask: Symbol | None = None, need_weights: bool = False,
                attn_mask: Symbol | np.ndarray | None = None,
                is_causal: bool = False) -> tuple[Symbol, None]:  # fmt: skip
        e, h = self.embed_dim, self.num_heads
        if not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        w: Any = self.in_proj_weight
        b: Any = self.in_proj_bias if self.has_bias else None
        parts = []
        for i, t in enumerate((query, key, value)):
            wk = w[i * e:(i + 1) * e]
            bk = None if b is None else b[i * e:(i + 1) * e]
            y = ops.linear(t, wk, bk)  # (N, L, E) -> (N, heads, L, E / heads)
            parts.append(y.reshape(y.shape[0], y.shape[1], h, e // h).permute(0, 2, 1, 3))
        mask = _torch_mask(attn_mask)
        if key_padding_mask is not None:  # (N, S): True ignores that key for every query
            pad = _torch_mask(key_padding_mask)
            assert pad is not None
            pad = (ops.expand_dims(pad, (1, 2)) if isinstance(pad, Symbol)
                   else np.expand_dims(pad, (1, 2)))  # fmt: skip
            mask = pad if mask is None else _combine(mask, pad)
        q, k, v = parts
        ctx = ops.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
        n, length = query.shape[0], query.shape[1]
        out = self.out_proj(ctx.permute(0, 2, 1, 3).reshape(n, length, e))
        return (out if self.batch_first else out.transpose(0, 1)), None


def _torch_mask(mask: Symbol | np.ndarray | None) -> Any:
    """PyTorch's MultiheadAttention mask as scaled_dot_product_attention takes it: a bool
    one inverted (True there means "not allowed"), a float one as it is."""
    if mask is None:
        return None
    is_bool = (mask.dtype == DType.bool) if isinstance(mask, Symbol) else (
        np.asarray(mask).dtype == np.bool_)  # fmt: skip
    if not is_bool:
        return mask
    return ops.logical_not(mask) if isinstance(mask, Symbol) else ~np.asarray(mask)


def _combine(a: Any, b: Any) -> Any:
    """Two sdpa masks as one: both allow (bool), or their sum (float; bool ones as 0/-inf)."""
    if all(_is_bool(m) for m in (a, b)):
        return ops.logical_and(a, b)
    return _as_float(a) + _as_float(b)


def _is_bool(m: Any) -> bool:
    return bool(m.dtype == DType.bool) if isinstance(m, Symbol) else np.asarray(m).dtype == np.bool_


def _as_float(m: Any) -> Any:
    return ops.where(m, 0.0, -np.inf) if _is_bool(m) else m


