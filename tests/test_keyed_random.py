"""Random values from a seed given when the model runs (an int64 scalar input, MAX's
``set_seed(tensor)``): graphdsl's counter-based generator (SplitMix64 over element
counters, graphdsl/ops/random.py) built of integer ops, so onnxruntime and the reference
agree bit for bit for uniform draws."""

from __future__ import annotations

import numpy as np
import pytest

import graphdsl as gd
from exporters.onnx import ExportError, export, run
from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def keyed_bits(seed: int, stream: int, index: tuple[int, ...]) -> int:
    """The spec in Python ints: SplitMix64's mixing (Steele, Lea and Flood 2014) of the seed
    and stream, then of each axis's index in turn."""
    z = _mix((seed + (stream + 1) * GOLDEN) & MASK)
    for i in index:
        z = _mix((z + (i + 1) * GOLDEN) & MASK)
    return z


def spec_unit(seed: int, shape: tuple[int, ...], stream: int = 0) -> np.ndarray:
    bits = [keyed_bits(seed & MASK, stream, ix) for ix in np.ndindex(*shape)]
    return np.array([b >> 11 for b in bits], np.float64).reshape(shape) * 2.0**-53


def keyed_graph() -> gd.Graph:
    g = gd.Graph("keyed", input_types={"seed": gd.TensorType(gd.int64, ())})
    (s,) = g.inputs
    g.output(
        gd.ops.random_uniform((5,), gd.float64, seed=s),
        gd.ops.random_uniform((30, 40), gd.float32, -2.0, 3.0, seed=s),
        gd.ops.random_normal((20000,), gd.float32, 5.0, 0.5, seed=s),
        gd.ops.random_uniform((0, 3), gd.bfloat16, seed=s),
    )
    return g


@pytest.mark.parametrize("seed", [0, 7, -1, 2**63 - 1, -(2**63)])
def test_uniform_is_splitmix64_and_onnxruntime_agrees(seed: int) -> None:
    g = keyed_graph()
    feed = {"seed": np.int64(seed)}
    want = gd.evaluate(g, feed)
    got = run(export(g), feed)
    np.testing.assert_array_equal(want[0], spec_unit(seed, (5,)))
    np.testing.assert_array_equal(want[1], (spec_unit(seed, (30, 40)) * 5.0 - 2.0).astype("f4"))
    for w, o in zip(want[:2] + want[3:], got[:2] + got[3:], strict=True):
        assert w.dtype == o.dtype and w.shape == o.shape
        np.testing.assert_array_equal(w.view(np.uint8), o.view(np.uint8))  # bit for bit
    assert want[1].min() >= -2.0 and want[1].max() <= 3.0
    # normal: Box-Muller through log, sqrt, cos in float64, then float32 rounding; the
    # two sides' float64 functions differ by a few ulps, far below float32's half ulp
    np.testing.assert_allclose(got[2], want[2], rtol=2**-22, atol=2**-20)
    assert abs(float(want[2].mean()) - 5.0) < 0.02 and abs(float(want[2].std()) - 0.5) < 0.02


def test_symbolic_shape() -> None:
    """A seed tensor draws a symbolic shape (sizes bound when the model runs)."""
    g = gd.Graph("sym", input_types={"seed": gd.TensorType(gd.int64, ()),
                                     "x": gd.TensorType(gd.float32, ("n", 3))})  # fmt: skip
    seed, _ = g.inputs
    u = gd.ops.random_uniform(("n", 3), gd.float64, seed=seed)
    assert u.type == gd.TensorType(gd.float64, ("n", 3))
    g.output(u)
    feed = {"seed": np.int64(5), "x": np.zeros((4, 3), np.float32)}
    want = gd.evaluate(g, feed)[0]
    np.testing.assert_array_equal(want, spec_unit(5, (4, 3)))
    np.testing.assert_array_equal(run(export(g), feed)[0], want)


def test_seeds_and_draws_differ() -> None:
    g = keyed_graph()
    a = gd.evaluate(g, {"seed": np.int64(1)})[1]
    b = gd.evaluate(g, {"seed": np.int64(2)})[1]
    assert not np.array_equal(a, b)
    assert len(np.unique(a)) > 1000  # no repeats to speak of among 1200 draws


