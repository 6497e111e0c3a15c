"""The op catalogue, one module per family; each function builds one node.

Operands may be Symbols, Python scalars (ambiguous literals) or numpy arrays (constants).
Promotion follows the graph's policy and is decided when the node is built; the
``implicit_cast`` pass later makes every conversion an explicit ``cast`` node.

Families: :mod:`~graphdsl.ops.elementwise` (arithmetic), :mod:`~graphdsl.ops.logic`
(comparisons, logic, bits, ``where``), :mod:`~graphdsl.ops.unary` (math, activations,
rounding), :mod:`~graphdsl.ops.activation` (more activations and transcendental functions),
:mod:`~graphdsl.ops.reduction`, :mod:`~graphdsl.ops.shape`, :mod:`~graphdsl.ops.nn`
(``matmul``, ``softmax``) and :mod:`~graphdsl.ops.cast`. docs/adding-an-op.md says how to
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
    expm1,
    log1p,
    silu,
    sinh,
    tan,
)
from graphdsl.ops.cast import cast, implicit_cast
from graphdsl.ops.elementwise import add, div, floordiv, maximum, minimum, mod, mul, pow, sub
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
from graphdsl.ops.nn import matmul, softmax
from graphdsl.ops.reduction import max, mean, min, prod, sum
from graphdsl.ops.shape import broadcast_to, concat, expand_dims, reshape, squeeze, transpose
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

__all__ = [
    "abs",
    "acos",
    "add",
    "asin",
    "atan",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_to",
    "cast",
    "ceil",
    "clamp",
    "clip",
    "concat",
    "cos",
    "cosh",
    "div",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "floor",
    "floordiv",
    "greater",
    "greater_equal",
    "implicit_cast",
    "is_inf",
    "is_nan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "mul",
    "negative",
    "not_equal",
    "pow",
    "prod",
    "relu",
    "reshape",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "sinh",
    "softmax",
    "sqrt",
    "squeeze",
    "sub",
    "sum",
    "tan",
    "tanh",
    "transpose",
    "trunc",
    "where",
]
