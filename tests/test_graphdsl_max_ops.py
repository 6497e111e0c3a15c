"""graphdsl.max's MAX-faithful surface (issue 25), beyond the recorded oracle
(tests/test_graphdsl_max_oracle.py): code written for max.graph 26 as a MAX user writes it,
and the ops graphdsl.max added, each exported to ONNX, run on onnxruntime and compared with
``gd.evaluate`` and with numpy goldens (NaN, -0.0, inf and repeated indices included).
"""

from __future__ import annotations

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd
from exporters.onnx import RunError
from graphdsl.max import (
    AlgebraicDim,
    BufferType,
    DeviceRef,
    Dim,
    DType,
    Graph,
    Shape,
    StaticDim,
    SymbolicDim,
    TensorType,
    TensorValue,
    ops,
)

CPU, GPU = DeviceRef.CPU(), DeviceRef.GPU()


def both(g: Graph, feeds: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The reference's outputs and onnxruntime's (CPU provider)."""
    return gd.evaluate(g, feeds), run(export(g, check="full"), feeds)


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, zero signs and NaN places included (tests/floats.py): for data movement
    and ops that round once."""
    floats.assert_bits(got, want)


U32 = floats.unit_roundoff(np.float32)
EPS64 = float(np.finfo(np.float64).eps)


# ---------------------------------------------------------------------------- as a MAX user


def test_the_issues_examples_hold() -> None:
    """Each complaint of issue 25, as a max.graph user writes it."""

    def size(d: Dim | int) -> int:  # Dim is a class: an annotation and isinstance work
        return int(d)

    assert size(Dim(3)) == 3 and isinstance(Dim(3), Dim) and isinstance(Dim("n"), SymbolicDim)
    t = TensorType(DType.float32, [1, 6, 6, 3], CPU)
    with Graph("conv", input_types=[t, TensorType(DType.float32, [3, 3, 3, 16], CPU)]) as g:
        x, w = (v.tensor for v in g.inputs)
        out = ops.conv2d(x, w, padding=(1, 1, 1, 1))
        assert out.shape == [1, 6, 6, 16] and isinstance(out.shape, Shape)
        assert out.type == TensorType(DType.float32, [1, 6, 6, 16], DeviceRef.CPU())
        assert out.type != TensorType(DType.float32, [1, 6, 6, 16], DeviceRef.GPU())
        assert out.dtype.is_float() and not out.dtype.is_integral()
        assert (DType.bfloat16.size_in_bits, DType.int8.to_numpy()) == (16, np.dtype(np.int8))
        with pytest.raises(IndexError):  # MAX's exception for an axis out of range
            ops.transpose(x, 0, 4)
        with pytest.raises(gd.ShapeError):  # ... which is graphdsl's ShapeError too
            ops.transpose(x, 0, 4)
    with Graph("stack", input_types=[TensorType(DType.int32, [2], CPU),
                                     TensorType(DType.float32, [2], CPU)]) as g2:  # fmt: skip
        a, b = g2.inputs
        with pytest.raises(ValueError, match="int32"):  # MAX: ValueError; a PromotionError too
            ops.stack([a, b])
        with pytest.raises(gd.PromotionError):
            ops.stack([a, b])
        with pytest.raises(ValueError, match="same device"):
            a.to(GPU) + a


def test_algebraic_dims_from_slicing_and_arithmetic() -> None:
    with Graph("s", input_types=[TensorType(DType.int32, ["n", 4], CPU)]) as g:
        x = g.inputs[0].tensor
        head, odd = x[:-1], x[1::2]
        assert head.shape[0] == Dim("n") - 1 and isinstance(head.shape[0], AlgebraicDim)
        assert str(odd.shape[0]) == "n // 2"  # ((n - 1) + 1) // 2
        assert x.shape[0] * 2 // 2 == "n" and x.shape[1] + 1 == StaticDim(5)
        g.output(head, odd)
    a = np.arange(20, dtype=np.int32).reshape(5, 4)
    for outs in both(g, [a]):
        same(outs[0], a[:-1])
        same(outs[1], a[1::2])


def test_value_type_shape_device_are_maxs() -> None:
    with Graph("t", input_types=[TensorType(DType.float16, [2, "n"], GPU)]) as g:
        x = g.inputs[0].tensor
        assert x is g.inputs[0] and x.device == GPU and x.rank == 2
        assert x.type == TensorType(DType.float16, [2, "n"], GPU)
        assert x.shape == [2, "n"] and x.shape.static_dims == [2]
        assert hash(x.type) == hash(TensorType(DType.float16, (2, "n"), GPU))
        assert x.type.cast(DType.float32) == x.cast(DType.float32).type
        g.output(x + 1)
    assert g.output_types == [TensorType(DType.float16, [2, "n"], GPU)]
    assert g.devices == [GPU] and list(g.device_chains) == [GPU]  # (as max 26.7's)
    _ = g.device_chains[DeviceRef.GPU(3)], g.device_chains[DeviceRef.CPU()]
    assert list(g.device_chains) == [DeviceRef.CPU(), GPU, DeviceRef.GPU(3)]  # device order
    from graphdsl.max import BufferType, Type

    assert isinstance(x.type, Type) and isinstance(x.type.as_buffer(), (BufferType, Type))


def test_device_chains_advance_on_effects() -> None:
    """A chain is MAX's ordering of side effects: a print, a buffer load or store gives the
    device a new chain; pure ops and other devices' effects do not."""
    from graphdsl.max import BufferType

    b_type = BufferType(DType.float32, [3], CPU)
    with Graph("chains", input_types=[b_type, TensorType(DType.float32, [3], CPU)]) as g:
        buf, t = g.inputs[0].buffer, g.inputs[1].tensor
        seen = [g.device_chains[CPU]]
        _ = t + 1
        assert g.device_chains[CPU] == seen[-1]  # a pure op orders nothing
        for effect in (lambda: t.print(), lambda: buf[...], lambda: ops.buffer_store(buf, t)):
            effect()
            seen.append(g.device_chains[CPU])
        assert len(set(seen)) == 4 and g.device_chains[DeviceRef.GPU()] == g.device_chains[
            DeviceRef.GPU()]  # fmt: skip
        with g.add_subgraph("store", input_types=[b_type, t.type]) as sub:
            ops.buffer_store(sub.inputs[0].buffer, sub.inputs[1].tensor)
            sub.output()
        before = g._current_chain
        ops.call(sub, buf, t)  # the callee orders an effect: the caller's global chain moves
        assert g._current_chain != before
        g.output(buf[...] * 2)  # (the buffer holds what the callee stored)
    t_in = np.array([1, 2, 3], np.float32)
    doubled, final = gd.evaluate(g.core_graph, [np.zeros(3, np.float32), t_in])
    np.testing.assert_array_equal(doubled, t_in * 2)
    np.testing.assert_array_equal(final, t_in)


# ---------------------------------------------------------------------------- selection, scatters


def test_bottom_k_is_the_smallest_first() -> None:
    x = np.array([[3, np.nan, -0.0, 0.0, -7], [1, 1, 1, np.inf, -np.inf]], np.float32)
    with Graph("b", input_types=[TensorType(DType.float32, [2, 5], CPU)]) as g:
        v, i = ops.bottom_k(g.inputs[0], 3)
        g.output(v, i)
    order = np.argsort(x, axis=-1, kind="stable")[:, :3]  # NaN last, ties in order
    for outs in both(g, [x]):
        same(outs[1], order)
        same(outs[0], np.take_along_axis(x, order, -1))


@pytest.mark.parametrize("kind", ["max", "min", "mul"])
def test_combining_scatters(kind: str) -> None:
    x = np.array([[1.0, np.nan, 3.0], [-0.0, 5.0, np.inf]], np.float32)
    u = np.array([[7.0, 2.0], [np.nan, -1.0]], np.float32)
    idx = np.array([[0, 0], [2, 2]])  # repeated: they combine in turn
    ufunc = {"max": np.maximum, "min": np.minimum, "mul": np.multiply}[kind]
    want = x.copy()
    ufunc.at(want, (np.array([[0, 0], [1, 1]]), idx), u)
    rows = np.array([[1], [1]])
    want_nd = x.copy()
    ufunc.at(want_nd, (rows[:, 0],), np.array([[2, 2, 2], [-3, 0.5, np.nan]], np.float32))
    with Graph("s", input_types=[TensorType(DType.float32, [2, 3], CPU)]) as g:
        xv = g.inputs[0]
        g.output(getattr(ops, f"scatter_{kind}")(xv, ops.constant(u, device=CPU),
                                                   ops.constant(idx, device=CPU), axis=1),
                 getattr(ops, f"scatter_nd_{kind}")(
                     xv, ops.constant(np.array([[2, 2, 2], [-3, 0.5, np.nan]], np.float32),
                                      device=CPU), ops.constant(rows, device=CPU)))  # fmt: skip
    for outs in both(g, [x]):
        same(outs[0], want)
        same(outs[1], want_nd)


# ---------------------------------------------------------------------------- run-time sizes


def test_nonzero_tensor_slices_and_ranges() -> None:
    """nonzero's count, a slice with a tensor bound, a range of tensor bounds with out_dim:
    sizes known when the model runs (MAX's out_dim names them)."""
    x = np.array([[0, 1, 2], [0, 0, 0], [np.nan, -0.0, 3], [4, 0, 0]], np.float32)
    with Graph("d", input_types=[TensorType(DType.float32, ["n", 3], CPU),
                                 TensorType(DType.int64, [], CPU)]) as g:  # fmt: skip
        v, b = g.inputs
        nz = ops.nonzero(v, "nz")
        tail = ops.slice_tensor(v, [(slice(b, None), "k")])
        r = ops.range(b, b + 5, 2, out_dim="m", dtype=DType.int32, device=CPU)
        assert (nz.shape, tail.shape, r.shape) == (["nz", 2], ["k", 3], ["m"])
        g.output(nz, tail, r, ops.range(0, 5, 2, dtype=DType.int32, device=CPU))
    for outs in both(g, [x, np.int64(1)]):
        same(outs[0], np.argwhere(x))
        same(outs[1], x[1:])
        same(outs[2], np.arange(1, 6, 2, dtype=np.int32))
        same(outs[3], np.array([0, 2], np.int32))  # max.graph's length: (5 - 0) // 2


def test_rebind_is_checked_when_the_model_runs() -> None:
    with Graph("rb", input_types=[TensorType(DType.float32, ["n", 3], CPU)]) as g:
        y = g.inputs[0].tensor.rebind([2, 3], "two rows")
        assert y.shape == [2, 3]
        g.output(y * 2)
    ok = np.ones((2, 3), np.float32)
    for outs in both(g, [ok]):
        same(outs[0], ok * 2)
    bad = np.ones((4, 3), np.float32)
    with pytest.raises(gd.ShapeError, match="two rows"):
        gd.evaluate(g, [bad])
    with pytest.raises(RunError, match="rebind"):
        run(export(g), [bad])


# ---------------------------------------------------------------------------- images, signals


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"spatial_scale": 0.5, "sampling_ratio": 2, "aligned": True}, {"mode": "MAX"},
     {"mode": "MAX", "sampling_ratio": 3, "aligned": True}],
)  # fmt: skip
def test_roi_align(kwargs: dict[str, object]) -> None:
    """onnxruntime's RoiAlign (float32) within float32 rounding of the reference's float64."""
    rng = np.random.default_rng(0)
    img = rng.normal(size=(2, 8, 8, 3)).astype(np.float32)
    rois = np.array([[0, 0.5, 1.0, 6.0, 7.5], [1, 2, 2, 3, 3], [0, -2, -1, 9, 10],
                     [1, 3, 3, 3, 3]], np.float32)  # fmt: skip
    with Graph("roi", input_types=[TensorType(DType.float32, [2, 8, 8, 3], CPU),
                                   TensorType(DType.float32, [4, 5], CPU)]) as g:  # fmt: skip
        y = ops.roi_align(*g.inputs, 3, 2, **kwargs)  # type: ignore[arg-type]
        assert y.shape == [4, 3, 2, 3]
        g.output(y)
    want, got = both(g, [img, rois])
    floats.assert_close(got[0], want[0], _roi_bound(img, rois, (3, 2), kwargs), "roi_align")


