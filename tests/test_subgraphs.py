"""Subgraphs (``g.subgraph``) called many times (``gd.ops.call``): argument types and
shapes, errors, the reference, ONNX local functions and inlining (checked with the full
check, run on onnxruntime, equal bit for bit), nesting with cond and while_loop, explain
and printing, and a 24-layer transformer built from one layer subgraph: its export time
and size against the inlined version (benchmarks/subgraph_export.py prints the figures)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import floats
import numpy as np
import onnx
import pytest
from backend import export, run
from script_modules import load_script

import graphdsl as gd

Compare = Callable[[np.ndarray, np.ndarray, str], None]


def affine() -> tuple[gd.Graph, gd.Graph]:
    """A graph with an int16 input ``x [n, 3]`` and a float32 subgraph ``v * w + 1``."""
    g = gd.Graph("m", input_types={"x": gd.TensorType(gd.int16, ("n", 3))})
    sub = g.subgraph("affine", {"v": gd.TensorType(gd.float32, ("rows", 3)),
                                "w": gd.TensorType(gd.float32, (3,))})  # fmt: skip
    v, w = sub.inputs
    sub.output(v * w + 1)
    return g, sub


def run_both(g: gd.Graph, inputs: list[np.ndarray], compare: Compare = floats.assert_bits,
             **kw: object) -> list[onnx.ModelProto]:  # fmt: skip
    """Export with local functions and inlined (full check); both give the reference's
    outputs on onnxruntime: bit for bit (``floats.assert_bits``) where the outputs are exact
    by construction, else as ``compare`` says (tests/floats.py)."""
    want = gd.evaluate(g, inputs, **kw)  # type: ignore[arg-type]
    models = []
    for functions in (True, False):
        m = export(g, check="full", functions=functions, **kw)  # type: ignore[arg-type]
        got = run(m, inputs)
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            compare(a, b, f"output {k}, functions={functions}")
        models.append(m)
    return models


def test_arguments_convert_to_the_parameters_and_dimensions_bind() -> None:
    g, sub = affine()
    (x,) = g.inputs
    w = g.constant(np.array([1.0, -2.0, 0.5], np.float32))
    y = gd.ops.call(sub, x, w)  # int16 -> float32 at the call
    assert isinstance(y, gd.Symbol) and str(y.type) == "float32[n, 3]"
    z = gd.ops.call(sub, gd.ops.concat([y, y], axis=0), w)
    assert isinstance(z, gd.Symbol) and str(z.type) == "float32[n*2, 3]"
    g.output(y, z)
    lowered = gd.passes.canonicalize(g)
    calls = [n for n in lowered.nodes if n.op == "call"]
    assert calls[0].inputs[0].op == "cast" and calls[0].in_dtypes == (gd.float32, gd.float32)
    fn, inline = run_both(g, [np.array([[1, -2, 3], [300, 0, -1]], np.int16)])
    assert [n.op_type for n in fn.graph.node].count("affine") == 2
    assert len(fn.functions) == 1 and fn.functions[0].domain == "graphdsl.local"
    assert not inline.functions and "affine" not in {n.op_type for n in inline.graph.node}
    got = gd.evaluate(g, [np.array([[1, -2, 3]], np.int16)])
    assert got[0].tolist() == [[2.0, 5.0, 2.5]]
    assert got[1].tolist() == [[3.0, -9.0, 2.25]] * 2


def test_derived_dimensions_of_the_results() -> None:
    g = gd.Graph("d", input_types={"a": gd.TensorType(gd.float32, ("b", 2))})
    sub = g.subgraph("twice", [gd.TensorType(gd.float32, ("n", 2))])
    sub.output(gd.ops.concat([sub.inputs[0], sub.inputs[0]], axis=0), sub.inputs[0].reshape(-1))
    r = gd.ops.call(sub, g.inputs[0])
    assert isinstance(r, list) and [str(v.type) for v in r] == ["float32[b*2, 2]",
                                                                "float32[b*2]"]  # fmt: skip
    s = gd.ops.call(sub, g.constant(np.ones((3, 2), np.float32)))
    assert isinstance(s, list) and [v.shape for v in s] == [(6, 2), (6,)]
    g.output(*r, *s)
    for rows in (0, 1, 4):
        run_both(g, [np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)])


def test_argument_errors() -> None:
    g, sub = affine()
    (x,) = g.inputs
    wide = g.constant(np.ones(3, np.float64))
    with pytest.raises(gd.OpTypeError, match=r"argument 1 of subgraph 'affine' \(parameter "
                                             r"'w': float32\[3\]\) is float64\[3\]: float64 "
                                             r"does not convert implicitly to float32 under "
                                             r"policy 'default'"):  # fmt: skip
        gd.ops.call(sub, x, wide)
    with pytest.raises(gd.OpTypeError, match="takes 2 arguments"):
        gd.ops.call(sub, x)
    with pytest.raises(gd.ShapeError, match="give it rank 1"):
        gd.ops.call(sub, x, x)
    with pytest.raises(gd.ShapeError, match=r"needs 3 there"):
        gd.ops.call(sub, x, g.constant(np.ones(4, np.float32)))
    pair = g.subgraph("pair", [gd.TensorType(gd.float32, ("n",))] * 2)
    pair.output(pair.inputs[0] + pair.inputs[1])
    other = gd.Graph("o", input_types={"a": gd.TensorType(gd.float32, ("p",)),
                                       "b": gd.TensorType(gd.float32, ("q",))})  # fmt: skip
    with pytest.raises(gd.ShapeError, match="'n' is p by an earlier argument"):
        gd.ops.call(pair, *other.inputs)
    strict = gd.Graph("s", input_types={"a": gd.int16}, policy="jax-strict")
    f = strict.subgraph("f", [gd.float32])
    f.output(f.inputs[0])
    with pytest.raises(gd.PromotionError, match="no join under policy 'jax-strict'"):
        gd.ops.call(f, strict.inputs[0])
    lit = gd.Graph("l", input_types={"a": gd.int8})
    h = lit.subgraph("h", [gd.int8, gd.int8])
    h.output(h.inputs[0] + h.inputs[1])
    with pytest.raises(gd.LiteralError, match="300"):
        gd.ops.call(h, lit.inputs[0], 300)
    assert gd.ops.call(h, lit.inputs[0], 100).dtype is gd.int8  # type: ignore[union-attr]


def test_subgraph_rules() -> None:
    g, sub = affine()
    (x,) = g.inputs
    empty = g.subgraph("empty", [gd.float32])
    with pytest.raises(gd.GraphError, match="has no outputs"):
        gd.ops.call(empty, 1.0)
    heavy = g.subgraph("heavy", [gd.TensorType(gd.float32, (3,))])
    heavy.output(heavy.inputs[0] * heavy.weight("w", gd.float32, (3,)))
    with pytest.raises(gd.GraphError, match="declares weights 'w'; declare them on the "
                                            "calling graph"):  # fmt: skip
        gd.ops.call(heavy, g.constant(np.ones(3, np.float32)))
    gd.ops.call(sub, x, g.constant(np.ones(3, np.float32)))
    with pytest.raises(gd.GraphError, match=r"called by gd\.ops\.call and is frozen"):
        sub.output(sub.inputs[0])
    with pytest.raises(gd.OpTypeError, match="is not a Graph"):
        gd.ops.call(lambda v: v, x)  # type: ignore[arg-type]


def _exact_layers(terms: list[np.ndarray], net: np.ndarray, got: np.ndarray, want: np.ndarray,
                  what: str) -> None:  # fmt: skip
    """``got`` and the reference ``want`` both equal ``net``, the layers' float64 values:
    every layer's sums are exact in any order (checked on their terms side by side, a
    stronger condition than each layer's alone)."""
    floats.assert_exact_sum(got, want, np.concatenate(terms, axis=-1), what)
    floats.assert_exact_sum(want, net.astype(np.float32), terms[-1], f"{what}, reference")


