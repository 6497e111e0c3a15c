"""gd.ops.group_query_attention (issue 31, item 5): onnxruntime's KV-cache attention contract.

The reference against a plain per-row loop written from the contract (graphdsl/ops/gqa.py);
export() (standard ONNX) against the reference: the present keys and values bit for bit, the
outputs within attention's bound; export(exact=False) (com.microsoft GroupQueryAttention)
against the reference where the contract fixes the result, with past and present one buffer
(as the Generator runs it) and apart; the fallbacks where onnxruntime has no kernel; errors.
"""

from __future__ import annotations

import math

import floats
import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError

RNG = np.random.default_rng(31)
HQ, HKV, D = 4, 2, 16


def _graph(dt: gd.DType = gd.float32, rot: int | None = D, heads: int = HQ,
           size: int = D) -> gd.Graph:  # fmt: skip
    """q, k, v, the buffers, seqlens_k and (rot: the rotated features) the tables."""
    t = {"q": gd.TensorType(dt, ("b", "s", heads * size)),
         "k": gd.TensorType(dt, ("b", "s", HKV * size)),
         "v": gd.TensorType(dt, ("b", "s", HKV * size)),
         "pk": gd.TensorType(dt, ("b", HKV, "buffer", size)),
         "pv": gd.TensorType(dt, ("b", HKV, "buffer", size)),
         "lengths": gd.TensorType(gd.int32, ("b",))}  # fmt: skip
    if rot:
        t |= {"cos": gd.TensorType(dt, (32, rot // 2)), "sin": gd.TensorType(dt, (32, rot // 2))}
    g = gd.Graph("gqa", input_types=t)
    ins = g.inputs
    g.output(*gd.ops.group_query_attention(*ins, num_heads=heads, kv_num_heads=HKV))
    return g


def _feeds(s: int, lengths: list[int], buffer: int, dt: type = np.float32, rot: int | None = D,
           heads: int = HQ, size: int = D) -> list[np.ndarray]:  # fmt: skip
    b = len(lengths)
    arrays = [RNG.normal(size=(b, s, heads * size)), RNG.normal(size=(b, s, HKV * size)),
              RNG.normal(size=(b, s, HKV * size)), RNG.normal(size=(b, HKV, buffer, size)),
              RNG.normal(size=(b, HKV, buffer, size))]  # fmt: skip
    feeds = [a.astype(dt) for a in arrays] + [np.array(lengths, np.int32) - 1]
    if rot:
        angles = RNG.uniform(0, 2 * math.pi, size=(32, rot // 2))
        feeds += [np.cos(angles).astype(dt), np.sin(angles).astype(dt)]
    return feeds


def _loop(feeds: list[np.ndarray], heads: int = HQ) -> list[np.ndarray]:
    """The contract, row by row and token by token, in float64 (rotation in float32 as it
    states, for float32 operands)."""
    q, k, v, pk, pv, lens = feeds[:6]
    b, s = q.shape[:2]
    size = pk.shape[3]
    out = np.zeros(q.shape)
    keys, values = pk.astype(np.float64), pv.astype(np.float64)
    for row in range(b):
        n = int(lens[row]) + 1
        p0 = max(n - s, 0)
        for j in range(s):
            for h in range(HKV):
                key = k[row, j, h * size:(h + 1) * size]
                if len(feeds) == 8:
                    key = _rot(key, feeds[6][p0 + j], feeds[7][p0 + j])
                keys[row, h, p0 + j] = key
                values[row, h, p0 + j] = v[row, j, h * size:(h + 1) * size]
    for row in range(b):
        p0 = max(int(lens[row]) + 1 - s, 0)
        for j in range(s):
            for h in range(heads):
                query = q[row, j, h * size:(h + 1) * size]
                if len(feeds) == 8:
                    query = _rot(query, feeds[6][p0 + j], feeds[7][p0 + j])
                kv = h // (heads // HKV)
                scores = keys[row, kv, :p0 + j + 1] @ query.astype(np.float64) / math.sqrt(size)
                w = np.exp(scores - scores.max())
                out[row, j, h * size:(h + 1) * size] = (w / w.sum()) @ values[row, kv, :p0 + j + 1]
    return [out, keys, values]


def _rot(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    h = len(cos)
    x1, x2 = x[:h], x[h:2 * h]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[2 * h:]])


def _bound(feeds: list[np.ndarray], want: np.ndarray, keys: np.ndarray,
           values: np.ndarray) -> np.ndarray:  # fmt: skip
    """Attention's bound (graphdsl/ops/layers.py, tests/test_nn_ops.py's): scores off by dq =
    (D + 2) eps |q| |k| / sqrt(D) move the weights by a factor within exp(+-2 dq), the
    softmax and the weighted sum add (2 P + 10) eps of max |v|."""
    eps = 2.0**-23
    size = keys.shape[3]
    top = np.abs(feeds[0]).max() * np.abs(keys).max() * size / math.sqrt(size)
    shift = (size + 2) * eps * top
    weight = np.expm1(2 * shift) + (2 * keys.shape[2] + 10) * eps
    return np.full(want.shape, weight * np.abs(values).max() + 1e-30)


# (prompt, right-padded: rows of 5 and 3 tokens in a buffer of 8), (one new token after 4 and
# 2 cached), (one after 7: the buffer full), (three tokens after 2 cached, batch 1)
STEPS = [(5, [5, 3], 8), (1, [5, 3], 8), (1, [8, 1], 8), (3, [5], 6)]


@pytest.mark.parametrize("rot", [D, 8, None])
@pytest.mark.parametrize(("s", "lengths", "buffer"), STEPS)
def test_reference_is_the_contract(s: int, lengths: list[int], buffer: int,
                                   rot: int | None) -> None:  # fmt: skip
    feeds = _feeds(s, lengths, buffer, rot=rot)
    out, keys, values = gd.evaluate(_graph(rot=rot), feeds)
    want = _loop(feeds)
    floats.assert_bits(keys, want[1].astype(np.float32), "present keys")
    floats.assert_bits(values, want[2].astype(np.float32), "present values")
    # (both in float64, summed in their own orders, each rounded once: within an ulp)
    expect = want[0].astype(np.float32)
    floats.assert_close(out, expect, floats.ulp_bound(expect, np.float32, 1), "output")


@pytest.mark.parametrize("rot", [D, None])
@pytest.mark.parametrize(("s", "lengths", "buffer"), STEPS)
def test_export_equals_the_reference(s: int, lengths: list[int], buffer: int,
                                     rot: int | None) -> None:  # fmt: skip
    g = _graph(rot=rot)
    model = export(g, check="full")
    assert not any("GroupQueryAttention" in n.op_type for n in model.graph.node)
    feeds = _feeds(s, lengths, buffer, rot=rot)
    want = gd.evaluate(g, feeds)
    got = run(model, feeds)
    floats.assert_bits(got[1], want[1], "present keys")  # copies, and the same rotation
    floats.assert_bits(got[2], want[2], "present values")
    floats.assert_close(got[0], want[0], _bound(feeds, want[0], want[1], want[2]), "output")


def test_export_of_float16_rounds_as_the_reference() -> None:
    g = _graph(gd.float16)
    feeds = _feeds(1, [5, 3], 8, np.float16)
    want, got = gd.evaluate(g, feeds), run(export(g), feeds)
    floats.assert_bits(got[1], want[1], "present keys")
    bound = _bound(feeds, want[0], want[1], want[2]) + floats.ulp_bound(want[0], np.float16, 1)
    floats.assert_close(got[0], want[0], bound, "output")


def _contrib(rot: int | None = D, dt: gd.DType = gd.float32) -> tuple[gd.Graph, object]:
    g = _graph(dt, rot=rot)
    model = export(g, exact=False)
    contrib = [n.op_type for f in model.functions for n in f.node if n.domain == "com.microsoft"]
    assert contrib == ["GroupQueryAttention"]
    return g, model


@pytest.mark.parametrize("rot", [D, None])
@pytest.mark.parametrize(("s", "lengths", "buffer"), STEPS)
def test_contrib_export_within_its_bounds(s: int, lengths: list[int], buffer: int,
                                          rot: int | None) -> None:  # fmt: skip
    """onnxruntime's kernel against the reference where the contract fixes the result: the
    outputs of every token that is not a prompt's padding, the buffers below p_b + S (it
    zeroes the rest when the present is not the past's memory). The keys' rotation: within
    the bound below; the values are copies."""
    g, model = _contrib(rot)
    feeds = _feeds(s, lengths, buffer, rot=rot)
    want = gd.evaluate(g, feeds)
    got = run(model, feeds)
    n = np.array(lengths)
    cached = np.maximum(n - s, 0)
    tokens = np.arange(s)[None] < (n - cached)[:, None]  # (b, s): not padding
    floats.assert_close(got[0][tokens], want[0][tokens],
                        _bound(feeds, want[0], want[1], want[2])[tokens], "output")  # fmt: skip
    written = np.arange(buffer)[None] < (cached + s)[:, None]  # (b, buffer)
    # a rotated key a cos - b sin (or b cos + a sin), |cos|, |sin| <= 1: the reference rounds
    # the two products and the sum (float32), onnxruntime perhaps one product and a fused
    # multiply-add; each is within 2 u (|a| + |b|) of the exact value, u = 2**-24
    rotation = 4 * 2.0**-24 * 2 * float(np.abs(feeds[1]).max()) if rot else 0.0
    for i, what in ((1, "present keys"), (2, "present values")):
        w, r = (x.transpose(0, 2, 1, 3)[written] for x in (want[i], got[i]))
        if i == 2 or not rot:
            floats.assert_bits(r, w, what)  # copies
        else:
            floats.assert_close(r, w, np.full(w.shape, rotation), what)
        rest = got[i].transpose(0, 2, 1, 3)[~written]
        assert not rest.any(), f"{what}: onnxruntime zeroes the rest when not in place"


def test_contrib_in_place_keeps_the_buffer_as_the_reference() -> None:
    """Past and present bound to one OrtValue (the Generator's way): onnxruntime writes the
    new tokens in place and keeps the rest, as the reference does, bit for bit."""
    g, model = _contrib(rot=None)
    feeds = _feeds(2, [5], 8, rot=None)
    want = gd.evaluate(g, feeds)
    sess = ort.InferenceSession(model.SerializeToString(),  # type: ignore[attr-defined]
                                providers=["CPUExecutionProvider"])  # fmt: skip
    binding = sess.io_binding()
    names = ["q", "k", "v", "pk", "pv", "lengths"]
    buffers = {n: ort.OrtValue.ortvalue_from_numpy(feeds[i].copy()) for i, n in
               ((3, "pk"), (4, "pv"))}  # fmt: skip
    for i, n in enumerate(names):
        if n in buffers:
            binding.bind_ortvalue_input(n, buffers[n])
        else:
            binding.bind_cpu_input(n, feeds[i])
    outs = [o.name for o in sess.get_outputs()]
    binding.bind_output(outs[0])
    binding.bind_ortvalue_output(outs[1], buffers["pk"])
    binding.bind_ortvalue_output(outs[2], buffers["pv"])
    sess.run_with_iobinding(binding)
    floats.assert_bits(buffers["pv"].numpy(), want[2], "the value buffer, in place")
    assert np.array_equal(buffers["pk"].numpy()[:, :, 5:], feeds[3][:, :, 5:])


@pytest.mark.parametrize(("rot", "size", "why"), [
    (8, D, "R / 2 = 4: onnxruntime takes multiples of 8"),
    (None, 4, "head size 4: onnxruntime takes multiples of 8"),
    (8, 8, "head size 8 with rotary: onnxruntime takes multiples of 16"),
])  # fmt: skip
def test_contrib_falls_back_where_onnxruntime_refuses(rot: int, size: int, why: str) -> None:
    g = _graph(rot=rot, size=size)
    model = export(g, exact=False)
    assert not any(n.domain == "com.microsoft" for f in model.functions for n in f.node), why
    feeds = _feeds(1, [3, 2], 4, rot=rot, size=size)
    want, got = gd.evaluate(g, feeds), run(model, feeds)
    floats.assert_bits(got[2], want[2], "present values")


def test_float64_stays_standard_under_exact_false() -> None:
    g = _graph(gd.float64, rot=None)
    model = export(g, exact=False)  # (no float64 kernel in onnxruntime)
    assert not any(n.domain == "com.microsoft" for f in model.functions for n in f.node)


def test_errors_name_the_operand() -> None:
    g = gd.Graph("bad", input_types={
        "q": gd.TensorType(gd.float32, (1, 2, 32)), "kv": gd.TensorType(gd.float32, (1, 2, 32)),
        "buf": gd.TensorType(gd.float32, (1, 2, 4, 16)),
        "n": gd.TensorType(gd.int32, (1,)), "f": gd.TensorType(gd.float32, (1,))})
    q, kv, buf, n, f = g.inputs
    expected = r"key is float32\[1, 2, 32\], expected shape \(1, 2, 16\)"
    with pytest.raises(ShapeError, match=expected):
        gd.ops.group_query_attention(q, kv, kv, buf, buf, n, num_heads=2, kv_num_heads=1)
    with pytest.raises(ShapeError, match="multiple of kv_num_heads"):
        gd.ops.group_query_attention(q, kv, kv, buf, buf, n, num_heads=3, kv_num_heads=2)
    with pytest.raises(OpTypeError, match="seqlens_k must be integers"):
        gd.ops.group_query_attention(q, kv, kv, buf, buf, f, num_heads=2, kv_num_heads=2)
    with pytest.raises(OpTypeError, match="both cos and sin"):
        gd.ops.group_query_attention(q, kv, kv, buf, buf, n, f, num_heads=2, kv_num_heads=2)


def test_reference_refuses_a_row_past_the_buffer() -> None:
    g = _graph(rot=None)
    feeds = _feeds(1, [9, 3], 8, rot=None)  # 9 tokens in a buffer of 8
    with pytest.raises(ShapeError, match="row 0 holds seqlens_k \\+ 1 = 9 tokens"):
        gd.evaluate(g, feeds)


def _projected(kind: str, read_q: bool = False, bias: bool = False) -> gd.Graph:
    """q, k and v as products of one input x (b, s, 16) by three constant weights (float32
    ``linear``, or ``qmatmul`` of int4 weights in blocks of 16 with scale 1), the buffers,
    seqlens_k and the tables; ``read_q``: q is an output too."""
    g = gd.Graph("proj", input_types={
        "x": gd.TensorType(gd.float32, ("b", "s", 16)),
        "pk": gd.TensorType(gd.float32, ("b", HKV, "buffer", D)),
        "pv": gd.TensorType(gd.float32, ("b", HKV, "buffer", D)),
        "lengths": gd.TensorType(gd.int32, ("b",)),
        "cos": gd.TensorType(gd.float32, (32, D // 2)),
        "sin": gd.TensorType(gd.float32, (32, D // 2))})  # fmt: skip
    x, *rest = g.inputs
    products = []
    for i, n in enumerate((HQ * D, HKV * D, HKV * D)):
        w = np.random.default_rng(i).integers(-2, 3, size=(n, 16)).astype(np.float32)
        if kind == "linear":
            b = np.ones(n, np.float32) if bias else None
            products.append(gd.ops.linear(x, w, None if b is None else g.constant(b)))
        else:
            q = w.T.astype(ml_dtypes.int4)  # [K, N], exact: scale 1, no zero point
            products.append(gd.ops.qmatmul(x, q, np.ones((1, n), np.float32), axis=0,
                                           block_size=16))  # fmt: skip
    out = gd.ops.group_query_attention(*products, *rest, num_heads=HQ, kv_num_heads=HKV)
    g.output(*out, *products[:1] if read_q else ())
    return g


@pytest.mark.parametrize("kind", ["linear", "qmatmul"])
def test_contrib_packs_q_k_v_of_one_input(kind: str) -> None:
    """Under exact=False, q, k and v made from one input by three constant weights are one
    product (FusedMatMul or MatMulNBits, the weights concatenated along N) and
    GroupQueryAttention's packed query, as onnxruntime-genai's models: the results are the
    reference's within the contract's bounds (the products exact here: small integers).
    Not packed where something else reads q, or where a linear has a bias."""
    g = _projected(kind)
    model = export(g, exact=False)
    calls = [n for n in model.graph.node if n.op_type.startswith("com.microsoft")]
    product = "FusedMatMul" if kind == "linear" else "MatMulNBits"
    assert [c.op_type.split(".")[2] for c in calls] == [product, "GroupQueryAttention"]
    assert list(calls[1].input[:3]) == [calls[0].output[0], "", ""]
    for s, lengths, buffer in STEPS:
        x = RNG.integers(-3, 4, size=(len(lengths), s, 16)).astype(np.float32)
        feeds = [x, *_feeds(s, lengths, buffer)[3:]]
        want = gd.evaluate(g, feeds)
        got = run(model, feeds)
        n = np.array(lengths)
        cached = np.maximum(n - s, 0)
        tokens = np.arange(s)[None] < (n - cached)[:, None]
        q = x @ np.random.default_rng(0).integers(-2, 3, size=(HQ * D, 16)).T
        floats.assert_close(got[0][tokens], want[0][tokens],
                            _bound([q], want[0], want[1], want[2])[tokens], "output")
        written = np.arange(buffer)[None] < (cached + s)[:, None]
        floats.assert_bits(got[2].transpose(0, 2, 1, 3)[written],
                           want[2].transpose(0, 2, 1, 3)[written], "present values")
    for other in (_projected(kind, read_q=True), *([_projected(kind, bias=True)]
                                                   if kind == "linear" else [])):  # fmt: skip
        calls = [n for n in export(other, exact=False).graph.node
                 if n.op_type.startswith("com.microsoft")]  # fmt: skip
        assert [c.op_type.split(".")[2] for c in calls] == [product] * 3 + ["GroupQueryAttention"]
