"""exporters.onnx.Generator on the Llama decoder of examples/hf_llama.py (random weights, no
torch): the KV cache against recomputing the whole sequence, left padding against each row
alone, stop tokens per row, sampling (seeded, top-k, top-p, temperature), streaming, and
the errors a user can cause. tests/test_hf_llama.py compares with transformers itself."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import floats
import numpy as np
import pytest

import graphdsl as gd
from exporters.onnx import Generator, RunError, export, generate, run

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples")]
hf_llama: Any = importlib.import_module("hf_llama")

CFG = hf_llama.Config(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2)  # fmt: skip


@pytest.fixture(scope="module")
def decoder() -> tuple[Any, Generator]:
    model = hf_llama.LlamaForCausalLM(CFG)
    model.load_state_dict(hf_llama.random_state(model, seed=3))
    onnx_model = export(hf_llama.build(model, CFG), weights=model.weights())
    return onnx_model, Generator(onnx_model, threads=1)


PROMPTS = np.random.default_rng(5).integers(1, CFG.vocab_size, size=(3, 6))


def test_cache_equals_recomputing(decoder: tuple[Any, Generator]) -> None:
    onnx_model, gen = decoder
    for row in PROMPTS:
        got = gen.generate(row[None], max_new_tokens=10)[0]
        want = hf_llama.no_cache_greedy(onnx_model, CFG, row, 10)
        np.testing.assert_array_equal(got, want)


def test_left_padding_changes_nothing(decoder: tuple[Any, Generator]) -> None:
    """A batch of prompts of 6, 4 and 2 tokens, left-padded, gives each row's own tokens."""
    _, gen = decoder
    mask = np.ones_like(PROMPTS)
    mask[1, :2] = mask[2, :4] = 0
    prompts = np.where(mask == 1, PROMPTS, 0)
    batch = gen.generate(prompts, mask, max_new_tokens=8)
    for r, start in enumerate((0, 2, 4)):
        alone = gen.generate(PROMPTS[r : r + 1, start:], max_new_tokens=8)
        np.testing.assert_array_equal(batch[r, 6:], alone[0, 6 - start :])


def test_stop_tokens_finish_rows(decoder: tuple[Any, Generator]) -> None:
    _, gen = decoder
    free = gen.generate(PROMPTS[:2], max_new_tokens=8)[:, 6:]
    eos = int(free[0, 2])  # row 0's third token
    got = gen.generate(PROMPTS[:2], max_new_tokens=8, eos_token_id=[eos], pad_token_id=49)[:, 6:]
    stop0 = list(free[0]).index(eos)
    np.testing.assert_array_equal(got[0, : stop0 + 1], free[0, : stop0 + 1])
    assert (got[0, stop0 + 1 :] == 49).all()  # finished: padded after its eos
    if eos not in free[1]:
        np.testing.assert_array_equal(got[1], free[1][: got.shape[1]])
    # all rows finished: generation stops early
    both = gen.generate(PROMPTS[:1], max_new_tokens=8, eos_token_id=eos)
    assert both.shape[1] == 6 + stop0 + 1


def test_sampling(decoder: tuple[Any, Generator]) -> None:
    _, gen = decoder
    greedy = gen.generate(PROMPTS, max_new_tokens=6)
    a = gen.generate(PROMPTS, max_new_tokens=6, do_sample=True, seed=11)
    b = gen.generate(PROMPTS, max_new_tokens=6, do_sample=True, seed=11)
    np.testing.assert_array_equal(a, b)  # seeded: reproducible
    for one in ({"top_k": 1}, {"top_p": 1e-9}, {"temperature": 1e-6}):
        np.testing.assert_array_equal(
            gen.generate(PROMPTS, max_new_tokens=6, do_sample=True, seed=1, **one), greedy
        )
    many = np.stack([gen.generate(PROMPTS[:1], max_new_tokens=1, do_sample=True, seed=s,
                                  temperature=100.0)[0, -1] for s in range(60)])  # fmt: skip
    assert len(set(many.tolist())) > 20  # a flat distribution: many tokens


def test_sampling_filters_match_transformers_rules() -> None:
    """top-k keeps the k largest; top-p the smallest set reaching p (at least one), as
    transformers' TopKLogitsWarper and TopPLogitsWarper."""
    from exporters.onnx._generate import _chooser

    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    for top_p, allowed in [(0.45, {0}), (0.75, {0, 1}), (0.9, {0, 1, 2}), (1.0, {0, 1, 2, 3})]:
        pick = _chooser(True, 1.0, 0, top_p, 0)
        seen = {int(pick(logits)[0]) for _ in range(300)}
        assert seen == allowed, (top_p, seen)
    pick = _chooser(True, 1.0, 2, 1.0, 0)
    assert {int(pick(logits)[0]) for _ in range(300)} == {0, 1}


