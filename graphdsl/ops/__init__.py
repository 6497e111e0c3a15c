"""The op catalogue, one module per family; each function builds one node.

Operands may be Symbols, Python scalars (ambiguous literals) or numpy arrays (constants).
Promotion follows the graph's policy and is decided when the node is built; the
``implicit_cast`` pass later makes every conversion an explicit ``cast`` node.

Families: :mod:`~graphdsl.ops.elementwise` (arithmetic), :mod:`~graphdsl.ops.logic`
(comparisons, logic, bits, ``where``), :mod:`~graphdsl.ops.unary` (math, activations,
rounding), :mod:`~graphdsl.ops.activation` (more activations and transcendental functions),
:mod:`~graphdsl.ops.reduction`, :mod:`~graphdsl.ops.selection` (argmax, top_k, argsort,
cumsum), :mod:`~graphdsl.ops.shape`, :mod:`~graphdsl.ops.indexing` (gathers, scatters),
:mod:`~graphdsl.ops.slicing` (slices, ranges, band masks), :mod:`~graphdsl.ops.nn`
(``matmul``, ``softmax``), :mod:`~graphdsl.ops.norm` (``layer_norm``, ``rms_norm``,
``group_norm``), :mod:`~graphdsl.ops.vision` (convolution),
:mod:`~graphdsl.ops.pooling` (pooling, ``pad``, ``resize``), :mod:`~graphdsl.ops.layers`
(``linear``, ``batch_norm``, ``adaptive_avg_pool2d``, ``scaled_dot_product_attention``:
PyTorch's names),
:mod:`~graphdsl.ops.quant` (``quantize``, ``dequantize``, ``qmatmul``; the numpy helper
``quantize_weights``) and
:mod:`~graphdsl.ops.cast`. docs/adding-an-op.md says how to
add one.

>>> import graphdsl as gd
>>> g = gd.Graph("ops", input_types=[gd.TensorType(gd.int16, (3,))])
>>> x, = g.inputs
>>> gd.ops.div(x, 2).type, gd.ops.sqrt(x).type, gd.ops.less(x, 1).type
(TensorType(float32[3]), TensorType(float32[3]), TensorType(bool[3]))
"""

from __future__ import annotations

from graphdsl.ops.activation import (
    acos,
    asin,
    atan,
    atanh,
    cosh,
    erf,
    expm1,
    gelu,
    log1p,
    silu,
    sinh,
    tan,
)
from graphdsl.ops.cast import cast, implicit_cast
from graphdsl.ops.control import call, cond, while_loop
from graphdsl.ops.elementwise import (
    add,
    div,
    floordiv,
    maximum,
    minimum,
    mod,
    mul,
    outer,
    pow,
    sub,
)
from graphdsl.ops.indexing import (
    gather,
    gather_nd,
    scatter,
    scatter_add,
    scatter_nd,
    scatter_nd_add,
)
from graphdsl.ops.layers import (
    adaptive_avg_pool2d,
    batch_norm,
    linear,
    scaled_dot_product_attention,
)
from graphdsl.ops.logic import (
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    not_equal,
    where,
)
from graphdsl.ops.nn import logsoftmax, matmul, softmax
from graphdsl.ops.norm import group_norm, layer_norm, rms_norm
from graphdsl.ops.quant import dequantize, qmatmul, quantize, quantize_weights
from graphdsl.ops.reduction import all, any, logsumexp, max, mean, min, prod, std, sum, var
from graphdsl.ops.selection import argmax, argmin, argsort, cumsum, top_k
from graphdsl.ops.shape import (
    broadcast_to,
    chunk,
    concat,
    expand_dims,
    flatten,
    permute,
    repeat_interleave,
    reshape,
    split,
    squeeze,
    stack,
    tile,
    transpose,
    unsqueeze,
)
from graphdsl.ops.slicing import (
    band_part,
    one_hot,
    range,
    slice_tensor,
    tril,
    triu,
)
from graphdsl.ops.unary import (
    abs,
    ceil,
    clamp,
    clip,
    cos,
    exp,
    floor,
    is_inf,
    is_nan,
    log,
    negative,
    relu,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    tanh,
    trunc,
)
from graphdsl.ops.vision import (
    avg_pool2d,
    conv2d,
    conv2d_transpose,
    conv3d,
    max_pool2d,
    pad,
    resize,
)

__all__ = [
    "abs",
    "acos",
    "adaptive_avg_pool2d",
    "add",
    "all",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "asin",
    "atan",
    "atanh",
    "avg_pool2d",
    "band_part",
    "batch_norm",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_to",
    "call",
    "cast",
    "ceil",
    "chunk",
    "clamp",
    "clip",
    "concat",
    "cond",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "cos",
    "cosh",
    "cumsum",
    "dequantize",
    "div",
    "equal",
    "erf",
    "exp",
    "expand_dims",
    "expm1",
    "flatten",
    "floor",
    "floordiv",
    "gather",
    "gather_nd",
    "gelu",
    "greater",
    "greater_equal",
    "group_norm",
    "implicit_cast",
    "is_inf",
    "is_nan",
    "layer_norm",
    "less",
    "less_equal",
    "linear",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsoftmax",
    "logsumexp",
    "matmul",
    "max",
    "max_pool2d",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "mul",
    "negative",
    "not_equal",
    "one_hot",
    "outer",
    "pad",
    "permute",
    "pow",
    "prod",
    "qmatmul",
    "quantize",
    "quantize_weights",
    "range",
    "relu",
    "repeat_interleave",
    "reshape",
    "resize",
    "rms_norm",
    "round",
    "rsqrt",
    "scaled_dot_product_attention",
    "scatter",
    "scatter_add",
    "scatter_nd",
    "scatter_nd_add",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "sinh",
    "slice_tensor",
    "softmax",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "std",
    "sub",
    "sum",
    "tan",
    "tanh",
    "tile",
    "top_k",
    "transpose",
    "tril",
    "triu",
    "trunc",
    "unsqueeze",
    "var",
    "where",
    "while_loop",
]

# MAX's ops that graphdsl.max needed (issue 25): data-dependent sizes, combining scatters,
# bottom_k, rebind, random values, col2im and region-of-interest pooling
from graphdsl.ops.debug import rebind
from graphdsl.ops.dynamic import dim_size, dynamic_range, dynamic_slice, nonzero
from graphdsl.ops.gqa import group_query_attention  # onnxruntime's KV-cache attention (issue 31)
from graphdsl.ops.image import fold, roi_align
from graphdsl.ops.ordering import bottom_k
from graphdsl.ops.random import random_normal, random_uniform
from graphdsl.ops.rotary import rotary_embedding
from graphdsl.ops.scatter_reduce import (
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_nd_max,
    scatter_nd_min,
    scatter_nd_mul,
)

__all__ += [
    "bottom_k",
    "dim_size",
    "dynamic_range",
    "dynamic_slice",
    "fold",
    "group_query_attention",
    "nonzero",
    "random_normal",
    "random_uniform",
    "rebind",
    "roi_align",
    "rotary_embedding",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_mul",
]
