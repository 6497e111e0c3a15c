"""MAX's elementwise ops, reductions and selections over graphdsl's (``graphdsl.max.ops``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import graphdsl.ops as gd
from graphdsl.dtypes import DType as CoreDType
from graphdsl.graph import Symbol
from graphdsl.max._common import (
    TensorValueLike,
    _arg,
    _axis,
    _axis_words,
    _rank,
)
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._errors import as_max, max_words
from graphdsl.max._value import METHOD_OPS, TensorValue, maxop
from graphdsl.max._value import tv as _tv
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError

# ---------------------------------------------------------------------------- elementwise


def _unary(name: str, fn: Callable[[Any], Symbol], doc: str) -> Callable[[TensorValueLike], Any]:
    def op(x: TensorValueLike) -> TensorValue:
        return _tv(fn(_arg(x)))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{doc} (graphdsl's ``{fn.__name__}``)."
    return maxop(name)(op)


def _binary(
    name: str, fn: Callable[[Any, Any], Symbol], doc: str
) -> Callable[[TensorValueLike, TensorValueLike], Any]:
    def op(lhs: TensorValueLike, rhs: TensorValueLike) -> TensorValue:
        return _tv(fn(_arg(lhs), _arg(rhs)))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{doc} (graphdsl's ``{fn.__name__}``)."
    return maxop(name)(op)


def _logical(fn: Callable[..., Symbol]) -> Callable[..., Symbol]:
    """``fn`` on bool tensors only, as MAX's logical ops (a Python literal may be an int)."""

    def checked(*args: Any) -> Symbol:
        for a in args:
            if isinstance(a, Symbol) and a.dtype is not CoreDType.bool:
                raise OpTypeError(
                    f"{fn.__name__}: MAX's logical ops take bool tensors, got {a.type}; "
                    "compare first (x != 0) or cast to bool"
                )
        return fn(*args)

    checked.__name__ = fn.__name__
    return checked


abs = _unary("abs", gd.abs, "Computes the absolute value of a tensor element-wise")
acos = _unary("acos", gd.acos, "Computes the arccosine of a tensor element-wise")
atanh = _unary("atanh", gd.atanh, "Computes the inverse hyperbolic tangent element-wise")
ceil = _unary("ceil", gd.ceil, "Computes the ceiling of a tensor element-wise")
cos = _unary("cos", gd.cos, "Computes the cosine of a tensor element-wise")
erf = _unary("erf", gd.erf, "Computes the error function element-wise")
exp = _unary("exp", gd.exp, "Computes the exponential element-wise")
floor = _unary("floor", gd.floor, "Computes the floor of a tensor element-wise")
is_inf = _unary("is_inf", gd.is_inf, "Checks for infinite values element-wise")
is_nan = _unary("is_nan", gd.is_nan, "Checks for NaN values element-wise")
log = _unary("log", gd.log, "Computes the natural logarithm element-wise")
log1p = _unary("log1p", gd.log1p, "Computes log(1 + x) element-wise")
logical_not = _unary("logical_not", _logical(gd.logical_not), "Computes logical NOT element-wise")
negate = _unary("negate", gd.negative, "Negates a tensor element-wise")
relu = _unary("relu", gd.relu, "Applies the ReLU activation element-wise")
round = _unary("round", gd.round, "Rounds to the nearest integer, ties to even, element-wise")
rsqrt = _unary("rsqrt", gd.rsqrt, "Computes 1 / sqrt(x) element-wise")
sigmoid = _unary("sigmoid", gd.sigmoid, "Applies the sigmoid function element-wise")
silu = _unary("silu", gd.silu, "Applies the SiLU (Swish) activation element-wise")
sin = _unary("sin", gd.sin, "Computes the sine of a tensor element-wise")
sqrt = _unary("sqrt", gd.sqrt, "Computes the square root element-wise")
tanh = _unary("tanh", gd.tanh, "Computes the hyperbolic tangent element-wise")
trunc = _unary("trunc", gd.trunc, "Truncates toward zero element-wise")