def _roi_bound(img: np.ndarray, rois: np.ndarray, out: tuple[int, int],
               kwargs: dict[str, object]) -> float:  # fmt: skip
    """RoiAlign in float32 against the reference (float64, rounded once: u V). A sample's
    coordinate takes about 6 roundings of values at most M (the scaled rois' coordinates,
    the image's size), so it is off by 6 u M; bilinear interpolation moves by at most 2 V
    per unit of each coordinate (V = max |x|): 24 u M V for the two. Its weights (1 - l, a
    product) and 4-term sum: 8 u V. The average of c samples adds γ_c V + u V (the maximum
    moves by what its samples do). In all (24 M + c + 10) u V, while no sample sits on the
    border where RoiAlign drops it (-1 or the size: none does here)."""
    scale = float(kwargs.get("spatial_scale", 1.0))  # type: ignore[arg-type]
    ratio = int(kwargs.get("sampling_ratio", 0))  # type: ignore[call-overload]
    coords = np.abs(rois[:, 1:].astype(np.float64)) * scale
    m = max(float(coords.max()), *img.shape[1:3]) + 1
    sides = np.maximum(np.abs(rois[:, 3:] - rois[:, 1:3]).astype(np.float64) * scale, 1.0)
    grid = np.ceil(sides / np.array(out[::-1])) if ratio == 0 else np.full(sides.shape, ratio)
    c = int(grid.prod(axis=1).max())
    return (24 * m + c + 10) * U32 * float(np.abs(img).max())