def test_weights_pass_as_arguments_and_calls_nest_with_control_flow() -> None:
    """A layer subgraph calling another subgraph and holding a cond; called in a loop and in
    a branch; its weights are the caller's."""
    g = gd.Graph("net", input_types={"x": gd.TensorType(gd.float32, ("b", 4)), "k": gd.int32})
    x, k = g.inputs
    relu = g.subgraph("relu", [gd.TensorType(gd.float32, ("n", 4))])
    relu.output(gd.ops.maximum(relu.inputs[0], 0.0))
    layer = g.subgraph("layer", {"h": gd.TensorType(gd.float32, ("n", 4)),
                                 "w": gd.TensorType(gd.float32, (4, 4))})  # fmt: skip
    h, w = layer.inputs
    a = gd.ops.call(relu, h @ w)
    assert isinstance(a, gd.Symbol)
    layer.output(gd.ops.cond(gd.ops.any(a > 10.0), lambda: a * 0.5, lambda: a))
    ws = [g.weight(f"l{i}", gd.float32, (4, 4)) for i in range(2)]

    def body(i: gd.Symbol, v: gd.Symbol) -> tuple[gd.Symbol, gd.Symbol]:
        u = gd.ops.call(layer, v, ws[0])
        assert isinstance(u, gd.Symbol)
        return i + 1, u

    _, looped = gd.ops.while_loop([0, x], lambda i, v: i < k, body)
    out = gd.ops.cond(k > 1, lambda: gd.ops.call(layer, looped, ws[1]), lambda: looped)
    g.output(out)
    # every sum exact by construction (checked below, not assumed): x in quarters of [-8, 8],
    # weights in halves of [-2, 2]; each layer's products are multiples of 2**-(3 + layers
    # before it + halvings), at most 4 of 4**layer * 16 apiece: far from float32's 24 bits
    rng = np.random.default_rng(0)
    weights = {f"l{i}": (rng.integers(-4, 5, (4, 4)) / 2).astype(np.float32) for i in range(2)}
    halved = set()
    for steps in (0, 1, 3):
        xs = [(rng.integers(-32, 33, (3, 4)) / 4).astype(np.float32), np.array(steps, np.int32)]
        # the net in float64, exact here: each layer's products, for the check of exactness
        h, terms = xs[0].astype(np.float64), []
        for w in [weights["l0"]] * steps + [weights["l1"]] * (steps > 1):
            terms.append(floats.matmul_terms(h, w))
            h = np.maximum(terms[-1].sum(axis=-1), 0.0)
            halved.add(bool((h > 10).any()))
            h = h * 0.5 if (h > 10).any() else h
        if not terms:  # no layer: x itself comes out
            fn, _ = run_both(g, xs, weights=weights)
            continue
        fn, _ = run_both(g, xs, partial(_exact_layers, terms, h), weights=weights)
    assert halved == {True, False}  # the layer's cond took both branches
    assert sorted(f.name for f in fn.functions) == ["layer", "relu"]
    text = str(g)
    assert text.count("call layer(%h: float32[n, 4], %w: float32[4, 4]) -> float32 {") == 1
    assert text.count("call relu(") == 1


