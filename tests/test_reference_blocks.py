"""The transformer-block yardsticks checked against each other and against first principles.

``tests/reference_blocks.py`` (numpy, float64 inside) and ``benchmarks/handwritten.py``
(onnx.helper, run by onnxruntime in float32) were written independently of graphdsl; here
they must agree, and the numpy reference must pass checks that a wrong reference would fail
(causality, grouped-query sharing, rotary convention, normalization statistics).

Tolerance: ``max |onnxruntime - reference| <= 64 * eps32 * max(1, max |reference|)``, with
eps32 = 2**-23 = 1.19e-7 (the outputs here are O(1) to 4, so 7.6e-6 to 3e-5). The reference's
own error is about 1e-16 relative, so the difference is onnxruntime's float32 rounding: a
float32 dot product of K terms is off by at most about K * eps32 / 2 relative to the sum of
|terms| (K <= 256 here: 1.5e-5) and typically by sqrt(K) * eps32 / 2 (1e-6), and a block
chains about six of them plus normalizations. Measured: 3e-7 to 1.1e-6, i.e. 0.7 to 4.3
eps32 times the output's scale, so the bound leaves at least 15x headroom for other CPUs'
kernels (FMA, vector widths). It is still tight enough to catch the smallest modelling
mistake tried: GELU's erf form where the tanh approximation belongs is off by 3.3e-4, 19x the
bound (``test_tolerance_tells_gelu_forms_apart``); a wrong mask, head grouping, rotary
convention or position offset is off by 0.01 to 1. One mistake sits below any float32
tolerance (an RMSNorm eps added outside the square root: ~eps/2 = 5e-6 relative), so
``test_rms_norm_gives_unit_mean_square`` pins the eps placement analytically.

Every comparison goes through tests/floats.py: the blocks (no bound derived through a whole
block) with the figure above as the bound; the numpy reference's own checks in float64 with
the figures stated beside them (a few float64 roundings, or the analytic value's); bit for
bit only where exact by construction, or (causality) where the same kernel computes both
sides from the same values.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

import floats
import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import pytest
import reference_blocks as rb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import handwritten as hw

EPS32 = float(np.finfo(np.float32).eps)
ULPS = 64  # the bound, in units of eps32 times the output's scale (see the module docstring)

GPT2 = rb.GPT2Config()
LLAMA = rb.LlamaConfig()
SHAPES = [(1, 1), (3, 1), (2, 2), (1, 7), (2, 64), (1, GPT2.n_ctx)]


def _bound(ref: npt.NDArray[Any]) -> float:
    return ULPS * EPS32 * max(1.0, float(np.abs(ref).max()))


def _max_err(got: npt.NDArray[Any], ref: npt.NDArray[Any]) -> float:
    return float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())


def _within(got: npt.NDArray[Any], ref: npt.NDArray[Any], bound: Any, what: str = "") -> None:
    """tests/floats.py's assert_close, both sides as float64 (the reference may be either)."""
    floats.assert_close(np.asarray(got, np.float64), np.asarray(ref, np.float64), bound, what)


class _Session:
    """An onnxruntime CPU session called like the reference functions."""

    def __init__(self, m: onnx.ModelProto) -> None:
        self.sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        self.input = m.graph.input[0].name

    def __call__(self, a: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = self.sess.run(None, {self.input: a})[0]
        return out


@pytest.fixture(scope="module")
def gpt2() -> tuple[rb.Weights, _Session]:
    w = rb.gpt2_weights(GPT2, seed=1)
    return w, _Session(hw.gpt2_block_model(w, GPT2))


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda n: f"kv{n}")
def llama(request: pytest.FixtureRequest) -> tuple[rb.LlamaConfig, rb.Weights, _Session]:
    cfg = dataclasses.replace(LLAMA, n_kv_head=request.param)
    w = rb.llama_weights(cfg, seed=2)
    return cfg, w, _Session(hw.llama_block_model(w, cfg))


def _ids(batch: int, seq: int, seed: int = 0) -> npt.NDArray[np.int64]:
    return np.random.default_rng(seed).integers(0, GPT2.vocab, (batch, seq), dtype=np.int64)


def _x(batch: int, seq: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, seq, LLAMA.d_model)).astype(np.float32)


