"""MAX's type vocabulary over graphdsl's: devices, ``TensorType(dtype, shape, device)``, ``Dim``
and the layout and interpolation enums that MAX's ops take.

>>> from graphdsl.max import DeviceRef, DType, TensorType
>>> t = TensorType(DType.float32, ["batch", 4], DeviceRef.GPU())
>>> t, t.rank
(TensorType(dtype=DType.float32, shape=['batch', 4], device=gpu:0), 2)
>>> t.as_graphdsl()
TensorType(float32[batch, 4])
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from graphdsl.dtypes import DType
from graphdsl.shapes import ShapeError, shape_of
from graphdsl.types import TensorType as _GdTensorType

__all__ = [
    "ConvInputLayout",
    "DeviceKind",
    "DeviceRef",
    "Dim",
    "FilterLayout",
    "InterpolationMode",
    "TensorType",
    "UnsupportedError",
]


class UnsupportedError(NotImplementedError):
    """A MAX feature (an op, an argument value, a method) that graphdsl does not implement."""


class DeviceKind(str, enum.Enum):
    """The kind of a device, as MAX's ``DeviceKind``."""

    CPU = "cpu"
    GPU = "gpu"
    NPU = "npu"

    def __str__(self) -> str:
        return str(self.value)


class DeviceRef:
    """A device, as MAX's ``DeviceRef``: a kind and an id (``DeviceRef.CPU()``, ``GPU(1)``).

    graphdsl records the device of each value and the devices a graph uses; the ONNX
    exporter's ``run`` maps a graph that uses a GPU to onnxruntime's CUDA provider.

    >>> from graphdsl.max import DeviceRef
    >>> DeviceRef.GPU(1), DeviceRef("cpu") == DeviceRef.CPU(), DeviceRef.GPU().is_gpu()
    (gpu:1, True, True)
    """

    __slots__ = ("device_type", "id")

    def __init__(self, device_type: DeviceKind | str, id: int = 0) -> None:
        try:
            self.device_type = DeviceKind(device_type)
        except ValueError:
            kinds = ", ".join(repr(k.value) for k in DeviceKind)
            raise ValueError(f"unknown device kind {device_type!r}; use one of {kinds}") from None
        self.id = max(int(id), 0)  # MAX clamps a negative id to 0

    @staticmethod
    def CPU(id: int = 0) -> DeviceRef:  # MAX's name
        """Creates a CPU device reference."""
        return DeviceRef(DeviceKind.CPU, id)

    @staticmethod
    def GPU(id: int = 0) -> DeviceRef:  # MAX's name
        """Creates a GPU device reference."""
        return DeviceRef(DeviceKind.GPU, id)

    def is_cpu(self) -> bool:
        return self.device_type is DeviceKind.CPU

    def is_gpu(self) -> bool:
        return self.device_type is DeviceKind.GPU

    def __str__(self) -> str:
        return f"{self.device_type}:{self.id}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DeviceRef)
            and self.device_type is other.device_type
            and self.id == other.id
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.id))


def Dim(value: int | str) -> int | str:  # MAX's name
    """A dimension, as MAX's ``Dim(...)``: graphdsl's static dimensions are ints and its
    symbolic ones names (str), so ``Dim(4)`` is ``4`` and ``Dim("batch")`` is ``"batch"``.

    >>> from graphdsl.max import Dim
    >>> Dim(4), Dim("batch")
    (4, 'batch')
    """
    (dim,) = shape_of((value,))
    if isinstance(dim, int) and dim < 0:
        raise ShapeError(f"a static dimension must be >= 0, got {value!r}")
    return dim


class TensorType:
    """A tensor's type, as MAX's ``TensorType(dtype, shape, device)``: graphdsl's
    :class:`graphdsl.TensorType` (``as_graphdsl()``) plus the device.

    >>> from graphdsl.max import DeviceRef, DType, TensorType
    >>> TensorType(DType.int8, (2, "n"), DeviceRef.CPU()).shape
    [2, 'n']
    """

    __slots__ = ("device", "dtype", "shape")

    def __init__(self, dtype: DType, shape: Iterable[int | str], device: DeviceRef) -> None:
        if not isinstance(dtype, DType):
            raise TypeError(f"TensorType: dtype must be a DType, got {dtype!r}")
        if not isinstance(device, DeviceRef):
            raise TypeError(
                f"TensorType: device must be a DeviceRef (DeviceRef.CPU(), DeviceRef.GPU()), "
                f"got {device!r}"
            )
        self.dtype = dtype
        self.shape: list[int | str] = [Dim(d) for d in shape]
        self.device = device

    @property
    def rank(self) -> int:
        return len(self.shape)

    def as_graphdsl(self) -> _GdTensorType:
        """graphdsl's type of the same dtype and shape (graphdsl types carry no device)."""
        return _GdTensorType(self.dtype, tuple(self.shape))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorType) and (self.dtype, self.shape, self.device) == (
            other.dtype,
            other.shape,
            other.device,
        )

    def __hash__(self) -> int:
        return hash((self.dtype, tuple(self.shape), self.device))

    def __repr__(self) -> str:
        return f"TensorType(dtype={self.dtype!r}, shape={self.shape}, device={self.device})"


class ConvInputLayout(enum.Enum):
    """The layout of a convolution's input, as MAX's ``ConvInputLayout``."""

    NHWC = "NHWC"
    NCHW = "NCHW"


class FilterLayout(enum.Enum):
    """The layout of a convolution's filter, as MAX's ``FilterLayout`` (graphdsl takes RSCF,
    QRSCF, FCRS and FCQRS; CFRS raises)."""

    RSCF = "RSCF"
    QRSCF = "QRSCF"
    FCRS = "FCRS"
    FCQRS = "FCQRS"
    CFRS = "CFRS"


class InterpolationMode(enum.Enum):
    """Interpolation modes for image resize operations, as MAX's ``InterpolationMode``."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"

    def __str__(self) -> str:
        return str(self.value)
