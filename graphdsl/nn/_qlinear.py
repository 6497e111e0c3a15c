"""What a quantized ``Linear`` computes (below graphdsl.nn.layers, which calls it; the
model-level :func:`graphdsl.nn.quantize` is in graphdsl/nn/quantize.py, above it).

``load_state_dict`` quantizes each marked weight with ``gd.ops.quantize_weights`` (blocks
of input features), and the layer computes ``gd.ops.qmatmul`` of those constants. A
quantized layer holds its codes and scales as an attribute, so each traces to its own
subgraph: two layers never share one function's constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl import ops
from graphdsl.graph import Symbol
from graphdsl.types import OpTypeError

__all__ = ["QUANTIZED", "check_quantize", "quantize_linear", "quantized_forward"]

QUANTIZED = ("int4", "uint4", "int8", "uint8")


def check_quantize(kind: str, block_size: int, in_features: int) -> None:
    """A clear error for a quantization the layer cannot take."""
    if kind not in QUANTIZED:
        raise OpTypeError(f"Linear(quantize={kind!r}): use one of {QUANTIZED}")
    if not isinstance(block_size, int) or block_size < 2:
        raise OpTypeError(f"Linear(block_size={block_size!r}): give an int >= 2")
    if in_features < 1:
        raise OpTypeError(f"Linear: {in_features} input features cannot be quantized")


def quantize_linear(
    weight: np.ndarray, kind: str, block_size: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A Linear's (out, in) weight as qmatmul's (codes [in, out], scale, zero point), in
    blocks of ``block_size`` input features."""
    w = np.asarray(weight, np.float32).T
    return ops.quantize_weights(w, kind, block_size=block_size, axis=0, symmetric=symmetric)


def quantized_forward(layer: Any, x: Symbol, bias: Symbol | None) -> Symbol:
    """``x @ dequantize(codes) + bias`` for a quantized Linear whose data is loaded."""
    if layer.quantized is None:
        raise OpTypeError(
            f"Linear(quantize={layer.quantize!r}) has no quantized weight yet: call "
            "load_state_dict(...) on the model first (the weight is quantized from its data)"
        )
    q, scale, zero = layer.quantized
    y = ops.qmatmul(x, q, scale, zero, axis=0, block_size=layer.block_size)
    return y if bias is None else ops.add(y, bias)
