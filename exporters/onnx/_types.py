"""DType <-> ONNX element types."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from exporters.onnx._carried import CARRIER
from graphdsl.dtypes import DType

__all__ = ["FLOAT8", "NARROW", "ONNX_TYPE", "onnx_type", "stored", "type_name"]

FLOAT8 = frozenset({DType.float8_e4m3fn, DType.float8_e5m2, DType.float8_e4m3fnuz,
                     DType.float8_e5m2fnuz})  # fmt: skip
# floats that compute in float32 and round back once (the carried ones are float32 already,
# and round in cast)
NARROW = frozenset({DType.float16, DType.bfloat16, *FLOAT8,
                    *(d for d in CARRIER if d.is_float)})  # fmt: skip

ONNX_TYPE: dict[DType, int] = {
    DType.bool: TensorProto.BOOL,
    DType.int8: TensorProto.INT8,
    DType.int16: TensorProto.INT16,
    DType.int32: TensorProto.INT32,
    DType.int64: TensorProto.INT64,
    DType.uint8: TensorProto.UINT8,
    DType.uint16: TensorProto.UINT16,
    DType.uint32: TensorProto.UINT32,
    DType.uint64: TensorProto.UINT64,
    DType.float16: TensorProto.FLOAT16,
    DType.bfloat16: TensorProto.BFLOAT16,
    DType.float32: TensorProto.FLOAT,
    DType.float64: TensorProto.DOUBLE,
    DType.complex64: TensorProto.COMPLEX64,
    DType.complex128: TensorProto.COMPLEX128,
    DType.float8_e4m3fn: TensorProto.FLOAT8E4M3FN,
    DType.float8_e5m2: TensorProto.FLOAT8E5M2,
    DType.float8_e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ,
    DType.float8_e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ,
    # carried in a wider type (exporters/onnx/_carried.py)
    DType.float4_e2m1fn: TensorProto.FLOAT,
    DType.float6_e2m3fn: TensorProto.FLOAT,
    DType.float6_e3m2fn: TensorProto.FLOAT,
    DType.float8_e8m0fnu: TensorProto.FLOAT,
    DType.int4: TensorProto.INT8,
    DType.uint4: TensorProto.UINT8,
    # stored as their storage types
    DType.tensor_float32: TensorProto.FLOAT,
    DType.index: TensorProto.UINT64,
    DType.address: TensorProto.UINT64,
}


def onnx_type(d: DType) -> int:
    return ONNX_TYPE[d]


def type_name(d: DType) -> str:
    """The TensorProto name ("FLOAT", "INT16", ...) used by the kernel tables."""
    return str(TensorProto.DataType.Name(ONNX_TYPE[d]))


_STORAGE = {DType.tensor_float32: DType.float32, DType.index: DType.uint64,
            DType.address: DType.uint64, **CARRIER}  # fmt: skip


def storage(d: DType) -> DType:
    """The dtype a value computes as (aliases compute as what stores them; carried dtypes as
    their carriers, rounding back in Builder.cast)."""
    return _STORAGE.get(d, d)


def stored(arr: np.ndarray, dt: DType) -> np.ndarray:
    """``arr``'s values as ``dt``'s bytes in a data file: narrow floats as their bit
    patterns, the rest in their storage dtype."""
    if dt in NARROW:
        return arr.astype(dt.np).view(np.uint16 if dt is DType.bfloat16 else np.uint8)
    return np.ascontiguousarray(arr.astype(storage(dt).np, copy=False))
