"""Which onnxruntime providers run a graph: its devices (graphdsl.max records them) decide.

>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
>>> from exporters.onnx import providers_for
>>> g = Graph("on_gpu", input_types=[TensorType(DType.float32, [2], DeviceRef.GPU())])
>>> providers_for(g)
['CUDAExecutionProvider', 'CPUExecutionProvider']
>>> providers_for(Graph("on_cpu", input_types=[TensorType(DType.float32, [2], DeviceRef.CPU())]))
['CPUExecutionProvider']
"""

from __future__ import annotations

from graphdsl.graph import Graph
from graphdsl.max import Graph as MaxGraph

__all__ = ["providers_for"]

_CPU = "CPUExecutionProvider"
_CUDA = "CUDAExecutionProvider"


def providers_for(graph: Graph) -> list[str]:
    """The providers ``run`` uses for ``graph`` by default: CUDA first (then CPU, for the
    nodes CUDA has no kernel for) when one of its values lives on a GPU
    (``DeviceRef.GPU()``), else CPU. Where onnxruntime has no CUDA provider (no
    onnxruntime-gpu or no GPU), ``run`` warns once and runs on CPU.

    >>> import graphdsl as gd
    >>> from exporters.onnx import providers_for
    >>> providers_for(gd.Graph("g", input_types={"x": gd.float32}))
    ['CPUExecutionProvider']
    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
    >>> providers_for(Graph("m", input_types=[TensorType(DType.float32, [2], DeviceRef.GPU())]))
    ['CUDAExecutionProvider', 'CPUExecutionProvider']
    """
    if isinstance(graph, MaxGraph) and any(d.is_gpu() for d in graph.devices):
        return [_CUDA, _CPU]
    return [_CPU]
