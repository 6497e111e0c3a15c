"""Conversion semantics: how a value becomes another dtype (casts, and operands that promote)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind, to_e8m0

__all__ = ["cast_array"]


def cast_array(x: np.ndarray, to: DType) -> np.ndarray:
    """Convert with graphdsl's semantics (numpy's, but float -> integer saturates).

    Integer -> narrower integer wraps (two's complement); float -> integer truncates toward
    zero, saturates at the target's range, and maps NaN to 0 (as XLA does: a C cast is
    undefined there); anything -> bool is ``x != 0`` (NaN is True); float rounding is to
    nearest even, overflowing to inf (ml_dtypes' conversions for its types: the 4- and 6-bit
    floats saturate, and take every NaN to -0.0).

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
    if (to in _VIA_F32 and (x.dtype.kind in "iub" or _is_ml_float(x.dtype))) or (
        x.dtype in _VIA_F32_NP and to.is_float
    ):
        # through float32, as the export converts (exact from an ml_dtypes float; from an
        # integer one rounding: ml_dtypes converts no uint64 above 2**63 to these, nor
        # between some of its types)
        x = x.astype(np.float32)
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
        if to is DType.float8_e8m0fnu:
            return to_e8m0(np.real(x) if src_kind == "c" else x)
        if to in _NO_NAN and (src_kind in "fc" or _is_ml_float(x.dtype)):
            # ml_dtypes takes NaN to a zero whose sign is the NaN's sign bit flipped, a bit
            # that no CPU promises (x86's 0/0 sets it): every NaN is -0.0, as np.nan gives
            x = np.where(np.isnan(x), np.array(-0.0, x.dtype), x)
        return np.asarray(x.astype(target))


_NO_NAN = frozenset({DType.float4_e2m1fn, DType.float6_e2m3fn, DType.float6_e3m2fn})


# the small floats issue 30 added, which convert to and from other types through float32
_VIA_F32 = frozenset({*_NO_NAN, DType.float8_e8m0fnu, DType.float8_e4m3fnuz,
                      DType.float8_e5m2fnuz})  # fmt: skip
_VIA_F32_NP = frozenset(d.np for d in _VIA_F32)


# ml_dtypes' types (numpy's kind for them is 'V' or 'f', depending on the type and release)
_ML_FLOATS = frozenset(d.np for d in DType if d.is_float and d.np.type.__module__ != "numpy")


def _is_ml_float(d: np.dtype[Any]) -> bool:
    """An ml_dtypes float (bfloat16, the float8, float6 and float4 types)."""
    return d in _ML_FLOATS
