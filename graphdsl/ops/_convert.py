"""Conversion semantics: how a value becomes another dtype (casts, and operands that promote)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind

__all__ = ["cast_array"]


def cast_array(x: np.ndarray, to: DType) -> np.ndarray:
    """Convert with graphdsl's semantics (numpy's, but float -> integer saturates).

    Integer -> narrower integer wraps (two's complement); float -> integer truncates toward
    zero, saturates at the target's range, and maps NaN to 0 (as XLA does: a C cast is
    undefined there); anything -> bool is ``x != 0`` (NaN is True); float rounding is to
    nearest even, overflowing to inf.

    >>> import numpy as np, graphdsl as gd
    >>> cast_array(np.array([300.7, -1e10, np.nan]), gd.int16)
    array([   300, -32768,      0], dtype=int16)
    """
    target = to.np
    if x.dtype == target:
        return x
    if x.dtype.name in ("int4", "uint4"):  # exactly to 8 bits (ml_dtypes' int4 -> uint4
        x = x.astype(np.int8 if x.dtype.name == "int4" else np.uint8)  # saturates)
        if x.dtype == target:
            return x
    if to in (DType.int4, DType.uint4) and x.dtype.kind in "iub":
        x = x.astype(np.int64)  # ml_dtypes wraps int64 (and refuses to wrap some others)
    src_kind = x.dtype.kind
    with np.errstate(all="ignore"):
        if (to.is_integer and src_kind in "fcV") or (to.is_integer and _is_ml_float(x.dtype)):
            xf = np.real(x).astype(np.float64) if src_kind == "c" else x.astype(np.float64)
            lo, hi = to.min, to.max
            t = np.trunc(xf)
            out = np.where(np.isnan(t), 0, t)
            # compare in float64; values at the edges are handled by clipping in int space
            big = out >= float(hi)
            small = out <= float(lo)
            safe = np.where(big | small, 0, out).astype(target)
            res = np.where(big, np.array(hi, dtype=target), safe)
            return np.asarray(np.where(small, np.array(lo, dtype=target), res))
        if to is DType.bool:
            return np.asarray(x != 0)
        if src_kind == "c" and to.kind is not Kind.complex:
            x = np.real(x)
        return np.asarray(x.astype(target))


def _is_ml_float(d: np.dtype[Any]) -> bool:
    """An ml_dtypes float (numpy's kind 'V', as ml_dtypes' int4 and uint4)."""
    return d.kind == "V" and not d.name.startswith(("int", "uint"))
