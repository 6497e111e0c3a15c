"""The vision ops (conv2d, conv3d, conv2d_transpose, max_pool2d, avg_pool2d, pad, resize):
numpy goldens written here from the definitions (Python loops over every output and tap,
exact fractions for resize), checked on both backends; types under every policy; user
errors; symbolic sizes; the export's structure (channels-last transposes cancelled, native
operators where onnxruntime's kernel matches); and the onnxruntime behaviours the
legalizations rely on.

Tolerances. gd.evaluate sums in float64 and rounds once: within an ulp of the golden (also
float64). onnxruntime sums n terms in float32 in its own order: within (n + 2) eps *
sum|terms| of it, sum|terms| being the golden applied to |operands|.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import floats
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from backend import export, run
from onnx import TensorProto, helper

import graphdsl as gd
from exporters.onnx import cpu_nodes
from exporters.onnx._lower.vision import MEASURED_CPU

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)
RNG = np.random.default_rng(7)


# ---------------------------------------------------------------------------- goldens


def conv_golden(
    x: np.ndarray, w: np.ndarray, stride: tuple[int, ...], dilation: tuple[int, ...],
    pads: tuple[int, ...], groups: int = 1, bias: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """Cross-correlation, channels first: x (N, C, *S), w (F, C / groups, *K); pads (before,
    after) per axis; a padded tap reads 0 and is multiplied too (0 * inf is NaN)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, _, *size = x.shape
    f, cg, *k = w.shape
    nd = len(size)
    outs = [(size[a] + pads[2 * a] + pads[2 * a + 1] - dilation[a] * (k[a] - 1) - 1)
            // stride[a] + 1 for a in range(nd)]  # fmt: skip
    out = np.zeros((n, f, *outs))
    fg = f // groups
    with np.errstate(all="ignore"):
        for b, o, pos in itertools.product(range(n), range(f), itertools.product(
                *(range(m) for m in outs))):  # fmt: skip
            acc = 0.0 if bias is None else float(bias[o])
            for ch, tap in itertools.product(range(cg), itertools.product(*(range(m) for m in k))):
                at = [pos[a] * stride[a] - pads[2 * a] + tap[a] * dilation[a] for a in range(nd)]
                inside = all(0 <= at[a] < size[a] for a in range(nd))
                xv = x[(b, (o // fg) * cg + ch, *at)] if inside else 0.0
                acc += xv * w[(o, ch, *tap)]
            out[(b, o, *pos)] = acc
    return out


def conv_transpose_golden(
    x: np.ndarray, w: np.ndarray, stride: tuple[int, int], dilation: tuple[int, int],
    pads: tuple[int, int, int, int], out_pads: tuple[int, int], bias: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """x (N, C_in, H, W), w (C_in, C_out, kh, kw): input (i, j) adds x * w[tap] at output
    (i * stride + tap * dilation - pad_before); only real input elements add anything."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    ho = (h - 1) * stride[0] - pads[0] - pads[1] + dilation[0] * (kh - 1) + out_pads[0] + 1
    wo = (wd - 1) * stride[1] - pads[2] - pads[3] + dilation[1] * (kw - 1) + out_pads[1] + 1
    out = np.zeros((n, co, ho, wo))
    if bias is not None:
        out += bias.astype(np.float64).reshape(1, -1, 1, 1)
    with np.errstate(all="ignore"):
        for b, c, i, j, o, p, q in itertools.product(
            range(n), range(ci), range(h), range(wd), range(co), range(kh), range(kw)
        ):
            y = i * stride[0] + p * dilation[0] - pads[0]
            z = j * stride[1] + q * dilation[1] - pads[2]
            if 0 <= y < ho and 0 <= z < wo:
                out[b, o, y, z] += x[b, c, i, j] * w[c, o, p, q]
    return out


def pool_golden(
    x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
    padding: tuple[int, int], ceil: bool, kind: str, count_boundary: bool = True,
) -> np.ndarray:  # fmt: skip
    """PyTorch's pooling, channels first. Output size floor (ceil) of (n + 2p - d(k-1) - 1)
    / s, + 1, less a ceil-mode window starting in the right padding. max: NaN wins, +0.0
    over -0.0, padding never wins; avg: the sum over the taps inside the padded input
    (count_boundary) or inside the input."""
    n, c, h, w = x.shape
    size = (h, w)
    outs = []
    for a in range(2):
        span = size[a] + 2 * padding[a] - dilation[a] * (kernel[a] - 1) - 1
        o = (math.ceil(span / stride[a]) if ceil else span // stride[a]) + 1
        if ceil and (o - 1) * stride[a] >= size[a] + padding[a]:
            o -= 1
        outs.append(o)
    dtype = np.float64 if kind == "avg" else x.dtype
    out = np.zeros((n, c, *outs), dtype)
    for b, ch, oh, ow in itertools.product(range(n), range(c), range(outs[0]), range(outs[1])):
        taps, counted = [], 0
        for i, j in itertools.product(range(kernel[0]), range(kernel[1])):
            y = oh * stride[0] - padding[0] + i * dilation[0]
            z = ow * stride[1] - padding[1] + j * dilation[1]
            in_padded = -padding[0] <= y < h + padding[0] and -padding[1] <= z < w + padding[1]
            inside = 0 <= y < h and 0 <= z < w
            if inside:
                taps.append(x[b, ch, y, z])
            counted += inside or (count_boundary and in_padded)
        if kind == "avg":
            out[b, ch, oh, ow] = sum(float(t) for t in taps) / counted
            continue
        vals = np.array(taps)
        if vals.dtype.kind == "f" and np.isnan(vals).any():
            out[b, ch, oh, ow] = np.nan
        elif vals.dtype.kind == "f" and vals.max() == 0:
            out[b, ch, oh, ow] = 0.0 if (~np.signbit(vals[vals == 0])).any() else -0.0
        else:
            out[b, ch, oh, ow] = vals.max()
    return out


def cubic(z: Fraction) -> Fraction:
    a, z = Fraction(-3, 4), abs(z)
    if z <= 1:
        return (a + 2) * z**3 - (a + 3) * z**2 + 1
    if z < 2:
        return a * z**3 - 5 * a * z**2 + 8 * a * z - 4 * a
    return Fraction(0)


def resize_axis_golden(x: np.ndarray, axis: int, n_out: int, mode: str) -> np.ndarray:
    """One axis, half-pixel: src = (o + 1/2) n_in / n_out - 1/2 (exact); nearest rounds half
    down, bilinear clamps src at 0, bicubic takes 4 neighbours; indices clamp to the edges."""
    n_in = x.shape[axis]
    if n_in == n_out:
        return x
    rows = []
    for o in range(n_out):
        src = (Fraction(o) + Fraction(1, 2)) * Fraction(n_in, n_out) - Fraction(1, 2)
        if mode == "nearest":
            taps = [(math.ceil(src - Fraction(1, 2)), Fraction(1))]
        elif mode == "bilinear":
            src = max(src, Fraction(0))
            i0 = math.floor(src)
            taps = [(i0, 1 - (src - i0)), (i0 + 1, src - i0)]
        else:
            i0 = math.floor(src)
            taps = [(i0 + j, cubic(src - i0 - j)) for j in (-1, 0, 1, 2)]
        with np.errstate(all="ignore"):
            parts = [np.take(x, min(max(i, 0), n_in - 1), axis=axis) * float(wt)
                     for i, wt in taps]  # fmt: skip
            rows.append(sum(parts[1:], parts[0]))
    return np.stack(rows, axis=axis)


# ---------------------------------------------------------------------------- helpers


def one_op(
    build: Callable[..., gd.Symbol], *types: gd.TensorType, policy: str = "default"
) -> gd.Graph:  # fmt: skip
    g = gd.Graph("v", input_types={f"x{i}": t for i, t in enumerate(types)}, policy=policy)
    g.output(build(*g.inputs))
    return g


def both(g: gd.Graph, *xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """gd.evaluate's and onnxruntime's result (the model checked in full)."""
    want = gd.evaluate(g, list(xs))[0]
    got = run(export(g, check="full"), list(xs))[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    return want, got


def assert_within(got: np.ndarray, golden: np.ndarray, bound: np.ndarray | float) -> None:
    """Within the bound stated beside the call, NaN where NaN, infinities equal (tests/
    floats.py's assert_close, both sides as float64: the golden is float64)."""
    floats.assert_close(got.astype(np.float64), golden.astype(np.float64), bound)


def assert_exact_windows(got: np.ndarray, want: np.ndarray, terms: np.ndarray) -> None:
    """``got`` equals ``want`` (zero signs aside) where every window's sum is exact by
    construction: checked with all of ``terms`` as each window's (a superset of its terms:
    a larger sum and a finer grid, so a sufficient condition; tests/floats.py)."""
    t = np.asarray(terms, np.float64).ravel()
    floats.assert_exact_sum(got, want, np.broadcast_to(t, (*np.shape(want), t.size)))


def ulp(golden: np.ndarray, dt: Any) -> np.ndarray:
    return np.asarray(np.abs(golden) * float(ml_dtypes.finfo(dt).eps))


def nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def nchw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


# ---------------------------------------------------------------------------- convolution

CONV_CASES = [  # stride, dilation, padding (top, bottom, left, right), groups
    ((1, 1), (1, 1), (0, 0, 0, 0), 1),
    ((2, 1), (1, 2), (1, 0, 2, 1), 2),
    ((1, 3), (2, 1), (2, 2, 0, 1), 4),
    ((3, 2), (1, 1), (0, 1, 1, 0), 1),
]


@pytest.mark.parametrize(("stride", "dilation", "padding", "groups"), CONV_CASES)
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_conv2d_matches_golden(
    stride: tuple[int, int], dilation: tuple[int, int], padding: tuple[int, int, int, int],
    groups: int, layout: str,
) -> None:  # fmt: skip
    x = RNG.normal(size=(2, 4, 7, 8)).astype(np.float32)  # NCHW
    w = RNG.normal(size=(8, 4 // groups, 3, 2)).astype(np.float32)  # OIHW
    bias = RNG.normal(size=8).astype(np.float32)
    golden = conv_golden(x, w, stride, dilation, padding, groups, bias)
    scale = conv_golden(np.abs(x), np.abs(w), stride, dilation, padding, groups, np.abs(bias))
    last = layout == "NHWC"
    xin, filt = (nhwc(x), w.transpose(2, 3, 1, 0)) if last else (x, w)
    g = one_op(lambda v: gd.ops.conv2d(v, filt, stride, dilation, padding, groups, bias,
                                       input_layout=layout),
               gd.TensorType(gd.float32, xin.shape))  # fmt: skip
    want, got = both(g, xin)
    if last:
        want, got = nchw(want), nchw(got)
    assert_within(want, golden, ulp(golden, np.float32))
    n = 4 // groups * 6 + 1  # products and the bias per output
    assert_within(got, golden, (n + 2) * EPS32 * scale)


@pytest.mark.parametrize("dt", [gd.float16, gd.bfloat16, gd.float64])
def test_conv2d_other_floats_round_once(dt: gd.DType) -> None:
    x = RNG.normal(size=(1, 3, 5, 6)).astype(dt.np)
    w = RNG.normal(size=(2, 3, 3, 3)).astype(dt.np)
    golden = conv_golden(x, w, (1, 1), (1, 1), (1, 1, 1, 1))
    g = one_op(lambda v: gd.ops.conv2d(v, w, padding=(1, 1, 1, 1), input_layout="NCHW"),
               gd.TensorType(dt, x.shape))  # fmt: skip
    want, got = both(g, x)
    scale = conv_golden(np.abs(x), np.abs(w), (1, 1), (1, 1), (1, 1, 1, 1))
    if dt is gd.float64:  # no wider type: the reference's sum is in its own order too
        assert_within(want, golden, 29 * EPS64 * scale)
        assert_within(got, golden, 29 * EPS64 * scale)
        return
    # the reference: the float64 sum rounded once to the dtype, as the golden in its own
    # order: two float64 sums of 27 products, rounded (tests/floats.py's dot bound)
    golden_dt = golden.astype(dt.np)
    floats.assert_close(want, golden_dt, floats.dot_bound(scale, 27, dt, want, golden_dt,
                                                          np.float64))  # fmt: skip
    assert_within(got, golden, 29 * EPS32 * scale + ulp(golden, dt.np))


def test_conv2d_inf_filter_over_padding_is_nan() -> None:
    # zero padding is multiplied like any element: 0 * inf = NaN (onnxruntime agrees)
    w = np.ones((1, 1, 2, 2), np.float32)
    w[0, 0, 0, 0] = np.inf
    x = np.ones((1, 1, 2, 2), np.float32)
    g = one_op(lambda v: gd.ops.conv2d(v, w, padding=(1, 0, 1, 0), input_layout="NCHW"),
               gd.TensorType(gd.float32, x.shape))  # fmt: skip
    want, got = both(g, x)
    golden = conv_golden(x, w, (1, 1), (1, 1), (1, 0, 1, 0))
    assert np.isnan(golden[0, 0, 0, 0]) and golden[0, 0, 1, 1] == np.inf
    # the dot bound: NaN where a tap of inf meets the padding, inf where it meets x
    with np.errstate(invalid="ignore"):
        scale = conv_golden(np.abs(x), np.abs(w), (1, 1), (1, 1), (1, 0, 1, 0))
    golden32 = golden.astype(np.float32)
    floats.assert_close(want, golden32, floats.dot_bound(scale, 4, np.float32, want, golden32))
    floats.assert_close(got, want, floats.dot_bound(scale, 4, np.float32, got, want))


def test_conv3d_matches_golden() -> None:
    x = RNG.normal(size=(2, 3, 4, 5, 6)).astype(np.float32)
    w = RNG.normal(size=(4, 3, 2, 3, 2)).astype(np.float32)
    stride, dilation, pads = (1, 2, 1), (2, 1, 1), (1, 0, 0, 1, 1, 1)
    golden = conv_golden(x, w, stride, dilation, pads)
    scale = conv_golden(np.abs(x), np.abs(w), stride, dilation, pads)
    xin = np.ascontiguousarray(np.moveaxis(x, 1, -1))  # NDHWC
    filt = w.transpose(2, 3, 4, 1, 0)  # QRSCF
    g = one_op(lambda v: gd.ops.conv3d(v, filt, stride, dilation, pads),
               gd.TensorType(gd.float32, xin.shape))  # fmt: skip
    want, got = (np.moveaxis(r, -1, 1) for r in both(g, xin))
    assert_within(want, golden, ulp(golden, np.float32))
    assert_within(got, golden, (36 + 2) * EPS32 * scale)


@pytest.mark.parametrize("dt", [gd.float32, gd.float64])
@pytest.mark.parametrize(
    ("stride", "dilation", "pads", "out_pads"),
    [((1, 1), (1, 1), (0, 0, 0, 0), (0, 0)), ((2, 3), (1, 2), (1, 0, 2, 1), (1, 2)),
     ((3, 2), (2, 1), (0, 2, 0, 0), (2, 0))],
)  # fmt: skip
def test_conv2d_transpose_matches_golden(
    dt: gd.DType, stride: tuple[int, int], dilation: tuple[int, int],
    pads: tuple[int, int, int, int], out_pads: tuple[int, int],
) -> None:  # fmt: skip
    x = RNG.normal(size=(2, 3, 4, 5)).astype(dt.np)
    w = RNG.normal(size=(3, 2, 3, 2)).astype(dt.np)  # (in, out, kh, kw)
    bias = RNG.normal(size=2).astype(dt.np)
    golden = conv_transpose_golden(x, w, stride, dilation, pads, out_pads, bias)
    scale = conv_transpose_golden(np.abs(x), np.abs(w), stride, dilation, pads, out_pads,
                                  np.abs(bias))  # fmt: skip
    filt = w.transpose(2, 3, 1, 0)  # RSCF: (kh, kw, out, in)
    g = one_op(lambda v: gd.ops.conv2d_transpose(v, filt, stride, dilation, pads, out_pads,
                                                 bias),
               gd.TensorType(dt, nhwc(x).shape))  # fmt: skip
    want, got = (nchw(r) for r in both(g, nhwc(x)))
    eps = EPS32 if dt is gd.float32 else EPS64
    # float32: rounded once from float64; float64: a sum in another order
    assert_within(want, golden, ulp(golden, dt.np) if dt is gd.float32 else 21 * eps * scale)
    assert_within(got, golden, (3 * 6 + 3) * eps * scale)


def test_conv2d_transpose_only_real_elements_add() -> None:
    # between and around the input elements there is no term: an inf in the filter makes NaN
    # only where an input element of 0 meets it (both backends, float32 and float64)
    w = np.array([[[[1.0, np.inf]]]])  # (in, out, kh, kw)
    x = np.array([[[[2.0, 0.0]]]])
    golden = conv_transpose_golden(x, w, (1, 2), (1, 1), (0, 0, 0, 0), (0, 0))
    assert golden.ravel().tolist()[:3] == [2.0, np.inf, 0.0] and np.isnan(golden[0, 0, 0, 3])
    for dt in (gd.float32, gd.float64):
        g = one_op(
            lambda v, dt=dt: gd.ops.conv2d_transpose(
                v, w.astype(dt.np), stride=(1, 2), input_layout="NCHW"
            ),
            gd.TensorType(dt, x.shape),
        )
        want, got = both(g, x.astype(dt.np))
        # the terms are 2 and 0 times 1 and inf (a sum of one product each): NaN, inf, or
        # exact, which the dot bound (0 for exact products, NaN or inf elsewhere) checks
        with np.errstate(invalid="ignore"):
            scale = conv_transpose_golden(np.abs(x), np.abs(w), (1, 2), (1, 1), (0, 0, 0, 0),
                                          (0, 0))  # fmt: skip
        gd_ = golden.astype(dt.np)
        floats.assert_close(want, gd_, floats.dot_bound(scale, 1, dt, want, gd_))
        floats.assert_close(got, want, floats.dot_bound(scale, 1, dt, got, want))


def test_conv2d_matches_pytorch_style_example() -> None:
    # a hand-computed case: 3x3 input, 2x2 ones filter, stride 2, padding 1 on every side
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    g = one_op(lambda v: gd.ops.conv2d(v, np.ones((1, 1, 2, 2), np.float32), stride=(2, 2),
                                       padding=(1, 1, 1, 1), input_layout="NCHW"),
               gd.TensorType(gd.float32, x.shape))  # fmt: skip
    want, got = both(g, x)
    assert want[0, 0].tolist() == [[0, 3], [9, 24]]
    assert_exact_windows(got, want, x)  # sums of 0..8


# ---------------------------------------------------------------------------- pooling

POOL_CASES = [  # kernel, stride, dilation, padding, ceil
    ((2, 2), (2, 2), (1, 1), (0, 0), False),
    ((3, 2), (2, 2), (1, 1), (1, 1), True),  # a ceil-mode window past the padding
    ((2, 3), (3, 1), (2, 1), (1, 1), True),
    ((2, 2), (1, 2), (3, 1), (2, 1), False),  # padding as large as the kernel
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
]


@pytest.mark.parametrize(("kernel", "stride", "dilation", "padding", "ceil"), POOL_CASES)
@pytest.mark.parametrize("dt", [gd.float32, gd.float16, gd.float64, gd.int8, gd.int16,
                                gd.int32, gd.int64, gd.uint64, gd.bool])  # fmt: skip
def test_max_pool2d_matches_golden(
    kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
    padding: tuple[int, int], ceil: bool, dt: gd.DType,
) -> None:  # fmt: skip
    if dt.is_float:
        vals = np.array([0.0, -0.0, 1.5, -2.0, np.nan, -np.inf, np.inf, 3.0, -0.5])
        x = RNG.choice(vals, size=(2, 3, 7, 6), p=[0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.05, 0.1,
                                                   0.15]).astype(dt.np)  # fmt: skip
    elif dt is gd.bool:
        x = RNG.random((2, 3, 7, 6)) < 0.2
    else:
        info = np.iinfo(dt.np)
        x = RNG.choice(np.array([info.min, info.max, 0, -1, 5], dtype=object)[
            : 5 if info.min < 0 else 3], size=(2, 3, 7, 6)).astype(dt.np)  # fmt: skip
    golden = pool_golden(x, kernel, stride, dilation, padding, ceil, "max")
    for layout in ("NCHW", "NHWC"):
        xin = x if layout == "NCHW" else nhwc(x)
        g = one_op(lambda v, layout=layout: gd.ops.max_pool2d(
            v, kernel, stride, dilation, padding, ceil, input_layout=layout),
            gd.TensorType(dt, xin.shape))  # fmt: skip
        want, got = both(g, xin)
        if layout == "NHWC":
            want, got = nchw(want), nchw(got)
        # a selection: exact, the sign of zero included
        for r in (want, got):
            floats.assert_bits(r, golden.astype(dt.np))


def test_max_pool2d_ceil_mode_drops_a_window_starting_in_the_padding() -> None:
    # PyTorch: H = 5, kernel 2, stride 2, padding 1: ceil(5 / 2) + 1 = 4 windows, but the
    # last would start at 6 = H + padding (in the padding): 3
    g = one_op(lambda v: gd.ops.max_pool2d(v, (2, 2), 2, padding=1, ceil_mode=True,
                                           input_layout="NCHW"),
               gd.TensorType(gd.float32, (1, 1, 5, 5)))  # fmt: skip
    assert g.outputs[0].shape == (1, 1, 3, 3)
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    want, got = both(g, x)
    assert want[0, 0].tolist() == [[0, 2, 4], [10, 12, 14], [20, 22, 24]]
    floats.assert_bits(got, want)


@pytest.mark.parametrize(("kernel", "stride", "dilation", "padding", "ceil"), POOL_CASES)
@pytest.mark.parametrize("boundary", [True, False])
@pytest.mark.parametrize("dt", [gd.float32, gd.float64, gd.float16])
def test_avg_pool2d_matches_golden(
    kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
    padding: tuple[int, int], ceil: bool, boundary: bool, dt: gd.DType,
) -> None:  # fmt: skip
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        pytest.skip("average pooling takes at most half the (undilated) kernel as padding")
    x = RNG.normal(size=(2, 3, 7, 6)).astype(dt.np)
    golden = pool_golden(x, kernel, stride, dilation, padding, ceil, "avg", boundary)
    scale = pool_golden(np.abs(x), kernel, stride, dilation, padding, ceil, "avg", boundary)
    g = one_op(lambda v: gd.ops.avg_pool2d(v, kernel, stride, dilation, padding, ceil,
                                           boundary),
               gd.TensorType(dt, nhwc(x).shape))  # fmt: skip
    want, got = (nchw(r) for r in both(g, nhwc(x)))
    n = kernel[0] * kernel[1]
    if dt is gd.float64:  # a sum in numpy's order: within its bound too
        assert_within(want, golden, (n + 2) * EPS64 * scale)
    else:  # two float64 sums (the golden's order, the reference's), each rounded once
        golden_dt = golden.astype(dt.np)
        b = floats.sum_bound(scale, n, dt, want, golden_dt, np.float64)
        floats.assert_close(want, golden_dt, b)
    eps = EPS64 if dt is gd.float64 else EPS32
    assert_within(got, golden, (n + 2) * eps * scale + ulp(golden, dt.np))


def test_avg_pool2d_divisors() -> None:
    # 2x2 input, kernel 2, stride 2, padding 1: each window holds one element and three pads
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32).reshape(1, 1, 2, 2)
    for boundary, expect in ((True, [[0.25, 0.5], [0.75, 1.0]]), (False, [[1, 2], [3, 4]])):
        g = one_op(lambda v, c=boundary: gd.ops.avg_pool2d(
            v, (2, 2), 2, padding=1, count_boundary=c, input_layout="NCHW"),
            gd.TensorType(gd.float32, x.shape))  # fmt: skip
        want, got = both(g, x)
        assert want[0, 0].tolist() == expect
        assert_exact_windows(got, want, np.concatenate([x.ravel(), x.ravel() / 4]))


def test_avg_pool2d_of_integers_is_the_default_float() -> None:
    x = np.array([[1, 2], [4, 8]], np.int32).reshape(1, 1, 2, 2)
    g = one_op(lambda v: gd.ops.avg_pool2d(v, (2, 2), input_layout="NCHW"),
               gd.TensorType(gd.int32, x.shape))  # fmt: skip
    want, got = both(g, x)
    assert want.dtype == np.float32 and want.ravel().tolist() == [3.75]
    assert_exact_windows(got, want, x / 4)


# ---------------------------------------------------------------------------- pad, resize


def pad_golden(x: np.ndarray, pads: tuple[int, ...], mode: str, value: Any) -> np.ndarray:
    """Each output index maps to an input index: shifted; reflected about the edge elements
    (-1 -> 1, n -> n - 2); clamped to the edge; or the value where constant padding."""
    out_shape = [n + pads[2 * a] + pads[2 * a + 1] for a, n in enumerate(x.shape)]
    out = np.empty(out_shape, x.dtype)
    for pos in itertools.product(*(range(n) for n in out_shape)):
        src, fill = [], False
        for a, p in enumerate(pos):
            i, n = p - pads[2 * a], x.shape[a]
            if mode == "reflect":
                i = -i if i < 0 else 2 * (n - 1) - i if i >= n else i
            elif mode == "edge":
                i = min(max(i, 0), n - 1)
            fill |= not 0 <= i < n
            src.append(i)
        out[pos] = value if fill else x[tuple(src)]
    return out


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("dt", [gd.float32, gd.float16, gd.bfloat16, gd.float64, gd.int8,
                                gd.int16, gd.uint16, gd.int64, gd.uint64, gd.bool,
                                gd.float8_e4m3fn])  # fmt: skip
def test_pad_matches_golden(mode: str, dt: gd.DType) -> None:
    x = (RNG.normal(size=(3, 4, 2)) * 10).astype(np.float32)
    x = (x > 0) if dt is gd.bool else x.astype(dt.np)
    if dt.is_float:
        x.ravel()[:3] = [np.nan, -0.0, np.inf]
    pads = (1, 2, 0, 3, 1, 0)
    value = 1 if dt is gd.bool or not dt.is_float else 0.1
    g = one_op(lambda v: gd.ops.pad(v, pads, mode, value), gd.TensorType(dt, x.shape))
    want, got = both(g, x)
    fill = np.array(value).astype(dt.np)  # the value rounds to the dtype
    golden = pad_golden(x, pads, mode, fill)
    for r in (want, got):
        floats.assert_bits(r, golden)  # data movement


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("dt", [gd.float32, gd.float16, gd.float64])
@pytest.mark.parametrize("size", [(5, 9), (3, 2), (7, 4), (1, 6), (4, 8)])
def test_resize_matches_golden(mode: str, dt: gd.DType, size: tuple[int, int]) -> None:
    x = RNG.normal(size=(2, 3, 4, 6)).astype(dt.np)
    golden = x.astype(np.float64)
    scale = np.abs(golden)
    for axis, n_out in ((2, size[0]), (3, size[1])):
        golden = resize_axis_golden(golden, axis, n_out, mode)
        if mode == "bicubic":  # the absolute weights bound a bicubic sum's rounding
            top = np.max(np.abs(x.astype(np.float64)))
            scale = np.full(golden.shape, top * 1.5)
        else:
            scale = resize_axis_golden(scale, axis, n_out, mode)
    g = one_op(lambda v: gd.ops.resize(v, (2, 3, *size), mode), gd.TensorType(dt, x.shape))
    want, got = both(g, x)
    if mode == "nearest":  # data movement
        floats.assert_bits(want, golden.astype(dt.np))
        floats.assert_bits(got, want)
        return
    assert_within(want, golden, ulp(golden, dt.np) + 1e-12 * scale)
    # onnxruntime's half-pixel coordinate in float32 moves the weights by a few eps times
    # the input size (its own float32 arithmetic; the float64 path computes exact weights)
    eps = float(np.finfo(np.float64).eps) if dt is gd.float64 else EPS32
    assert_within(got, golden, 24 * (6 + 2) * eps * scale + ulp(golden, dt.np))


def test_resize_nearest_is_exact_for_every_size_pair() -> None:
    # exact half-down indices for every size pair 1..40 (onnxruntime's native Resize picks
    # another element for 36 -> 21: the lowering gathers the reference's indices)
    x = np.arange(40, dtype=np.float32).reshape(1, 1, 40, 1)
    for n_in, n_out in itertools.product(range(1, 41), repeat=2):
        g = one_op(lambda v, o=n_out: gd.ops.resize(v, (1, 1, o, 1), "nearest"),
                   gd.TensorType(gd.float32, (1, 1, n_in, 1)))  # fmt: skip
        want, got = both(g, x[:, :, :n_in])
        golden = resize_axis_golden(x[:, :, :n_in].astype(np.float64), 2, n_out, "nearest")
        floats.assert_bits(want, golden.astype(want.dtype), f"{n_in} -> {n_out}")
        floats.assert_bits(got, want, f"{n_in} -> {n_out}")


def test_resize_of_an_empty_axis_is_refused_when_built() -> None:
    # (a fresh fuzz seed: numpy's take refused it at evaluation, onnxruntime's Gather at run
    # time) an empty batch or channel axis is fine: nothing is interpolated along it
    g = gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, (1, 1, 0, 3))})
    with pytest.raises(gd.ShapeError, match=r"x's H is 0, and an empty axis has no values"):
        gd.ops.resize(g.inputs[0], (1, 1, 2, 3), "nearest")
    g = one_op(lambda v: gd.ops.resize(v, (0, 2, 4, 1)), gd.TensorType(gd.float32, (0, 2, 2, 1)))
    want, got = both(g, np.zeros((0, 2, 2, 1), np.float32))
    assert want.shape == got.shape == (0, 2, 4, 1)


def test_resize_copies_an_axis_it_does_not_resize() -> None:
    # an inf in one row stays in its row (onnxruntime's cubic Resize would spread a NaN: the
    # lowering gathers the taps instead)
    x = np.array([[1.0, 2.0], [np.inf, 4.0]], np.float32).reshape(1, 1, 2, 2)
    for mode in ("bilinear", "bicubic"):
        g = one_op(lambda v, m=mode: gd.ops.resize(v, (1, 1, 2, 4), m),
                   gd.TensorType(gd.float32, x.shape))  # fmt: skip
        want, got = both(g, x)
        assert np.isfinite(want[0, 0, 0]).all() and np.isfinite(got[0, 0, 0]).all()
        golden = resize_axis_golden(x.astype(np.float64), 3, 4, mode)
        assert_within(got, golden, 16 * EPS32 * np.abs(golden))


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("dt", [gd.float32, gd.float64])
def test_resize_of_every_axis_by_symbolic_sizes_matches_golden(mode: str, dt: gd.DType) -> None:
    # N, C, H and W, each resized on its own (MAX's resize takes all four), by sizes known
    # only at run time: the lowering computes the taps from the sizes in the model
    g = gd.Graph("r", input_types={"x": gd.TensorType(dt, ("n", "c", "h", "w"))})
    (x,) = g.inputs
    n, c, _, w = x.shape
    g.output(gd.ops.resize(x, (n * 2, c + 1, 5, w + n), mode))
    assert g.outputs[0].type.shape == (n * 2, c + 1, 5, w + n)
    for shape in [(1, 2, 3, 4), (2, 1, 2, 2), (3, 3, 5, 1)]:
        xs = RNG.normal(size=shape).astype(dt.np)
        golden = xs.astype(np.float64)
        for axis, n_out in enumerate((shape[0] * 2, shape[1] + 1, 5, shape[3] + shape[0])):
            golden = resize_axis_golden(golden, axis, n_out, mode)
        want, got = both(g, xs)
        if mode == "nearest":  # data movement
            floats.assert_bits(want, golden.astype(dt.np))
            floats.assert_bits(got, want)
            continue
        # four axes of sums of at most 4 terms, each weight at most 1.25 in magnitude
        # (Keys' kernel): |golden| <= 1.5^4 max|x| bounds every partial sum
        eps = EPS64 if dt is gd.float64 else EPS32
        scale = 1.5**4 * float(np.max(np.abs(xs)))
        assert_within(want, golden, ulp(golden, dt.np) + 1e-12 * scale)
        assert_within(got, golden, 4 * 8 * eps * scale + ulp(golden, dt.np))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("sizes", [(37, 64), (37, 16384), (9, 4), (64, 3)])
def test_resize_weights_for_symbolic_sizes_equal_the_references(
    mode: str, sizes: tuple[int, int]
) -> None:
    # one-hot rows read the weights off: row j of the eye, resized, holds at output o the
    # weight of tap j (one tap at most for an inner j), computed in the model from the
    # run-time sizes (Keys' cubic as an integer polynomial over 4 den^3): bit for bit the
    # reference's exact weights, rounded once
    n_in, n_out = sizes
    g = gd.Graph("r", input_types={"x": gd.TensorType(gd.float64, (1, "c", 1, "w")),
                                   "k": gd.TensorType(gd.int8, ("k",))})  # fmt: skip
    x, _ = g.inputs
    g.output(gd.ops.resize(x, (1, x.shape[1], 1, "k"), mode))
    eye = np.eye(n_in).reshape(1, n_in, 1, n_in)
    want, got = both(g, eye, np.zeros(n_out, np.int8))
    inner = slice(2, n_in - 2)
    floats.assert_bits(got[:, inner], want[:, inner])
    golden = resize_axis_golden(eye[:, inner], 3, n_out, mode)
    floats.assert_bits(want[:, inner], golden)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_resize_to_a_symbolic_size_equal_at_run_time_copies_the_axis(mode: str) -> None:
    # W resized to k, a size of another input: where k == w at run time the reference copies
    # the axis, and so must the model (its taps (1, 0) or (0, 1, 0, 0) would put NaN beside
    # an inf); where k != w it resizes
    g = gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, (1, 1, 2, "w")),
                                   "k": gd.TensorType(gd.int8, ("k",))})  # fmt: skip
    x, _ = g.inputs
    g.output(gd.ops.resize(x, (1, 1, 2, "k"), mode))
    xs = np.array([[1.0, 2.0, 3.0], [np.inf, 4.0, 5.0]], np.float32).reshape(1, 1, 2, 3)
    want, got = both(g, xs, np.zeros(3, np.int8))
    floats.assert_bits(want, xs)
    floats.assert_bits(got, xs)
    want, got = both(g, xs, np.zeros(5, np.int8))
    golden = resize_axis_golden(xs.astype(np.float64), 3, 5, mode)
    assert np.isfinite(got[0, 0, 0]).all()
    assert_within(got, golden, 16 * EPS32 * np.abs(golden))


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_resize_of_a_symbolic_axis_bound_to_zero_gives_the_empty_result(mode: str) -> None:
    # (the fuzzer, after N became resizable) n * 2 outputs of n = 0 inputs: no coordinates,
    # but the model's Range took a zero step and its Div a zero divisor, and onnxruntime
    # refuses both even for empty tensors
    g = one_op(lambda v: gd.ops.resize(v, (v.shape[0] * 2, 1, 3, 4), mode),
               gd.TensorType(gd.float32, ("n", 1, 2, 2)))  # fmt: skip
    want, got = both(g, np.zeros((0, 1, 2, 2), np.float32))
    assert want.shape == got.shape == (0, 1, 3, 4)
    want, got = both(g, np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2))
    assert want.shape == got.shape == (4, 1, 3, 4)


