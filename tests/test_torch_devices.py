"""benchmarks/torch_models.py's modules move whole with ``.to(device)`` (issue 24, part 4):
every tensor a module holds is a registered parameter or buffer, and ``forward`` makes its
own tensors (positions, the causal mask) on its input's device. Checked on PyTorch's "meta"
device, which any torch build has: a CPU tensor left behind fails there as it fails on
CUDA ("Expected all tensors to be on the same device"). Skipped without torch (the ``bench``
extra)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the bench extra (not installed here)")

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "benchmarks")]
import cnn  # noqa: E402
import gpt2_block  # noqa: E402
import int8_mlp  # noqa: E402
import llama_block  # noqa: E402
import mlp_bf16  # noqa: E402
import torch_models as tm  # noqa: E402

RNG = np.random.default_rng(0)


def _mlp(dtype: Any) -> tuple[Any, tuple[Any, ...]]:
    layers = [(w.astype(np.float32), b.astype(np.float32))
              for w, b in mlp_bf16.bf16_weights(RNG)]  # fmt: skip
    return tm.MLP(layers, dtype), (torch.zeros(3, mlp_bf16.SIZES[0]),)


def _int8() -> tuple[Any, tuple[Any, ...]]:
    layers = int8_mlp.quantize_weights(int8_mlp.float_weights(RNG))
    return tm.Int8MLP(layers), (torch.zeros(3, int8_mlp.SIZES[0]),)


def _gpt2(dtype: Any) -> tuple[Any, tuple[Any, ...]]:
    cfg = gpt2_block.Config()
    module = tm.GPT2Block(gpt2_block.random_weights(cfg), cfg.n_head, cfg.eps, dtype)
    return module, (torch.zeros(2, 9, dtype=torch.int64),)


def _llama(dtype: Any) -> tuple[Any, tuple[Any, ...]]:
    cfg = llama_block.Config()
    module = tm.LlamaBlock(llama_block.random_weights(cfg), cfg, dtype)
    return module, (torch.zeros(2, 7, cfg.d_model, dtype=dtype),)


def _cnn() -> tuple[Any, tuple[Any, ...]]:
    cfg = cnn.Config()
    module = tm.CNN(cnn.init_weights(cfg), cfg.bn_epsilon, torch.float32)
    return module, (torch.zeros(2, cfg.channels, cfg.image, cfg.image),)


MODULES: dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]] = {
    "mlp float32": lambda: _mlp(torch.float32),
    "mlp bfloat16": lambda: _mlp(torch.bfloat16),
    "int8 mlp": _int8,
    "gpt2 float32": lambda: _gpt2(torch.float32),
    "gpt2 bfloat16": lambda: _gpt2(torch.bfloat16),
    "llama float32": lambda: _llama(torch.float32),
    "cnn": _cnn,
}


def _loose_tensors(module: Any) -> list[str]:
    """Tensor attributes of ``module`` or its submodules that are neither parameters nor
    buffers (``.to()`` would leave them where they are)."""
    loose = []
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not name.startswith("_"):
                loose.append(f"{prefix}.{name}" if prefix else name)
    return loose


@pytest.mark.parametrize("name", list(MODULES))
def test_every_tensor_is_registered(name: str) -> None:
    module, _ = MODULES[name]()
    assert _loose_tensors(module) == []
    tensors = [*module.parameters(), *module.buffers()]
    assert tensors, "the module holds no parameters or buffers"
    module.to("meta")
    assert {t.device.type for t in [*module.parameters(), *module.buffers()]} == {"meta"}


@pytest.mark.parametrize("name", list(MODULES))
def test_forward_runs_on_the_device_it_was_moved_to(name: str) -> None:
    module, inputs = MODULES[name]()
    with torch.no_grad():
        on_cpu = module(*inputs)
        module.to("meta")
        on_meta = module(*(t.to("meta") for t in inputs))
    cpu_outs = [on_cpu] if isinstance(on_cpu, torch.Tensor) else list(on_cpu)
    meta_outs = [on_meta] if isinstance(on_meta, torch.Tensor) else list(on_meta)
    assert [t.device.type for t in meta_outs] == ["meta"] * len(cpu_outs)
    assert [(t.shape, t.dtype) for t in meta_outs] == [(t.shape, t.dtype) for t in cpu_outs]
