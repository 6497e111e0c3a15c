"""graphdsl.passes.sink_transposes (issue 24, part 5): layout transposes carried past
elementwise ops and reductions until they cancel. The sunk graph computes the same values
(bit for bit where only elementwise ops moved, within the sums' bound where a reduction or
a matmul reads another layout: tests/floats.py), has fewer transposes or is the graph itself,
and passes the verifier; the channels-last example CNN exports one Transpose (7 before),
with the same results as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import floats
import numpy as np
import pytest
from backend import export, run
from script_modules import load_script

import exporters.onnx._export as export_module
import graphdsl as gd
from graphdsl.passes import canonicalize, sink_transposes
from graphdsl.verify import verify

CNN = load_script("examples/cnn.py", "example_cnn_layout")
NHWC_TO_NCHW, NCHW_TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def _sunk(g: gd.Graph) -> tuple[gd.Graph, gd.Graph]:
    before = canonicalize(g)
    after = sink_transposes(before)
    verify(after, explicit_casts=True)
    return before, after


def _count(g: gd.Graph, op: str = "transpose") -> int:
    return sum(1 for n in g.nodes if n.op == op)


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    """Bit for bit, -0.0 where -0.0 and NaN where NaN (tests/floats.py): elementwise ops
    that round once, and (before and after the pass, on gd.evaluate) exp and tanh: the same
    numpy kernel on the same element values, only the transposes moved."""
    assert len(a) == len(b)
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        floats.assert_bits(x, y, f"output {k}")


def _graph(shape: tuple[Any, ...], build: Callable[[gd.Symbol], gd.Symbol | tuple[gd.Symbol, ...]],
           dt: gd.DType = gd.float32) -> gd.Graph:  # fmt: skip
    g = gd.Graph("g", input_types={"x": gd.TensorType(dt, shape)})
    out = build(g.inputs[0])
    g.output(*(out if isinstance(out, tuple) else (out,)))
    return g


def _values(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    x.reshape(-1)[:4] = [np.nan, -0.0, np.inf, -np.inf]
    return x


def test_a_channels_last_block_keeps_no_transpose() -> None:
    """conv-like layout changes around relu, a per-channel scale and bias, a residual add."""
    scale = np.arange(1, 5, dtype=np.float32)
    bias = np.linspace(-1, 1, 4, dtype=np.float32)

    def block(x: gd.Symbol) -> gd.Symbol:
        h = gd.ops.relu(gd.ops.transpose(x, NHWC_TO_NCHW))  # (into channels first)
        h = gd.ops.transpose(h, NCHW_TO_NHWC) * scale + bias  # (back: per-channel constants)
        y = gd.ops.transpose(gd.ops.negative(gd.ops.transpose(h, NHWC_TO_NCHW)), NCHW_TO_NHWC)
        return gd.ops.relu(y + h)  # the residual add of two carried values

    g = _graph((2, 3, 5, 4), block)
    before, after = _sunk(g)
    assert _count(before) == 4 and _count(after) == 0
    x = _values((2, 3, 5, 4))
    _same(gd.evaluate(after, [x]), gd.evaluate(g, [x]))
    _same(run(export(g), [x]), gd.evaluate(g, [x]))


def test_transposes_that_do_not_cancel_are_made_where_the_layout_is_read() -> None:
    def build(x: gd.Symbol) -> tuple[gd.Symbol, gd.Symbol]:
        t = gd.ops.exp(gd.ops.transpose(x, (1, 0)))  # [3, 4], read by a matmul: made there
        u = gd.ops.transpose(gd.ops.transpose(x, (1, 0)) + 1, (1, 0))  # cancels
        return t @ np.ones((4, 2), np.float32), u

    g = _graph((4, 3), build)
    before, after = _sunk(g)
    assert _count(before) == 2 and _count(after) == 1
    x = _values((4, 3))
    got, want = gd.evaluate(after, [x]), gd.evaluate(g, [x])
    _same(got[1:], want[1:])
    # the matmul reads exp's values in another layout: its sums in another order
    with np.errstate(all="ignore"):
        t = np.exp(x.T)
    floats.assert_matmul(got[0], want[0], t, np.ones((4, 2), np.float32))


def test_the_graph_itself_where_nothing_cancels() -> None:
    w = np.ones((4, 2), np.float32)
    g = _graph((4, 3), lambda x: gd.ops.relu(gd.ops.transpose(x, (1, 0))) @ w)  # a matmul
    before = canonicalize(g)
    assert sink_transposes(before) is before
    # carrying the transpose past exp would make it twice (for each output): not done
    g = _graph((4, 3), lambda x: (gd.ops.exp(gd.ops.transpose(x, (1, 0))),
                                  gd.ops.transpose(x, (1, 0)) * 2))  # fmt: skip
    before = canonicalize(g)
    assert _count(before) == 1 and sink_transposes(before) is before


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [(1, 2), (3,), (0, 3), None])
def test_reductions_reduce_the_corresponding_axes(
    op: str, keepdims: bool, axis: tuple[int, ...] | None
) -> None:
    reduce = getattr(gd.ops, op)

    def build(x: gd.Symbol) -> gd.Symbol:
        return reduce(gd.ops.relu(gd.ops.transpose(x, NCHW_TO_NHWC)), axis=axis,
                      keepdims=keepdims)  # fmt: skip

    g = _graph((2, 3, 4, 5), build)
    before, after = _sunk(g)
    assert _count(before) == 1 and _count(after) <= 1
    x = np.random.default_rng(3).normal(size=(2, 3, 4, 5)).astype(np.float32)
    want, got = gd.evaluate(g, [x])[0], gd.evaluate(after, [x])[0]
    ran = run(export(g), [x])[0]
    if op in ("max", "min"):  # a selection: exact
        floats.assert_bits(got, want)
        floats.assert_bits(ran, want)
        return
    # the same elements summed in another order (tests/floats.py's bound; the mean: the sum
    # of the terms / n, rounded once more, which the bound's output rounding covers)
    terms = np.maximum(np.transpose(x, NCHW_TO_NHWC), 0).astype(np.float64)
    axes = tuple(range(4)) if axis is None else axis
    n = int(np.prod([terms.shape[a] for a in axes]))
    s = np.abs(terms).sum(axis=axes, keepdims=keepdims) / (n if op == "mean" else 1)
    for result, what in ((got, "after the pass"), (ran, "onnxruntime")):
        bound = floats.sum_bound(s, n, np.float32, result, want)
        floats.assert_close(result, want, bound, what)


def test_random_elementwise_chains_compute_the_same_values() -> None:
    """Chains of transposes, unary and binary ops (constants of every rank up to the
    value's, carried values, scalars), evaluated before and after: bit for bit."""
    rng = np.random.default_rng(24)
    shape = (2, 3, 4)
    perms = [(0, 2, 1), (2, 0, 1), (1, 2, 0), (0, 1, 2), (2, 1, 0)]
    unary = [gd.ops.relu, gd.ops.negative, gd.ops.exp, gd.ops.abs, gd.ops.tanh]
    changed = 0
    for _ in range(60):
        g = gd.Graph("chain", input_types={"x": gd.TensorType(gd.float32, shape)})
        values = [g.inputs[0]]
        for _ in range(8):
            v = values[int(rng.integers(len(values)))]
            kind = int(rng.integers(4))
            if kind == 0:
                v = gd.ops.transpose(v, perms[int(rng.integers(len(perms)))])
            elif kind == 1:
                v = unary[int(rng.integers(len(unary)))](v)
            elif kind == 2:  # a constant broadcast from the right, of rank 0 to 3
                k = int(rng.integers(4))
                dims = tuple(d if rng.random() < 0.6 else 1 for d in v.shape[3 - k :])
                v = v * rng.normal(size=dims).astype(np.float32) + 0.5
            else:  # two values of the same shape (a residual add)
                same = [u for u in values if u.shape == v.shape]
                v = v + same[int(rng.integers(len(same)))]
            values.append(v)
        g.output(values[-1], values[len(values) // 2])
        before, after = _sunk(g)
        changed += after is not before
        assert after is before or _count(after) < _count(before)
        x = _values(shape, int(rng.integers(1000)))
        with np.errstate(all="ignore"):
            _same(gd.evaluate(after, [x]), gd.evaluate(g, [x]))
    assert changed >= 10  # the chains exercise the pass, not only its refusal


def test_the_channels_last_cnn_exports_one_transpose() -> None:
    cfg = CNN.Config()
    w = CNN.init_weights(cfg)
    x = np.random.default_rng(6).normal(size=(2, 32, 32, 3)).astype(np.float32)
    g = CNN.build(w, cfg, "NHWC")
    before, after = _sunk(g)
    # 6 in the graph (and, before, a 7th in the export: the mean over H and W, channels last,
    # is a Transpose and a GlobalAveragePool); the mean now reduces the untransposed value
    assert _count(before) == 6 and _count(after) == 1
    for exact in (True, False):
        model = export(CNN.build(w, cfg, "NHWC"), exact=exact)
        assert [n.op_type for n in model.graph.node].count("Transpose") == 1
    got = run(export(g), [x])[0]
    # the same model without the pass (7 Transposes): the same results, bit for bit
    saved = export_module.sink_transposes
    export_module.sink_transposes = lambda graph: graph
    try:
        unsunk = export(CNN.build(w, cfg, "NHWC"))
    finally:
        export_module.sink_transposes = saved
    assert [n.op_type for n in unsunk.graph.node].count("Transpose") == 7
    # the same results up to float32 rounding: the convolutions and the mean read other
    # layouts, so sum in other orders. A whole network: no bound derived through it; the
    # suite's figure for this CNN (tests/test_cnn_example.py's _bound: 256 eps of the
    # logits' scale) against the reference, for each
    (want,) = gd.evaluate(g, [x])
    bound = 256 * float(np.finfo(np.float32).eps) * max(1.0, float(np.max(np.abs(want))))
    floats.assert_close(got, want, bound, "one Transpose")
    floats.assert_close(run(unsunk, [x])[0], want, bound, "seven Transposes")