def test_resize_refuses_an_empty_axis_at_run_time() -> None:
    g = gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, (1, 1, 2, "w"))})
    (x,) = g.inputs
    g.output(gd.ops.resize(x, (1, 1, 2, 4)))
    with pytest.raises(gd.ShapeError, match=r"resize's input has W = 0 .* an empty axis"):
        gd.evaluate(g, [np.zeros((1, 1, 2, 0), np.float32)])


# ---------------------------------------------------------------------------- types


@pytest.mark.parametrize("policy", gd.policy_names())
def test_types_under_every_policy(policy: str) -> None:
    for a, b in itertools.product([gd.float16, gd.bfloat16, gd.float32, gd.int8], repeat=2):
        g = gd.Graph(
            "t",
            input_types={"x": gd.TensorType(a, (1, 4, 4, 2)), "w": gd.TensorType(b, (3, 3, 2, 5))},
            policy=policy,
        )
        x, w = g.inputs
        try:
            joined = g.policy.promote_types(a, b)
        except gd.PromotionError:
            with pytest.raises((gd.PromotionError, gd.OpTypeError)):
                gd.ops.conv2d(x, w)
            continue
        if not joined.is_float:
            with pytest.raises(gd.OpTypeError, match="floating"):
                gd.ops.conv2d(x, w)
            continue
        assert gd.ops.conv2d(x, w).dtype is joined
    g = gd.Graph(
        "t",
        input_types={
            "i": gd.TensorType(gd.int16, (1, 3, 4, 4)),
            "b": gd.TensorType(gd.bool, (1, 3, 4, 4)),
        },
        policy=policy,
    )
    i, b = g.inputs
    default_float = g.policy.default_float
    assert gd.ops.avg_pool2d(i, (2, 2)).dtype is default_float
    assert gd.ops.resize(i, (1, 3, 2, 2)).dtype is default_float
    assert gd.ops.resize(i, (1, 3, 2, 2), "nearest").dtype is gd.int16
    assert gd.ops.max_pool2d(i, (2, 2)).dtype is gd.int16
    assert gd.ops.max_pool2d(b, (2, 2)).dtype is gd.bool
    assert gd.ops.pad(b, (0, 0, 1, 1, 0, 0, 0, 0), value=True).dtype is gd.bool


