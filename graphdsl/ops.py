"""The op catalogue: each function builds one node; its docstring states the type rule.

Operands may be Symbols, Python scalars (ambiguous literals) or numpy arrays (constants).
Promotion follows the graph's policy and is decided when the node is built; the
``implicit_cast`` pass later makes every conversion an explicit ``cast`` node.

>>> import graphdsl as gd
>>> g = gd.Graph("ops", input_types=[gd.TensorType(gd.int16, (3,))])
>>> x, = g.inputs
>>> gd.ops.div(x, 2).type, gd.ops.sqrt(x).type, gd.ops.less(x, 1).type
(TensorType(float32[3]), TensorType(float32[3]), TensorType(bool[3]))
"""

from __future__ import annotations

from collections.abc import Sequence

from graphdsl.dtypes import DType, dtype
from graphdsl.graph import Operand, OpTypeError, Symbol, _apply_op

__all__ = [
    "abs",
    "add",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_to",
    "cast",
    "ceil",
    "concat",
    "cos",
    "div",
    "equal",
    "exp",
    "expand_dims",
    "floor",
    "floordiv",
    "greater",
    "greater_equal",
    "implicit_cast",
    "less",
    "less_equal",
    "log",
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
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "sqrt",
    "squeeze",
    "sub",
    "sum",
    "tanh",
    "transpose",
    "where",
]


def add(x: Operand, y: Operand) -> Symbol:
    """x + y. Operands promote under the graph's policy; bool + bool is an error (use logical_or).

    """
    return _apply_op("add", (x, y), {})


def sub(x: Operand, y: Operand) -> Symbol:
    """x - y. Operands promote under the graph's policy; integers wrap."""
    return _apply_op("sub", (x, y), {})


def mul(x: Operand, y: Operand) -> Symbol:
    """x * y. Operands promote under the graph's policy; integers wrap."""
    return _apply_op("mul", (x, y), {})


def div(x: Operand, y: Operand) -> Symbol:
    """True division x / y. Operands promote; an integer or bool result type becomes the policy's
    default float (float32 in 'default').
    """
    return _apply_op("div", (x, y), {})


def floordiv(x: Operand, y: Operand) -> Symbol:
    """Floor division x // y (numpy's: rounds toward -inf). Operands promote; integer division by
    zero gives 0.
    """
    return _apply_op("floordiv", (x, y), {})


def mod(x: Operand, y: Operand) -> Symbol:
    """x % y with the sign of the divisor (numpy's). Operands promote; integer modulo by zero gives
    0.
    """
    return _apply_op("mod", (x, y), {})


def pow(x: Operand, y: Operand) -> Symbol:
    """x ** y. Operands promote; integer powers are exact and wrap, a negative integer exponent
    truncates 1/x**n toward zero.
    """
    return _apply_op("pow", (x, y), {})


def maximum(x: Operand, y: Operand) -> Symbol:
    """Elementwise maximum; operands promote; NaN propagates."""
    return _apply_op("maximum", (x, y), {})


def minimum(x: Operand, y: Operand) -> Symbol:
    """Elementwise minimum; operands promote; NaN propagates."""
    return _apply_op("minimum", (x, y), {})


def equal(x: Operand, y: Operand) -> Symbol:
    """x == y. Operands promote; the result is bool."""
    return _apply_op("equal", (x, y), {})


def not_equal(x: Operand, y: Operand) -> Symbol:
    """x != y. Operands promote; the result is bool."""
    return _apply_op("not_equal", (x, y), {})


def less(x: Operand, y: Operand) -> Symbol:
    """x < y. Operands promote; the result is bool."""
    return _apply_op("less", (x, y), {})


def less_equal(x: Operand, y: Operand) -> Symbol:
    """x <= y. Operands promote; the result is bool."""
    return _apply_op("less_equal", (x, y), {})


def greater(x: Operand, y: Operand) -> Symbol:
    """x > y. Operands promote; the result is bool."""
    return _apply_op("greater", (x, y), {})


def greater_equal(x: Operand, y: Operand) -> Symbol:
    """x >= y. Operands promote; the result is bool."""
    return _apply_op("greater_equal", (x, y), {})


def logical_and(x: Operand, y: Operand) -> Symbol:
    """Logical and by truth value: operands are cast to bool (x != 0); the result is bool."""
    return _apply_op("logical_and", (x, y), {})