def test_fold_is_col2im() -> None:
    x = np.arange(2 * 12 * 4, dtype=np.float64).reshape(2, 12, 4) / 7
    with Graph("fold", input_types=[TensorType(DType.float64, [2, 12, 4], CPU)]) as g:
        y = ops.fold(g.inputs[0], (5, 5), (2, 2), stride=2, padding=0)
        assert y.shape == [2, 3, 5, 5]
        g.output(y)
    want = np.zeros((2, 3, 5, 5))
    cols = x.reshape(2, 3, 2, 2, 2, 2)
    for i in range(2):
        for j in range(2):
            want[:, :, i : i + 3 : 2, j : j + 3 : 2] += cols[:, :, i, j]
    for outs in both(g, [x]):  # no two windows overlap: each place takes one value, or 0
        same(outs[0], want)


def test_hann_window_is_numpys() -> None:
    with Graph("h") as g:
        g.output(ops.hann_window(5, CPU), ops.hann_window(6, GPU, False, DType.float64),
                 ops.hann_window(1, CPU), ops.hann_window(0, CPU))  # fmt: skip
    got = gd.evaluate(g, [])
    # 0.5 - 0.5 cos(a) in float64, a (|a| <= 2 pi) in another form than numpy's: a is off by
    # 3 roundings (19 u), cos by that and an ulp (2u), halved, and the difference rounds (u):
    # 12 u per evaluation, 12 eps for two; float32: then one rounding each, an ulp apart
    b64 = 12 * EPS64
    want32 = np.hanning(6)[:-1].astype(np.float32)  # periodic: N + 1 points, the last cut
    floats.assert_close(got[0], want32, floats.ulp_bound(want32, np.float32, 1) + b64, "hann")
    floats.assert_close(got[1], np.hanning(6), b64, "hann float64")
    assert got[2].tolist() == [1.0] and got[3].shape == (0,)
    assert [t.device for t in g.output_types] == [CPU, GPU, CPU, CPU]