def test_symbolic_sizes() -> None:
    g = gd.Graph("s", input_types={"x": gd.TensorType(gd.float32, ("n", "h", "w", 3))})
    (x,) = g.inputs
    same = gd.ops.conv2d(x, np.ones((3, 3, 3, 4), np.float32), padding=(1, 1, 1, 1))
    grow = gd.ops.conv2d(x, np.ones((1, 1, 3, 4), np.float32), padding=(1, 1, 0, 2))
    up = gd.ops.conv2d_transpose(x, np.ones((3, 3, 2, 3), np.float32), stride=(2, 2),
                                 padding=(1, 1, 1, 1), output_paddings=(1, 1))  # fmt: skip
    pooled = gd.ops.max_pool2d(x, (3, 3), padding=1)
    padded = gd.ops.pad(x, (0, 0, 2, 0, 0, 1, 0, 0))
    assert same.shape == ("n", "h", "w", 4) and grow.shape == ("n", "h+2", "w+2", 4)
    assert up.shape == ("n", "h*2", "w*2", 2) and pooled.shape == ("n", "h", "w", 3)
    assert padded.shape == ("n", "h+2", "w+1", 3)
    g.output(same, grow, up, pooled, padded)
    model = export(g, check="full")
    for n, h, w in ((2, 5, 4), (1, 3, 7)):
        xs = RNG.normal(size=(n, h, w, 3)).astype(np.float32)
        for want, got in zip(gd.evaluate(g, {"x": xs}), run(model, {"x": xs}), strict=True):
            assert want.shape == got.shape
            assert_within(got, want, 40 * EPS32 * (1 + np.abs(want)))
    # float64 has no Conv kernel: the windows are gathered by slices for symbolic sizes
    g64 = one_op(lambda v: gd.ops.conv2d(v, np.ones((3, 2, 3, 2)), padding=(1, 1, 0, 1)),
                 gd.TensorType(gd.float64, ("n", "h", 5, 3)))  # fmt: skip
    model = export(g64, check="full")
    for n, h in ((2, 4), (1, 6)):
        xs = RNG.normal(size=(n, h, 5, 3))
        want, got = gd.evaluate(g64, {"x0": xs})[0], run(model, {"x0": xs})[0]
        assert_within(got, want, 1e-12 * (1 + np.abs(want)))