# ------------------------------------------------------------------ onnxruntime vs numpy


@pytest.mark.parametrize(("batch", "seq"), SHAPES)
def test_gpt2_onnx_matches_reference(
    gpt2: tuple[rb.Weights, _Session], batch: int, seq: int
) -> None:
    w, run = gpt2
    ids = _ids(batch, seq, seed=seq)
    ref = rb.gpt2_block(ids, w, GPT2)
    got = run(ids)
    assert got.shape == ref.shape == (batch, seq, GPT2.d_model)
    assert got.dtype == ref.dtype == np.float32
    floats.assert_close(got, ref, _bound(ref), "GPT-2 block")


@pytest.mark.parametrize(("batch", "seq"), SHAPES)
def test_llama_onnx_matches_reference(
    llama: tuple[rb.LlamaConfig, rb.Weights, _Session], batch: int, seq: int
) -> None:
    cfg, w, run = llama
    x = _x(batch, seq, seed=seq)
    ref = rb.llama_block(x, w, cfg)
    got = run(x)
    assert got.shape == ref.shape == x.shape
    assert got.dtype == ref.dtype == np.float32
    floats.assert_close(got, ref, _bound(ref), "Llama block")


def test_outputs_are_order_one() -> None:
    """The weights' scales keep activations O(1), so an absolute bound means something."""
    out = rb.gpt2_block(_ids(2, 64), rb.gpt2_weights(GPT2, seed=0), GPT2)
    assert 0.2 < out.std() < 3 and np.abs(out).max() < 10
    out = rb.llama_block(_x(2, 64), rb.llama_weights(LLAMA, seed=0), LLAMA)
    assert 0.2 < out.std() < 3 and np.abs(out).max() < 10


def test_tolerance_tells_gelu_forms_apart(gpt2: tuple[rb.Weights, _Session]) -> None:
    """The bound is tight enough to catch the erf GELU where the tanh one belongs."""
    w, _ = gpt2
    m = hw.gpt2_block_model(w, GPT2)
    (gelu,) = (n for n in m.graph.node if n.op_type == "Gelu")
    del gelu.attribute[:]  # approximate="none": the erf form
    ids = _ids(2, 64)
    ref = rb.gpt2_block(ids, w, GPT2)
    assert _max_err(_Session(m)(ids), ref) > 10 * _bound(ref)


@pytest.mark.parametrize("build", ["gpt2", "llama"])
def test_models_are_opset21_with_symbolic_batch_and_seq(build: str) -> None:
    if build == "gpt2":
        m = hw.gpt2_block_model(rb.gpt2_weights(GPT2, seed=0), GPT2)
    else:
        m = hw.llama_block_model(rb.llama_weights(LLAMA, seed=0), LLAMA)
    onnx.checker.check_model(m, full_check=True)
    assert m.ir_version == 10
    assert [(o.domain, o.version) for o in m.opset_import] == [("", 21)]
    dims = [d.dim_param for d in m.graph.input[0].type.tensor_type.shape.dim][:2]
    assert dims == ["batch", "seq"]
    assert len(m.graph.input) == 1 and [o.name for o in m.graph.output] == ["out"]


# ------------------------------------------------------------------ causality


def test_gpt2_is_causal(gpt2: tuple[rb.Weights, _Session]) -> None:
    """Changing tokens after position t changes no output at or before t (numpy and onnx)."""
    w, run = gpt2
    ids = _ids(2, 16)
    t = 9
    later = ids.copy()
    later[:, t + 1 :] = (later[:, t + 1 :] + 7) % GPT2.vocab
    for f in (lambda i: rb.gpt2_block(i, w, GPT2), run):
        a, b = f(ids), f(later)
        # bit for bit: the same kernels on the same values (a row reads no later token)
        floats.assert_bits(a[:, : t + 1], b[:, : t + 1], "up to t")
        assert np.abs(a[:, t + 1 :] - b[:, t + 1 :]).min(axis=-1).max() > 0
    # and an earlier token does reach every later position (the mask is not too wide)
    earlier = ids.copy()
    earlier[:, 0] = (earlier[:, 0] + 1) % GPT2.vocab
    a, b = rb.gpt2_block(ids, w, GPT2), rb.gpt2_block(earlier, w, GPT2)
    assert (np.abs(a - b).max(axis=-1) > 1e-6).all()


