"""Indexing, slicing, ranges, masks and the shape ops MAX and PyTorch users reach for:
numpy goldens (numpy's own indexing, take, put, tril/triu, arange, repeat, tile), the type
rules under every policy, the errors, and onnxruntime agreeing bit for bit."""

from __future__ import annotations

import itertools

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd
from exporters.onnx import RunError

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 5, 4)).astype(np.float32)
X[0, 0, 0] = -0.0
X[1, 2, 3] = np.nan


def _raw(a: np.ndarray) -> np.ndarray:
    """``a``'s bytes, one row per element: data movement compared byte for byte."""
    return np.ascontiguousarray(a).view(np.uint8).reshape(*a.shape, a.dtype.itemsize)


def _both(g: gd.Graph, *inputs: np.ndarray) -> list[np.ndarray]:
    """The reference results, after checking onnxruntime gives the same bits and dtypes
    (tests/floats.py's assert_bits, on the bytes: indexing moves data, exact by
    construction; the scatters' adds here are of integers)."""
    want = gd.evaluate(g, list(inputs))
    got = run(export(g, check="full"), list(inputs))
    for k, (w, r) in enumerate(zip(want, got, strict=True)):
        assert w.dtype == r.dtype
        floats.assert_bits(_raw(r), _raw(w), f"output {k}")
    return want


def _graph(*types: gd.TensorType, policy: str = "jax") -> gd.Graph:
    return gd.Graph("t", input_types=list(types), policy=policy)


KEYS = [
    (slice(1, None),), (slice(None, None, -1),), (slice(-2, None, -2), 0),
    (Ellipsis, slice(1, 3)), (None, 1, slice(None), None), (-1, -1, -1),
    (slice(10, -10, -1),), (slice(-10, 10, 3), slice(3, 1)), (Ellipsis, None),
    (slice(None, None, -3), Ellipsis, slice(None, -5, -1)),
]  # fmt: skip


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_basic_indexing_equals_numpy(key: tuple[object, ...]) -> None:
    g = _graph(gd.TensorType(gd.float32, (3, 5, 4)))
    (x,) = g.inputs
    y = x[key]
    assert y.shape == X[key].shape
    g.output(y)
    (got,) = _both(g, X)
    floats.assert_bits(got, X[key])  # -0.0 where -0.0, NaN where NaN


def test_integer_array_and_symbol_indices_gather_along_their_axis() -> None:
    g = _graph(gd.TensorType(gd.float32, ("b", 5, 4)), gd.TensorType(gd.uint8, (2, 2)))
    x, i = g.inputs
    idx = np.array([3, -4, 0])
    outs = [x[:, i], x[..., idx], x[i], x[::-1, idx, ::2], x[None, :, [1, 1]]]
    g.output(*outs)
    ii = np.array([[1, 0], [2, 2]], np.uint8)
    got = _both(g, X, ii)
    for r, w in zip(got, [X[:, ii], X[..., idx], X[ii], X[::-1, idx, ::2], X[None, :, [1, 1]]],
                    strict=True):  # fmt: skip
        floats.assert_bits(r, w)
    assert outs[0].shape == ("b", 2, 2, 4) and outs[2].shape == (2, 2, 5, 4)


def test_methods_follow_max() -> None:
    g = _graph(gd.TensorType(gd.int16, ("b", 5, 4)))
    (x,) = g.inputs
    # MAX's .T and transpose(a, b) swap axes (numpy's .T would reverse all three)
    assert x.T.shape == ("b", 4, 5) and x.transpose(0, 2).shape == (4, 5, "b")
    assert x.permute(2, 0, 1).shape == (4, "b", 5) == x.permute([2, 0, 1]).shape
    assert x.flatten().shape == ("b*20",) and x.flatten(1).shape == ("b", 20)
    assert x.reshape(-1, 2).shape == ("b*10", 2) == x.reshape((-1, 2)).shape
    assert x.broadcast_to((2, "b", 5, 4)).shape == (2, "b", 5, 4)
    assert gd.ops.transpose(x, 1, 2).shape == ("b", 4, 5)
    assert gd.ops.transpose(x, (2, 1, 0)).shape == gd.ops.transpose(x).shape == (4, 5, "b")
    with pytest.raises(TypeError, match="not iterable"):
        list(x)