@pytest.mark.parametrize("dt", [gd.float32, gd.float64])
def test_strided_windows_of_symbolic_sizes_are_floor_divisions(dt: gd.DType) -> None:
    """ResNet's stem (7x7 conv, stride 2, padding 3; 3x3 max pool, stride 2, padding 1)
    on images of any size: each size is a floor division, bound and checked by run()."""
    g = gd.Graph("stem", input_types={"x": gd.TensorType(dt, ("n", 3, "h", "w"))})
    w = RNG.normal(size=(4, 3, 7, 7)).astype(dt.np)
    y = gd.ops.conv2d(g.inputs[0], w, stride=2, padding=3, input_layout="NCHW")
    z = gd.ops.max_pool2d(y, 3, stride=2, padding=1, input_layout="NCHW")
    assert y.shape == ("n", 4, "(h+-1)//(2)+1", "(w+-1)//(2)+1")
    assert z.shape == ("n", 4, "((h+-1)//(2))//(2)+1", "((w+-1)//(2))//(2)+1")
    g.output(z)
    model = export(g, check="full")
    for h, w_ in ((224, 224), (7, 9), (1, 2)):
        xs = RNG.normal(size=(2, 3, h, w_)).astype(dt.np)
        (want,), (got,) = gd.evaluate(g, [xs]), run(model, [xs])
        size = ((h + 1) // 2 + 1) // 2, ((w_ + 1) // 2 + 1) // 2  # PyTorch's sizes, twice
        assert want.shape == got.shape == (2, 4, *size)
        assert_within(got, want, 200 * EPS32 * (1 + np.abs(want)))
    # padding under dilation * (kernel - 1) in all would make small sizes negative: refused
    g = gd.Graph("stem", input_types={"x": gd.TensorType(dt, ("n", 3, "h", "w"))})
    with pytest.raises(gd.ShapeError, match="would be negative for small sizes"):
        gd.ops.conv2d(g.inputs[0], w, stride=2, padding=2, input_layout="NCHW")


# ---------------------------------------------------------------------------- errors


def _raises(kind: type[Exception], match: str, fn: Callable[[gd.Symbol], object],
            shape: tuple[Any, ...] = (1, 6, 6, 4), dt: gd.DType = gd.float32) -> None:  # fmt: skip
    g = gd.Graph("e", input_types={"x": gd.TensorType(dt, shape)})
    with pytest.raises(kind, match=match):
        fn(g.inputs[0])


def test_user_errors_say_what_is_wrong() -> None:
    f = np.ones((3, 3, 4, 8), np.float32)
    _raises(
        gd.ShapeError,
        "x's channels must be groups",
        lambda x: gd.ops.conv2d(x, np.ones((3, 3, 3, 8), np.float32)),
    )
    _raises(
        gd.ShapeError,
        "groups must divide",
        lambda x: gd.ops.conv2d(x, np.ones((3, 3, 1, 6), np.float32), groups=4),
    )
    _raises(
        gd.ShapeError, "kernel spans 9 elements", lambda x: gd.ops.conv2d(x, f, dilation=(4, 1))
    )
    _raises(
        gd.ShapeError,
        "bias must have shape",
        lambda x: gd.ops.conv2d(x, f, bias=np.ones(4, np.float32)),
    )
    _raises(
        gd.ShapeError,
        "smaller than the stride",
        lambda x: gd.ops.conv2d_transpose(
            x, np.ones((2, 2, 3, 4), np.float32), stride=(2, 2), output_paddings=(2, 0)
        ),
    )
    _raises(gd.ShapeError, "rank 4", lambda x: gd.ops.conv2d(x, f), shape=(6, 6, 4))
    _raises(
        gd.OpTypeError,
        "input_layout must be one of",
        lambda x: gd.ops.conv2d(x, f, input_layout="HWC"),
    )
    _raises(
        gd.OpTypeError,
        "floating",
        lambda x: gd.ops.conv2d(x, np.ones((3, 3, 4, 8), np.int32)),
        dt=gd.int32,
    )
    _raises(
        gd.ShapeError,
        "symbolic",
        lambda x: gd.ops.conv2d(x, f, stride=(2, 2)),
        shape=(1, "h", 6, 4),
    )
    _raises(gd.ShapeError, "at most half", lambda x: gd.ops.max_pool2d(x, (2, 2), padding=2))
    _raises(
        gd.ShapeError,
        "holds only padding",
        lambda x: gd.ops.max_pool2d(x, (2, 2), dilation=3, padding=2),
        shape=(1, 2, 2, 1),
    )
    _raises(
        gd.ShapeError,
        "static",
        lambda x: gd.ops.pad(x, (0, 0, 1, 1, 0, 0, 0, 0), "reflect"),
        shape=(1, "h", 6, 4),
    )
    _raises(gd.ShapeError, "size - 1", lambda x: gd.ops.pad(x, (0, 0, 6, 0, 0, 0, 0, 0), "reflect"))
    _raises(
        gd.OpTypeError,
        "does not fit",
        lambda x: gd.ops.pad(x, (0, 0, 1, 0, 0, 0, 0, 0), value=300),
        dt=gd.int8,
    )
    # (N and C resize, and symbolic sizes are taken: MAX's resize takes all four)
    _raises(gd.ShapeError, "give 4 sizes", lambda x: gd.ops.resize(x, (1, 3, 6)))
    _raises(gd.ShapeError, "a resized axis must have a size >= 1",
            lambda x: gd.ops.resize(x, (1, 4, 0, 6)))  # fmt: skip
    _raises(gd.ShapeError, "x's H is 0, and an empty axis",
            lambda x: gd.ops.resize(x, (1, 4, 2, 6)), shape=(1, 4, 0, 6))  # fmt: skip
    _raises(gd.OpTypeError, "interpolation", lambda x: gd.ops.resize(x, (1, 6, 6, 4), "area"))


# ---------------------------------------------------------------------------- export


def test_consecutive_channels_last_ops_share_their_transposes() -> None:
    g = gd.Graph("chain", input_types={"x": gd.TensorType(gd.float32, ("n", 8, 8, 3))})
    (h,) = g.inputs
    for c_in, c_out in ((3, 4), (4, 4), (4, 2)):
        h = gd.ops.conv2d(h, RNG.normal(size=(3, 3, c_in, c_out)).astype(np.float32),
                          padding=(1, 1, 1, 1))  # fmt: skip
    g.output(gd.ops.max_pool2d(h, (2, 2), stride=2))
    ops = [n.op_type for n in export(g, check="full").graph.node]
    # in once, out once; the RSCF filters were constants transposed as they were built
    assert ops.count("Transpose") == 2 and ops.count("Conv") == 3
    assert ops[0] == "Transpose" and ops[-1] == "Transpose"
    nchw_graph = gd.Graph("c", input_types={"x": gd.TensorType(gd.float32, ("n", 3, 8, 8))})
    (h,) = nchw_graph.inputs
    nchw_graph.output(gd.ops.conv2d(h, np.ones((4, 3, 3, 3), np.float32), input_layout="NCHW"))
    assert [n.op_type for n in export(nchw_graph).graph.node] == ["Conv"]


def test_lowerings_use_the_native_operators() -> None:
    # the CPU target's operators (CUDA pads integers in a float that holds them, for one)
    def ops_of(build: Callable[[gd.Symbol], gd.Symbol], dt: gd.DType,
               shape: tuple[int, ...] = (1, 2, 6, 6)) -> list[str]:  # fmt: skip
        model = export(one_op(build, gd.TensorType(dt, shape)), target="cpu")
        return [n.op_type for n in model.graph.node]

    w = np.ones((2, 2, 3, 3), np.float32)
    assert ops_of(lambda v: gd.ops.conv2d(v, w, input_layout="NCHW"), gd.float32) == ["Conv"]
    assert ops_of(lambda v: gd.ops.avg_pool2d(v, (2, 2), input_layout="NCHW"),
                  gd.float32) == ["AveragePool"]  # fmt: skip
    assert ops_of(lambda v: gd.ops.max_pool2d(v, (2, 2), input_layout="NCHW"),
                  gd.int8) == ["MaxPool"]  # fmt: skip
    assert ops_of(lambda v: gd.ops.pad(v, (0, 0, 0, 0, 1, 1, 1, 1)), gd.int32) == ["Pad"]
    assert ops_of(lambda v: gd.ops.resize(v, (1, 2, 3, 9)), gd.float32) == ["Resize"]
    # nearest: a Gather per axis of the source indices, computed in the model (issue 30)
    assert ops_of(lambda v: gd.ops.resize(v, (1, 2, 3, 9), "nearest"),
                  gd.int8) == ["Range", "Div", "Gather"] * 2  # fmt: skip
    # float64: no Conv kernel; the windows are gathered and contracted by one MatMul
    f64 = ops_of(lambda v: gd.ops.conv2d(v, w.astype(np.float64), input_layout="NCHW"),
                 gd.float64)  # fmt: skip
    assert "Conv" not in f64 and f64.count("MatMul") == 1 and f64.count("Gather") == 1
    # ceil mode: explicit end padding, ceil_mode 0 (ONNX's shape inference keeps a window
    # that onnxruntime's kernel drops)
    m = export(one_op(lambda v: gd.ops.max_pool2d(v, (3, 3), 2, padding=1, ceil_mode=True,
                                                  input_layout="NCHW"),
                      gd.TensorType(gd.int8, (1, 1, 6, 6))), target="cpu")  # fmt: skip
    (pool,) = [n for n in m.graph.node if n.op_type == "MaxPool"]
    attrs = {a.name: helper.get_attribute_value(a) for a in pool.attribute}
    assert attrs["pads"] == [1, 1, 2, 2] and "ceil_mode" not in attrs


def test_cuda_export_pads_integers_exactly_or_on_the_cpu() -> None:
    # CUDA has a float Conv (exporters/onnx/kernels/cuda.json), and pads only bool and floats:
    # an int8 reflecting Pad runs in float16 (which holds every int8), an int64 one on the
    # CPU provider behind CUDA (cpu_nodes names it)
    conv = one_op(lambda v: gd.ops.conv2d(v, np.ones((2, 2, 3, 3), np.float32),
                                          input_layout="NCHW"),
                  gd.TensorType(gd.float32, (1, 2, 5, 5)))  # fmt: skip
    assert [n.op_type for n in export(conv, target="cuda").graph.node] == ["Conv"]
    for dt, want, on_cpu in ((gd.int8, ["Cast", "Pad", "Cast"], []),
                             (gd.int64, ["Pad"], ["Pad_reflect[INT64]"])):  # fmt: skip
        g = one_op(lambda v: gd.ops.pad(v, [0, 0, 0, 0, 1, 1, 1, 1], mode="reflect"),
                   gd.TensorType(dt, (1, 2, 5, 5)))  # fmt: skip
        m = export(g, target="cuda")
        assert [n.op_type for n in m.graph.node] == want
        assert [f"{n.key}[{n.types[0]}]" for n in cpu_nodes(m)] == on_cpu
    x = np.arange(50).reshape(1, 2, 5, 5).astype(np.int64)  # (the CPU has an int64 Pad)
    got = run(m, [x], providers=["CPUExecutionProvider"])[0]
    np.testing.assert_array_equal(got, gd.evaluate(g, [x])[0])


# ---------------------------------------------------------------------------- onnxruntime


def _ort(node: onnx.NodeProto, x: np.ndarray, elem: int = TensorProto.FLOAT) -> np.ndarray:
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
                          [helper.make_tensor_value_info("y", elem, None)])  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def test_onnxruntime_behaviours_the_lowerings_rely_on() -> None:
    pool = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    # MaxPool skips NaN and keeps the first zero it meets (the lowering repairs both)
    assert _ort(pool, np.array([[[[2.0, np.nan], [1.0, 1.0]]]], np.float32)).item() == 2.0
    assert np.signbit(_ort(pool, np.array([[[[-0.0, 0.0], [-0.0, -0.0]]]], np.float32)).item())
    # ceil mode: the kernel drops a window that starts in the right padding (3 outputs, as
    # PyTorch), where ONNX's shape inference says 4 (the lowering pads explicitly instead)
    ceil = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                            pads=[1, 1, 1, 1], ceil_mode=1)  # fmt: skip
    assert _ort(ceil, np.zeros((1, 1, 5, 5), np.float32)).shape == (1, 1, 3, 3)
    # pads as large as the kernel are refused (the lowering pads explicitly)
    big = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[2, 0, 2, 0],
                           dilations=[3, 1])  # fmt: skip
    with pytest.raises(Exception, match="Pad should be smaller than kernel"):
        _ort(big, np.zeros((1, 1, 6, 6), np.float32))


