"""The arithmetic the vision ops share, written once for the numpy references and the
ONNX lowerings: output sizes of sliding windows (PyTorch's floor and ceil modes), the
windows themselves, layout permutations, and the taps of resize's interpolations.

Everything here works on channels-first arrays ``(N, C, *spatial)``; the vision ops move a
channels-last operand there and back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "INTERPOLATIONS",
    "interpolation_taps",
    "nearest_indices",
    "pool_extra",
    "pool_size",
    "tap_counts",
    "to_channels_first",
    "to_channels_last",
    "window_size",
    "windows",
    "windows_reach_input",
]

INTERPOLATIONS = ("nearest", "bilinear", "bicubic")
CUBIC_A = Fraction(-3, 4)  # Keys' cubic kernel with a = -0.75 (PyTorch's, MAX's, ONNX's default)


def to_channels_first(rank: int) -> tuple[int, ...]:
    """The permutation (N, *spatial, C) -> (N, C, *spatial) for a value of ``rank``."""
    return (0, rank - 1, *range(1, rank - 1))


def to_channels_last(rank: int) -> tuple[int, ...]:
    """The permutation (N, C, *spatial) -> (N, *spatial, C), inverse of the one above."""
    return (0, *range(2, rank), 1)


def window_size(n: int, k: int, stride: int, dilation: int, lo: int, hi: int) -> int:
    """How many windows of ``k`` taps ``dilation`` apart, ``stride`` apart, fit in ``n``
    elements padded by ``lo`` and ``hi``: floor((n + lo + hi - dilation*(k-1) - 1) / stride)
    + 1 (negative when the dilated kernel is longer than the padded input)."""
    return (n + lo + hi - dilation * (k - 1) - 1) // stride + 1


def pool_size(n: int, k: int, stride: int, dilation: int, pad: int, ceil: bool) -> int:
    """Pooling's output size, as PyTorch defines it: floor (or ceil) of (n + 2*pad -
    dilation*(k-1) - 1) / stride, plus 1; in ceil mode a last window that would start in
    the right padding is dropped."""
    span = n + 2 * pad - dilation * (k - 1) - 1
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= n + pad:
        out -= 1
    return out


def pool_extra(n: int, k: int, stride: int, dilation: int, pad: int, out: int) -> int:
    """How far past the right padding the last of ``out`` windows reaches (ceil mode): the
    padding to add at the end so that every tap is inside the array (0 if none)."""
    return max(0, (out - 1) * stride + dilation * (k - 1) + 1 - (n + 2 * pad))


def windows(
    xp: np.ndarray, ks: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
    outs: Sequence[int],
) -> np.ndarray:  # fmt: skip
    """The ``outs`` windows of a padded channels-first array ``xp`` (N, C, *spatial): an
    array (N, C, *outs, *ks), tap ``j`` of window ``o`` along an axis being element
    ``o*stride + j*dilation``. ``xp`` must hold every tap."""
    nd = len(ks)
    if any(o <= 0 for o in outs) or any(k <= 0 for k in ks):
        return np.zeros((*xp.shape[:2], *(max(o, 0) for o in outs), *ks), xp.dtype)
    effs = [d * (k - 1) + 1 for k, d in zip(ks, dilations, strict=True)]
    view = sliding_window_view(xp, effs, axis=tuple(range(2, 2 + nd)))
    starts = tuple(slice(None, (o - 1) * s + 1, s) for o, s in zip(outs, strides, strict=True))
    taps = tuple(slice(None, None, d) for d in dilations)
    index: tuple[slice, ...] = (slice(None), slice(None), *starts, *taps)
    return view[index]


def tap_counts(
    n: int, k: int, stride: int, dilation: int, out: int, lo: int, hi: int
) -> np.ndarray:
    """For each of ``out`` windows over a padded axis (input of ``n`` at [pad, pad + n)),
    how many of its ``k`` taps lie in [lo, hi)."""
    pos = np.arange(out)[:, None] * stride + np.arange(k)[None, :] * dilation
    return np.asarray(np.sum((pos >= lo) & (pos < hi), axis=1))


def windows_reach_input(n: int, k: int, stride: int, dilation: int, pad: int, out: int) -> bool:
    """Does each of ``out`` windows hold a tap in the input, [pad, pad + n) of the padded
    axis (``tap_counts`` all positive), worked out without a table of the windows: tap ``j``
    of window ``o`` is in it for ``o`` in [ceil((pad - j * dilation) / stride),
    ceil((pad + n - j * dilation) / stride)); those ``k`` ranges must cover [0, out)."""
    spans = sorted((-(-(pad - j * dilation) // stride), -(-(pad + n - j * dilation) // stride))
                   for j in range(k))  # fmt: skip
    reached = 0  # windows [0, reached) have a tap inside
    for lo, hi in spans:
        if reached >= out or lo > reached:
            break
        reached = max(reached, hi)
    return reached >= out


# ---------------------------------------------------------------------------- resize


def nearest_indices(n_in: int, n_out: int) -> np.ndarray:
    """The input index each of ``n_out`` outputs takes, resizing ``n_in`` elements: the
    half-pixel source (o + 0.5) * n_in / n_out - 0.5 rounded half down (ceil(src - 0.5),
    MAX's default rounding and ONNX's round_prefer_floor), clamped to the input; computed
    exactly, in integers."""
    o = np.arange(n_out, dtype=np.int64)
    num = (2 * o + 1) * n_in - 2 * n_out  # src - 0.5 = num / (2 * n_out)
    return np.clip(-((-num) // (2 * n_out)), 0, n_in - 1)


def _cubic_weight(z: Fraction) -> Fraction:
    a, z = CUBIC_A, abs(z)
    if z <= 1:
        return ((a + 2) * z - (a + 3)) * z * z + 1
    if z < 2:
        return ((a * z - 5 * a) * z + 8 * a) * z - 4 * a
    return Fraction(0)


def interpolation_taps(
    n_in: int, n_out: int, mode: str, rows: int | None = None
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The taps of a bilinear (2) or bicubic (4) resize of ``n_in`` elements to ``n_out``:
    (indices, weights), each (n_out, taps) (or those of the first ``rows`` outputs); weights
    exact as fractions, given as float64.

    Half-pixel source coordinate src = (o + 0.5) * n_in / n_out - 0.5. Bilinear clamps src
    below at 0 (PyTorch's rule) and blends elements floor(src) and floor(src) + 1; bicubic
    takes floor(src) - 1 .. floor(src) + 2 with Keys' weights (a = -0.75). Indices past the
    edges are clamped to the edge element (zero-weight taps included: 0 * inf is NaN there,
    as onnxruntime computes it)."""
    idx: list[list[int]] = []
    wts: list[list[float]] = []
    count = n_out if rows is None else rows
    for o in range(count):
        src = Fraction(2 * o + 1, 2) * Fraction(n_in, n_out) - Fraction(1, 2)
        if mode == "bilinear":
            src = max(src, Fraction(0))
            i0 = math.floor(src)
            t = src - i0
            taps = [(i0, 1 - t), (i0 + 1, t)]
        else:
            i0 = math.floor(src)
            t = src - i0
            taps = [(i0 + j, _cubic_weight(t - j)) for j in (-1, 0, 1, 2)]
        idx.append([min(max(i, 0), n_in - 1) for i, _ in taps])
        wts.append([float(w) for _, w in taps])
    return np.array(idx, np.int64).reshape(count, -1), np.array(wts, np.float64).reshape(count, -1)
