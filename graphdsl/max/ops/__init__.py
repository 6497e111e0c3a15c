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
>>> ops.allgather
Traceback (most recent call last):
    ...
graphdsl.max.ops.MissingOpError: max.graph.ops.allgather (multi-device collective: ...
"""

from __future__ import annotations

import sys
from typing import Any

from graphdsl.max import _value_compat
from graphdsl.max._buffer import buffer_create, buffer_load, buffer_store, buffer_store_slice
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
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
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
from graphdsl.max._extra import (
    as_interleaved_complex,
    bottom_k,
    fold,
    hann_window,
    irfft,
    masked_scatter,
    nonzero,
    print,
    rebind,
    roi_align,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_nd_max,
    scatter_nd_min,
    scatter_nd_mul,
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
from graphdsl.max._quant import dequantize, qmatmul
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
    split,
    squeeze,
    stack,
    tile,
    transpose,
    unsqueeze,
)
from graphdsl.max._slicing import slice_tensor
from graphdsl.max._types import InterpolationMode, UnsupportedError
from graphdsl.max.ops import complex, elementwise, random, reduction


class MissingOpError(UnsupportedError, AttributeError):
    """A ``max.graph.ops`` op that graphdsl does not have (an AttributeError too, so that
    ``hasattr(ops, name)`` is False for it); ``ops.MISSING`` gives the reason for each.

    >>> from graphdsl.max import MissingOpError, UnsupportedError, ops
    >>> hasattr(ops, "custom"), "custom" in ops.MISSING
    (False, True)
    >>> issubclass(MissingOpError, UnsupportedError), issubclass(MissingOpError, AttributeError)
    (True, True)
    >>> ops.custom
    Traceback (most recent call last):
        ...
    graphdsl.max.ops.MissingOpError: max.graph.ops.custom (Mojo custom kernel: ...) is not in ...
    """


# ---------------------------------------------------------------------------- missing

# the public ops of max.graph.ops 26.7 (tests/data/max_graph_ops.json) that graphdsl.max
# leaves out, with why
_COLLECTIVE = (
    "multi-device collective: graphdsl exports one ONNX model for one onnxruntime session, "
    "which has no collectives across devices (left out on purpose)"
)
_KERNEL = "Mojo custom kernel: ONNX has no way to run a Mojo kernel (left out on purpose)"
MISSING: dict[str, str] = {
    "allgather": _COLLECTIVE,
    "allgather_rms_norm": _COLLECTIVE,
    "allgather_rms_norm_quant_mxfp6": _COLLECTIVE,
    "allgather_rms_norm_quant_mxfp8": _COLLECTIVE,
    "distributed_broadcast": _COLLECTIVE,
    "distributed_scatter": _COLLECTIVE,
    "reduce_scatter_rms_norm": _COLLECTIVE,
    "shard_and_stack": _COLLECTIVE,
    "parallel": "multi-device execution: " + _COLLECTIVE.split(": ", 1)[1],
    "side_stream": "device streams: onnxruntime runs one stream per session",
    "custom": _KERNEL,
    "inplace_custom": _KERNEL,
    "non_maximum_suppression": "data-dependent output size (ONNX NonMaxSuppression returns "
    "another layout): not implemented yet",
}


def __getattr__(name: str) -> Any:
    what = MISSING.get(name)
    if what is not None:
        raise MissingOpError(
            f"max.graph.ops.{name} ({what}) is not in graphdsl: graphdsl.max.ops has "
            f"{len(_OPS)} of the {len(_OPS) + len(MISSING)} names of max.graph.ops 26.7 "
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
    "as_interleaved_complex",
    "assert_same_device",
    "atanh",
    "avg_pool2d",
    "band_part",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "bottom_k",
    "broadcast_to",
    "buffer_create",
    "buffer_load",
    "buffer_store",
    "buffer_store_slice",
    "call",
    "cast",
    "ceil",
    "chunk",
    "complex",
    "concat",
    "cond",
    "constant",
    "constant_external",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "cos",
    "cumsum",
    "dequantize",
    "div",
    "elementwise",
    "equal",
    "erf",
    "exp",
    "flatten",
    "floor",
    "floor_div",
    "fold",
    "gather",
    "gather_nd",
    "gelu",
    "greater",
    "greater_equal",
    "group_norm",
    "hann_window",
    "irfft",
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
    "masked_scatter",
    "matmul",
    "max",
    "max_pool2d",
    "mean",
    "min",
    "mod",
    "mul",
    "negate",
    "nonzero",
    "not_equal",
    "outer",
    "pad",
    "permute",
    "pow",
    "print",
    "prod",
    "qmatmul",
    "random",
    "range",
    "rebind",
    "reduction",
    "relu",
    "repeat_interleave",
    "reshape",
    "resize",
    "resize_bicubic",
    "resize_linear",
    "resize_nearest",
    "rms_norm",
    "roi_align",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd",
    "scatter_nd_add",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_mul",
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

__all__.sort()
# the op names of max.graph.ops (its submodules are names too, but not ops)
_OPS = [n for n in __all__ if n not in ("complex", "elementwise", "random", "reduction")]

_value_compat._OPS.append(sys.modules[__name__])  # TensorValue's PyTorch-style methods