def test_measured_kernel_table_runs_natively() -> None:
    """Every (op, type) of the lowering's hand-measured table runs without onnxruntime's own
    float32 upcast (until scripts/probe_ort_kernels.py's table covers these ops)."""
    names = {"FLOAT": np.float32, "DOUBLE": np.float64, "INT8": np.int8, "UINT8": np.uint8,
             "INT32": np.int32, "INT64": np.int64, "UINT32": np.uint32, "UINT64": np.uint64,
             "BOOL": np.bool_}  # fmt: skip
    for key, types in MEASURED_CPU.items():
        op, _, mode = key.partition("_")
        for t in types:
            elem = getattr(TensorProto, t)
            x = np.ones((1, 2, 4, 4), names[t])
            inputs, inits = ["x"], []
            attrs: dict[str, Any] = {}
            if op in ("Conv", "ConvTranspose"):
                inits.append(helper.make_tensor("w", elem, [2, 2, 2, 2], [1] * 16))
                inputs.append("w")
            elif op in ("MaxPool", "AveragePool"):
                attrs["kernel_shape"] = [2, 2]
            elif op == "Pad":
                inits.append(helper.make_tensor("p", TensorProto.INT64, [8], [0, 0, 1, 1] * 2))
                inputs.append("p")
                attrs["mode"] = mode or "constant"
            else:
                inits.append(helper.make_tensor("s", TensorProto.INT64, [2], [8, 8]))
                inputs += ["", "", "s"]
                attrs.update(axes=[2, 3], mode=mode or "nearest")
            node = helper.make_node(op, inputs, ["y"], **attrs)
            g = helper.make_graph(
                [node],
                "g",
                [helper.make_tensor_value_info("x", elem, x.shape)],
                [helper.make_tensor_value_info("y", elem, None)],
                inits,
            )
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
            m.ir_version = 10
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(m.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])  # fmt: skip
            assert sess.run(None, {"x": x})[0].dtype == x.dtype, (key, t)


