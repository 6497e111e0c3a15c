"""MAX's graph API (Modular's ``max.graph``) over graphdsl: a MAX program runs here with only
its imports changed and exports to ONNX (``exporters.onnx.export``/``run`` take its graphs).

``from max.graph import DeviceRef, Graph, TensorType, ops`` and ``from max.dtype import
DType`` become ``from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops``. Graphs
promote with the ``max-graph`` policy (max.graph 26, from recorded goldens); ``ops`` has
MAX's op names, parameters and defaults for every op graphdsl has, and raises
:class:`MissingOpError` naming the others (docs/max.md).

>>> import numpy as np
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
>>> import graphdsl as gd
>>> device = DeviceRef.CPU()
>>> with Graph("affine", input_types=[TensorType(DType.int8, [3], device)]) as graph:
...     x = graph.inputs[0].tensor
...     graph.output(x * 2 + 1, x / 2)  # Python ints take int8; int8 / int is float64
>>> gd.evaluate(graph, [np.array([-3, 0, 100], np.int8)])
[array([ -5,   1, -55], dtype=int8), array([-1.5,  0. , 50. ])]
"""

from __future__ import annotations

from graphdsl.dtypes import DType
from graphdsl.max import ops
from graphdsl.max._graph import Graph, TensorValue, Weight
from graphdsl.max._types import (
    ConvInputLayout,
    DeviceKind,
    DeviceRef,
    Dim,
    FilterLayout,
    InterpolationMode,
    TensorType,
    UnsupportedError,
)
from graphdsl.max.ops import MissingOpError

__all__ = [
    "ConvInputLayout",
    "DType",
    "DeviceKind",
    "DeviceRef",
    "Dim",
    "FilterLayout",
    "Graph",
    "InterpolationMode",
    "MissingOpError",
    "TensorType",
    "TensorValue",
    "UnsupportedError",
    "Weight",
    "ops",
]
