"""MAX's driver (Modular's ``max.driver``, 26.7): devices and the buffers a model reads and
returns, over numpy on the CPU and onnxruntime on a CUDA GPU.

``from max.driver import CPU, Buffer`` becomes ``from graphdsl.max.driver import CPU,
Buffer``. :class:`CPU` is the host; :class:`Accelerator` a CUDA GPU that onnxruntime can run
models on (onnxruntime-gpu's CUDA provider and a GPU: :func:`accelerator_count` counts them).
A :class:`Buffer` (what ``model.execute`` returns in MAX 26.7; MAX has no ``Tensor`` class in
26.7) holds a numpy array on the CPU, which ``from_numpy`` and ``to_numpy`` share rather than
copy, as MAX's do, and an onnxruntime ``OrtValue`` on a GPU; both are DLPack tensors
(``np.from_dlpack(buffer)``, ``Buffer.from_dlpack(tensor)``). Dtypes are
:class:`graphdsl.max.DType`.

>>> import numpy as np
>>> from graphdsl.max import DType
>>> from graphdsl.max.driver import CPU, Buffer, accelerator_count
>>> b = Buffer.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> b
Buffer(DType.float32, (2, 3), cpu[0])
>>> b.dtype, b.shape, b.device
(float32, (2, 3), Device(type=cpu,id=0))
>>> np.from_dlpack(b)[1]
array([3., 4., 5.], dtype=float32)
>>> Buffer.zeros([2], DType.int8).to_numpy()
array([0, 0], dtype=int8)
>>> accelerator_count() >= 0 and CPU() == CPU()
True
"""

from __future__ import annotations

from graphdsl.max._devices import (
    CPU,
    Accelerator,
    Device,
    DLPackArray,
    accelerator_api,
    accelerator_architecture_name,
    accelerator_count,
)
from graphdsl.max._driver_buffer import Buffer

#: ``max.driver.Tensor``: MAX's name for :class:`Buffer` before 26.7, which MAX's own graph
#: tests still import (the same class here)
Tensor = Buffer

__all__ = [
    "CPU",
    "Accelerator",
    "Buffer",
    "DLPackArray",
    "Device",
    "Tensor",
    "accelerator_api",
    "accelerator_architecture_name",
    "accelerator_count",
]