def logical_or(x: Operand, y: Operand) -> Symbol:
    """Logical or by truth value: operands are cast to bool; the result is bool."""
    return _apply_op("logical_or", (x, y), {})


def logical_xor(x: Operand, y: Operand) -> Symbol:
    """Logical xor by truth value: operands are cast to bool; the result is bool."""
    return _apply_op("logical_xor", (x, y), {})


def bitwise_and(x: Operand, y: Operand) -> Symbol:
    """x & y for bool and integers; operands promote."""
    return _apply_op("bitwise_and", (x, y), {})


def bitwise_or(x: Operand, y: Operand) -> Symbol:
    """x | y for bool and integers; operands promote."""
    return _apply_op("bitwise_or", (x, y), {})


def bitwise_xor(x: Operand, y: Operand) -> Symbol:
    """x ^ y for bool and integers; operands promote."""
    return _apply_op("bitwise_xor", (x, y), {})


def logical_not(x: Operand) -> Symbol:
    """Logical not by truth value: the operand is cast to bool; the result is bool."""
    return _apply_op("logical_not", (x,), {})


def bitwise_not(x: Operand) -> Symbol:
    """~x for bool and integers; keeps the dtype."""
    return _apply_op("bitwise_not", (x,), {})


def negative(x: Operand) -> Symbol:
    """-x; keeps the dtype (unsigned integers wrap)."""
    return _apply_op("negative", (x,), {})


def abs(x: Operand) -> Symbol:
    """|x|; keeps the dtype (complex gives its real dtype; abs(int8 -128) wraps to -128)."""
    return _apply_op("abs", (x,), {})


def sign(x: Operand) -> Symbol:
    """Sign of x (-1, 0, 1); keeps the dtype."""
    return _apply_op("sign", (x,), {})


def exp(x: Operand) -> Symbol:
    """e**x. Floating only: integers and bool compute in the policy's default float."""
    return _apply_op("exp", (x,), {})


def log(x: Operand) -> Symbol:
    """Natural log. Floating only: integers and bool compute in the policy's default float."""
    return _apply_op("log", (x,), {})


def sqrt(x: Operand) -> Symbol:
    """Square root. Floating only: integers and bool compute in the policy's default float."""
    return _apply_op("sqrt", (x,), {})


def sin(x: Operand) -> Symbol:
    """Sine. Floating only: integers and bool compute in the policy's default float."""
    return _apply_op("sin", (x,), {})


def cos(x: Operand) -> Symbol:
    """Cosine. Floating only: integers and bool compute in the policy's default float."""
    return _apply_op("cos", (x,), {})


def tanh(x: Operand) -> Symbol:
    """Hyperbolic tangent. Floating only: integers and bool compute in the policy's default float.

    """
    return _apply_op("tanh", (x,), {})


def sigmoid(x: Operand) -> Symbol:
    """1 / (1 + e**-x). Floating only: integers and bool compute in the policy's default float."""
    return _apply_op("sigmoid", (x,), {})


def relu(x: Operand) -> Symbol:
    """max(x, 0) for real dtypes, keeping the dtype: NaN passes, -0.0 becomes 0.0 (as in
    ONNX's reference implementation of Relu)."""
    return _apply_op("relu", (x,), {})


def floor(x: Operand) -> Symbol:
    """Round toward -inf; keeps the dtype (integers are returned unchanged, as in JAX)."""
    return _apply_op("floor", (x,), {})


def ceil(x: Operand) -> Symbol:
    """Round toward +inf; keeps the dtype (integers are returned unchanged)."""
    return _apply_op("ceil", (x,), {})


def round(x: Operand) -> Symbol:
    """Round half to even; keeps the dtype (integers are returned unchanged)."""
    return _apply_op("round", (x,), {})


def matmul(x: Operand, y: Operand) -> Symbol:
    """Matrix product (numpy's rules for 1-D and batched operands); operands promote.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, ("batch", 4))})
    >>> (g.inputs[0] @ g.constant(np.ones((4, 3), np.float32))).type
    TensorType(float32[batch, 3])
    """
    return _apply_op("matmul", (x, y), {})


def _reduce(op: str, x: Operand, axis: int | Sequence[int] | None, keepdims: bool) -> Symbol:
    ax = tuple(axis) if isinstance(axis, list) else axis
    return _apply_op(op, (x,), {"axis": ax, "keepdims": bool(keepdims)})