# ---------------------------------------------------------------------------- global pooling


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize(
    ("shape", "axes"),
    [((2, 3, 4, 5), (2, 3)), ((2, 4, 5, 3), (1, 2)), ((2, 3, 7), (2,)), ((2, 4, 5, 3), (2, 1))],
)
@pytest.mark.parametrize("dt", [gd.float32, gd.float16])
def test_a_mean_over_the_spatial_axes_is_a_global_average_pool(
    shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, dt: gd.DType
) -> None:
    # over H and W of channels first (or, transposed, of channels last): GlobalAveragePool,
    # which onnxruntime keeps in its blocked layout after a convolution
    g = one_op(lambda v: gd.ops.mean(v, axis=axes, keepdims=keepdims), gd.TensorType(dt, shape))
    got_ops = [n.op_type for n in export(g).graph.node]
    assert "GlobalAveragePool" in got_ops and "ReduceMean" not in got_ops
    x = np.random.default_rng(0).normal(size=shape).astype(dt.np)
    x.reshape(-1)[[3, 40]] = [np.nan, np.inf]
    want, got = both(g, x)
    # the same float32 sums in another order (tests/floats.py's bound, of the mean of |x|
    # over the n values: float16 computed in float32, rounded once), NaN and inf alike
    n = int(np.prod([shape[a] for a in axes]))
    mean_abs = np.abs(x.astype(np.float64)).mean(axis=axes, keepdims=keepdims)
    floats.assert_close(got, want, floats.sum_bound(mean_abs, n, dt, got, want), "mean")