@pytest.mark.parametrize(("n", "norm"), [(8, "backward"), (None, "backward"), (7, "ortho"),
                                         (12, "forward"), (4, "backward")])  # fmt: skip
def test_irfft_is_numpys(n: int | None, norm: str) -> None:
    """Within the float32 rounding of the sums (n * eps * sum|terms|) of numpy's irfft."""
    x = np.random.default_rng(1).normal(size=(2, 5)).astype(np.float32)
    with Graph("f", input_types=[TensorType(DType.float32, [2, 5], CPU)]) as g:
        g.output(ops.irfft(g.inputs[0], n, normalization=norm))
    want = np.fft.irfft(x.astype(np.float64), n, norm=norm)
    bound = 2 * want.shape[-1] * np.finfo(np.float32).eps * np.abs(x).sum(-1, keepdims=True)
    bound = bound + floats.ulp_bound(want, np.float32, 0.5)  # want rounded to float32 below
    for outs in both(g, [x]):
        floats.assert_close(outs[0], want.astype(np.float32), bound, "irfft")


def test_complex_helpers() -> None:
    a = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
    with Graph("c", input_types=[TensorType(DType.float32, [3, 4], CPU)]) as g:
        z = ops.as_interleaved_complex(g.inputs[0])
        assert z.shape == [3, 2, 2]
        g.output(z, ops.complex.mul(z, z))
    c = a[:, 0::2] + 1j * a[:, 1::2]
    re, im = a[:, 0::2].astype(np.float64), a[:, 1::2].astype(np.float64)
    want = (c * c).astype(np.complex64)
    # (re + i im)**2: re re - im im and re im + im re, dot products of 2 (tests/floats.py)
    s_re, s_im = re * re + im * im, 2 * np.abs(re * im)
    for outs in both(g, [a]):
        same(outs[0], a.reshape(3, 2, 2))
        got_re, got_im = outs[1][..., 0], outs[1][..., 1]
        b_re = floats.dot_bound(s_re, 2, np.float32, got_re, want.real)
        b_im = floats.dot_bound(s_im, 2, np.float32, got_im, want.imag)
        floats.assert_close(got_re, want.real, b_re, "real part")
        floats.assert_close(got_im, want.imag, b_im, "imaginary part")
    with (
        Graph("c", input_types=[TensorType(DType.float32, [3, 4], CPU)]) as g,
        pytest.raises(ValueError, match=r"rhs .* is not complex: its last dimension"),
    ):
        ops.complex.mul(ops.as_interleaved_complex(g.inputs[0]), g.inputs[0])