def sum(x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
    """Sum over ``axis`` (all axes when None). Keeps the dtype (integers wrap); bool sums in
    the policy's default int; float16/bfloat16 accumulate in float32 and round once."""
    return _reduce("sum", x, axis, keepdims)


def prod(x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
    """Product over ``axis``. Keeps the dtype (integers wrap); bool in the default int."""
    return _reduce("prod", x, axis, keepdims)


def max(x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
    """Maximum over ``axis``; keeps the dtype; NaN propagates."""
    return _reduce("max", x, axis, keepdims)


def min(x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
    """Minimum over ``axis``; keeps the dtype; NaN propagates."""
    return _reduce("min", x, axis, keepdims)


def mean(x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Symbol:
    """Mean over ``axis``. Floating dtypes are kept; integers and bool give the policy's
    default float."""
    return _reduce("mean", x, axis, keepdims)


def reshape(x: Operand, shape: Sequence[int | str]) -> Symbol:
    """Reshape (one dimension may be -1; symbolic names are allowed). Keeps the dtype."""
    return _apply_op("reshape", (x,), {"shape": tuple(shape)})


def transpose(x: Operand, perm: Sequence[int] | None = None) -> Symbol:
    """Permute axes (reverse them when ``perm`` is None). Keeps the dtype."""
    return _apply_op("transpose", (x,), {"perm": None if perm is None else tuple(perm)})


def broadcast_to(x: Operand, shape: Sequence[int | str]) -> Symbol:
    """Broadcast to ``shape`` (numpy's rules). Keeps the dtype."""
    return _apply_op("broadcast_to", (x,), {"shape": tuple(shape)})


def concat(values: Sequence[Operand], axis: int = 0) -> Symbol:
    """Join values along ``axis``; their dtypes promote together."""
    return _apply_op("concat", tuple(values), {"axis": axis})


def expand_dims(x: Operand, axis: int | Sequence[int]) -> Symbol:
    """Insert size-1 axes at ``axis`` (positions in the result). Keeps the dtype."""
    return _apply_op("expand_dims", (x,), {"axis": axis})


def squeeze(x: Operand, axis: int | Sequence[int] | None = None) -> Symbol:
    """Remove size-1 axes (all of them when ``axis`` is None). Keeps the dtype."""
    return _apply_op("squeeze", (x,), {"axis": axis})


def where(cond: Operand, x: Operand, y: Operand) -> Symbol:
    """``x`` where ``cond`` else ``y``. ``cond`` is cast to bool by truth value; the two
    branches promote together; shapes broadcast."""
    return _apply_op("where", (cond, x, y), {})


def cast(x: Operand, to: DType | str) -> Symbol:
    """Explicit conversion to ``to`` (never ambiguous). Integers narrow by wrapping; floats
    to integers truncate toward zero and saturate (NaN -> 0); to bool is ``x != 0``."""
    return _apply_op("cast", (x,), {"to": dtype(to)})


def softmax(x: Operand, axis: int = -1) -> Symbol:
    """exp(x - max) / sum(exp(x - max)) along ``axis``. Floating only: integers and bool
    compute in the policy's default float."""
    return _apply_op("softmax", (x,), {"axis": axis})


def implicit_cast(lhs: Symbol, rhs: Symbol) -> tuple[Symbol, Symbol]:
    """MAX's ``implicit_cast``: both symbols cast to ``implicit_cast_type`` of their dtypes.

    A symbol already of that dtype is returned unchanged.

    >>> import graphdsl as gd
    >>> g = gd.Graph("ic", input_types=[gd.int16, gd.float32])
    >>> a, b = gd.ops.implicit_cast(*g.inputs)
    >>> a.dtype, b is g.inputs[1]
    (DType.float32, True)
    """
    if not isinstance(lhs, Symbol) or not isinstance(rhs, Symbol):
        raise OpTypeError("implicit_cast takes two Symbols")
    to = lhs.graph.policy.promote_types(lhs.dtype, rhs.dtype)
    a = lhs if lhs.dtype is to and not lhs.ambiguous else cast(lhs, to)
    b = rhs if rhs.dtype is to and not rhs.ambiguous else cast(rhs, to)
    return a, b