def test_stream_is_generate(decoder: tuple[Any, Generator]) -> None:
    onnx_model, gen = decoder
    steps = list(gen.stream(PROMPTS, max_new_tokens=5))
    assert len(steps) == 5 and all(s.shape == (3,) and s.dtype == np.int64 for s in steps)
    whole = gen.generate(PROMPTS, max_new_tokens=5)
    np.testing.assert_array_equal(np.stack(steps, 1), whole[:, 6:])
    np.testing.assert_array_equal(generate(onnx_model, PROMPTS, max_new_tokens=5),
                                  gen.generate(PROMPTS, max_new_tokens=5))  # fmt: skip
    assert gen.generate(PROMPTS, max_new_tokens=0).shape == PROMPTS.shape


def test_errors(decoder: tuple[Any, Generator]) -> None:
    _, gen = decoder
    g = gd.Graph("not_a_decoder", input_types={"x": gd.TensorType(gd.float32, ("n",))})
    g.output(g.inputs[0] + 1)
    with pytest.raises(RunError, match=r"not a decoder with a KV cache.*input_ids"):
        Generator(g)
    right = np.ones_like(PROMPTS)
    right[0, -1] = 0
    with pytest.raises(ValueError, match="pad on the left"):
        gen.generate(PROMPTS, right)
    with pytest.raises(ValueError, match="attention_mask must be ints of the prompt's shape"):
        gen.generate(PROMPTS, np.ones((3, 2)))
    with pytest.raises(ValueError, match="input_ids must be integers"):
        gen.generate(PROMPTS.astype(np.float32))
    for bad, words in [({"temperature": 0}, "temperature"), ({"top_p": 0}, "top_p"),
                       ({"top_k": -1}, "top_k")]:  # fmt: skip
        with pytest.raises(ValueError, match=words):
            gen.generate(PROMPTS, do_sample=True, **bad)
    with pytest.raises(ValueError, match="max_new_tokens"):
        gen.generate(PROMPTS, max_new_tokens=-1)


def test_bad_input_is_a_clear_error(decoder: tuple[Any, Generator]) -> None:
    """Issue 31's list: token ids outside the vocabulary, a prompt or a generation past the
    position table (max_length), pasts that disagree, a mask that does not match the ids;
    each refused before onnxruntime runs, saying what to do."""
    onnx_model, gen = decoder
    bad = PROMPTS.copy()
    bad[1, 2] = CFG.vocab_size
    with pytest.raises(ValueError, match=r"token id 50 at \(1, 2\) is outside the vocabulary "
                       r"\[0, 50\)"):  # fmt: skip
        gen.generate(bad, max_new_tokens=1)
    with pytest.raises(ValueError, match="token id -1"):
        gen.generate(-np.ones((1, 2), np.int64), max_new_tokens=1)
    short = Generator(onnx_model, threads=1, max_length=8)
    assert short.generate(PROMPTS, max_new_tokens=2).shape == (3, 8)
    with pytest.raises(ValueError, match=r"6 tokens and max_new_tokens=3 make 9 positions, "
                       r"past the model's max_length=8"):  # fmt: skip
        short.generate(PROMPTS, max_new_tokens=3)
    with pytest.raises(ValueError, match=r"max_length must be an int >= 1"):
        Generator(onnx_model, max_length=0)
    hd = CFG.hidden_size // CFG.num_attention_heads
    feeds = {"input_ids": PROMPTS[:1, :3], "attention_mask": np.ones((1, 5), np.int64),
             "position_ids": np.arange(2, 5)[None]}  # fmt: skip
    feeds |= {f"past_{kv}_{i}": np.zeros((1, 2, 2, hd), np.float32)
              for i in range(CFG.num_hidden_layers) for kv in ("key", "value")}  # fmt: skip
    assert run(onnx_model, feeds)[0].shape == (1, 3, CFG.vocab_size)
    feeds["attention_mask"] = np.ones((1, 4), np.int64)  # past 2 + seq 3 is 5
    words = (
        r"input 'attention_mask': dimension 'past\+seq' is 4, but the inputs bind past = 2 "
        r"and seq = 3, which make it 5"
    )
    with pytest.raises(RunError, match=words):
        run(onnx_model, feeds)
    with pytest.raises(RunError, match=words):
        gen.session.run_with_ortvalues(feeds)
    feeds["attention_mask"] = np.ones((1, 5), np.int64)
    feeds["past_value_1"] = np.zeros((1, 2, 3, hd), np.float32)
    with pytest.raises(RunError, match=r"input 'past_value_1': dimension 'past' is 3"):
        run(onnx_model, feeds)


