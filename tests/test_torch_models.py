"""benchmarks/torch_models.py computes what the examples compute: each PyTorch module, run
in torch and exported with torch.onnx.export and run on onnxruntime, against
``gd.evaluate`` of the example's graph from the same weights (float32 rounding: the sums
run in other orders). Skipped without torch (the ``bench`` extra)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")  # torch.onnx.export's default exporter

import floats  # noqa: E402
from backend import inference_session  # noqa: E402

import graphdsl as gd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "benchmarks")]
import cnn  # noqa: E402
import gpt2_block  # noqa: E402
import int8_mlp  # noqa: E402
import llama_block  # noqa: E402
import mlp_bf16  # noqa: E402
import torch_models as tm  # noqa: E402

RNG = np.random.default_rng(0)


def check(g: gd.Graph, module: Any, feeds: dict[str, np.ndarray],
          dynamic: dict[str, dict[int, str]], rtol: float = 2e-5) -> None:  # fmt: skip
    want = gd.evaluate(g, feeds)
    with torch.no_grad():
        got = module(*(torch.from_numpy(v) for v in feeds.values()))
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    model = tm.export_onnx(module, tuple(torch.from_numpy(v) for v in feeds.values()),
                           list(feeds), dynamic)  # fmt: skip
    ort_out = inference_session(model).run(None, feeds)
    for w, t, o in zip(want, got, ort_out, strict=True):
        # whole models (MLPs, a CNN, transformer blocks) in torch and on onnxruntime: no bound
        # derived through them; the module's figure, rtol relatively plus rtol of the output's
        # scale (2e-5; the int8 MLP's 1e-4), through tests/floats.py
        bound = rtol * (np.abs(w) + float(np.abs(w).max()))
        floats.assert_close(t.numpy(), w, bound, "torch")
        floats.assert_close(o, w, bound, "torch.onnx.export on onnxruntime")


def test_mlp() -> None:
    layers = mlp_bf16.bf16_weights(RNG)
    f32 = [(w.astype(np.float32), b.astype(np.float32)) for w, b in layers]
    x = RNG.normal(size=(5, mlp_bf16.SIZES[0])).astype(np.float32)
    check(mlp_bf16.build(layers), tm.MLP(f32, torch.float32), {"x": x}, {"x": {0: "batch"}})


def test_int8_mlp() -> None:
    layers = int8_mlp.quantize_weights(int8_mlp.float_weights(RNG))
    x = RNG.normal(size=(3, int8_mlp.SIZES[0])).astype(np.float32)
    check(int8_mlp.build(layers), tm.Int8MLP(layers), {"x": x}, {"x": {0: "batch"}}, 1e-4)


def test_gpt2_block() -> None:
    cfg = gpt2_block.Config()
    w = gpt2_block.random_weights(cfg)
    module = tm.GPT2Block(w, cfg.n_head, cfg.eps, torch.float32)
    ids = RNG.integers(0, cfg.vocab, (2, 9))
    check(gpt2_block.build(w, cfg), module, {"ids": ids}, {"ids": {0: "batch", 1: "seq"}}, 1e-4)


def test_llama_block() -> None:
    cfg = llama_block.Config()
    w = llama_block.random_weights(cfg)
    module = tm.LlamaBlock(w, cfg, torch.float32)
    x = RNG.normal(size=(2, 7, cfg.d_model)).astype(np.float32)
    check(llama_block.build(w, cfg), module, {"x": x}, {"x": {0: "batch", 1: "seq"}}, 1e-4)


def test_cnn() -> None:
    cfg = cnn.Config()
    w = cnn.init_weights(cfg)
    module = tm.CNN(w, cfg.bn_epsilon, torch.float32)
    x = RNG.normal(size=(2, cfg.channels, cfg.image, cfg.image)).astype(np.float32)
    check(cnn.build(w, cfg, "NCHW"), module, {"images": x}, {"images": {0: "batch"}}, 1e-4)
