# mypy: disable-error-code="no-any-return,no-untyped-call,index"
# mypy: disallow-subclassing-any=False
# (torch: Tensor.split is untyped, arithmetic on tensors returns Any, buffers are Tensor | Module;
# where torch is not installed (CI installs the test extra only) nn.Module is Any)
"""The example models written as PyTorch modules, for ``torch.onnx.export`` (issue 18).

Each module computes what the example's ``build`` does, from the same weights (the examples
store matrices [in, out]; ``nn.Linear`` keeps [out, in], so matrices are used as they are,
with ``x @ w``): ``examples/mlp_bf16.py``, ``examples/gpt2_block.py``,
``examples/llama_block.py``, ``examples/cnn.py`` (channels first, PyTorch's layout) and
``examples/int8_mlp.py`` (the weight dequantized in ``forward``, as a PyTorch user writes
weight-only int8 without a quantization backend). tests/test_torch_models.py checks each
against ``gd.evaluate``. torch is the ``bench`` extra: nothing else imports this module.

Every tensor a module holds is a parameter or a buffer, and ``forward`` makes its own
(positions, the causal mask) on its input's device, so ``module.to("cuda")`` runs PyTorch
eager on the GPU (tests/test_torch_devices.py checks it on the "meta" device).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import torch
from torch import nn

__all__ = ["CNN", "MLP", "GPT2Block", "Int8MLP", "LlamaBlock", "export_onnx"]

Weights = dict[str, np.ndarray]


def _param(a: np.ndarray, dtype: torch.dtype) -> nn.Parameter:
    return nn.Parameter(torch.from_numpy(np.asarray(a, np.float32).copy()).to(dtype),
                        requires_grad=False)  # fmt: skip


def _causal_mask(s: int, scores: torch.Tensor) -> torch.Tensor:
    """-inf above the diagonal, 0 on and below it: ``[s, s]`` in the scores' dtype, made on
    their device (a tensor made in ``forward`` without ``device=`` lands on the CPU)."""
    full = torch.full((s, s), float("-inf"), dtype=scores.dtype, device=scores.device)
    return full.triu(1)


class MLP(nn.Module):
    """examples/mlp_bf16.py: ``h @ w + b`` per layer, ReLU between, logits and softmax."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], dtype: torch.dtype) -> None:
        super().__init__()
        self.w = nn.ParameterList([_param(w, dtype) for w, _ in layers])
        self.b = nn.ParameterList([_param(b, dtype) for _, b in layers])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x
        for k, (w, b) in enumerate(zip(self.w, self.b, strict=True)):
            h = h @ w.to(h.dtype) + b.to(h.dtype)
            if k < len(self.w) - 1:
                h = torch.relu(h)
        return h, torch.softmax(h, dim=-1)