def test_split_by_symbolic_sizes_is_maxs_type_error() -> None:
    """max 26.7 takes int() of each split size (tests/data/max_graph_random.json's split
    cases); graphdsl's own gd.ops.split takes symbolic sizes."""
    with Graph("s", input_types=[TensorType(DType.float32, ["n", 4], CPU)]) as g:
        with pytest.raises(TypeError, match=r"int\(Dim\('n'\)\): Int conversions only"):
            ops.split(g.inputs[0], [Dim("n")], 0)
        assert [p.shape for p in gd.ops.split(g.inputs[0].symbol, ["n"], 0)] == [("n", 4)]


def test_random_draws() -> None:
    """From ops.random.set_seed: in bounds, of the moments asked; the reference's and
    onnxruntime's streams differ (graphdsl/ops/random.py)."""
    with Graph("r") as g:
        with pytest.raises(RuntimeError, match="No seed set"):
            ops.random.uniform(TensorType(DType.float32, [2], CPU))
        ops.random.set_seed(7)
        like = TensorType(DType.float32, [4000], CPU)
        u = ops.random.uniform(like, range=(2, 5))
        nrm = ops.random.normal(like, 1.0, 2.0)
        assert ops.random.gaussian is ops.random.normal and u.type == like
        g.output(u, nrm, ops.random.uniform(like))
    model = export(g)
    for outs in (gd.evaluate(g, []), run(model, []), run(model, [])):
        uu, nn, other = outs
        assert (uu >= 2).all() and (uu < 5).all() and abs(uu.mean() - 3.5) < 0.1
        assert abs(nn.mean() - 1.0) < 0.15 and abs(nn.std() - 2.0) < 0.15
        assert not np.array_equal(uu, other)  # each draw its own seed
    first, again = gd.evaluate(g, []), gd.evaluate(g, [])
    same(first[0], again[0])  # the reference: the same draws each time


