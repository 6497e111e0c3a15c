"""MAX's type vocabulary: devices, ``TensorType(dtype, shape, device)``, ``BufferType`` and the
layout and interpolation enums that MAX's ops take (``Dim`` and ``Shape`` are in ``_dim``,
``DType`` in ``_dtype``).

>>> from graphdsl.max import DeviceRef, DType, TensorType
>>> t = TensorType(DType.float32, ["batch", 4], DeviceRef.GPU())
>>> t, t.rank
(TensorType(dtype=float32, shape=[Dim('batch'), Dim(4)], device=gpu:0), 2)
>>> t.as_graphdsl()
TensorType(float32[batch, 4])
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from typing import Any

from graphdsl.dtypes import DType as CoreDType
from graphdsl.max._dim import Shape, SymbolicDim
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import from_core as dtype_from_core
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._errors import UnsupportedError
from graphdsl.types import TensorType as _GdTensorType

__all__ = [
    "BufferType",
    "ConvInputLayout",
    "DeviceKind",
    "DeviceRef",
    "FilterLayout",
    "InterpolationMode",
    "TensorType",
    "Type",
    "UnsupportedError",
    "Weight",
]


class DeviceKind(str, enum.Enum):
    """The kind of a device, as MAX's ``DeviceKind``: a :class:`DeviceRef`'s
    ``device_type``, a ``str`` of its value.

    >>> from graphdsl.max import DeviceKind, DeviceRef
    >>> DeviceRef.GPU(1).device_type is DeviceKind.GPU, str(DeviceKind.CPU), DeviceKind("npu")
    (True, 'cpu', <DeviceKind.NPU: 'npu'>)
    """

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
            raise ValueError(
                f"{device_type!r} is not a valid DeviceKind (unknown device kind; use one of "
                f"{kinds})"
            ) from None
        self.id = max(int(id), 0)  # MAX clamps a negative id to 0

    @staticmethod
    def CPU(id: int = 0) -> DeviceRef:  # MAX's name
        """Creates a CPU device reference."""
        return DeviceRef(DeviceKind.CPU, id)

    @staticmethod
    def GPU(id: int = 0) -> DeviceRef:  # MAX's name
        """Creates a GPU device reference."""
        return DeviceRef(DeviceKind.GPU, id)

    @staticmethod
    def from_device(device: Any) -> DeviceRef:
        """The reference to a driver device (:mod:`graphdsl.max.driver`'s ``CPU()`` or
        ``Accelerator(id)``), as MAX's ``DeviceRef.from_device``."""
        if isinstance(device, DeviceRef):
            return device
        is_host = getattr(device, "is_host", None)
        if is_host is None:
            raise TypeError(f"DeviceRef.from_device: {device!r} is not a driver device")
        return DeviceRef.CPU(0) if is_host else DeviceRef.GPU(int(device.id))

    def to_device(self) -> Any:
        """The driver device this refers to (:mod:`graphdsl.max.driver`'s ``CPU()`` or
        ``Accelerator(id)``), as MAX's ``DeviceRef.to_device``."""
        from graphdsl.max._devices import CPU, Accelerator

        return CPU(self.id) if self.is_cpu() else Accelerator(self.id)

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


class Type:
    """The type of a value of a graph, as max.graph's ``Type``: :class:`TensorType` and
    :class:`BufferType` are the ones graphdsl.max has.

    >>> from graphdsl.max import BufferType, DeviceRef, DType, Graph, TensorType, Type
    >>> cpu = DeviceRef.CPU()
    >>> types = [TensorType(DType.int8, [2], cpu), BufferType(DType.int8, [2], cpu)]
    >>> with Graph("types", input_types=types) as g:
    ...     g.output(g.inputs[0].tensor)
    >>> [isinstance(v.type, Type) for v in g.inputs], type(g.inputs[1].type).__name__
    ([True, True], 'BufferType')
    """

    __slots__ = ()