def test_a_mean_over_other_axes_stays_a_reduce_mean() -> None:
    g = one_op(lambda v: gd.ops.mean(v, axis=(1, 3)), gd.TensorType(gd.float32, (2, 3, 4, 5)))
    assert [n.op_type for n in export(g).graph.node] == ["ReduceMean"]


def test_max_pool_nan_windows_with_infinities_of_both_signs() -> None:
    # the NaN windows are found as those whose mean of x * x is NaN (exporters/onnx/_lower/
    # vision.py): a window of +inf and -inf has an infinite mean there, not NaN, and its max
    # is +inf; with a NaN too, NaN
    g = one_op(lambda v: gd.ops.max_pool2d(v, (2, 2), stride=2, input_layout="NCHW"),
               gd.TensorType(gd.float32, (1, 1, 2, 8)))  # fmt: skip
    inf, nan = np.inf, np.nan
    x = np.array([[[[inf, -inf, nan, inf, -inf, 1.0, 3e38, 3e38],
                    [-inf, inf, -inf, 2.0, -inf, -inf, 3e38, 3e38]]]], np.float32)  # fmt: skip
    want = gd.evaluate(g, [x])[0]
    floats.assert_bits(want, np.array([[[[inf, nan, 1.0, 3e38]]]], np.float32))  # selections
    got = run(export(g), [x])[0]
    floats.assert_bits(got, want)


