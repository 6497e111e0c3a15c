"""Where the exporter knows a value holds no -0.0 (exporters/onnx/_builder.py,
``Builder.no_negative_zero``), it leaves out the repairs of a zero's sign: Relu's ``+ 0.0``
and max pooling's order of -0.0 and +0.0. Each case here checks both sides: the repair is gone
where the fact holds, stays where it does not, and the result equals gd.evaluate's bit for bit
(signs of zeros and NaN positions included) wherever the math decides the sign: a sum with a
+0.0 term, x - x, a repair's + 0.0 (tests/floats.py: a sum of -0.0 products alone may be
either zero, by its order). The sums here are exact by construction: their terms are 0, ±1,
±3 and -1e-30, a few per sum."""

from __future__ import annotations

from collections.abc import Callable

import floats
import numpy as np
from backend import export, run

import graphdsl as gd

F32 = gd.float32


def graph(build: Callable[..., gd.Symbol], *types: gd.TensorType) -> gd.Graph:
    g = gd.Graph("z", input_types={f"x{i}": t for i, t in enumerate(types)})
    g.output(build(*g.inputs))
    return g


def ops(g: gd.Graph) -> list[str]:
    """The CPU target's nodes (the repairs these tests count are the CPU kernels')."""
    return [n.op_type for n in export(g, target="cpu").graph.node]


def assert_same_bits(g: gd.Graph, *xs: np.ndarray, signs: bool = True) -> None:
    """Bit for bit (tests/floats.py), or with ``signs=False`` equal but for the sign of
    zeros the math leaves to the order of a sum."""
    want = gd.evaluate(g, list(xs))[0]
    got = run(export(g, check="full"), list(xs))[0]
    if signs:
        floats.assert_bits(got, want)
    else:
        floats.assert_close(got, want, 0.0)  # exact sums, zero signs aside


def conv(x: gd.Symbol, w: np.ndarray, bias: np.ndarray | None) -> gd.Symbol:
    return gd.ops.conv2d(x, w, bias=bias, input_layout="NCHW")


# x = +0.0 times a negative weight is -0.0 in every product: a sum of them is -0.0 in the
# reference, and -0.0 + a bias of +0.0 is +0.0
ZEROS = np.zeros((1, 2, 3, 3), np.float32)
W = np.full((2, 2, 1, 1), -1.0, np.float32)
T_IN = gd.TensorType(F32, (1, 2, 3, 3))


def test_relu_of_a_convolution_with_a_bias_needs_no_repair() -> None:
    g = graph(lambda x: gd.ops.relu(conv(x, W, np.zeros(2, np.float32))), T_IN)
    assert ops(g) == ["Conv", "Relu"]
    x = ZEROS.copy()
    x[0, 0, 0, 0] = np.nan
    assert_same_bits(g, x)


def test_relu_of_a_convolution_without_a_bias_keeps_it() -> None:
    g = graph(lambda x: gd.ops.relu(conv(x, W, None)), T_IN)
    assert ops(g) == ["Conv", "Relu", "Add"]
    assert_same_bits(g, ZEROS)


def test_a_bias_holding_negative_zero_keeps_it() -> None:
    g = graph(lambda x: gd.ops.relu(conv(x, W, np.array([0.0, -0.0], np.float32))), T_IN)
    assert ops(g) == ["Conv", "Relu", "Add"]
    assert_same_bits(g, ZEROS)


def test_a_sum_keeps_the_fact_when_one_side_has_it() -> None:
    b = np.ones(2, np.float32)
    with_fact = graph(lambda x, h: gd.ops.relu(conv(x, W, b) + h), T_IN, T_IN)
    without = graph(lambda x, h: gd.ops.relu(conv(x, W, None) + h), T_IN, T_IN)
    assert ops(with_fact) == ["Conv", "Add", "Relu"]
    assert ops(without) == ["Conv", "Add", "Relu", "Add"]
    h = -np.ones_like(ZEROS)  # conv + bias = 1, + h = +0.0: -1 + 1 is +0.0, not -0.0
    assert_same_bits(with_fact, ZEROS, h)
    assert_same_bits(without, ZEROS, -ZEROS)  # -0.0 + -0.0: the repair is needed here


def test_a_narrowing_cast_loses_the_fact() -> None:
    # 1e-30 * -1 is a float32 without -0.0 that float16 rounds to -0.0; relu of it is +0.0
    tiny = np.full((2, 2, 1, 1), 1e-30, np.float32)

    def build(x: gd.Symbol) -> gd.Symbol:
        return gd.ops.relu(gd.ops.cast(conv(x, tiny, np.zeros(2, np.float32)), gd.float16))

    g = graph(build, T_IN)
    assert ops(g)[-3:] == ["Relu", "Add", "Cast"]  # in float32, then rounded to float16
    assert_same_bits(g, -np.ones_like(ZEROS))


def test_max_pool_of_a_convolution_with_a_bias_repairs_nan_only() -> None:
    T4 = gd.TensorType(F32, (1, 2, 4, 4))
    b = np.zeros(2, np.float32)

    def pooled(bias: np.ndarray | None) -> gd.Graph:
        return graph(lambda x: gd.ops.max_pool2d(conv(x, W, bias), (2, 2), stride=2,
                                                 input_layout="NCHW"), T4)  # fmt: skip

    lean, full = ops(pooled(b)), ops(pooled(None))
    assert "Div" not in lean and lean.count("MaxPool") == 2
    assert "Div" in full  # the order of -0.0 and +0.0 is repaired where the sum may be -0.0
    x = np.zeros((1, 2, 4, 4), np.float32)
    x[0, 1, 0, 1] = np.nan  # a NaN anywhere in a window makes its result NaN
    x[0, 0, 2, 2] = -3.0
    assert_same_bits(pooled(b), x)
    # without the bias a window of zeros sums -0.0 products alone: either zero
    assert_same_bits(pooled(None), x, signs=False)