# ---------------------------------------------------------------------------- buffers, effects


def test_buffers_are_state_threaded_through_the_graph() -> None:
    types = [BufferType(DType.int32, [2, 3], CPU), TensorType(DType.int32, [3], CPU),
             TensorType(DType.bool, [], CPU)]  # fmt: skip
    with Graph("acc", input_types=types) as g:
        state, row, flag = g.inputs
        ops.buffer_store_slice(state, ops.buffer_load(state)[1] + row, [1])
        state[0] = row * 2

        def bump() -> None:
            state[...] = state[...] + 100

        assert ops.cond(flag, None, bump, lambda: None) == []  # effects only, as in MAX
        scratch = ops.buffer_create(BufferType(DType.int32, [3], CPU))
        ops.buffer_store(scratch, row)
        g.output(ops.sum(ops.buffer_load(state), axis=0), ops.buffer_load(scratch))
    assert [t.shape for t in g.output_types] == [[1, 3], [3], [2, 3]]  # the state: last
    feeds = [np.ones((2, 3), np.int32), np.arange(3, dtype=np.int32)]
    for flag_in, add in ((np.bool_(False), 0), (np.bool_(True), 100)):
        state_out = np.array([[0, 2, 4], [1, 2, 3]], np.int32) + add
        for outs in both(g, [*feeds, flag_in]):
            same(outs[0], state_out.sum(0, keepdims=True, dtype=np.int32))
            same(outs[1], feeds[1])
            same(outs[2], state_out)  # fed back as the next run's state


@pytest.mark.parametrize(
    "index",
    [(1,), (-1, slice(None, None, -2)), (slice(1, 4, 2), Ellipsis, 2), (None, 0, slice(4, 0, -3)),
     (Ellipsis,), (slice(5, 9),), (slice(None), slice(3, 1)), (2, None, 4, -3), (Ellipsis, None),
     (np.int64(3), slice(-2, None))],
)  # fmt: skip
def test_buffer_store_slice_stores_as_numpy_assigns(index: tuple[object, ...]) -> None:
    """``buffer[index] = source`` for ints, slices (steps, negatives, empty), ``...`` and
    None, as numpy's assignment (the positions are computed in the graph: issue 30)."""
    dims = (4, 5, 3)
    start = np.arange(60, dtype=np.float32).reshape(dims)
    want = start.copy()
    src = np.random.default_rng(0).normal(size=want[index].shape).astype(np.float32) - 100
    want[index] = src
    types = [BufferType(DType.float32, list(dims), CPU),
             TensorType(DType.float32, list(src.shape), CPU)]  # fmt: skip
    with Graph("store", input_types=types) as g:
        state, x = g.inputs[0].buffer, g.inputs[1].tensor
        ops.buffer_store_slice(state, x, list(index))
        g.output(ops.buffer_load(state))
    for outs in both(g, [start, src]):
        same(outs[0], want)
        same(outs[1], want)