class _TensorTypeBase(Type):
    """What TensorType and BufferType share: dtype, shape, device, MAX's equality."""

    __slots__ = ("_layout", "device", "dtype", "shape")

    def __init__(
        self,
        dtype: DType | CoreDType,
        shape: Iterable[Any],
        device: DeviceRef,
        _layout: enum.Enum | None = None,
    ) -> None:
        if isinstance(dtype, CoreDType):
            dtype = dtype_from_core(dtype)
        if not isinstance(dtype, DType):
            raise TypeError(f"{type(self).__name__}: dtype must be a DType, got {dtype!r}")
        if not isinstance(device, DeviceRef):
            raise TypeError(
                f"{type(self).__name__}: device must be a DeviceRef (DeviceRef.CPU(), "
                f"DeviceRef.GPU()), got {device!r}"
            )
        self.dtype = dtype
        self.shape = Shape(shape)
        self.device = device
        self._layout = _layout  # MAX's filter layout mark (FilterLayout), part of equality
        if any(d < 0 for d in self.shape.static_dims):
            raise TypeError(
                f"Static tensor dimensions must be non-negative; got shape={list(shape)!r}"
            )

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def parameters(self) -> Iterable[SymbolicDim]:
        """The symbolic dimensions the type depends on."""
        return self.shape.parameters

    def num_elements(self) -> int:
        """The element count of a static shape (RuntimeError for a symbolic one)."""
        if not Shape.is_static(self.shape):
            raise RuntimeError("can't find num elements since tensor has symbolic dims")
        return math.prod(int(d) for d in self.shape)

    def as_graphdsl(self) -> _GdTensorType:
        """graphdsl's type of the same dtype and shape (graphdsl types carry no device)."""
        return _GdTensorType(dtype_to_core(self.dtype), tuple(dim_to_core(d) for d in self.shape))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, type(self))
            and self.dtype == other.dtype
            and self.shape == other.shape
            and self.device == other.device
            and self._layout == other._layout
        )

    def __hash__(self) -> int:
        return hash((self.dtype, tuple(self.shape), self.device, self._layout))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dtype={self.dtype!r}, shape={list(self.shape)!r}, "
            f"device={self.device})"
        )


class TensorType(_TensorTypeBase):
    """A tensor's type, as max.graph's ``TensorType(dtype, shape, device)``: a
    :class:`DType`, a :class:`Shape` and a :class:`DeviceRef`, equal when all three are.

    >>> from graphdsl.max import DeviceRef, DType, TensorType
    >>> t = TensorType(DType.int8, (2, "n"), DeviceRef.CPU())
    >>> t.shape, t == TensorType(DType.int8, [2, "n"], DeviceRef.GPU())
    ([Dim(2), Dim('n')], False)
    """

    __slots__ = ()

    def cast(self, dtype: DType) -> TensorType:
        """The same shape and device with ``dtype``."""
        return TensorType(dtype, self.shape, self.device)

    def as_buffer(self) -> BufferType:
        """The buffer type of the same dtype, shape and device."""
        return BufferType(self.dtype, self.shape, self.device)


class BufferType(_TensorTypeBase):
    """A mutable buffer's type, as max.graph's ``BufferType``: graphdsl threads a buffer
    through the graph (an input whose final value is an extra output; docs/max.md).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl.max import BufferType, DeviceRef, DType, Graph
    >>> counts = BufferType(DType.int32, [2], DeviceRef.CPU())
    >>> counts.as_tensor()
    TensorType(dtype=int32, shape=[Dim(2)], device=cpu:0)
    >>> with Graph("count", input_types=[counts]) as g:
    ...     state = g.inputs[0].buffer
    ...     state[...] = state[...] + 1
    ...     g.output()
    >>> gd.evaluate(g, [np.array([0, 5], np.int32)])  # the buffer's new value
    [array([1, 6], dtype=int32)]
    """

    __slots__ = ()

    def cast(self, dtype: DType) -> BufferType:
        """The same shape and device with ``dtype``."""
        return BufferType(dtype, self.shape, self.device)

    def as_tensor(self) -> TensorType:
        """The tensor type of the same dtype, shape and device."""
        return TensorType(self.dtype, self.shape, self.device)


class ConvInputLayout(enum.Enum):
    """The layout of a convolution's input, as MAX's ``ConvInputLayout`` (``ops.conv2d``'s
    ``input_layout``; NHWC by default, as MAX's).

    >>> import numpy as np
    >>> from graphdsl.max import ConvInputLayout, DeviceRef, DType, FilterLayout, Graph
    >>> from graphdsl.max import TensorType, ops
    >>> image = TensorType(DType.float32, [1, 3, 8, 8], DeviceRef.CPU())  # N, C, H, W
    >>> with Graph("conv", input_types=[image]) as g:
    ...     y = ops.conv2d(g.inputs[0].tensor, np.ones((4, 3, 3, 3), np.float32),
    ...                    input_layout=ConvInputLayout.NCHW, filter_layout=FilterLayout.FCRS)
    ...     g.output(y)
    >>> y.shape
    [Dim(1), Dim(4), Dim(6), Dim(6)]
    """

    NHWC = "NHWC"
    NCHW = "NCHW"