def test_llama_is_causal(llama: tuple[rb.LlamaConfig, rb.Weights, _Session]) -> None:
    cfg, w, run = llama
    x = _x(2, 12)
    t = 4
    later = x.copy()
    later[:, t + 1 :] += 1.0
    for f in (lambda a: rb.llama_block(a, w, cfg), run):
        a, b = f(x), f(later)
        floats.assert_bits(a[:, : t + 1], b[:, : t + 1], "up to t")  # as GPT-2's
    earlier = x.copy()
    earlier[:, 0] += 1.0
    a, b = rb.llama_block(x, w, cfg), rb.llama_block(earlier, w, cfg)
    assert (np.abs(a - b)[:, 1:].max(axis=-1) > 1e-6).all()  # position 0 reaches all others


def test_prefix_gives_the_same_outputs() -> None:
    """Running the first t tokens alone gives the first t rows of the full run."""
    w, lw = rb.gpt2_weights(GPT2, seed=3), rb.llama_weights(LLAMA, seed=3)
    ids, x = _ids(2, 20), _x(2, 20)
    full, lfull = rb.gpt2_block(ids, w, GPT2), rb.llama_block(x, lw, LLAMA)
    # float64 blocks whose sums numpy may block otherwise for other shapes, rounded to
    # float32: the figure 1e-6 (no bound derived through a block)
    for t in (1, 5, 19):
        _within(rb.gpt2_block(ids[:, :t], w, GPT2), full[:, :t], 1e-6, f"GPT-2, {t}")
        _within(rb.llama_block(x[:, :t], lw, LLAMA), lfull[:, :t], 1e-6, f"Llama, {t}")


# ------------------------------------------------------------------ attention