def test_buffers_of_huge_shapes_build_nothing_of_their_size() -> None:
    """The issue's example: ``buffer[0] = tensor[0] + buffer[0]`` on a [50000, 50000] buffer
    asked for 18.6 GiB while the graph was built; now a few small constants."""
    huge = [BufferType(DType.float32, [50000, 50000], CPU),
            TensorType(DType.float32, [50000, 50000], CPU)]  # fmt: skip
    with Graph("huge", input_types=huge) as g:
        state, x = g.inputs[0].buffer, g.inputs[1].tensor
        state[0] = x[0] + state[0]
        state[1::7, ::-3] = x[1::7, ::3]
        scratch = ops.buffer_create(huge[0], init_value=1.0)
        g.output(ops.buffer_load(state) + scratch[...])
    assert max(t.ByteSize() for t in export(g).graph.initializer) < 100


def test_buffer_store_slice_refuses_what_numpy_would() -> None:
    with Graph("bad", input_types=[BufferType(DType.float32, [2, 3], CPU)]) as g:
        state = g.inputs[0].buffer
        with pytest.raises(IndexError, match="out of bounds"):
            ops.buffer_store_slice(state, 1.0, [2])
        with pytest.raises(IndexError, match="2-dimensional"):
            ops.buffer_store_slice(state, 1.0, [0, 1, 2])
        with pytest.raises(NotImplementedError, match="ints, slices"):
            ops.buffer_store_slice(state, 1.0, [[0, 1]])
        g.output(ops.buffer_load(state))


def test_print_is_a_no_op() -> None:
    with Graph("p", input_types=[TensorType(DType.float32, [2], CPU)]) as g:
        x = g.inputs[0].tensor
        assert ops.print(x) is None and ops.print("hello") is None and x.print("x") is None
        n = len(g.nodes)
        g.output(x)
    assert len(g.nodes) == n  # nothing built


def test_values_are_tensor_values_inside_branches_and_bodies() -> None:
    with Graph("cf", input_types=[TensorType(DType.bool, [], CPU),
                                  TensorType(DType.float32, [3], GPU)]) as g:  # fmt: skip
        p, x = g.inputs
        seen: list[object] = []

        def body(v: TensorValue) -> TensorValue:
            seen.append(v)
            return v * 2

        (y,) = ops.cond(p, [TensorType(DType.float32, [3], GPU)], lambda: x + 1, lambda: x)
        (z,) = ops.while_loop([x], lambda v: ops.max(v, axis=0)[0] < 10, body)
        g.output(y, z)
    assert isinstance(seen[0], TensorValue) and seen[0].device == GPU
    assert (y.device, z.device) == (GPU, GPU)
    a = np.array([1.0, 2.0, 3.0], np.float32)
    for outs in both(g, [np.bool_(True), a]):
        same(outs[0], a + 1)
        same(outs[1], a * 4)