class FilterLayout(enum.Enum):
    """The layout of a convolution's filter, as MAX's ``FilterLayout`` (graphdsl takes RSCF,
    QRSCF, FCRS and FCQRS; CFRS raises): ``ops.conv2d``'s ``filter_layout``, RSCF (height,
    width, in channels, filters) by default, as MAX's.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl.max import DeviceRef, DType, FilterLayout, Graph, TensorType, ops
    >>> image = TensorType(DType.float32, [1, 2, 2, 1], DeviceRef.CPU())  # N, H, W, C
    >>> rscf = np.ones((2, 2, 1, 3), np.float32)  # 2x2 taps, 1 channel in, 3 filters
    >>> with Graph("conv", input_types=[image]) as g:
    ...     x = g.inputs[0].tensor
    ...     g.output(ops.conv2d(x, rscf),
    ...              ops.conv2d(x, rscf.transpose(3, 2, 0, 1), filter_layout=FilterLayout.FCRS))
    >>> [y.tolist() for y in gd.evaluate(g, [np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1)])]
    [[[[[6.0, 6.0, 6.0]]]], [[[[6.0, 6.0, 6.0]]]]]
    """

    RSCF = "RSCF"
    QRSCF = "QRSCF"
    FCRS = "FCRS"
    FCQRS = "FCQRS"
    CFRS = "CFRS"


class InterpolationMode(enum.Enum):
    """Interpolation modes for image resize operations, as MAX's ``InterpolationMode``
    (``ops.resize``'s ``interpolation``; BILINEAR by default, as MAX's).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl.max import DeviceRef, DType, Graph, InterpolationMode, TensorType, ops
    >>> image = TensorType(DType.float32, [1, 1, 1, 2], DeviceRef.CPU())  # N, C, H, W
    >>> with Graph("resize", input_types=[image]) as g:
    ...     g.output(ops.resize(g.inputs[0].tensor, [1, 1, 1, 4], InterpolationMode.NEAREST))
    >>> gd.evaluate(g, [np.array([[[[1, 2]]]], np.float32)])[0]
    array([[[[1., 1., 2., 2.]]]], dtype=float32)
    >>> InterpolationMode("bicubic"), str(InterpolationMode.BILINEAR)
    (<InterpolationMode.BICUBIC: 'bicubic'>, 'bilinear')
    """

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"

    def __str__(self) -> str:
        return str(self.value)


class Weight:
    """A named weight, as MAX's ``Weight(name, dtype, shape, device)``: add it to a graph with
    ``Graph.add_weight`` (graphdsl's :meth:`graphdsl.Graph.weight`) or use it as an op
    operand; its data is bound by name at export (``exporters.onnx.export(graph,
    weights=...)``) or evaluation.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, Weight
    >>> scale = Weight("scale", DType.float32, [2])
    >>> scale
    Weight('scale', DType.float32, [Dim(2)], cpu:0)
    >>> with Graph("scaled", input_types=[TensorType(DType.float32, [2], DeviceRef.CPU())]) as g:
    ...     g.output(g.inputs[0].tensor * g.add_weight(scale))
    >>> data = {"scale": np.array([10, 100], np.float32)}
    >>> gd.evaluate(g, [np.array([1, 2], np.float32)], weights=data)
    [array([ 10., 200.], dtype=float32)]
    """

    __slots__ = ("device", "dtype", "name", "quantization_encoding", "shape")

    def __init__(
        self,
        name: str,
        dtype: DType,
        shape: Iterable[Any],
        device: DeviceRef = DeviceRef.CPU(),  # noqa: B008 (MAX's default)
        quantization_encoding: object = None,
        align: int | None = None,
    ) -> None:
        from graphdsl.max.quantization import QuantizationEncoding

        if quantization_encoding not in (None, QuantizationEncoding.Q4_0):
            raise UnsupportedError(
                f"Weight {name!r}: quantization_encoding {quantization_encoding!r} is not "
                "supported by graphdsl (of MAX's GGUF encodings, Q4_0 is: ops.dequantize and "
                "ops.qmatmul read it); store the weight dequantized or as Q4_0"
            )
        self.quantization_encoding = quantization_encoding
        self.name = name
        self.dtype = dtype_from_core(dtype) if isinstance(dtype, CoreDType) else dtype
        self.shape = Shape(shape)
        self.device = device

    def __repr__(self) -> str:
        return f"Weight({self.name!r}, {self.dtype}, {list(self.shape)}, {self.device})"
