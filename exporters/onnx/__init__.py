"""Export graphdsl graphs to ONNX and run them on onnxruntime.

>>> import numpy as np, graphdsl as gd
>>> from exporters.onnx import export, run
>>> g = gd.Graph("demo", input_types={"x": gd.TensorType(gd.int16, ("n",))})
>>> g.output(g.inputs[0] // -2 + 1.5)
>>> model = export(g)
>>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
(['x'], ['output0'])
>>> run(model, {"x": np.array([7, -7], np.int16)})
[array([-2.5,  4.5], dtype=float32)]
"""

from __future__ import annotations

from exporters.onnx._builder import ExportError
from exporters.onnx._devices import providers_for
from exporters.onnx._export import export
from exporters.onnx._generate import Generator, generate
from exporters.onnx._placement import CpuFallbackWarning, CpuNode, cpu_nodes
from exporters.onnx._run import Options, RunError, inference_session, options, run
from exporters.onnx._session import Session

__all__ = [
    "CpuFallbackWarning",
    "CpuNode",
    "ExportError",
    "Generator",
    "Options",
    "RunError",
    "Session",
    "cpu_nodes",
    "export",
    "generate",
    "inference_session",
    "options",
    "providers_for",
    "run",
]