def test_masked_scatter_fills_in_order() -> None:
    x = np.array([[-1.0, np.nan, -0.0], [2.0, -1.0, np.inf]], np.float32)
    mask = np.array([[True, False, True], [False, True, True]])
    u = np.array([1.0, -0.0, np.nan, 4.0, 99.0], np.float32)  # one more than the mask takes
    with Graph("m", input_types=[TensorType(DType.float32, [2, 3], CPU),
                                 TensorType(DType.bool, [2, 3], CPU),
                                 TensorType(DType.float32, [5], CPU)]) as g:  # fmt: skip
        y = ops.masked_scatter(*g.inputs, "k")
        assert y.shape == [2, 3]
        g.output(y)
    want = x.copy()
    want[mask] = u[: mask.sum()]  # PyTorch's masked_scatter
    for outs in both(g, [x, mask, u]):
        same(outs[0], want)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_conv2d_with_a_symbolic_channel_count(layout: str) -> None:
    """MAX takes a symbolic channel count; graphdsl builds it per kernel tap, within float32
    rounding of the convolution with the count given."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 5, 6, 2)).astype(np.float32)
    w = rng.normal(size=(3, 3, 2, 4)).astype(np.float32)
    nchw = layout == "NCHW"
    xs = np.transpose(x, (0, 3, 1, 2)) if nchw else x
    ws = np.transpose(w, (3, 2, 0, 1)) if nchw else w
    kw = {"stride": (2, 1), "dilation": (1, 2), "padding": (1, 0, 1, 2)}
    if nchw:
        from graphdsl.max import ConvInputLayout, FilterLayout

        kw |= {"input_layout": ConvInputLayout.NCHW, "filter_layout": FilterLayout.FCRS}
    shapes = ([1, "c", 5, 6], [4, "c", 3, 3]) if nchw else ([1, 5, 6, "c"], [3, 3, "c", 4])
    with Graph("sym", input_types=[TensorType(DType.float32, s, CPU) for s in shapes]) as g:
        y = ops.conv2d(*g.inputs, **kw)  # type: ignore[arg-type]
        g.output(y)
    static = [list(a.shape) for a in (xs, ws)]
    with Graph("ref", input_types=[TensorType(DType.float32, s, CPU) for s in static]) as h:
        h.output(ops.conv2d(*h.inputs, **kw))  # type: ignore[arg-type]
    assert list(y.shape) == list(h.output_types[0].shape)
    (want,) = gd.evaluate(h, [xs, ws])
    # sums of the same products in other orders: tests/floats.py's dot bound, with Σ|x w|
    # from the convolution of |x| and |w| in float64 (its own error: far below the margin)
    with Graph("abs", input_types=[TensorType(DType.float64, s, CPU) for s in static]) as a:
        a.output(ops.conv2d(*a.inputs, **kw))  # type: ignore[arg-type]
    (s,) = gd.evaluate(a, [np.abs(xs).astype(np.float64), np.abs(ws).astype(np.float64)])
    n = 3 * 3 * 2  # the taps times the channels
    for outs in both(g, [xs, ws]):
        bound = floats.dot_bound(s * (1 + 2.0**-40), n, np.float32, outs[0], want)
        floats.assert_close(outs[0], want, bound, "conv2d")


def test_call_arguments_on_several_devices() -> None:
    """A call's arguments live where the subgraph's inputs say (no one-device rule); each
    result is on its subgraph output's device."""
    t_cpu, t_gpu = TensorType(DType.float32, [2], CPU), TensorType(DType.float32, [2], GPU)
    with Graph("main", input_types=[t_cpu, t_gpu]) as g:
        with g.add_subgraph("sub", input_types=[t_cpu, t_gpu]) as sub:
            sub.output(sub.inputs[1].tensor * 2, sub.inputs[0].tensor + 1)
        a, b = ops.call(sub, *g.inputs)
        assert (a.device, b.device) == (GPU, CPU)
        g.output(a, b)
    got = gd.evaluate(g.core_graph, [np.ones(2, np.float32), np.full(2, 3, np.float32)])
    np.testing.assert_array_equal(got[0], [6, 6])
    np.testing.assert_array_equal(got[1], [2, 2])


def test_slice_by_several_scalar_tensors() -> None:
    """Each scalar integer tensor index gathers its axis (the rest sliced first)."""
    c = lambda i: ops.constant(i, DType.int64, device=CPU)  # noqa: E731
    with Graph("s", input_types=[TensorType(DType.float32, [3, 4, 5], CPU)]) as g:
        x = g.inputs[0].tensor
        a = ops.slice_tensor(x, [c(1), ..., c(-2)])
        b = ops.slice_tensor(x, [c(2), slice(1, 3), c(0)])
        assert (a.shape, b.shape) == ([4], [2])
        g.output(a, b)
    v = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    got = gd.evaluate(g.core_graph, [v])
    np.testing.assert_array_equal(got[0], v[1, :, -2])
    np.testing.assert_array_equal(got[1], v[2, 1:3, 0])