def test_explain_names_the_call() -> None:
    g, sub = affine()
    y = gd.ops.call(sub, g.inputs[0], g.constant(np.ones(3, np.float32)))
    z = gd.ops.call(sub, g.inputs[0], g.constant(np.ones(3, np.float32)))
    g.output(y, z)
    lines = g.explain().splitlines()
    conv = [s for s in lines if re.match(r"  call affine at .*: argument 0, %x int16 -> float32 "
                                         r"\(parameter 'v' is float32\[rows, 3\]", s)]  # fmt: skip
    assert len(conv) == 2  # at each call
    inside = [s for s in lines if re.match(r"  call affine at .*, in subgraph affine: add at .*: "
                                           r"literal 1 -> constant float32", s)]  # fmt: skip
    assert len(inside) == 1  # the subgraph's own conversions, once


def test_one_function_for_many_calls_and_its_inputs() -> None:
    """A function takes only the inputs its body reads (onnxruntime refuses a float8 value for
    an input nothing reads); symbolic dimensions inside it come from its inputs."""
    g = gd.Graph("f8", input_types={"a": gd.TensorType(gd.float8_e5m2, ("n",)),
                                    "b": gd.TensorType(gd.float32, ("n",))})  # fmt: skip
    a, b = g.inputs
    sub = g.subgraph("pick", {"u": gd.TensorType(gd.float8_e5m2, ("m",)),
                              "v": gd.TensorType(gd.float32, ("m",))})  # fmt: skip
    _, v = sub.inputs
    sub.output(gd.ops.reshape(v, ("m", 1)) * 2, True)
    r = gd.ops.call(sub, a, b)
    assert isinstance(r, list)
    g.output(*r)
    fn, _ = run_both(g, [np.array([1, 2], gd.float8_e5m2.np), np.array([1.5, -3], np.float32)])
    (f,) = fn.functions
    assert list(f.input) == [next(n for n in f.node if n.op_type == "Reshape").input[0]]
    assert len(fn.graph.node[0].input) == 1


