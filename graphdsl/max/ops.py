"""MAX's ``max.graph.ops`` over graphdsl: MAX's names, parameter names and defaults, each op
building graphdsl's (``graphdsl.ops``) under the graph's policy.

Where MAX's meaning differs from graphdsl's function of the same name, this module follows
MAX: reductions (``sum``, ``mean``, ``prod``, ``max``, ``min``, ``argmax``, ``argmin``) keep
the reduced axis with size 1; ``transpose(x, axis_1, axis_2)`` swaps two axes; ``max(x, y)``
and ``min(x, y)`` are elementwise and ``max(x, axis=...)`` a reduction; ``constant`` needs a
dtype and device for Python values and takes an array's dtype. A MAX op that graphdsl lacks
raises :class:`MissingOpError` naming it (``MISSING`` lists them); an argument value graphdsl
cannot honour raises :class:`~graphdsl.max.UnsupportedError`.

>>> import numpy as np
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
>>> cpu = DeviceRef.CPU()
>>> with Graph("ops", input_types=[TensorType(DType.float32, [2, 4], cpu)]) as g:
...     x = g.inputs[0].tensor
...     s = ops.sum(ops.transpose(x, 0, 1), axis=0)
...     w = ops.constant([[1, 2]], DType.int8, cpu)
...     g.output(s, ops.band_part(ops.constant(np.ones((3, 3), np.float32)), 0, None), w)
>>> [str(v.type) for v in g.outputs]
['float32[1, 2]', 'float32[3, 3]', 'int8[1, 2]']
>>> ops.print
Traceback (most recent call last):
    ...
graphdsl.max.ops.MissingOpError: max.graph.ops.print (debug printing) is not in graphdsl: ...
"""

from __future__ import annotations

from typing import Any

from graphdsl.max._constant import (
    assert_same_device,
    constant,
    constant_external,
    shape_to_tensor,
    transfer_to,
)
from graphdsl.max._control import call, cond, while_loop
from graphdsl.max._elementwise import (
    abs,
    acos,
    add,
    argmax,
    argmin,
    argsort,
    atanh,
    cast,
    ceil,
    cos,
    cumsum,
    div,
    equal,
    erf,
    exp,
    floor,
    floor_div,
    gelu,
    greater,
    greater_equal,
    is_inf,
    is_nan,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logsoftmax,
    matmul,
    max,
    mean,
    min,
    mod,
    mul,
    negate,
    not_equal,
    outer,
    pow,
    prod,
    relu,
    round,
    rsqrt,
    sigmoid,
    silu,
    sin,
    softmax,
    sqrt,
    sub,
    sum,
    tanh,
    top_k,
    trunc,
    where,
)
from graphdsl.max._nn import (
    avg_pool2d,
    conv2d,
    conv2d_transpose,
    conv3d,
    group_norm,
    layer_norm,
    max_pool2d,
    resize,
    resize_bicubic,
    resize_linear,
    resize_nearest,
    rms_norm,
)
from graphdsl.max._shape import (
    band_part,
    broadcast_to,
    chunk,
    concat,
    flatten,
    gather,
    gather_nd,
    pad,
    permute,
    range,
    repeat_interleave,
    reshape,
    scatter,
    scatter_add,
    scatter_nd,
    scatter_nd_add,
    slice_tensor,
    split,
    squeeze,
    stack,
    tile,
    transpose,
    unsqueeze,
)
from graphdsl.max._types import InterpolationMode, UnsupportedError


class MissingOpError(UnsupportedError, AttributeError):
    """A ``max.graph.ops`` op that graphdsl does not have (an AttributeError too, so that
    ``hasattr(ops, name)`` is False for it)."""


# ---------------------------------------------------------------------------- missing

# every public op of max.graph.ops 26.7 (tests/data/max_graph_ops.json) that graphdsl
# lacks, with what it is
MISSING: dict[str, str] = {
    "allgather": "multi-device collective",
    "allgather_rms_norm": "multi-device collective",
    "allgather_rms_norm_quant_mxfp6": "multi-device collective",
    "allgather_rms_norm_quant_mxfp8": "multi-device collective",
    "as_interleaved_complex": "complex view of a real tensor",
    "bottom_k": "the k smallest values and their indices",
    "buffer_create": "mutable buffer",
    "buffer_load": "mutable buffer",
    "buffer_store": "mutable buffer",
    "buffer_store_slice": "mutable buffer",
    "custom": "custom kernel",
    "dequantize": "MAX's GGUF-style quantization encodings",
    "distributed_broadcast": "multi-device collective",
    "distributed_scatter": "multi-device collective",
    "fold": "col2im",
    "hann_window": "window function",
    "inplace_custom": "custom kernel",
    "irfft": "inverse real FFT",
    "masked_scatter": "data-dependent scatter",
    "non_maximum_suppression": "data-dependent output size",
    "nonzero": "data-dependent output size",
    "parallel": "multi-device execution",
    "print": "debug printing",
    "qmatmul": "MAX's GGUF-style quantization encodings",
    "rebind": "run-time shape assertion",
    "reduce_scatter_rms_norm": "multi-device collective",
    "roi_align": "region-of-interest pooling",
    "scatter_max": "scatter with max",
    "scatter_min": "scatter with min",
    "scatter_mul": "scatter with product",
    "scatter_nd_max": "scatter with max",
    "scatter_nd_min": "scatter with min",
    "scatter_nd_mul": "scatter with product",
    "shard_and_stack": "multi-device sharding",
    "side_stream": "device streams",
}


def __getattr__(name: str) -> Any:
    what = MISSING.get(name)
    if what is not None:
        raise MissingOpError(
            f"max.graph.ops.{name} ({what}) is not in graphdsl: graphdsl.max.ops has "
            f"{len(__all__)} of the {len(__all__) + len(MISSING)} names of max.graph.ops 26.7 "
            "(docs/max.md lists the others)"
        )
    raise AttributeError(f"module 'graphdsl.max.ops' has no attribute {name!r}")


__all__ = [
    "InterpolationMode",
    "abs",
    "acos",
    "add",
    "argmax",
    "argmin",
    "argsort",
    "assert_same_device",
    "atanh",
    "avg_pool2d",
    "band_part",
    "broadcast_to",
    "call",
    "cast",
    "ceil",
    "chunk",
    "concat",
    "cond",
    "constant",
    "constant_external",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "cos",
    "cumsum",
    "div",
    "equal",
    "erf",
    "exp",
    "flatten",
    "floor",
    "floor_div",
    "gather",
    "gather_nd",
    "gelu",
    "greater",
    "greater_equal",
    "group_norm",
    "is_inf",
    "is_nan",
    "layer_norm",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsoftmax",
    "matmul",
    "max",
    "max_pool2d",
    "mean",
    "min",
    "mod",
    "mul",
    "negate",
    "not_equal",
    "outer",
    "pad",
    "permute",
    "pow",
    "prod",
    "range",
    "relu",
    "repeat_interleave",
    "reshape",
    "resize",
    "resize_bicubic",
    "resize_linear",
    "resize_nearest",
    "rms_norm",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "scatter_nd",
    "scatter_nd_add",
    "shape_to_tensor",
    "sigmoid",
    "silu",
    "sin",
    "slice_tensor",
    "softmax",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "tanh",
    "tile",
    "top_k",
    "transfer_to",
    "transpose",
    "trunc",
    "unsqueeze",
    "where",
    "while_loop",
]