add = _binary("add", gd.add, "Adds two tensors element-wise")
sub = _binary("sub", gd.sub, "Subtracts two tensors element-wise")
mul = _binary("mul", gd.mul, "Multiplies two tensors element-wise")
div = _binary("div", gd.div, "Divides two tensors element-wise")
floor_div = _binary("floor_div", gd.floordiv, "Floor-divides two tensors element-wise")
mod = _binary("mod", gd.mod, "Computes the remainder (Python's %) element-wise")
pow = _binary("pow", gd.pow, "Raises lhs to the power rhs element-wise")
equal = _binary("equal", gd.equal, "Compares two tensors for equality element-wise")
not_equal = _binary("not_equal", gd.not_equal, "Compares two tensors for inequality")
greater = _binary("greater", gd.greater, "Computes lhs > rhs element-wise")
greater_equal = _binary("greater_equal", gd.greater_equal, "Computes lhs >= rhs element-wise")
logical_and = _binary("logical_and", _logical(gd.logical_and), "Computes logical AND element-wise")
logical_or = _binary("logical_or", _logical(gd.logical_or), "Computes logical OR element-wise")
logical_xor = _binary("logical_xor", _logical(gd.logical_xor), "Computes logical XOR element-wise")
bitwise_and = _binary("bitwise_and", gd.bitwise_and, "Computes lhs & rhs (bool or integers)")
bitwise_or = _binary("bitwise_or", gd.bitwise_or, "Computes lhs | rhs (bool or integers)")
bitwise_xor = _binary("bitwise_xor", gd.bitwise_xor, "Computes lhs ^ rhs (bool or integers)")
bitwise_not = _unary("bitwise_not", gd.bitwise_not, "Computes ~x (bool or integers)")
matmul = _binary("matmul", gd.matmul, "Computes the matrix product (batched, broadcast)")


def _outer(lhs: Any, rhs: Any) -> Symbol:
    """graphdsl's ``outer``, with MAX's words for operands that are not vectors."""
    vectors = all(_rank(a) in (None, 1) for a in (lhs, rhs))
    with max_words(None if vectors else "outer expected 1d-tensors as inputs"):
        return gd.outer(lhs, rhs)


_outer.__name__ = "outer"
outer = _binary("outer", _outer, "Computes the outer product of two vectors")


@maxop("gelu")
def gelu(x: TensorValue, approximate: str = "none") -> TensorValue:
    """Applies GELU: ``approximate`` "none" (erf), "tanh" or "quick" (graphdsl's ``gelu``)."""
    return _tv(gd.gelu(_arg(x), approximate))


@maxop("softmax")
def softmax(value: TensorValueLike, axis: int = -1) -> TensorValue:
    """Computes the softmax of a tensor along an axis (graphdsl's ``softmax``)."""
    return _tv(gd.softmax(_arg(value), axis))


@maxop("logsoftmax")
def logsoftmax(value: TensorValueLike, axis: int = -1) -> TensorValue:
    """Computes the log of the softmax along an axis (graphdsl's ``logsoftmax``)."""
    return _tv(gd.logsoftmax(_arg(value), axis))


@maxop("where")
def where(condition: TensorValueLike, x: TensorValueLike, y: TensorValueLike) -> TensorValue:
    """Selects from ``x`` where ``condition`` holds, else from ``y`` (graphdsl's ``where``);
    the condition is a bool tensor, as MAX asks."""
    cond = _arg(condition)
    if isinstance(cond, Symbol) and cond.dtype is not CoreDType.bool:
        raise OpTypeError(
            "Expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{cond.dtype.name}; compare first (x != 0)"
        )
    return _tv(gd.where(_arg(condition), _arg(x), _arg(y)))


@maxop("cast")
def cast(x: TensorValueLike, dtype: DType) -> TensorValue:
    """Casts to ``dtype`` (graphdsl's ``cast``: integers wrap, floats to integers truncate
    and saturate)."""
    return _tv(gd.cast(_arg(x), dtype_to_core(dtype)))


# ---------------------------------------------------------------------------- reductions

_INVALID_AXIS = "Invalid axis={axis} for input x.rank={rank}"  # MAX's words


@maxop("sum")
def sum(x: TensorValueLike, axis: int = -1) -> TensorValue:
    """Sums along ``axis``, which stays with size 1 (graphdsl's ``sum`` with keepdims)."""
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.sum(_arg(x), _axis(axis, "sum"), keepdims=True))