def _loop_mha(q: npt.NDArray[Any], k: npt.NDArray[Any], v: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Plain causal multi-head attention, one (batch, head, query) at a time."""
    out = np.zeros_like(q, dtype=np.float64)
    hd = q.shape[-1]
    for b, h, t in np.ndindex(*q.shape[:3]):
        s = np.array([q[b, h, t] @ k[b, h, j] / math.sqrt(hd) for j in range(t + 1)])
        p = np.exp(s - s.max())
        out[b, h, t] = (p / p.sum()) @ v[b, h, : t + 1]
    return out


def test_attention_with_as_many_kv_heads_is_plain_mha() -> None:
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 4, 6, 8)) for _ in range(3))
    # float64 attention (dot products of 8 and 6, exp, a softmax) in two orders: values O(1),
    # the figure 1e-12 (a few thousand float64 eps)
    _within(rb.causal_attention(q, k, v), _loop_mha(q, k, v), 1e-12, "MHA")


def test_gqa_shares_each_kv_head_with_consecutive_query_heads() -> None:
    """Query head h uses key/value head h // (n_head // n_kv_head), as HF's repeat_kv."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 6, 5, 8))
    k, v = rng.standard_normal((2, 2, 5, 8)), rng.standard_normal((2, 2, 5, 8))
    kk, vv = k[:, [0, 0, 0, 1, 1, 1]], v[:, [0, 0, 0, 1, 1, 1]]
    _within(rb.causal_attention(q, k, v), _loop_mha(q, kk, vv), 1e-12, "GQA")  # as above


def test_gqa_block_equals_mha_block_with_duplicated_kv_weights(
    llama: tuple[rb.LlamaConfig, rb.Weights, _Session],
) -> None:
    cfg, w, run = llama
    mha = dataclasses.replace(cfg, n_kv_head=cfg.n_head)
    wm = dict(w)
    for name in ("self_attn.k_proj.weight", "self_attn.v_proj.weight"):
        per_head = w[name].reshape(cfg.d_model, cfg.n_kv_head, cfg.head_dim)
        wm[name] = np.repeat(per_head, cfg.n_rep, axis=1).reshape(cfg.d_model, -1)
    x = _x(2, 9)
    ref = rb.llama_block(x, wm, mha)
    _within(rb.llama_block(x, w, cfg), ref, 1e-6, "GQA block")  # as the prefix test's
    floats.assert_close(run(x), ref, _bound(ref), "onnxruntime")


# ------------------------------------------------------------------ rotary


def test_rotary_at_position_zero_is_identity() -> None:
    cos, sin = rb.rotary_cos_sin([0], LLAMA.head_dim, LLAMA.rope_theta)
    x = np.random.default_rng(6).standard_normal((2, 3, 1, LLAMA.head_dim))
    # x * 1 + rotate_half(x) * 0: elementwise, exact (x holds no zero)
    floats.assert_bits(rb.apply_rotary(x, cos, sin), x)


def test_rotary_pairs_dimension_i_with_i_plus_half() -> None:
    """HF's convention (rotate_half), not GPT-J's interleaved pairs: e_0 at position p turns
    towards e_{hd/2} by p * inv_freq[0] = p radians; e_{hd/2} turns towards -e_0."""
    hd = LLAMA.head_dim
    cos, sin = rb.rotary_cos_sin([0, 1, 2], hd, LLAMA.rope_theta)
    e0, eh = np.eye(hd)[0], np.eye(hd)[hd // 2]
    # numpy's cos and sin against math's (each within an ulp or two of the exact values,
    # at most 1): the figure 1e-15
    for p in range(3):
        _within(rb.apply_rotary(e0, cos[p], sin[p]), math.cos(p) * e0 + math.sin(p) * eh, 1e-15)
        _within(rb.apply_rotary(eh, cos[p], sin[p]), math.cos(p) * eh - math.sin(p) * e0, 1e-15)
    inv_freq = LLAMA.rope_theta ** (-2 * np.arange(hd // 2) / hd)
    # arccos near 1 amplifies cos's rounding (d arccos = -dc / sin): the figure 1e-7 relatively
    _within(np.arccos(cos[1, : hd // 2]), inv_freq, 1e-7 * inv_freq, "inv_freq")


def test_rotary_scores_depend_on_relative_position_only() -> None:
    hd = LLAMA.head_dim
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal(hd), rng.standard_normal(hd)
    cos, sin = rb.rotary_cos_sin(np.arange(40), hd, LLAMA.rope_theta)

    def score(m: int, n: int) -> float:
        return float(rb.apply_rotary(q, cos[m], sin[m]) @ rb.apply_rotary(k, cos[n], sin[n]))

    # dot products of 64 rotated values (each a few roundings off): the figure 1e-12
    _within(np.array(score(7, 3)), np.array(score(30, 26)), 1e-12, "relative position")
    assert score(7, 3) != pytest.approx(score(7, 4), abs=1e-3)
    norm = np.linalg.norm(q)  # a rotation keeps the norm: the figure 1e-7 relatively
    _within(np.linalg.norm(rb.apply_rotary(q, cos[9], sin[9])), norm, 1e-7 * norm, "norm")


# ------------------------------------------------------------------ norms and activations


def test_layer_norm_normalizes_before_the_affine_part() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5, 64)) * 4 + 2
    y = rb.layer_norm(x, np.ones(64), np.zeros(64), eps=1e-5)
    # analytic values (mean 0; variance var / (var + eps), var ~ 16: 1 - 6e-7), with the
    # figures 1e-12 for float64 sums of 64 normalized values and 1e-5 for the variance
    _within(y.mean(axis=-1), np.zeros(y.shape[:-1]), 1e-12, "mean")
    _within(y.var(axis=-1), np.ones(y.shape[:-1]), 1e-5, "variance")
    wgt, bias = rng.standard_normal(64), rng.standard_normal(64)
    _within(rb.layer_norm(x, wgt, bias, 1e-5), y * wgt + bias, 1e-12, "affine")
    # eps sits inside the square root, next to the biased variance
    z = np.array([-1.0, 1.0]) * math.sqrt(1e-5)  # variance == eps
    _within(rb.layer_norm(z, [1, 1], [0, 0], 1e-5).var(), 0.5, 1e-7 * 0.5, "eps inside")


def test_rms_norm_gives_unit_mean_square() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 5, 64)) * 3 + 1
    y = rb.rms_norm(x, np.ones(64), eps=1e-5)
    # analytic values with the figures beside them (as layer_norm's above)
    _within((y * y).mean(axis=-1), np.ones(y.shape[:-1]), 1e-5, "mean square")
    assert abs(y.mean()) > 0.1  # no centring: the mean survives
    golden = np.array([3 / 12.5**0.5, 4 / 12.5**0.5])
    _within(rb.rms_norm([3.0, 4.0], [1, 1], 0.0), golden, 1e-7 * golden, "3-4-5")
    # eps sits inside the square root (an eps added after it is invisible at float32 tolerance)
    z = np.array([-1.0, 1.0]) * math.sqrt(1e-5)  # mean square == eps
    _within((rb.rms_norm(z, [1, 1], 1e-5) ** 2).mean(), 0.5, 1e-7 * 0.5, "eps inside")


def test_gelu_new_is_the_tanh_approximation() -> None:
    xs = np.linspace(-6, 6, 241)
    erf_gelu = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs])
    diff = np.abs(rb.gelu_new(xs) - erf_gelu)
    assert 1e-5 < diff.max() < 1e-3  # close to, yet not, the exact GELU
    assert rb.gelu_new(0.0) == 0.0
    # HF's gelu_new(1); silu against math's exp: a few float64 roundings (the figures)
    _within(rb.gelu_new(1.0), 0.8411919906082768, 1e-15, "gelu_new(1)")
    silu = np.array([0.0, 1 / (1 + math.exp(-1))])
    _within(rb.silu([0.0, 1.0]), silu, 1e-7 * silu, "silu")


# ------------------------------------------------------------------ weights and inputs


def test_weights_have_hf_names_shapes_and_float32() -> None:
    w = rb.gpt2_weights(GPT2, seed=0)
    d = GPT2.d_model
    assert {k: v.shape for k, v in w.items()} == {
        "wte": (GPT2.vocab, d), "wpe": (GPT2.n_ctx, d),
        "ln_1.weight": (d,), "ln_1.bias": (d,),
        "attn.c_attn.weight": (d, 3 * d), "attn.c_attn.bias": (3 * d,),
        "attn.c_proj.weight": (d, d), "attn.c_proj.bias": (d,),
        "ln_2.weight": (d,), "ln_2.bias": (d,),
        "mlp.c_fc.weight": (d, 4 * d), "mlp.c_fc.bias": (4 * d,),
        "mlp.c_proj.weight": (4 * d, d), "mlp.c_proj.bias": (d,),
    }  # fmt: skip
    lw = rb.llama_weights(LLAMA, seed=0)
    hd, nh, nkv, hid = LLAMA.head_dim, LLAMA.n_head, LLAMA.n_kv_head, LLAMA.hidden
    assert {k: v.shape for k, v in lw.items()} == {
        "input_layernorm.weight": (d,),
        "self_attn.q_proj.weight": (d, nh * hd), "self_attn.k_proj.weight": (d, nkv * hd),
        "self_attn.v_proj.weight": (d, nkv * hd), "self_attn.o_proj.weight": (nh * hd, d),
        "post_attention_layernorm.weight": (d,),
        "mlp.gate_proj.weight": (d, hid), "mlp.up_proj.weight": (d, hid),
        "mlp.down_proj.weight": (hid, d),
    }  # fmt: skip
    for a in (*w.values(), *lw.values()):
        assert a.dtype == np.float32
    assert abs(float(w["ln_1.weight"].mean()) - 1) < 0.1
    floats.assert_bits(rb.gpt2_weights(GPT2, seed=0)["wte"], w["wte"])  # the same draws
    assert not np.array_equal(rb.gpt2_weights(GPT2, seed=1)["wte"], w["wte"])


def test_reference_rejects_bad_inputs() -> None:
    w = rb.gpt2_weights(GPT2, seed=0)
    with pytest.raises(ValueError, match="token ids"):
        rb.gpt2_block(np.array([[GPT2.vocab]]), w, GPT2)
    with pytest.raises(ValueError, match="n_ctx"):
        rb.gpt2_block(np.zeros((1, GPT2.n_ctx + 1), np.int64), w, GPT2)
    with pytest.raises(ValueError, match=r"\[batch, seq, 64\]"):
        rb.llama_block(np.zeros((2, 64)), rb.llama_weights(LLAMA, seed=0), LLAMA)