def test_gather_and_gather_nd_equal_numpy() -> None:
    g = _graph(gd.TensorType(gd.float32, (3, 5, 4)))
    (x,) = g.inputs
    i2 = np.array([[0, 4], [1, -1]])
    g.output(
        gd.ops.gather(x, np.array([[2], [-3]], np.int8), axis=0),
        gd.ops.gather(x, np.array(3, np.uint16), axis=-1),
        gd.ops.gather_nd(x, i2),
        gd.ops.gather_nd(x, np.array([[[1], [4]], [[0], [0]], [[2], [3]]]), batch_dims=1),
    )
    a, b, c, d = _both(g, X)
    floats.assert_bits(a, X[[[2], [-3]]])
    floats.assert_bits(b, X[..., 3])
    floats.assert_bits(c, X[[0, 1], [4, -1]])
    floats.assert_bits(d, np.stack([X[0][[1, 4]], X[1][[0, 0]], X[2][[2, 3]]]))


def test_scatters_equal_numpy_with_repeated_indices() -> None:
    g = _graph(gd.TensorType(gd.int32, (3, 4)))
    (x,) = g.inputs
    u = np.arange(1, 7, dtype=np.int32).reshape(3, 2)
    i = np.array([[3, 3], [0, -4], [1, 2]])  # row 0 writes column 3 twice; row 1 column 0 twice
    pts = np.array([[2, 1], [0, 0], [2, 1]])
    g.output(gd.ops.scatter(x, u, i, axis=1), gd.ops.scatter_add(x, u, i, axis=1),
             gd.ops.scatter_nd(x, np.array([7, 8, 9], np.int32), pts),
             gd.ops.scatter_nd_add(x, np.array([7, 8, 9], np.int32), pts),
             gd.ops.scatter_nd(x, np.full((1, 4), -1, np.int32), np.array([[-2]])))  # fmt: skip
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    a, b, c, d, e = _both(g, base)
    want = base.copy()
    want[0, 3], want[1, 0], want[2, 1], want[2, 2] = 2, 4, 5, 6  # the last write wins
    np.testing.assert_array_equal(a, want)
    want = base.copy()
    np.add.at(want, (np.array([[0, 0], [1, 1], [2, 2]]), i % 4), u)
    np.testing.assert_array_equal(b, want)
    want = base.copy()
    want[2, 1], want[0, 0] = 9, 8
    np.testing.assert_array_equal(c, want)
    want = base.copy()
    want[2, 1] += 16
    want[0, 0] += 8
    np.testing.assert_array_equal(d, want)
    want = base.copy()
    want[1] = -1
    np.testing.assert_array_equal(e, want)


def test_scatter_promotes_input_and_updates_but_never_the_indices() -> None:
    for policy in gd.policy_names():
        g = _graph(gd.TensorType(gd.int8, (4,)), gd.TensorType(gd.uint64, (2,)), policy=policy)
        x, i = g.inputs
        try:
            want = gd.policy(policy).decide(gd.int8, False, gd.int16, False).result.dtype
        except gd.PromotionError:
            with pytest.raises(gd.PromotionError):
                gd.ops.scatter(x, np.ones(2, np.int16), i, axis=0)
            continue
        y = gd.ops.scatter(x, np.ones(2, np.int16), i, axis=0)
        assert y.dtype is want and y.inputs[2].dtype is gd.uint64  # indices keep their dtype
        assert gd.ops.gather(x, i).dtype is gd.int8


