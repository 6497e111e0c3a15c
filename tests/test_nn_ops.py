"""The layer ops (graphdsl/ops/layers.py) exported and run on onnxruntime against
``gd.evaluate``, within the bounds their docstrings state, on random values with NaN, inf
and extremes mixed in; batch_norm folded into the convolution it follows; the causal mask
at run-time sizes; the errors they give."""

from __future__ import annotations

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd

RNG = np.random.default_rng(7)
EPS = float(np.finfo(np.float32).eps)


def _special(shape: tuple[int, ...], extremes: bool = True) -> np.ndarray:
    x = RNG.normal(size=shape)
    picks = [np.nan, np.inf, -np.inf, 0.0, -0.0] + ([1e30, -3e38] if extremes else [])
    mask = RNG.random(shape) < 0.1
    x[mask] = RNG.choice(picks, size=int(mask.sum()))
    return x.astype(np.float32)


def _within(got: np.ndarray, want: np.ndarray, bound: np.ndarray) -> None:
    """Within the op's stated bound, NaN where NaN, infinities equal (tests/floats.py)."""
    floats.assert_close(got, want, bound)


def test_linear_is_within_its_bound() -> None:
    g = gd.Graph("lin", input_types={"x": gd.TensorType(gd.float32, ("n", 16)),
                                     "w": gd.TensorType(gd.float32, (5, 16)),
                                     "b": gd.TensorType(gd.float32, (5,))})  # fmt: skip
    x, w, b = g.inputs
    g.output(gd.ops.linear(x, w, b))
    feeds = [_special((9, 16), extremes=False), RNG.normal(size=(5, 16)).astype(np.float32),
             RNG.normal(size=5).astype(np.float32)]  # fmt: skip
    (want,) = gd.evaluate(g, feeds)
    (got,) = run(export(g, check="full"), feeds)
    a = [np.where(np.isfinite(f), np.abs(f), 0).astype(np.float64) for f in feeds]
    _within(got, want, 19 * EPS * (a[0] @ a[1].T + a[2]))
    # the reference: float64, rounded once (x @ w.T + b): two float64 sums of 17 terms (the
    # products of float32 values exact in float64), each in its own order, rounded to float32
    ref = (feeds[0].astype(np.float64) @ feeds[1].T.astype(np.float64) + feeds[2]).astype(
        np.float32)  # fmt: skip
    with np.errstate(all="ignore"):
        s = np.abs(feeds[0].astype(np.float64)) @ np.abs(feeds[1].T) + np.abs(feeds[2])
    floats.assert_close(want, ref, floats.dot_bound(s, 17, np.float32, want, ref, np.float64))


def test_linear_under_exact_false_is_fused_matmul() -> None:
    # export(exact=False) on the CPU: onnxruntime's FusedMatMul(transB=1) reads the (out, in)
    # weight as stored (no Transpose for onnxruntime to fold into a copy per weight), within
    # linear's bound of the reference: for a weight, a computed weight, with and without a
    # bias, one row and many, 1 and 2 threads; bit for bit where the sums are exact (small
    # integers). (Measured: MatMul of the Transpose's bits, on onnxruntime 1.31 and 1.32.)
    g = gd.Graph("lin", input_types={"x": gd.TensorType(gd.float32, ("b", "s", 64)),
                                     "w": gd.TensorType(gd.float32, (48, 64))})  # fmt: skip
    x, w = g.inputs
    const = RNG.normal(size=(300, 64)).astype(np.float32)
    bias = RNG.normal(size=48).astype(np.float32)
    g.output(gd.ops.linear(x, const), gd.ops.linear(x, w, bias), gd.ops.linear(x, w))
    fast = export(g, exact=False)
    calls = [n.op_type for n in fast.graph.node if n.op_type.startswith("com.microsoft")]
    assert calls == ["com.microsoft.FusedMatMul.transB"] * 3
    assert [n.op_type for n in fast.functions[0].node] == ["FusedMatMul"]
    assert "Transpose" not in {n.op_type for n in fast.graph.node}
    for rows, small in ((1, False), (37, False), (5, True)):
        make = ((lambda shape: RNG.integers(-8, 9, size=shape).astype(np.float32)) if small
                else (lambda shape: RNG.normal(size=shape).astype(np.float32)))  # fmt: skip
        feeds = [make((2, rows, 64)), make((48, 64))]
        want = gd.evaluate(g, feeds)
        with np.errstate(all="ignore"):
            s = np.abs(feeds[0].astype(np.float64)) @ np.abs(feeds[1].T) + np.abs(bias)
        for threads in (1, 2):
            got = run(fast, feeds, threads=threads)
            floats.assert_matmul(got[0], want[0], feeds[0], const.T, "FusedMatMul, a weight")
            floats.assert_matmul(got[2], want[2], feeds[0], feeds[1].T, "FusedMatMul, an input")
            floats.assert_close(got[1], want[1],
                                floats.dot_bound(s, 65, np.float32, got[1], want[1]),
                                "FusedMatMul and the bias")  # fmt: skip


