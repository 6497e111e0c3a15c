"""MAX's devices (``max.driver``'s ``Device``, ``CPU``, ``Accelerator`` and the accelerator
queries) for :mod:`graphdsl.max.driver`, which re-exports them: the host, and CUDA GPUs that
onnxruntime can run models on."""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "CPU",
    "Accelerator",
    "DLPackArray",
    "Device",
    "accelerator_api",
    "accelerator_architecture_name",
    "accelerator_count",
]

_CUDA = "CUDAExecutionProvider"
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST = 1, 2, 3  # DLPack's device types


@runtime_checkable
class DLPackArray(Protocol):
    """What MAX takes as an array: anything with ``__dlpack__`` and ``__dlpack_device__``
    (numpy arrays, PyTorch tensors, :class:`Buffer`), as MAX's ``DLPackArray``.

    >>> import numpy as np
    >>> from graphdsl.max.driver import DLPackArray
    >>> isinstance(np.zeros(2), DLPackArray), isinstance([0.0], DLPackArray)
    (True, False)
    """

    def __dlpack__(self, *, stream: None = None) -> Any: ...

    def __dlpack_device__(self) -> Any: ...


# ---------------------------------------------------------------------------- devices


class Device:
    """A device a buffer lives on and a model runs on, as MAX's ``Device``: the base of
    :class:`CPU` and :class:`Accelerator` (make one of those; ``Device()`` raises, as in
    MAX). Devices are equal when their kind and id are.

    >>> from graphdsl.max.driver import CPU, Device
    >>> cpu = Device.cpu()
    >>> cpu, cpu.label, cpu.api, cpu.id, cpu.is_host, cpu == CPU()
    (Device(type=cpu,id=0), 'cpu', 'cpu', 0, True, True)
    """

    _label: str
    _id: int

    def __init__(self) -> None:
        raise TypeError("max._core.driver.Device: no constructor defined!")

    @property
    def label(self) -> str:
        """``"cpu"`` for the host, ``"gpu"`` for an accelerator."""
        return self._label

    @property
    def id(self) -> int:
        """The device's index among those of its kind (0 for the CPU)."""
        return self._id

    @property
    def api(self) -> str:
        """The API that programs the device: ``"cpu"``, or ``"cuda"`` for a GPU."""
        return "cpu" if self._label == "cpu" else "cuda"

    @property
    def is_host(self) -> bool:
        """Whether the device is the CPU."""
        return self._label == "cpu"

    @property
    def is_host_unified(self) -> bool:
        """Whether the device and the host share one memory (the CPU only, here)."""
        return self.is_host

    @property
    def is_compatible(self) -> bool:
        """Whether graphdsl can run models on the device (always, for one that was made)."""
        return True

    @property
    def architecture_name(self) -> str:
        """A GPU's architecture (``sm_90``); the CPU raises ValueError, as in MAX."""
        if self.is_host:
            raise ValueError(
                "failed to get device architecture name: Not implemented for device: cpu"
            )
        major, minor = _cuda_capability(self._id)
        return f"sm_{major}{minor}"

    @property
    def model_name(self) -> str:
        """The device's model (``"cpu"``; a GPU's name, ``"NVIDIA H100 80GB HBM3"``)."""
        return "cpu" if self.is_host else _cuda_name(self._id)

    def can_access(self, other: Device) -> bool:
        """Whether this device reads ``other``'s memory directly (peer access): never, here
        (onnxruntime copies between devices)."""
        return False

    def synchronize(self) -> None:
        """Wait for the device's work: onnxruntime's runs return when they are done."""

    @staticmethod
    def cpu(id: int = 0) -> CPU:
        """The CPU device (``id`` is ignored, as in MAX)."""
        return CPU(id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and (self._label, self._id) == (other._label, other._id)

    def __hash__(self) -> int:
        return hash((self._label, self._id))

    def __repr__(self) -> str:
        return f"Device(type={self._label},id={self._id})"


class CPU(Device):
    """The host CPU, as MAX's ``CPU(id=0)`` (``id`` is ignored: there is one).

    >>> from graphdsl.max.driver import CPU
    >>> CPU().is_host, CPU(1) == CPU()
    (True, True)
    """

    def __init__(self, id: int = 0) -> None:
        self._label = "cpu"
        self._id = 0


class Accelerator(Device):
    """A CUDA GPU, as MAX's ``Accelerator(id=-1)`` (``-1``: the first one): graphdsl runs
    models on it through onnxruntime's CUDA provider, so it needs onnxruntime-gpu and a GPU
    (:func:`accelerator_count`); without them it raises MAX's ValueError, saying why. MAX's
    other accelerators (AMD's HIP, Apple's Metal) are not supported.

    >>> from graphdsl.max.driver import Accelerator, accelerator_count
    >>> if accelerator_count() == 0:  # this machine has no GPU for onnxruntime
    ...     try:
    ...         Accelerator()
    ...     except ValueError as e:
    ...         print(str(e).splitlines()[0])
    ... else:
    ...     print('failed to create device: No supported "gpu" device available.')
    failed to create device: No supported "gpu" device available.
    """

    def __init__(self, id: int = -1) -> None:
        count = accelerator_count()
        index = 0 if id < 0 else id
        if count == 0:
            raise ValueError(
                'failed to create device: No supported "gpu" device available.\n'
                f"graphdsl.max runs models on onnxruntime: {_no_cuda_reason()}"
            )
        if index >= count:
            raise ValueError(
                f"failed to create device: GPU {index} was requested but only {count} "
                "devices were found."
            )
        self._label = "gpu"
        self._id = index


def accelerator_count() -> int:
    """How many GPUs graphdsl can run models on: CUDA GPUs, where onnxruntime has its CUDA
    provider (onnxruntime-gpu); 0 otherwise, as MAX's ``accelerator_count()``.

    >>> from graphdsl.max.driver import accelerator_count
    >>> isinstance(accelerator_count(), int)
    True
    """
    return _accelerators()


def accelerator_api() -> str:
    """The API of the accelerator: ``"cuda"``, or ``"cpu"`` without one (MAX's).

    >>> from graphdsl.max.driver import accelerator_api, accelerator_count
    >>> accelerator_api() == ("cuda" if accelerator_count() else "cpu")
    True
    """
    return "cuda" if accelerator_count() > 0 else "cpu"


def accelerator_architecture_name() -> str:
    """The first accelerator's architecture (``sm_90``); without one, the CPU's, which
    raises ValueError, as in MAX.

    >>> from graphdsl.max.driver import accelerator_architecture_name, accelerator_count
    >>> if accelerator_count() == 0:
    ...     try:
    ...         accelerator_architecture_name()
    ...     except ValueError as e:
    ...         print(e)
    ... else:
    ...     print("failed to get device architecture name: Not implemented for device: cpu")
    failed to get device architecture name: Not implemented for device: cpu
    """
    device: Device = Accelerator() if accelerator_count() > 0 else CPU()
    return device.architecture_name


@functools.cache
def _accelerators() -> int:
    import onnxruntime as ort  # (only here: the driver's CPU side needs no onnxruntime)

    if _CUDA not in ort.get_available_providers():
        return 0
    return _cuda_device_count()


def _no_cuda_reason() -> str:
    import onnxruntime as ort

    providers = ort.get_available_providers()
    if _CUDA not in providers:
        return (
            f"onnxruntime has no CUDA provider here (its providers: {providers}); install "
            "onnxruntime-gpu on a machine with an NVIDIA GPU"
        )
    return "onnxruntime has its CUDA provider, but the CUDA driver finds no GPU"


@functools.cache
def _libcuda() -> Any:
    """The CUDA driver library, initialized, or None."""
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    return lib if lib.cuInit(0) == 0 else None


def _cuda_device_count() -> int:
    lib = _libcuda()
    count = ctypes.c_int(0)
    if lib is None or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return int(count.value)


def _cuda_device(index: int) -> tuple[Any, ctypes.c_int]:
    lib = _libcuda()
    dev = ctypes.c_int(0)
    if lib is None or lib.cuDeviceGet(ctypes.byref(dev), index) != 0:
        raise ValueError(f"the CUDA driver cannot open GPU {index}")
    return lib, dev


def _cuda_capability(index: int) -> tuple[int, int]:
    lib, dev = _cuda_device(index)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
    return int(major.value), int(minor.value)


def _cuda_name(index: int) -> str:
    lib, dev = _cuda_device(index)
    name = ctypes.create_string_buffer(256)
    lib.cuDeviceGetName(name, 256, dev)
    return name.value.decode(errors="replace")


# ---------------------------------------------------------------------------- buffers