def test_a_seed_symbol_must_be_an_integer_scalar() -> None:
    g = gd.Graph("bad", input_types={"s": gd.TensorType(gd.int64, (2,)), "f": gd.float32})
    s, f = g.inputs
    with pytest.raises(gd.OpTypeError, match="integer scalar"):
        gd.ops.random_uniform((2,), gd.float32, seed=s)
    with pytest.raises(gd.OpTypeError, match="integer scalar"):
        gd.ops.random_normal((2,), gd.float32, seed=f)
    with pytest.raises(gd.OpTypeError, match="floating"):
        gd.ops.random_uniform((2,), gd.int32, seed=gd.Graph("x", {"k": gd.int64}).inputs[0])


def test_max_set_seed_of_a_tensor() -> None:
    """MAX's SeedType input: draw k uses seed + k; runs the same on onnxruntime."""
    cpu = DeviceRef.CPU()
    with Graph("r", input_types=[ops.random.SeedType]) as g:
        ops.random.set_seed(g.inputs[0].tensor)
        u = ops.random.uniform(TensorType(DType.float32, [4], cpu), range=(1, 2))
        v = ops.random.uniform(TensorType(DType.float32, [4], cpu), range=(1, 2))
        n = ops.random.gaussian(TensorType(DType.float16, [3], cpu), mean=1, std=2)
        g.output(u, v, n)
    assert u.type == TensorType(DType.float32, [4], cpu)
    core = g.core_graph
    want = gd.evaluate(core, [np.int64(10)])
    got = run(export(core), [np.int64(10)])
    np.testing.assert_array_equal(want[0], got[0])
    np.testing.assert_array_equal(want[1], got[1])
    # draw 1 of seed 10 is draw 0 of seed 11
    np.testing.assert_array_equal(want[1], gd.evaluate(core, [np.int64(11)])[0])
    assert not np.array_equal(want[0], want[1])
    with Graph("bad", input_types=[TensorType(DType.int32, [], cpu)]) as g2:
        with pytest.raises(TypeError, match="int64"):
            ops.random.set_seed(g2.inputs[0].tensor)
        with pytest.raises(TypeError, match="an int or an int64 scalar tensor"):
            ops.random.set_seed(1.5)


def test_max_random_of_integers_and_typed_only_dtypes() -> None:
    """As max 26.7 on its CPU (measured: uniform int32 of range (0, 10) is the float draw
    truncated; a range that does not fit the dtype is MAX's 'Unsafe cast'; bool and
    float8_e8m0fnu type, and MAX's compiler refuses them)."""
    cpu = DeviceRef.CPU()

    def draw(dt: DType, **kw: object) -> np.ndarray:
        with Graph("r", input_types=[ops.random.SeedType]) as g:
            ops.random.set_seed(g.inputs[0].tensor)
            g.output(ops.random.uniform(TensorType(dt, [50], cpu), **kw))  # type: ignore[arg-type]
        (got,) = run(export(g.core_graph), [np.int64(4)])
        np.testing.assert_array_equal(got, gd.evaluate(g.core_graph, [np.int64(4)])[0])
        return got

    ints, floats = draw(DType.int32, range=(-10, 10)), draw(DType.float32, range=(-10, 10))
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, np.trunc(floats).astype(np.int32))
    for dt, rng, words in [
        (DType.uint8, (0, 300), r"python int with value \(300\) to dtype\(DType.uint8\)"),
        (DType.int32, (0.5, 10), r"python float to dtype\(DType.int32\)"),
        (DType.float8_e8m0fnu, (0, 2), r"python int with value \(0\)"),
    ]:
        with Graph("bad", input_types=[ops.random.SeedType]) as g:
            ops.random.set_seed(g.inputs[0].tensor)
            with pytest.raises(ValueError, match="Unsafe cast: Can't promote " + words):
                ops.random.uniform(TensorType(dt, [2], cpu), range=rng)
    for dt in (DType.bool, DType.float8_e8m0fnu):
        with Graph("typed", input_types=[ops.random.SeedType]) as g:
            ops.random.set_seed(g.inputs[0].tensor)
            x = ops.random.gaussian(TensorType(dt, ["n", 2], cpu), mean=1, std=1)
            assert x.type == TensorType(dt, ["n", 2], cpu)
            g.output(x)
        with pytest.raises(gd.OpTypeError, match=r"like MAX's compiler .* cannot compute it"):
            gd.evaluate(g.core_graph, [np.int64(1)])
        with pytest.raises(ExportError, match="cannot compute it"):
            export(g.core_graph)
    plain = gd.Graph("core", input_types={"s": gd.TensorType(gd.int64, ())})
    with pytest.raises(gd.OpTypeError, match="mostly NaN"):  # the other policies refuse it
        gd.ops.random_uniform((2,), gd.float8_e8m0fnu, seed=plain.inputs[0])