def _conv_bn(last: bool) -> gd.Graph:
    shape = ("n", 6, 6, 3) if last else ("n", 3, 6, 6)
    g = gd.Graph("conv_bn", input_types={"x": gd.TensorType(gd.float32, shape)})
    (x,) = g.inputs
    layout = "NHWC" if last else "NCHW"
    f = RNG.normal(size=(4, 3, 3, 3)).astype(np.float32)  # OIHW
    if last:
        f = np.ascontiguousarray(f.transpose(2, 3, 1, 0))  # RSCF
    c = gd.ops.conv2d(x, f, padding=(1, 1, 1, 1), bias=RNG.normal(size=4).astype(np.float32),
                      input_layout=layout)  # fmt: skip
    stats = [RNG.normal(size=4), RNG.uniform(0.5, 2, 4), RNG.normal(size=4), RNG.normal(size=4)]
    g.output(gd.ops.batch_norm(c, *(s.astype(np.float32) for s in stats), input_layout=layout))
    return g


@pytest.mark.parametrize("last", [False, True])
def test_batch_norm_after_a_conv_is_folded_into_it(last: bool) -> None:
    g = _conv_bn(last)
    model = export(g, check="full")
    ops = [n.op_type for n in model.graph.node]
    # one Conv, whose filter and bias are computed from the weights (folded at load)
    assert ops.count("Conv") == 1 and "BatchNormalization" not in ops
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    assert conv.input[1] not in {t.name for t in model.graph.initializer}
    x = _special((2, 6, 6, 3) if last else (2, 3, 6, 6), extremes=False)
    (want,) = gd.evaluate(g, [x])
    (got,) = run(model, [x])
    # (n + 6) eps of |scale| (sum|w x| + |bias| + |mean|) + |beta|, n = 27 products
    scale = gd.evaluate(_abs_graph(g), [np.where(np.isfinite(x), np.abs(x), 0)])[0]
    _within(got, want, 33 * EPS * scale.astype(np.float64) + 1e-30)


def _abs_graph(g: gd.Graph) -> gd.Graph:
    """``g`` with every constant made |constant| and batch norm's mean -|mean|: its result
    bounds the terms of the original's."""
    out = gd.Graph("abs", input_types={"x": g.inputs[0].type})
    env = {id(g.inputs[0]): out.inputs[0]}
    for node in g.nodes:
        if node.op == "input":
            continue
        if node.op == "constant":
            env[id(node)] = out.constant(np.abs(node.attrs["value"]))
            continue
        args = [env[id(i)] for i in node.inputs]
        if node.op == "batch_norm":
            args[1] = -args[1]
        env[id(node)] = out._apply(node.op, tuple(args), dict(node.attrs))
    out.output(*(env[id(o)] for o in g.outputs))
    return out