def test_int4_layers_match_their_dequantized_weights() -> None:
    """nn.quantize: each decoder layer's int4 weights are its own (layers never share one
    traced function's constants), the model equals the float model loaded with the
    dequantized weights, and exact=False makes them MatMulNBits that generate the same
    greedy tokens here."""
    from graphdsl import nn

    q_model = nn.quantize(hf_llama.LlamaForCausalLM(CFG), "int4", 16, skip=["lm_head"])
    state = hf_llama.random_state(q_model, seed=3)
    q_model.load_state_dict(state)
    deq = dict(state)
    for path, m in q_model.named_modules():
        if isinstance(m, nn.Linear) and m.quantized is not None:
            q, scale, _ = m.quantized
            blocks = np.repeat(scale, 16, axis=0)[: q.shape[0]]
            deq[f"{path}.weight"] = (q.astype(np.float32) * blocks).T.copy()
    f_model = hf_llama.LlamaForCausalLM(CFG)
    f_model.load_state_dict(deq)
    exact = export(hf_llama.build(q_model, CFG), weights=q_model.weights())
    floats_model = export(hf_llama.build(f_model, CFG), weights=f_model.weights())
    assert {n.op_type for f in exact.functions for n in f.node} >= {"DequantizeLinear"}
    feeds = _feeds(PROMPTS)
    from exporters.onnx import run

    got, want = run(exact, feeds)[0], run(floats_model, feeds)[0]
    # (the same float32 products in another order: the suite's figure for composed layers,
    # 1e-5 of the logits' scale, as tests/test_hf_llama.py)
    floats.assert_close(got, want, 1e-5 * (1 + np.abs(want).max()), "int4 logits")
    fast = export(hf_llama.build(q_model, CFG), weights=q_model.weights(), exact=False)
    assert "MatMulNBits" in {n.op_type for f in fast.functions for n in f.node}
    np.testing.assert_array_equal(
        Generator(fast).generate(PROMPTS, max_new_tokens=6),
        Generator(exact).generate(PROMPTS, max_new_tokens=6),
    )


def _feeds(ids: np.ndarray) -> dict[str, np.ndarray]:
    empty = np.zeros((ids.shape[0], CFG.num_key_value_heads, 0, 8), np.float32)
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "position_ids": np.broadcast_to(np.arange(ids.shape[1]), ids.shape).copy(),
    }
    return feeds | {f"past_{kv}_{i}": empty for i in range(CFG.num_hidden_layers)
                    for kv in ("key", "value")}  # fmt: skip


def test_buffered_decoder_gives_the_same_tokens(decoder: tuple[Any, Generator]) -> None:
    """The same weights exported with the cache in a fixed buffer (build_buffered: rows
    right-padded, gd.ops.group_query_attention) give the concatenating decoder's tokens for a
    left-padded batch of prompts of 6, 4 and 2 tokens, with a stop token; no new tokens
    gives the prompts back without a step."""
    _, gen = decoder
    model = hf_llama.LlamaForCausalLM(CFG)
    model.load_state_dict(hf_llama.random_state(model, seed=3))
    buffered = Generator(export(hf_llama.build_buffered(model, CFG), weights=model.weights()),
                         threads=1)  # fmt: skip
    assert buffered.buffered and not buffered.shares and not gen.buffered
    mask = np.ones_like(PROMPTS)
    mask[1, :2] = mask[2, :4] = 0
    prompts = np.where(mask == 1, PROMPTS, 0)
    want = gen.generate(prompts, mask, max_new_tokens=12)
    stop = int(want[0, 9])
    for options in ({}, {"eos_token_id": stop}):
        np.testing.assert_array_equal(
            buffered.generate(prompts, mask, max_new_tokens=12, **options),
            gen.generate(prompts, mask, max_new_tokens=12, **options))
    np.testing.assert_array_equal(buffered.generate(prompts, mask, max_new_tokens=0), prompts)


def test_buffered_decoder_with_every_positions_logits() -> None:
    """A buffered decoder may give every position's logits ``(batch, seq, vocab)``: the
    Generator takes each right-padded row's last token's. A toy whose next token is the last
    one plus 1 (mod 5), its buffer carried through: the left-padded second row's next token
    comes from its own last token (3 + 1), not from the padding after it."""
    cache = gd.TensorType(gd.float32, ("batch", 1, "buffer", 1))
    g = gd.Graph("counter", input_types={
        "input_ids": gd.TensorType(gd.int64, ("batch", "seq")),
        "attention_mask": gd.TensorType(gd.int64, ("batch", "total")),
        "past_key_0": cache, "past_value_0": cache})  # fmt: skip
    ids, _, pk, pv = g.inputs
    g.output(logits=gd.ops.one_hot((ids + 1) % 5, 5).cast(gd.float32),
             present_key_0=pk + 0.0, present_value_0=pv + 0.0)  # fmt: skip
    gen = Generator(g, threads=1)
    assert gen.buffered and not gen.shares
    got = gen.generate(np.array([[1, 2], [0, 3]]), np.array([[1, 1], [0, 1]]), max_new_tokens=3)
    np.testing.assert_array_equal(got, [[1, 2, 3, 4, 0], [0, 3, 4, 0, 1]])
