"""MAX's graph API (Modular's ``max.graph``) over graphdsl: a MAX program runs here with only
its imports changed and exports to ONNX (``exporters.onnx.export``/``run`` take its graphs).

``from max.graph import DeviceRef, Graph, TensorType, ops`` and ``from max.dtype import
DType`` become ``from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops``. MAX's
type objects are MAX's here: ``Dim`` (``StaticDim``, ``SymbolicDim``, ``AlgebraicDim``),
the list-like ``Shape``, ``TensorType(dtype, shape, device)``, ``BufferType`` and ``DType``
with max.graph 26's members, methods, arithmetic and equality; graphdsl's core keeps its
own plain types and graphdsl.max converts at its boundary. Graphs promote with the
``max-graph`` policy; ``ops`` has MAX's op names, parameters and defaults and raises
:class:`MissingOpError` naming the few it leaves out (docs/max.md). graphdsl's errors
reach MAX code as the builtin exception types max.graph raises for the same mistakes.

MAX's engine and driver are :mod:`graphdsl.max.engine` (``InferenceSession``, ``Model``) and
:mod:`graphdsl.max.driver` (``CPU``, ``Accelerator``, ``Buffer``, ``accelerator_count``):
``from max.engine import InferenceSession`` becomes ``from graphdsl.max.engine import
InferenceSession``, and ``session.load(graph)`` runs the graph on onnxruntime.

>>> import numpy as np
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
>>> import graphdsl as gd
>>> device = DeviceRef.CPU()
>>> with Graph("affine", input_types=[TensorType(DType.int8, [3], device)]) as graph:
...     x = graph.inputs[0].tensor
...     graph.output(x * 2 + 1, x / 2)  # Python ints take int8; int8 / int is float64
>>> graph.output_types[0] == TensorType(DType.int8, [3], device)
True
>>> gd.evaluate(graph, [np.array([-3, 0, 100], np.int8)])
[array([ -5,   1, -55], dtype=int8), array([-1.5,  0. , 50. ])]
"""

from __future__ import annotations

from graphdsl.max import ops
from graphdsl.max._buffer import BufferValue, BufferValueLike
from graphdsl.max._common import TensorValueLike
from graphdsl.max._dim import (
    AlgebraicDim,
    Dim,
    DimLike,
    DynamicDim,
    Shape,
    ShapeLike,
    StaticDim,
    SymbolicDim,
)
from graphdsl.max._dtype import DType
from graphdsl.max._graph import Graph
from graphdsl.max._graph import _ChainValue as _ChainValue  # (MAX's private name)
from graphdsl.max._types import (
    BufferType,
    ConvInputLayout,
    DeviceKind,
    DeviceRef,
    FilterLayout,
    InterpolationMode,
    TensorType,
    Type,
    UnsupportedError,
    Weight,
)
from graphdsl.max._value import TensorValue, Value
from graphdsl.max.mlir import KernelLibrary
from graphdsl.max.mlir import OpaqueType as _OpaqueType  # noqa: F401  (MAX's private name)
from graphdsl.max.ops import MissingOpError

__all__ = [
    "AlgebraicDim",
    "BufferType",
    "BufferValue",
    "BufferValueLike",
    "ConvInputLayout",
    "DType",
    "DeviceKind",
    "DeviceRef",
    "Dim",
    "DimLike",
    "DynamicDim",
    "FilterLayout",
    "Graph",
    "InterpolationMode",
    "KernelLibrary",
    "MissingOpError",
    "Shape",
    "ShapeLike",
    "StaticDim",
    "SymbolicDim",
    "TensorType",
    "TensorValue",
    "TensorValueLike",
    "Type",
    "UnsupportedError",
    "Value",
    "Weight",
    "ops",
]
