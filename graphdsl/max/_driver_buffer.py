"""MAX's ``max.driver.Buffer`` for :mod:`graphdsl.max.driver`, which re-exports it: an array
on a device, a numpy array on the CPU and an onnxruntime ``OrtValue`` on a CUDA GPU."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from graphdsl.dtypes import DTypeError
from graphdsl.dtypes import dtype as core_dtype
from graphdsl.max._devices import (
    _KDL_CPU,
    _KDL_CUDA,
    _KDL_CUDA_HOST,
    CPU,
    Accelerator,
    Device,
    DLPackArray,
)
from graphdsl.max._dtype import DType, from_core, to_core
from graphdsl.max._errors import UnsupportedError
from graphdsl.max._ort_values import _ort_dtype, _ort_from_numpy

__all__ = ["Buffer"]

Index = int | slice | Sequence[int | slice]


class Buffer:
    """An array on a device, as MAX 26.7's ``max.driver.Buffer`` (what ``Model.execute``
    returns): ``Buffer(dtype, shape, device=None)`` (zero-filled here; MAX leaves it
    uninitialized), ``Buffer.from_numpy``, ``from_dlpack``, ``zeros``, ``scalar`` and
    ``mmap``; ``to_numpy()``, ``to(device)``, ``copy()``, ``item()``, ``view()``, MAX's
    indexing (one int or slice per dimension) and the DLPack protocol.

    On the CPU it holds a numpy array: ``from_numpy`` and ``to_numpy`` share it (a
    non-contiguous array is copied), as MAX's do. On an :class:`Accelerator` it holds an
    onnxruntime ``OrtValue`` (moved to the host by ``to(CPU())`` or ``to_numpy()``; index
    it there).

    >>> import numpy as np
    >>> from graphdsl.max import DType
    >>> from graphdsl.max.driver import Buffer
    >>> x = np.zeros((2, 2), np.float32)
    >>> b = Buffer.from_numpy(x)
    >>> b[0, 1] = 5.0  # one index per dimension, as in MAX
    >>> float(x[0, 1]), b[0, 1].item(), b[1, :].shape
    (5.0, 5.0, (2,))
    >>> Buffer.scalar(3, DType.int32).item()
    3
    """

    __slots__ = ("_array", "_device", "_dtype", "_ort")

    _array: np.ndarray | None  # on the CPU
    _ort: Any  # on a GPU: an onnxruntime OrtValue
    _device: Device
    _dtype: DType

    def __init__(self, dtype: DType, shape: Sequence[int], device: Device | None = None) -> None:
        on = device or CPU()
        array = np.zeros(tuple(int(d) for d in shape), _np_dtype(dtype))
        if on.is_host:
            self._set(array, on)
        else:
            self._set_ort(_ort_from_numpy(array, on), on, dtype)

    # -- making buffers
    @classmethod
    def _of(cls, array: np.ndarray, device: Device | None = None) -> Buffer:
        """A CPU buffer holding ``array`` (not copied), moved to ``device`` if given."""
        buf = cls.__new__(cls)
        buf._set(array, CPU())
        return buf if device is None or device.is_host else buf.to(device)

    @classmethod
    def _of_ortvalue(cls, value: Any, device: Device, dtype: DType) -> Buffer:
        """A buffer holding the OrtValue ``value`` (on ``device``, of ``dtype``)."""
        buf = cls.__new__(cls)
        if device.is_host:
            buf._set(np.asarray(value.numpy()), device)
        else:
            buf._set_ort(value, device, dtype)
        return buf

    def _set(self, array: np.ndarray, device: Device) -> None:
        self._array = array
        self._ort = None
        self._device = device
        self._dtype = _max_dtype(array.dtype)

    def _set_ort(self, value: Any, device: Device, dtype: DType) -> None:
        self._array = None
        self._ort = value
        self._device = device
        self._dtype = dtype

    @staticmethod
    def from_numpy(arr: np.ndarray) -> Buffer:
        """A CPU buffer of ``arr``, sharing its memory (a non-contiguous or read-only array
        is copied first), as MAX's ``Buffer.from_numpy``.

        >>> import numpy as np
        >>> from graphdsl.max.driver import Buffer
        >>> a = np.arange(3, dtype=np.int64)
        >>> b = Buffer.from_numpy(a)
        >>> a[0] = 7
        >>> b.to_numpy()
        array([7, 1, 2])
        """
        arr = np.asarray(arr)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        return Buffer.from_dlpack(arr)

    @staticmethod
    def from_dlpack(array: Any, *, copy: bool | None = None) -> Buffer:
        """A buffer of a DLPack tensor (a numpy array, a PyTorch tensor, a Buffer), sharing
        its memory where it can, as MAX's ``Buffer.from_dlpack``: numpy arrays must be
        contiguous; ``copy`` is taken for numpy arrays and buffers only. A tensor on a CUDA
        GPU becomes an onnxruntime OrtValue there.

        >>> import numpy as np
        >>> from graphdsl.max.driver import Buffer
        >>> Buffer.from_dlpack(np.ones((2, 2), np.float16)).shape
        (2, 2)
        """
        if isinstance(array, np.ndarray):
            if not array.flags.c_contiguous:
                raise ValueError(
                    "driver buffer's from_dlpack only accepts contiguous arrays. "
                    "First call np.ascontiguousarray(array)"
                )
            if copy or (copy is None and not array.flags.writeable):
                array = array.copy()
            return Buffer._of(array)
        if isinstance(array, Buffer):
            return array.copy() if copy else array
        if copy is not None:
            raise ValueError(
                "`Buffer.from_dlpack` supports the `copy` flag only for numpy array and "
                "`Buffer` inputs"
            )
        if not isinstance(array, DLPackArray):
            raise TypeError(
                f"Buffer.from_dlpack takes a DLPack tensor (with __dlpack__ and "
                f"__dlpack_device__), got {type(array).__name__}"
            )
        kind, index = array.__dlpack_device__()[:2]
        if int(kind) in (_KDL_CPU, _KDL_CUDA_HOST):
            return Buffer._of(np.from_dlpack(array))
        if int(kind) == _KDL_CUDA:
            import onnxruntime as ort

            value = ort.OrtValue.from_dlpack(array)
            return Buffer._of_ortvalue(value, _gpu(int(index)), _ort_dtype(value))
        raise UnsupportedError(
            f"Buffer.from_dlpack: a tensor on DLPack device type {kind} (graphdsl's buffers "
            "live on the CPU or on a CUDA GPU)"
        )

    @staticmethod
    def zeros(shape: Sequence[int], dtype: DType, device: Device | None = None) -> Buffer:
        """A buffer of zeros of ``shape`` and ``dtype`` on ``device`` (the CPU by default).

        >>> from graphdsl.max import DType
        >>> from graphdsl.max.driver import Buffer
        >>> Buffer.zeros([2, 1], DType.bool).to_numpy().tolist()
        [[False], [False]]
        """
        return Buffer(dtype, shape, device)

    @staticmethod
    def scalar(value: Any, dtype: DType, device: Device | None = None) -> Buffer:
        """A rank-0 buffer of ``value`` in ``dtype`` on ``device`` (the CPU by default).

        >>> from graphdsl.max import DType
        >>> from graphdsl.max.driver import Buffer
        >>> Buffer.scalar(2.5, DType.float16).shape
        ()
        """
        return Buffer._of(np.asarray(np.asarray(value).astype(_np_dtype(dtype))), device)

    @staticmethod
    def mmap(
        filename: str | os.PathLike[str],
        dtype: DType,
        shape: Sequence[int] | int,
        mode: Any = "copyonwrite",
        offset: int = 0,
    ) -> Buffer:
        """A CPU buffer mapping a binary file (``np.memmap``'s arguments), as MAX's.

        >>> import numpy as np, tempfile, os
        >>> from graphdsl.max import DType
        >>> from graphdsl.max.driver import Buffer
        >>> path = os.path.join(tempfile.mkdtemp(), "w.bin")
        >>> np.arange(4, dtype=np.int32).tofile(path)
        >>> Buffer.mmap(path, DType.int32, [2, 2]).to_numpy().tolist()
        [[0, 1], [2, 3]]
        """
        dims = shape if isinstance(shape, int) else tuple(shape)
        arr = np.memmap(filename, _np_dtype(dtype), mode, offset, dims, order="C")
        return Buffer._of(arr)

    # -- what it is
    @property
    def dtype(self) -> DType:
        """The element type (:class:`graphdsl.max.DType`)."""
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, a tuple of ints."""
        if self._array is not None:
            return tuple(self._array.shape)
        return tuple(self._ort.shape())

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        """The number of elements (1 for rank 0)."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def element_size(self) -> int:
        """The bytes of one element."""
        return self._dtype.size_in_bytes

    @property
    def strides(self) -> tuple[int, ...]:
        """How many elements apart consecutive ones are, per dimension."""
        if self._array is None:
            return _c_strides(self.shape)
        size = self._array.itemsize
        return tuple(s // size for s in self._array.strides)

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements lie in C order, one after the other: the strides of the
        shape (a slice keeps its parent's strides, so it may not be), as MAX's."""
        return self.strides == _c_strides(self.shape)

    @property
    def device(self) -> Device:
        """The device the buffer lives on."""
        return self._device

    @property
    def is_host(self) -> bool:
        """Whether the buffer lives on the CPU."""
        return self._device.is_host

    @property
    def pinned(self) -> bool:
        """Whether the buffer is in pinned host memory (never, here)."""
        return False

    # -- numpy and devices
    def to_numpy(self) -> np.ndarray:
        """The buffer as a numpy array: on the CPU the array it holds (shared, as MAX's;
        a read-only one copied), else a copy on the host.

        >>> import numpy as np
        >>> from graphdsl.max.driver import Buffer
        >>> Buffer.from_numpy(np.eye(2, dtype=np.uint8)).to_numpy()
        array([[1, 0],
               [0, 1]], dtype=uint8)
        """
        if self._array is not None:
            return self._array if self._array.flags.writeable else self._array.copy()
        try:
            return np.asarray(self._ort.numpy())
        except Exception as e:
            raise UnsupportedError(
                f"{self._dtype} buffer on {self._device}: onnxruntime cannot copy this dtype "
                f"to numpy ({e}); cast it to float32 in the graph"
            ) from None

    @overload
    def to(self, device: Device) -> Buffer: ...

    @overload
    def to(self, device: Sequence[Device]) -> list[Buffer]: ...

    def to(self, device: Device | Sequence[Device]) -> Buffer | list[Buffer]:
        """The buffer on ``device`` (itself if it is there already), or a list of it on each
        of several devices, as MAX's ``Buffer.to``.

        >>> import numpy as np
        >>> from graphdsl.max.driver import CPU, Buffer
        >>> b = Buffer.from_numpy(np.ones(2))
        >>> b.to(CPU()) is b
        True
        """
        if not isinstance(device, Device):
            return [self.to(d) for d in device]
        return self if device == self._device else self.copy(device)

    def copy(self, device: Device | None = None) -> Buffer:
        """A copy of the buffer on ``device`` (this one's by default)."""
        target = device or self._device
        if target.is_host:
            return Buffer._of(self.to_numpy().copy())
        host = self.to_numpy()
        return Buffer._of_ortvalue(_ort_from_numpy(host, target), target, self._dtype)

    def contiguous(self) -> Buffer:
        """A contiguous copy of the buffer."""
        return self.copy()

    def item(self) -> Any:
        """The one element of the buffer as a Python number, as MAX's ``item()``.

        >>> import numpy as np
        >>> from graphdsl.max.driver import Buffer
        >>> Buffer.from_numpy(np.array([[7]], np.int16)).item()
        7
        """
        n = self.num_elements
        if n != 1:
            raise ValueError(f"calling `item` on a tensor with {n} items but expected only 1")
        return self.to_numpy().reshape(()).item()

    def view(self, dtype: DType, shape: Sequence[int] | None = None) -> Buffer:
        """The same memory as ``dtype`` (and ``shape``; by default the last dimension
        rescaled), as MAX's ``view``.

        >>> import numpy as np
        >>> from graphdsl.max import DType
        >>> from graphdsl.max.driver import Buffer
        >>> Buffer.from_numpy(np.zeros((2, 4), np.uint8)).view(DType.int32).shape
        (2, 1)
        """
        arr = self._host_array("view")
        want = _np_dtype(dtype)
        if shape is None:
            last = arr.itemsize * (arr.shape[-1] if arr.ndim else 1)
            if last % want.itemsize:
                raise ValueError(
                    "When changing to a larger dtype, its size must be a divisor of the total "
                    "size in bytes of the last axis of the array."
                )
            shape = (*arr.shape[:-1], last // want.itemsize)
        dims = tuple(int(d) for d in shape)
        if int(np.prod(dims, dtype=np.int64)) * want.itemsize != arr.nbytes:
            raise ValueError(
                f"cannot view a buffer of {arr.nbytes} bytes as {dtype} of shape {dims}"
            )
        return Buffer._of(arr.reshape(-1).view(want).reshape(dims))

    def inplace_copy_from(self, src: Buffer) -> None:
        """Copy ``src`` (same dtype and size; any device) into this buffer."""
        if self is src:
            return
        if not self.is_contiguous:
            raise ValueError("Cannot copy from non-contiguous buffer")
        if not src.is_contiguous:
            raise ValueError("Cannot copy to non-contiguous buffer")
        if self.num_elements != src.num_elements:
            raise ValueError("Cannot copy buffers of different sizes")
        if self.dtype != src.dtype:
            raise ValueError("Cannot copy buffers of different dtypes")
        values = src.to_numpy().reshape(self.shape)
        if self._array is not None:
            self._array[...] = values
        else:
            self._ort = _ort_from_numpy(np.ascontiguousarray(values), self._device)

    def _replace(self, value: np.ndarray | Any) -> None:
        """Give the buffer new contents of its dtype and shape (a numpy array or, on a GPU,
        an OrtValue), in place: a numpy array sharing a CPU buffer sees them."""
        if self._array is not None:
            self._array[...] = value if isinstance(value, np.ndarray) else value.numpy()
        elif isinstance(value, np.ndarray):
            self._ort = _ort_from_numpy(np.ascontiguousarray(value), self._device)
        else:
            self._ort = value

    # -- indexing
    def _host_array(self, what: str) -> np.ndarray:
        if self._array is None:
            raise UnsupportedError(
                f"Buffer.{what} on {self._device}: graphdsl's GPU buffers are onnxruntime "
                "OrtValues; move it to the host first (buffer.to(CPU()))"
            )
        return self._array

    def _index(self, idx: Index) -> tuple[int | slice, ...]:
        items = tuple(idx) if isinstance(idx, Sequence) else (idx,)
        if len(items) != self.rank:
            raise ValueError(
                f"the provided number of indices ({len(items)}) is not equal to the tensor "
                f"rank ({self.rank})"
            )
        for i in items:
            if not isinstance(i, (int, np.integer, slice)) or isinstance(i, bool):
                raise TypeError(f"a buffer index is an int or a slice per dimension, got {i!r}")
        return items

    def __getitem__(self, idx: Index) -> Buffer:
        """A view of the buffer: one int or slice per dimension (ints only: rank 0)."""
        arr = self._host_array("__getitem__")
        index = (*self._index(idx), Ellipsis)  # (all ints: a rank-0 view, not a scalar)
        return Buffer._of(arr[index])

    def __setitem__(self, idx: Index, value: Any) -> None:
        """Set the elements an index selects (one int or slice per dimension)."""
        arr = self._host_array("__setitem__")
        arr[self._index(idx)] = value.to_numpy() if isinstance(value, Buffer) else value

    # -- DLPack
    def __dlpack__(self, *, stream: int | None = None, **kwargs: Any) -> Any:
        """The DLPack capsule of the buffer's memory (numpy's on the CPU, onnxruntime's on
        a GPU): ``np.from_dlpack(buffer)``, ``torch.from_dlpack(buffer)``."""
        if self._array is None:
            return self._ort.__dlpack__(stream=stream)
        try:
            return self._array.__dlpack__(stream=stream, **kwargs)
        except BufferError as e:
            raise BufferError(
                f"{e}: a {self._dtype} buffer has no DLPack type numpy can export; read it "
                "with to_numpy()"
            ) from None

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's (device type, index) of the buffer: (1, 0) on the CPU."""
        if self._array is None:
            kind, index = self._ort.__dlpack_device__()
            return int(kind), int(index)
        return _KDL_CPU, 0

    # -- printing
    def __repr__(self) -> str:
        return f"Buffer({self._dtype}, {self.shape}, {self._device.label}[{self._device.id}])"

    def __str__(self) -> str:
        prefix = "Buffer("
        data = np.array2string(self.to_numpy(), prefix=prefix)
        return f"{prefix}{data}, dtype={self._dtype}, shape={self.shape}, device={self._device})"


# ---------------------------------------------------------------------------- helpers


def _np_dtype(dtype: DType) -> np.dtype[Any]:
    """The numpy dtype a buffer of ``dtype`` holds (ml_dtypes' for bfloat16 and float8)."""
    if not isinstance(dtype, DType):
        raise TypeError(f"expected a graphdsl.max DType, got {dtype!r}")
    return np.dtype(to_core(dtype).np)


def _max_dtype(np_dtype: np.dtype[Any]) -> DType:
    try:
        return from_core(core_dtype(np_dtype))
    except (DTypeError, UnsupportedError, TypeError):
        raise ValueError(f"unsupported NumPy dtype: {np_dtype}") from None


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a C-ordered array of ``shape``."""
    strides = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _gpu(index: int) -> Accelerator:
    return Accelerator(index)
