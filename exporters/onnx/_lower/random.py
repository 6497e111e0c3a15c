"""Lowerings of ``random_uniform`` and ``random_normal``: ONNX RandomUniform and RandomNormal
with the op's seed, in float32 or float64 (onnxruntime's kernels), cast to the dtype. The
values are onnxruntime's draws, equal to the reference's in distribution only
(graphdsl/ops/random.py)."""

from __future__ import annotations

from typing import Any

from onnx import TensorProto

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._types import storage
from graphdsl.graph import Symbol

# graphdsl op -> (ONNX op, {ONNX attribute: the op's attribute})
_DRAWS = {
    "random_uniform": ("RandomUniform", {"low": "low", "high": "high"}),
    "random_normal": ("RandomNormal", {"mean": "mean", "scale": "std"}),
}


@register(*_DRAWS)
def _draw(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    onnx_op, names = _DRAWS[node.op]
    run = T.float64 if storage(node.dtype) is T.float64 else T.float32
    code = TensorProto.DOUBLE if run is T.float64 else TensorProto.FLOAT
    params: dict[str, Any] = {k: float(node.attrs[v]) for k, v in names.items()}
    made = b.node(onnx_op, [], run, dtype=code, seed=float(node.attrs["seed"]),
                  shape=[int(n) for n in node.attrs["shape"]], **params)  # fmt: skip
    return b.cast(made, node.dtype)