def test_batch_norm_elsewhere_is_elementwise_and_within_its_bound() -> None:
    g = gd.Graph("bn", input_types={"x": gd.TensorType(gd.float32, ("n", 4, 5))})
    (x,) = g.inputs
    mean, var = RNG.normal(size=4), RNG.uniform(0.1, 3, 4)
    gamma, beta = RNG.normal(size=4), RNG.normal(size=4)
    g.output(gd.ops.batch_norm(x, *(v.astype(np.float32) for v in (mean, var, gamma, beta))))
    model = export(g, check="full")
    assert "Conv" not in [n.op_type for n in model.graph.node]
    feeds = [_special((3, 4, 5))]
    (want,) = gd.evaluate(g, feeds)
    (got,) = run(model, feeds)
    z = (feeds[0] - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)
    with np.errstate(all="ignore"):
        terms = np.abs(z * gamma[:, None]) + np.abs(beta[:, None])
    _within(got, want, 3 * EPS * np.where(np.isfinite(terms), terms, 0) + 1e-30)
    # -3e38 normalized by a std under 1 is past float32's range, scaled by gamma back into
    # it: finite, as the reference (float32's (x - mean) / std overflowed to -inf)
    g = gd.Graph("bn", input_types={"x": gd.TensorType(gd.float32, (1, 1, 1))})
    f32 = [np.array([v], np.float32) for v in (0.0, 0.25, 0.5, 1.0)]  # std = 0.5 + ...
    g.output(gd.ops.batch_norm(g.inputs[0], *f32, epsilon=0.0))
    x = np.full((1, 1, 1), -3e38, np.float32)
    (want,) = gd.evaluate(g, [x])
    (got,) = run(export(g), [x])
    assert np.isfinite(want).all() and np.isfinite(got).all()
    _within(got, want, 3 * EPS * np.abs(want))  # the bound above: |z gamma| + |beta| is |y|


@pytest.mark.parametrize(("size", "out"), [((7, 5), (3, 2)), ((8, 6), (4, 3)), ((5, 5), (1, 1)),
                                           ((3, 4), (5, 6))])  # fmt: skip
