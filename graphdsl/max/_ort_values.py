"""onnxruntime ``OrtValue`` helpers of :mod:`graphdsl.max.driver`'s ``Buffer`` on a CUDA GPU:
copying a numpy array to a device and the MAX dtype of an OrtValue."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.max._devices import Device
from graphdsl.max._dtype import DType
from graphdsl.max._errors import UnsupportedError

__all__ = ["_ort_dtype", "_ort_from_numpy"]


def _ort_from_numpy(array: np.ndarray, device: Device) -> Any:
    """``array`` copied into an OrtValue on GPU ``device``."""
    import onnxruntime as ort

    if device.is_host:
        return ort.OrtValue.ortvalue_from_numpy(array)
    try:
        return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), "cuda", device.id)
    except Exception as e:
        raise UnsupportedError(
            f"a {array.dtype} array on {device}: onnxruntime cannot copy it there ({e}); "
            "bfloat16 and float8 buffers stay on the CPU (cast them in the graph)"
        ) from None


_ORT_TYPES = {  # onnxruntime's element type names -> MAX's DType
    "tensor(bool)": DType.bool,
    "tensor(int8)": DType.int8,
    "tensor(int16)": DType.int16,
    "tensor(int32)": DType.int32,
    "tensor(int64)": DType.int64,
    "tensor(uint8)": DType.uint8,
    "tensor(uint16)": DType.uint16,
    "tensor(uint32)": DType.uint32,
    "tensor(uint64)": DType.uint64,
    "tensor(float16)": DType.float16,
    "tensor(float)": DType.float32,
    "tensor(double)": DType.float64,
    "tensor(bfloat16)": DType.bfloat16,
    "tensor(float8e4m3fn)": DType.float8_e4m3fn,
    "tensor(float8e5m2)": DType.float8_e5m2,
}


def _ort_dtype(value: Any) -> DType:
    """The DType of an OrtValue."""
    name = value.data_type()
    found = _ORT_TYPES.get(name)
    if found is None:
        raise UnsupportedError(f"an OrtValue of {name} has no graphdsl.max DType")
    return found
