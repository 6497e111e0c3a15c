"""LLM building blocks: gd.ops.rotary_embedding against numpy's rotate_half and GPT-J's
pairing, nn.RotaryEmbedding's tables (rope_theta, llama3 scaling, partial rotary) against
the formulas transformers uses, nn.GatedMLP's names and result."""

from __future__ import annotations

import math

import floats
import numpy as np
import pytest

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl import nn

RNG = np.random.default_rng(7)


def rotate_half_reference(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """transformers' apply_rotary_pos_emb (rotate_half), in float64, on the first
    cos.shape[-1] features (partial rotary: the rest pass through)."""
    rot = cos.shape[-1]
    part, rest = x[..., :rot].astype(np.float64), x[..., rot:]
    half = rot // 2
    turned = np.concatenate([-part[..., half:], part[..., :half]], axis=-1)
    return np.concatenate([part * cos + turned * sin, rest], axis=-1)


def interleaved_reference(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """GPT-J's rotate_every_two, in float64."""
    x = x.astype(np.float64)
    turned = np.stack([-x[..., 1::2], x[..., ::2]], axis=-1).reshape(x.shape)
    return x * cos + turned * sin


@pytest.mark.parametrize(("interleaved", "rot"), [(False, 8), (False, 4), (True, 8)])
def test_rotary_embedding_matches_the_formulas(interleaved: bool, rot: int) -> None:
    x = RNG.normal(size=(2, 3, 5, 8)).astype(np.float32)  # (batch, heads, seq, head_dim)
    angles = RNG.uniform(-10, 10, size=(2, 1, 5, rot // 2))
    lay = np.repeat(angles, 2, axis=-1) if interleaved else np.concatenate([angles] * 2, -1)
    cos, sin = np.cos(lay).astype(np.float32), np.sin(lay).astype(np.float32)
    types = {"x": x.shape, "cos": cos.shape, "sin": sin.shape}
    g = gd.Graph("rope", input_types={k: gd.TensorType(gd.float32, s) for k, s in types.items()})
    g.output(gd.ops.rotary_embedding(*g.inputs, interleaved=interleaved))
    ref = interleaved_reference if interleaved else rotate_half_reference
    want = ref(x, cos.astype(np.float64), sin.astype(np.float64))
    # each feature: a*c + b*s in float32, two products and a sum (a dot of 2: tests/floats.py)
    mags = np.abs(x).max() * (np.abs(cos) + np.abs(sin)).max()
    bound = floats.dot_bound(np.full(want.shape, mags), 2, np.float32, want, want)
    for got in (gd.evaluate(g, [x, cos, sin])[0], run(export(g), [x, cos, sin])[0]):
        assert got.dtype == np.float32 and got.shape == x.shape
        floats.assert_close(got, want.astype(np.float32), bound, "rotary")
        if rot < 8:
            floats.assert_bits(got[..., rot:], x[..., rot:])  # passed through untouched


def test_rotary_embedding_errors() -> None:
    g = gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, (2, 6)),
                                     "c": gd.TensorType(gd.float32, (2, 3)),
                                     "w": gd.TensorType(gd.float32, (2, 8))})  # fmt: skip
    x, c, w = g.inputs
    with pytest.raises(gd.ShapeError, match="must be an even static size"):
        gd.ops.rotary_embedding(x, c, c)
    with pytest.raises(gd.ShapeError, match="at most x's"):
        gd.ops.rotary_embedding(x, w, w)


def hf_inv_freq(dim: int, base: float, scaling: dict | None) -> np.ndarray:
    """transformers' _compute_default_rope_parameters and _compute_llama3_parameters, in
    float64 (the spec; graphdsl computes in float32 as transformers does)."""
    inv = 1.0 / base ** (np.arange(0, dim, 2) / dim)
    if not scaling:
        return inv
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    return np.where(medium, smoothed, scaled)


@pytest.mark.parametrize("scaling", [None, {"rope_type": "llama3", "factor": 8.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 64}])  # fmt: skip
def test_rotary_tables(scaling: dict | None) -> None:
    rope = nn.RotaryEmbedding(32, base=500000.0, rope_scaling=scaling, partial_rotary_factor=0.5)
    want_inv = hf_inv_freq(16, 500000.0, scaling)
    np.testing.assert_allclose(rope.inv_freq, want_inv, rtol=4 * 2**-24)  # float32 pow, div
    g = gd.Graph("tables", input_types={"pos": gd.TensorType(gd.int64, ("b", "s"))})
    cos, sin = rope(g.inputs[0])
    assert cos.type == gd.TensorType(gd.float32, ("b", "s", 16))
    g.output(cos, sin)
    pos = np.array([[0, 1, 2, 1000], [5, 6, 7, 8]])
    angles = pos[..., None].astype(np.float32) * rope.inv_freq  # float32, as transformers
    emb = np.concatenate([angles, angles], -1).astype(np.float64)
    for got_cos, got_sin in (gd.evaluate(g, [pos]), run(export(g), [pos])):
        # cos and sin of float32 angles up to ~1000 rad: the functions' own rounding only
        np.testing.assert_allclose(got_cos, np.cos(emb), atol=4 * 2**-24)
        np.testing.assert_allclose(got_sin, np.sin(emb), atol=4 * 2**-24)


def test_gated_mlp_is_llamas() -> None:
    mlp = nn.GatedMLP(4, 6)
    state = {n: RNG.normal(size=p.shape).astype(np.float32) for n, p in mlp.named_parameters()}
    mlp.load_state_dict(state)
    g = gd.Graph("mlp", input_types={"x": gd.TensorType(gd.float32, ("n", 4))})
    g.output(mlp(g.inputs[0]))
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    gate, up = x @ state["gate_proj.weight"].T, x @ state["up_proj.weight"].T
    want = (gate / (1 + np.exp(-gate.astype(np.float64))) * up) @ state["down_proj.weight"].T
    got = run(export(g, weights=mlp.weights()), [x])[0]
    # (three float32 matmuls and SiLU against float64: the suite's figure for composed
    # layers, 1e-5 absolute and relative, as tests/test_hf_examples.py's _check)
    floats.assert_close(got, want.astype(np.float32), 1e-5 * (1 + np.abs(want)), "GatedMLP")
    with pytest.raises(gd.OpTypeError, match="act must be"):
        nn.GatedMLP(4, 6, act="relu")


def test_fully_masked_zero_keeps_nan_rows_nan() -> None:
    """fully_masked="zero" zeroes rows whose every score is -inf (masked); a row with a NaN
    score stays NaN, as the reference's max(s) == -inf says (onnxruntime's ReduceMax skips a
    NaN: the fuzzer found [-inf, NaN] zeroed)."""
    t = {"q": gd.TensorType(gd.float32, (3, 2)), "k": gd.TensorType(gd.float32, (3, 2)),
         "v": gd.TensorType(gd.float32, (3, 2)), "m": gd.TensorType(gd.bool, (3, 3))}  # fmt: skip
    g = gd.Graph("masked", input_types=t)
    q, k, v, m = g.inputs
    g.output(gd.ops.scaled_dot_product_attention(q, k, v, mask=m, fully_masked="zero"))
    qs = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    ks = np.array([[-np.inf, 0], [np.nan, 1], [0, 1]], np.float32)  # row 0: [-inf, NaN]
    vs = np.array([[2, 3], [4, 5], [6, 7]], np.float32)
    ms = np.array([[True, True, False], [False, False, False], [False, False, True]])
    for got in (gd.evaluate(g, [qs, ks, vs, ms])[0], run(export(g), [qs, ks, vs, ms])[0]):
        assert np.isnan(got[0]).all()  # a NaN score: NaN
        floats.assert_bits(got[1], np.zeros(2, np.float32))  # fully masked: zeros
        floats.assert_bits(got[2], vs[2])  # one key seen: its value