class Int8MLP(nn.Module):
    """examples/int8_mlp.py: ``h @ (q * scale) + b`` per layer (q int8), ReLU between."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        super().__init__()
        for k, (q, scale, b) in enumerate(layers):
            self.register_buffer(f"q{k}", torch.from_numpy(q.copy()))
            self.register_buffer(f"s{k}", torch.from_numpy(scale.copy()))
            self.register_buffer(f"b{k}", torch.from_numpy(b.copy()))
        self.n = len(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for k in range(self.n):
            w = getattr(self, f"q{k}").to(torch.float32) * getattr(self, f"s{k}")
            h = h @ w + getattr(self, f"b{k}")
            if k < self.n - 1:
                h = torch.relu(h)
        return h


class GPT2Block(nn.Module):
    """examples/gpt2_block.py: embeddings, layer norm, causal attention, GELU (tanh) MLP."""

    def __init__(self, w: Weights, n_head: int, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.p = nn.ParameterDict({k.replace(".", "_"): _param(v, dtype) for k, v in w.items()})
        self.n_head, self.eps = n_head, eps

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        p = self.p
        b, s = ids.shape
        d = p["wte"].shape[1]
        nh, hd = self.n_head, d // self.n_head
        h = p["wte"][ids] + p["wpe"][torch.arange(s, device=ids.device)]
        a = nn.functional.layer_norm(h, (d,), p["ln_1_weight"], p["ln_1_bias"], self.eps)
        qkv = a @ p["attn_c_attn_weight"] + p["attn_c_attn_bias"]
        q, k, v = (t.reshape(b, s, nh, hd).permute(0, 2, 1, 3) for t in qkv.split(d, dim=-1))
        scores = (q @ k.transpose(-1, -2)) * (1 / math.sqrt(hd))
        mask = _causal_mask(s, scores)
        ctx = torch.softmax(scores + mask, dim=-1) @ v
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, d)
        x = h + (ctx @ p["attn_c_proj_weight"] + p["attn_c_proj_bias"])
        m = nn.functional.layer_norm(x, (d,), p["ln_2_weight"], p["ln_2_bias"], self.eps)
        f = nn.functional.gelu(m @ p["mlp_c_fc_weight"] + p["mlp_c_fc_bias"], approximate="tanh")
        return x + (f @ p["mlp_c_proj_weight"] + p["mlp_c_proj_bias"])


class LlamaBlock(nn.Module):
    """examples/llama_block.py: RMS norm, rotary embeddings, grouped-query causal attention
    (by broadcasting, as the example), SiLU-gated MLP."""

    def __init__(self, w: Weights, cfg: Any, dtype: torch.dtype) -> None:
        super().__init__()
        qkv = np.concatenate([w[f"self_attn.{p}_proj.weight"] for p in "qkv"], axis=1)
        gate_up = np.concatenate([w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"]], axis=1)
        self.qkv, self.gate_up = _param(qkv, dtype), _param(gate_up, dtype)
        self.o = _param(w["self_attn.o_proj.weight"], dtype)
        self.down = _param(w["mlp.down_proj.weight"], dtype)
        self.ln1 = _param(w["input_layernorm.weight"], dtype)
        self.ln2 = _param(w["post_attention_layernorm.weight"], dtype)
        hd = cfg.head_dim
        inv = (cfg.rope_theta ** (-np.arange(0, hd, 2) / hd)).astype(np.float32)
        self.register_buffer("inv_freq", torch.from_numpy(inv).to(dtype))
        self.cfg = cfg

    def rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt((x**2).mean(-1, keepdim=True) + self.cfg.eps) * weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.cfg
        b, s, _ = x.shape
        nh, nkv, hd, rep = c.n_head, c.n_kv_head, c.head_dim, c.n_head // c.n_kv_head
        angles = torch.arange(s, dtype=x.dtype, device=x.device)[:, None] * self.inv_freq[None, :]
        emb = torch.cat([angles, angles], dim=-1)[:, None, :]
        cos, sin = emb.cos(), emb.sin()

        def rope(t: torch.Tensor) -> torch.Tensor:
            x1, x2 = torch.split(t, hd // 2, dim=-1)
            rotated: torch.Tensor = t * cos + torch.cat([-x2, x1], dim=-1) * sin
            return rotated

        a = self.rms(x, self.ln1)
        q, k, v = (a @ self.qkv).split([nh * hd, nkv * hd, nkv * hd], dim=-1)
        q = rope(q.reshape(b, s, nh, hd)).reshape(b, s, nkv, rep, hd).permute(0, 2, 3, 1, 4)
        k = rope(k.reshape(b, s, nkv, hd)).reshape(b, s, nkv, 1, hd).permute(0, 2, 3, 4, 1)
        v = v.reshape(b, s, nkv, 1, hd).permute(0, 2, 3, 1, 4)
        scores = (q @ k) * (1 / math.sqrt(hd))
        mask = _causal_mask(s, scores)
        ctx = torch.softmax(scores + mask, dim=-1) @ v
        h = x + ctx.permute(0, 3, 1, 2, 4).reshape(b, s, nh * hd) @ self.o
        y = self.rms(h, self.ln2)
        gate, up = (y @ self.gate_up).split(c.hidden, dim=-1)
        return h + (gate / (1 + torch.exp(-gate)) * up) @ self.down


class CNN(nn.Module):
    """examples/cnn.py in NCHW: conv (batch norm folded) + max pool + ReLU, a residual block,
    global average pool, dense."""

    def __init__(self, w: Weights, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.convs = nn.ModuleList()
        for name in ("stem", "block1", "block2"):
            scale = w[f"{name}.gamma"].astype(np.float64) / np.sqrt(
                w[f"{name}.var"].astype(np.float64) + eps
            )
            f = (w[f"{name}.filter"].astype(np.float64) * scale).astype(np.float32)
            bias = w[f"{name}.beta"] - w[f"{name}.mean"].astype(np.float64) * scale
            conv = nn.Conv2d(f.shape[2], f.shape[3], 3, padding=1)
            conv.weight = _param(f.transpose(3, 2, 0, 1), dtype)  # RSCF -> OIHW
            conv.bias = _param(bias.astype(np.float32), dtype)
            self.convs.append(conv)
        self.dense_w = _param(w["dense.weight"], dtype)
        self.dense_b = _param(w["dense.bias"], dtype)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        stem, block1, block2 = self.convs
        h = torch.relu(nn.functional.max_pool2d(stem(images), 3, stride=2, padding=1))
        y = torch.relu(block1(h))
        h = torch.relu(block2(y) + h)
        return h.mean(dim=(2, 3)) @ self.dense_w + self.dense_b


def export_onnx(
    module: nn.Module,
    example: tuple[torch.Tensor, ...],
    names: list[str],
    dynamic: dict[str, dict[int, str]],
) -> onnx.ModelProto:
    """``torch.onnx.export`` with its defaults (the torch.export-based exporter and its
    optimizer), symbolic sizes as given; the model as a ModelProto with its weights."""
    shapes = tuple(
        {axis: torch.export.Dim(dim, min=1) for axis, dim in dynamic.get(n, {}).items()}
        for n in names
    )  # fmt: skip
    module.eval()  # inference (these modules have no dropout or batch norm: no difference)
    program = torch.onnx.export(module, example, input_names=names, dynamic_shapes=shapes,
                                verbose=False)  # fmt: skip
    assert program is not None
    model: onnx.ModelProto = program.model_proto
    return model
