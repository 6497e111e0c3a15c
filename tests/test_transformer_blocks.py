"""The GPT-2 and Llama examples, built natively, against references written independently of
graphdsl (tests/reference_blocks.py: numpy in float64) and against hand-written ONNX with
the same native operators (benchmarks/handwritten.py): values within float32 rounding,
and no more ONNX nodes than the hand-written model."""

from __future__ import annotations

from typing import Any

import floats
import numpy as np
import pytest
import reference_blocks as ref
from backend import export, run
from script_modules import load_script

import graphdsl as gd

EPS32 = float(np.finfo(np.float32).eps)


GPT2 = load_script("examples/gpt2_block.py", "example_gpt2_block")
LLAMA = load_script("examples/llama_block.py", "example_llama_block")
HANDWRITTEN = load_script("benchmarks/handwritten.py", "benchmark_handwritten")


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """float32 rounding of a block: 64 eps of the output's scale (tests/test_reference_blocks
    derives it: dot products of up to 256 terms; measured 1 to 5 eps). A whole block: no
    bound derived through it, the figure through tests/floats.py."""
    assert got.dtype == np.float32 and got.shape == want.shape
    bound = 64 * EPS32 * max(1.0, float(np.max(np.abs(want))))
    floats.assert_close(got.astype(np.float64), want.astype(np.float64), bound, "block")


@pytest.fixture(scope="module")
def gpt2() -> tuple[Any, dict[str, np.ndarray], gd.Graph]:
    cfg = ref.GPT2Config()
    assert vars(cfg) == vars(GPT2.Config())  # one configuration on both sides
    w = ref.gpt2_weights(cfg, seed=3)
    return cfg, w, GPT2.build(w, GPT2.Config())


@pytest.fixture(scope="module")
def llama() -> tuple[Any, dict[str, np.ndarray], gd.Graph]:
    cfg = ref.LlamaConfig()
    assert vars(cfg) == vars(LLAMA.Config())
    w = ref.llama_weights(cfg, seed=4)
    return cfg, w, LLAMA.build(w, LLAMA.Config())


@pytest.mark.parametrize(("batch", "seq"), [(2, 16), (1, 1), (3, 7), (1, 128)])
def test_gpt2_block_equals_the_numpy_reference(gpt2: Any, batch: int, seq: int) -> None:
    cfg, w, g = gpt2
    ids = np.random.default_rng(seq).integers(0, cfg.vocab, size=(batch, seq))
    want = ref.gpt2_block(ids, w, cfg)
    (got,) = run(export(g), {"ids": ids})
    _close(got, want)
    _close(gd.evaluate(g, {"ids": ids})[0], want)


@pytest.mark.parametrize(("batch", "seq"), [(2, 16), (1, 1), (3, 7), (1, 64)])
def test_llama_block_equals_the_numpy_reference(llama: Any, batch: int, seq: int) -> None:
    cfg, w, g = llama
    x = np.random.default_rng(seq).normal(size=(batch, seq, cfg.d_model)).astype(np.float32)
    want = ref.llama_block(x, w, cfg)
    (got,) = run(export(g), {"x": x})
    _close(got, want)
    _close(gd.evaluate(g, {"x": x})[0], want)


def test_blocks_use_native_operators_and_no_more_nodes_than_by_hand(gpt2: Any, llama: Any) -> None:
    counts = {}
    for name, (cfg, w, g), by_hand in [
        ("gpt2", gpt2, HANDWRITTEN.gpt2_block_model),
        ("llama", llama, HANDWRITTEN.llama_block_model),
    ]:
        ours = export(g, target="cpu").graph.node  # (CUDA adds index checks: cuda_target)
        theirs = by_hand(w, cfg).graph.node
        counts[name] = (len(ours), len(theirs))
        assert len(ours) <= len(theirs), f"{name}: {len(ours)} ONNX nodes, by hand {len(theirs)}"
        ops = {n.op_type for n in ours}
        assert "Scan" not in ops and "Loop" not in ops
    gpt2_ops = {n.op_type for n in export(gpt2[2], target="cpu").graph.node}
    assert {"Gather", "Range", "LayerNormalization", "Split", "Trilu", "Gelu"} <= gpt2_ops
    print(counts)