def test_a_subgraph_holding_large_constants_is_inlined(tmp_path: Path) -> None:
    """A local function has no initializers: its constants would be Constant nodes in the
    model file, never external data (an int4 Llama's quantized layers made a 158 MB
    model.onnx and a session 2.4x onnxruntime's own). A subgraph whose constants reach
    INLINE_CONSTANTS_FROM bytes is inlined at its calls, its constants initializers in the
    data file; one with small constants stays a function."""
    # 1 MiB of small integers: every sum below is exact, in any order
    big = (np.arange(2**18) % 7 - 3).astype(np.float32).reshape(512, 512)
    g = gd.Graph("heavy", input_types={"x": gd.TensorType(gd.float32, ("n", 512))})
    with g.subgraph("project", {"v": gd.TensorType(gd.float32, ("m", 512))}) as heavy:
        heavy.output(heavy.inputs[0] @ heavy.constant(big))
    with g.subgraph("shift", {"v": gd.TensorType(gd.float32, ("m", 512)),
                              "s": gd.TensorType(gd.float32, (512,))}) as light:  # fmt: skip
        light.output(light.inputs[0] * light.inputs[1] + light.constant(np.float32(0.5)))
    x, scale = g.inputs[0], g.weight("scale", gd.float32, (512,))
    g.output(gd.ops.call(light, gd.ops.call(heavy, gd.ops.call(heavy, x)), scale))
    path = tmp_path / "model.onnx"  # (a graph with weights: they go to the data file)
    model = export(g, str(path), weights={"scale": np.full(512, 2.0, np.float32)})
    assert [f.name for f in model.functions] == ["shift"]
    assert path.stat().st_size < 64 * 1024  # the 1 MiB constant (used twice) in the data file
    xs = np.eye(2, 512, dtype=np.float32)
    want = gd.evaluate(g, [xs], weights={"scale": np.full(512, 2.0, np.float32)})[0]
    floats.assert_bits(run(str(path), [xs])[0], want)
    np.testing.assert_array_equal(want, (xs @ big @ big) * 2 + 0.5)


_SE = load_script("benchmarks/subgraph_export.py", "subgraph_export")


def test_a_24_layer_transformer_from_one_layer_subgraph(tmp_path: object) -> None:
    cfg = _SE.Config(layers=24, d_model=32, n_head=4)
    weights = _SE.random_weights(cfg)
    # (export time, function against inlined, is measured by benchmarks/subgraph_export.py:
    # a timed assertion here would fail on a loaded machine)
    models: dict[bool, onnx.ModelProto] = {}
    for functions in (True, False):
        g = _SE.build(cfg)
        models[functions] = export(g, weights=weights, functions=functions, check="full")
    fn, inline = models[True], models[False]
    layer_nodes = len(fn.functions[0].node)
    assert [n.op_type for n in fn.graph.node] == ["gpt2_layer"] * 24
    assert len(fn.functions) == 1 and len(inline.graph.node) >= 20 * (layer_nodes - 10)
    one = export(_SE.build(_SE.Config(layers=1, d_model=32)), weights=_SE.random_weights(
        _SE.Config(layers=1, d_model=32)), functions=False)  # fmt: skip
    # one layer plus 24 calls: the graph without its weights
    calls = sum(n.ByteSize() for n in fn.graph.node)
    assert _SE.graph_bytes(fn) <= _SE.graph_bytes(one) + calls + 2000
    assert _SE.graph_bytes(inline) >= 20 * (_SE.graph_bytes(one) - 1000)
    x = np.random.default_rng(1).normal(size=(2, 5, 32)).astype(np.float32)
    a, b = run(fn, [x])[0], run(inline, [x])[0]
    (want,) = gd.evaluate(_SE.build(cfg), [x], weights=weights)
    # float32 matmuls, reductions and tanh through 24 layers, each in its own order: no bound
    # derived through the whole network; the suite's figure for it (a few roundings of the
    # magnitudes, 1e-4 of the largest), for the model with functions and the inlined one
    tol = 1e-4 * max(1.0, float(np.max(np.abs(want))))
    floats.assert_close(a, want, tol, "functions=True")
    floats.assert_close(b, want, tol, "functions=False")