def test_max_pool_not_exact_is_onnxruntimes_max_pool() -> None:
    """export(exact=False): a bare MaxPool, whose window holding a NaN gives NaN or the
    largest of some of its other values (the CPU kernel: of those it meets after the last
    NaN; here they are all 1); every other window as the reference."""
    g = one_op(lambda v: gd.ops.max_pool2d(v, (2, 2), stride=2, input_layout="NCHW"),
               gd.TensorType(gd.float32, (1, 2, 2, 12)))  # fmt: skip
    model = export(g, exact=False)
    assert [n.op_type for n in model.graph.node if n.op_type != "Cast"] == ["MaxPool"]
    # for CUDA too: neither the NaN windows nor the kernel's lowest finite value for a window
    # of -inf are repaired (export(target="cuda") repairs both)
    cuda = [n.op_type for n in export(g, target="cuda", exact=False).graph.node]
    assert [op for op in cuda if op != "Cast"] == ["MaxPool"]
    assert "Equal" in [n.op_type for n in export(g, target="cuda").graph.node]
    nan = np.nan
    x = np.full((1, 2, 2, 12), 1.0, np.float32)
    for k in range(4):  # a NaN in each position of a window, then a window of NaN alone
        x[0, :, k // 2, 2 * k + k % 2] = nan
    x[0, :, :, 8:10] = nan
    x[0, 1, :, 10:12] = [[-0.0, 0.0], [-3.0, -0.0]]  # zeros of both signs: either may come
    want = gd.evaluate(g, [x])[0]
    others = gd.evaluate(g, [np.where(np.isnan(x), -np.inf, x)])[0]  # without the NaN
    got = run(model, [x])[0]
    held = np.isnan(want)
    assert held[0, :, 0, :5].all() and not held[0, 0, 0, 5]
    assert (np.isnan(got[held]) | (got[held] == others[held])).all()
    floats.assert_close(got[~held], want[~held], 0.0)  # the same values, either zero's sign


def test_a_channels_mismatch_names_the_layout_that_would_fit() -> None:
    # a PyTorch NCHW input given to MAX's NHWC default: the error says input_layout="NCHW"
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float32, (1, 3, 8, 8))})
    oihw = np.zeros((4, 3, 3, 3), np.float32)
    with pytest.raises(gd.ShapeError, match=r"x has 8 input channels.*pass input_layout='NCHW'"):
        gd.ops.conv2d(g.inputs[0], oihw)
    assert gd.ops.conv2d(g.inputs[0], oihw, input_layout="NCHW").shape == (1, 4, 6, 6)
    # and the other way round; a mismatch in both layouts names neither
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float32, (1, 8, 8, 3))})
    with pytest.raises(gd.ShapeError, match=r"pass input_layout='NHWC' \(MAX's default"):
        gd.ops.conv2d(g.inputs[0], oihw, input_layout="NCHW")
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float32, (1, 5, 8, 8))})
    with pytest.raises(gd.ShapeError) as info:
        gd.ops.conv2d(g.inputs[0], oihw)
    assert "input_layout" not in str(info.value)