@maxop("mean")
def mean(x: TensorValueLike, axis: int = -1) -> TensorValue:
    """Averages along ``axis``, which stays with size 1 (graphdsl's ``mean`` with keepdims)."""
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.mean(_arg(x), _axis(axis, "mean"), keepdims=True))


@maxop("prod")
def prod(x: TensorValueLike, axis: int = -1) -> TensorValue:
    """Multiplies along ``axis``, which stays with size 1 (graphdsl's ``prod``)."""
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.prod(_arg(x), _axis(axis, "prod"), keepdims=True))


@maxop("argmax")
def argmax(x: TensorValueLike, axis: int = -1) -> TensorValue:
    """Indices (int64) of the maxima along ``axis``, which stays with size 1 (first of
    ties; graphdsl's ``argmax``)."""
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.argmax(_arg(x), _axis(axis, "argmax"), keepdims=True))


@maxop("argmin")
def argmin(x: TensorValueLike, axis: int = -1) -> TensorValue:
    """Indices (int64) of the minima along ``axis``, which stays with size 1."""
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.argmin(_arg(x), _axis(axis, "argmin"), keepdims=True))


@maxop("max")
def max(
    x: TensorValueLike, y: TensorValueLike | None = None, /, axis: int | None = None
) -> TensorValue:
    """``max(x, y)``: the elementwise maximum (graphdsl's ``maximum``); ``max(x, axis=a)``:
    the maximum along ``a`` (default -1), which stays with size 1."""
    if y is not None and axis is not None:
        raise ValueError("Axis not allowed for elementwise max.")
    if y is not None:
        return _tv(gd.maximum(_arg(x), _arg(y)))
    axis = -1 if axis is None else axis
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.max(_arg(x), _axis(axis, "max"), keepdims=True))


@maxop("min")
def min(
    x: TensorValueLike, y: TensorValueLike | None = None, /, axis: int | None = None
) -> TensorValue:
    """``min(x, y)``: the elementwise minimum (graphdsl's ``minimum``); ``min(x, axis=a)``:
    the minimum along ``a`` (default -1), which stays with size 1."""
    if y is not None and axis is not None:
        raise ValueError("Axis not allowed for elementwise min.")
    if y is not None:
        return _tv(gd.minimum(_arg(x), _arg(y)))
    axis = -1 if axis is None else axis
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.min(_arg(x), _axis(axis, "min"), keepdims=True))


@maxop("cumsum")
def cumsum(
    x: TensorValueLike, axis: int = -1, exclusive: bool = False, reverse: bool = False
) -> TensorValue:
    """Cumulative sum along ``axis`` (graphdsl's ``cumsum``)."""
    with max_words(_axis_words(x, axis, _INVALID_AXIS)):
        return _tv(gd.cumsum(_arg(x), axis, exclusive, reverse))


@maxop("argsort")
def argsort(x: TensorValueLike, ascending: bool = True) -> TensorValue:
    """Indices (int64) that sort the vector ``x`` (stable; graphdsl's ``argsort``); MAX's
    takes rank 1 only."""
    value = _arg(x)
    if isinstance(value, Symbol) and value.rank != 1:
        raise ShapeError(
            f"argsort only implemented for input tensors of rank 1 (MAX's rule), got "
            f"{value.type}; flatten or reshape first"
        )
    return _tv(gd.argsort(_arg(x), ascending))


@maxop("top_k")
def top_k(input: TensorValueLike, k: int, axis: int = -1) -> tuple[TensorValue, TensorValue]:
    """The ``k`` largest values along ``axis`` and their indices (graphdsl's ``top_k``)."""
    _k_at_least_0(input, k, axis)
    values, indices = gd.top_k(_arg(input), k, axis)
    return _tv(values), _tv(indices)


def _k_at_least_0(input: Any, k: object, axis: int) -> None:
    """A negative k makes a negative dimension, which MAX refuses with a TypeError."""
    if isinstance(k, int) and k < 0:
        value = _arg(input)
        shape = list(value.shape) if isinstance(value, Symbol) else []
        if _axis_words(value, axis, "") is None and shape:
            shape[axis] = k
        raise as_max(
            ShapeError(
                f"Static tensor dimensions must be non-negative; got shape={shape}: k={k} "
                "must be >= 0 (it is the result's size)"
            ),
            TypeError,
        )


METHOD_OPS.update(argmax=argmax, max=max, min=min, mean=mean)