@pytest.mark.parametrize("build", [
    lambda x: x[np.array([0, 5])], lambda x: gd.ops.gather(x, np.array([-6])),
    lambda x: gd.ops.gather_nd(x[None], np.array([[0, 9]])),
    lambda x: gd.ops.scatter(x, x[:1], np.array([5]), axis=0),
    lambda x: gd.ops.scatter_nd(x, x[:1], np.array([[5]])),
    lambda x: x[np.array([2**64 - 1], np.uint64)],
], ids=["getitem", "gather", "gather_nd", "scatter", "scatter_nd", "uint64"])  # fmt: skip
def test_an_index_out_of_range_is_a_clear_error_on_both_backends(build: object) -> None:
    g = _graph(gd.TensorType(gd.float32, (5,)))
    (x,) = g.inputs
    g.output(build(x))  # type: ignore[operator]
    data = np.arange(5, dtype=np.float32)
    with pytest.raises(gd.IndexRangeError, match=r"out of range for axis \d+ .*of size \d"):
        gd.evaluate(g, [data])
    # onnxruntime's kernels check bounds; the message names the graphdsl op and line
    with pytest.raises(RunError, match=r"(gather|scatter)\w* at test_indexing_ops.py:\d+"):
        run(export(g), [data])


def test_static_index_errors_are_raised_at_the_users_line() -> None:
    g = _graph(gd.TensorType(gd.float32, ("n", 5)))
    (x,) = g.inputs
    with pytest.raises(gd.IndexRangeError, match=r"index 5 is out of range for axis 1 of size 5"):
        x[:, 5]
    with pytest.raises(gd.IndexRangeError, match="too many indices: 3 for a value of rank 2"):
        x[0, 0, 0]
    with pytest.raises(gd.ShapeError, match="symbolic dimension 'n' has a size the type system"):
        x[1:]
    with pytest.raises(gd.OpTypeError, match=r"one Symbol or array index per step"):
        x[0, np.array([1])]
    with pytest.raises(gd.OpTypeError, match="boolean mask"):
        x[np.array([True, False])]
    with pytest.raises(gd.OpTypeError, match="gather's indices must have an integer dtype"):
        gd.ops.gather(x, np.array([0.5]))
    with pytest.raises(gd.ShapeError, match=r"split sizes .* add up to 4, not the size 5"):
        gd.ops.split(x, [2, 2], axis=1)
    # a symbolic slice is allowed with the result's dimension named, as MAX asks
    assert gd.ops.slice_tensor(x, [(slice(1, None), "m")]).shape == ("m", 5)


def test_symbolic_slices_and_int_indices_run_at_any_size() -> None:
    g = _graph(gd.TensorType(gd.float32, ("n", 4)))
    (x,) = g.inputs
    g.output(x[::-1, 1], x[-1], gd.ops.slice_tensor(x, [(slice(-2, None), "two")]))
    for n in (2, 3, 5):
        data = RNG.standard_normal((n, 4)).astype(np.float32)
        a, b, c = _both(g, data)
        floats.assert_bits(a, data[::-1, 1])
        floats.assert_bits(b, data[-1])
        floats.assert_bits(c, data[-2:])


def test_range_over_a_symbolic_dimension_gives_positions() -> None:
    with gd.Graph("pos", input_types={"ids": gd.TensorType(gd.int64, ("b", "seq"))}) as g:
        (ids,) = g.inputs
        pos = gd.ops.range(0, ids.shape[1])
        g.output(pos, gd.ops.range(5, -4, -2, dtype=gd.int8),
                 gd.ops.range(0.0, 1.0, 0.1, dtype=gd.float16),
                 gd.ops.range(0, 300, 1, dtype=gd.uint8))  # fmt: skip
    assert pos.shape == ("seq",) and pos.dtype is gd.int64
    for seq in (1, 7):
        a, b, c, d = _both(g, np.zeros((2, seq), np.int64))
        np.testing.assert_array_equal(a, np.arange(seq))
        np.testing.assert_array_equal(b, np.arange(5, -4, -2, dtype=np.int8))
        # each value is start + i * step in float64, rounded once (numpy's arange agrees here)
        floats.assert_bits(c, (np.arange(10) * 0.1).astype(np.float16))
        np.testing.assert_array_equal(d, np.arange(300).astype(np.uint8))  # wraps, as a cast


