"""``max.graph.ops.elementwise``: MAX's elementwise ops under their submodule's names (the
same functions as in ``graphdsl.max.ops``; ``custom`` is a Mojo kernel and raises)."""

from __future__ import annotations

from graphdsl.max._constant import assert_same_device
from graphdsl.max._elementwise import (
    abs,
    acos,
    add,
    atanh,
    cast,
    ceil,
    cos,
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
    max,
    min,
    mod,
    mul,
    negate,
    not_equal,
    pow,
    relu,
    round,
    rsqrt,
    sigmoid,
    silu,
    sin,
    softmax,
    sqrt,
    sub,
    tanh,
    trunc,
)

__all__ = [
    "abs", "acos", "add", "assert_same_device", "atanh", "cast", "ceil", "cos", "div", "equal",
    "erf", "exp", "floor", "floor_div", "gelu", "greater", "greater_equal", "is_inf", "is_nan",
    "log", "log1p", "logical_and", "logical_not", "logical_or", "logical_xor", "logsoftmax",
    "max", "min", "mod", "mul", "negate", "not_equal", "pow", "relu", "round", "rsqrt",
    "sigmoid", "silu", "sin", "softmax", "sqrt", "sub", "tanh", "trunc",
]  # fmt: skip