def test_adaptive_avg_pool2d_takes_pytorchs_windows(size: tuple[int, int],
                                                    out: tuple[int, int]) -> None:  # fmt: skip
    g = gd.Graph("pool", input_types={"x": gd.TensorType(gd.float32, ("n", 2, *size))})
    g.output(gd.ops.adaptive_avg_pool2d(g.inputs[0], out))
    x = _special((3, 2, *size), extremes=False)
    (want,) = gd.evaluate(g, [x])
    # PyTorch's windows, written out: [floor(i n / m), ceil((i + 1) n / m))
    expect = np.empty((3, 2, *out))
    for i in range(out[0]):
        for j in range(out[1]):
            r0, r1 = (i * size[0]) // out[0], -(-((i + 1) * size[0]) // out[0])
            c0, c1 = (j * size[1]) // out[1], -(-((j + 1) * size[1]) // out[1])
            with np.errstate(all="ignore"):
                expect[:, :, i, j] = x[:, :, r0:r1, c0:c1].astype(np.float64).mean(axis=(2, 3))
    # two float64 means (sums of at most k terms, each in its own order), rounded to float32
    k = (-(-size[0] // out[0]) + 1) * (-(-size[1] // out[1]) + 1)
    mean_abs = gd.evaluate(g, [np.abs(x).astype(np.float32)])[0].astype(np.float64) * (1 + EPS)
    expect32 = expect.astype(np.float32)
    bound = floats.sum_bound(mean_abs, k, np.float32, want, expect32, np.float64)
    floats.assert_close(want, expect32, bound, "the reference's windows")
    (got,) = run(export(g, check="full"), [x])
    pooled = gd.evaluate(g, [np.where(np.isfinite(x), np.abs(x), 0)])[0]
    _within(got, want, (k + 2) * EPS * pooled.astype(np.float64) + 1e-30)


def _sdpa_graph(causal: bool, mask: np.ndarray | None = None, seq: int | str = "seq") -> gd.Graph:
    t = gd.TensorType(gd.float32, ("b", seq, 8))
    g = gd.Graph("sdpa", input_types={"q": t, "k": t, "v": t})
    q, k, v = g.inputs
    g.output(gd.ops.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=causal))
    return g


def _sdpa_bound(q: np.ndarray, k: np.ndarray, v: np.ndarray, want: np.ndarray) -> np.ndarray:
    mags = np.abs(q).astype(np.float64) @ np.abs(np.swapaxes(k, -1, -2)) / np.sqrt(8)
    shift = 10 * EPS * mags.max()
    return (np.expm1(2 * shift) + 2 * q.shape[-2] * EPS + 10 * EPS) * np.abs(v).max() + 1e-30


@pytest.mark.parametrize("seq", [1, 5, 9])
def test_causal_attention_masks_at_run_time_sizes(seq: int) -> None:
    g = _sdpa_graph(causal=True)
    model = export(g, check="full")  # one model for every sequence length
    assert "Range" in [n.op_type for n in model.graph.node]
    q, k, v = (RNG.normal(size=(2, seq, 8)).astype(np.float32) for _ in range(3))
    (want,) = gd.evaluate(g, [q, k, v])
    (got,) = run(model, [q, k, v])
    _within(got, want, _sdpa_bound(q, k, v, want))
    # the first query sees the first key only: its output is that key's value, exactly (a
    # softmax of one score is exp(0) / exp(0) = 1, its sum one product: exact)
    floats.assert_bits(got[:, 0], v[:, 0])
    # a later key's value never reaches an earlier query (it would move them by ~100 p)
    v2 = v.copy()
    v2[:, -1] += 100
    (again,) = run(model, [q, k, v2])
    _within(again[:, :-1], want[:, :-1], _sdpa_bound(q, k, v, want))


def test_attention_masks_bool_and_float_agree_and_nothing_to_attend_is_nan() -> None:
    rng = np.random.default_rng(11)  # (its own: the module's RNG depends on the test order)
    allowed = rng.random((4, 4)) < 0.6
    allowed[:, 0] = True  # every query sees a key,
    allowed[2] = False  # but query 2, which sees none: NaN, as PyTorch's
    as_float = np.where(allowed, 0.0, -np.inf).astype(np.float32)
    q, k, v = (rng.normal(size=(3, 4, 8)).astype(np.float32) for _ in range(3))
    outs = []
    for mask in (allowed, as_float):
        g = _sdpa_graph(causal=False, mask=mask, seq=4)
        (want,) = gd.evaluate(g, [q, k, v])
        (got,) = run(export(g, check="full"), [q, k, v])
        _within(got, want, _sdpa_bound(q, k, v, want))
        outs.append(want)
    # the same attention (a score + 0.0 is the score), each evaluation in its own order
    _within(outs[0], outs[1], _sdpa_bound(q, k, v, outs[0]))
    assert np.isnan(outs[0][:, 2]).all() and not np.isnan(outs[0][:, [0, 1, 3]]).any()


def test_attention_propagates_nan_and_inf_as_the_reference() -> None:
    g = _sdpa_graph(causal=True)
    q, k, v = (_special((2, 6, 8), extremes=False) for _ in range(3))
    (want,) = gd.evaluate(g, [q, k, v])
    (got,) = run(export(g), [q, k, v])
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda x: gd.ops.linear(x, np.ones((3, 5), np.float32)), "in_features"),
        (lambda x: gd.ops.linear(x, np.ones(4, np.float32)), "must be 2-D"),
        (lambda x: gd.ops.batch_norm(x, np.zeros(3, np.float32), np.ones(4, np.float32)),
         "1-D of the channel count"),
        (lambda x: gd.ops.adaptive_avg_pool2d(gd.ops.reshape(x, (2, 1, 1, 4)), 0),
         "two ints >= 1"),
        (lambda x: gd.ops.scaled_dot_product_attention(x, x, x, np.ones((2, 2), np.int32)),
         "bool mask"),
        (lambda x: gd.ops.batch_norm(x, np.zeros(4, np.float32), np.ones(4, np.float32),
                                     input_layout="NWHC"), "input_layout"),
    ],
)  # fmt: skip
def test_errors_say_what_is_wrong(build: object, message: str) -> None:
    g = gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, (2, 4))})
    with pytest.raises((gd.ShapeError, gd.OpTypeError), match=message):
        build(g.inputs[0])  # type: ignore[operator]


def test_adaptive_pool_needs_static_spatial_sizes() -> None:
    g = gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, ("n", 1, "h", 4))})
    with pytest.raises(gd.ShapeError, match="H and W must be static"):
        gd.ops.adaptive_avg_pool2d(g.inputs[0], 2)