def test_range_errors() -> None:
    with pytest.raises(gd.OpTypeError, match=r"no operand is a Symbol.*with graph"):
        gd.ops.range(0, 3)
    with gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, ("n",))}) as g:
        with pytest.raises(gd.ShapeError, match="length the type system cannot name"):
            gd.ops.range(1, "n")
        assert gd.ops.range(1, "n", out_dim="m").shape == ("m",)
        with pytest.raises(gd.OpTypeError, match="float range needs numeric bounds"):
            gd.ops.range(0.5, "n", out_dim="m")
        with pytest.raises(gd.OpTypeError, match="cannot produce int32"):
            gd.ops.range(0, 1.5, 0.5, dtype=gd.int32)
        with pytest.raises(gd.ShapeError, match="step cannot be zero"):
            gd.ops.range(0, 3, 0)
    assert g.nodes[-1].op == "range"


def test_range_length_is_exact_for_big_ints() -> None:
    """ceil((stop - start) / step) in integers: a float division rounds 2**53 + 1 down."""
    with gd.Graph("r", input_types={"x": gd.float32}):
        assert gd.ops.range(1, 2**53 + 2).shape == (2**53 + 1,)
        assert gd.ops.range(-(2**60), 2**60, 3).shape == (-(-(2**61) // 3),)
        assert gd.ops.range(10, 0, -3).shape == (4,) and gd.ops.range(0, -5).shape == (0,)


@pytest.mark.parametrize(("lower", "upper", "exclude"), [
    (None, 0, False), (0, None, False), (1, 2, False), (None, None, False), (0, 0, True),
    (None, -1, False), (2, None, True),
])  # fmt: skip
def test_band_part_tril_triu_equal_numpy(lower: int | None, upper: int | None,
                                         exclude: bool) -> None:  # fmt: skip
    g = _graph(gd.TensorType(gd.float32, ("b", 5, 4)))
    (x,) = g.inputs
    g.output(gd.ops.band_part(x, lower, upper, exclude=exclude))
    (got,) = _both(g, X)
    keep = np.ones((5, 4), bool)
    if lower is not None:
        keep &= np.tril(keep, 0) | ~np.tril(np.ones((5, 4), bool), -lower - 1)
        keep = np.triu(np.ones((5, 4), bool), -lower) & keep
    if upper is not None:
        keep &= np.tril(np.ones((5, 4), bool), upper)
    if exclude:
        keep = ~keep
    want = np.where(keep, X, np.float32(0))
    floats.assert_bits(_raw(got), _raw(want))


def test_tril_triu_one_hot_outer_are_their_numpy_namesakes() -> None:
    g = _graph(gd.TensorType(gd.int16, (4, 3)), gd.TensorType(gd.int64, (5,)))
    x, i = g.inputs
    g.output(gd.ops.tril(x, -1), gd.ops.triu(x, 1), gd.ops.one_hot(i, 4),
             gd.ops.one_hot(i, 3, dtype=gd.bool), gd.ops.outer(x[0], x[:, 1]))  # fmt: skip
    xs = np.arange(12, dtype=np.int16).reshape(4, 3)
    idx = np.array([0, 3, -1, 4, 2])
    a, b, c, d, e = _both(g, xs, idx)
    np.testing.assert_array_equal(a, np.tril(xs, -1))
    np.testing.assert_array_equal(b, np.triu(xs, 1))
    eye = np.eye(4, dtype=c.dtype)  # (the policy's default float)
    floats.assert_bits(c, np.array([eye[0], eye[3], 0 * eye[0], 0 * eye[0], eye[2]]))
    np.testing.assert_array_equal(d, c[:, :3].astype(bool))
    np.testing.assert_array_equal(e, np.outer(xs[0], xs[:, 1]))


def test_split_chunk_stack_tile_repeat_equal_numpy() -> None:
    g = _graph(gd.TensorType(gd.bfloat16, ("b", 7)), gd.TensorType(gd.int8, ("b", 7)))
    x, y = g.inputs
    parts = gd.ops.split(x, [2, 0, 5], axis=1)
    chunks = gd.ops.chunk(x, 3, axis=1)
    assert [c.shape[1] for c in chunks] == [3, 3, 1]
    g.output(*parts, *chunks, gd.ops.stack([x, y], axis=1), gd.ops.tile(y, [2, 1]),
             gd.ops.repeat_interleave(y, 2, axis=0), gd.ops.repeat_interleave(y, 3),
             gd.ops.unsqueeze(y, 0))  # fmt: skip
    xs = RNG.standard_normal((2, 7)).astype(gd.bfloat16.np)
    ys = np.arange(14, dtype=np.int8).reshape(2, 7)
    got = _both(g, xs, ys)
    want = [*np.split(xs, [2, 2], axis=1), *np.split(xs, [3, 6], axis=1),
            np.stack([xs, ys.astype(xs.dtype)], axis=1), np.tile(ys, [2, 1]),
            np.repeat(ys, 2, axis=0), np.repeat(ys, 3), ys[None]]  # fmt: skip
    for r, w in zip(got, want, strict=True):
        floats.assert_bits(r, w)
    assert got[0].dtype == gd.bfloat16.np and got[6].dtype == gd.bfloat16.np  # stack promotes


def test_split_by_one_int_is_torchs() -> None:
    """gd.ops.split(t, 3): pieces of 3 along a static axis, the last one shorter, as
    torch.split (it raised a bare "'int' object is not iterable"); a symbolic axis or a
    size < 1 is a clear error."""
    g = _graph(gd.TensorType(gd.float32, ("b", 7)))
    (x,) = g.inputs
    parts = gd.ops.split(x, 3, axis=1)
    assert [p.shape[1] for p in parts] == [3, 3, 1]
    g.output(*parts)
    xs = RNG.standard_normal((2, 7)).astype(np.float32)
    for r, w in zip(_both(g, xs), np.split(xs, [3, 6], axis=1), strict=True):
        floats.assert_bits(r, w)
    with pytest.raises(gd.OpTypeError, match=r"axis 0 of .* is 'b': give the sizes as a list"):
        gd.ops.split(x, 2)
    with pytest.raises(gd.OpTypeError, match=r"split\(x, 0\)"):
        gd.ops.split(x, 0, axis=1)


def test_one_onnx_split_serves_every_piece() -> None:
    g = _graph(gd.TensorType(gd.float32, ("b", 12)))
    (x,) = g.inputs
    q, k, v = gd.ops.split(x, [4, 4, 4], axis=1)
    g.output(q + k, v)
    ops = [n.op_type for n in export(g).graph.node]
    assert ops.count("Split") == 1 and ops.count("Slice") == 0


def test_index_operands_accept_every_integer_dtype() -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    for dt in [gd.int8, gd.int16, gd.int32, gd.int64, gd.uint8, gd.uint16, gd.uint32, gd.uint64]:
        g = _graph(gd.TensorType(gd.float32, (3, 4)), gd.TensorType(dt, (2,)))
        x, i = g.inputs
        g.output(x[:, i], gd.ops.gather_nd(x, gd.ops.stack([i, i], axis=-1)))
        idx = np.array([2, 0], dt.np)
        a, b = _both(g, data, idx)
        floats.assert_bits(a, data[:, [2, 0]])
        floats.assert_bits(b, data[[2, 0], [2, 0]])


def test_slices_on_every_dtype_round_trip() -> None:
    dtypes = [gd.bool, gd.float8_e4m3fn, gd.uint64, gd.float16]
    keys = [(slice(None, None, -2),), (1,), (None, slice(1, 3))]
    for dt, key in itertools.product(dtypes, keys):
        g = _graph(gd.TensorType(dt, (4, 3)))
        (x,) = g.inputs
        g.output(x[key])
        data = RNG.integers(0, 2, (4, 3)).astype(dt.np)
        (got,) = _both(g, data)
        floats.assert_bits(got.astype(np.float64), data[key].astype(np.float64))
