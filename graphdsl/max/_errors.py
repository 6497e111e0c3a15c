"""MAX's exception types for graphdsl's errors: where max.graph raises a builtin exception
(``IndexError`` for an axis out of range of ``transpose``, ``ValueError`` for operands on
different devices or of dtypes that do not promote), graphdsl.max raises graphdsl's error
as a subclass of that builtin too, its message unchanged; so ``pytest.raises(IndexError)``
written for MAX passes, and so does ``pytest.raises(gd.ShapeError)``.

>>> from graphdsl.shapes import ShapeError
>>> e = as_max(ShapeError("axis 2 is out of range"), IndexError)
>>> type(e).__name__, isinstance(e, IndexError), isinstance(e, ShapeError), str(e)
('ShapeError', True, True, 'axis 2 is out of range')
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from graphdsl.dtypes import DType, DTypeError, dtype
from graphdsl.graph import GraphError
from graphdsl.literals import LiteralError
from graphdsl.policies import PromotionError
from graphdsl.shapes import ShapeError
from graphdsl.types import IndexRangeError, OpTypeError

__all__ = [
    "DeviceMismatchError",
    "UnsupportedError",
    "as_max",
    "max_words",
    "raising",
    "refuse",
]


class UnsupportedError(NotImplementedError):
    """A MAX feature (an op, an argument value, a method) that graphdsl does not implement:
    a ``NotImplementedError``, whose message says what to do instead.

    >>> from graphdsl.max import DType, UnsupportedError, Weight
    >>> try:
    ...     Weight("w", DType.uint8, [4], quantization_encoding="q4_k")
    ... except UnsupportedError as e:
    ...     print(isinstance(e, NotImplementedError), e)
    True Weight 'w': quantization_encoding 'q4_k' is not supported by graphdsl (of MAX's ...
    """


class DeviceMismatchError(ValueError):
    """Operands of one op on different devices (MAX refuses them with a ValueError)."""


_COMBINED: dict[tuple[type[Exception], type[Exception]], type[Exception]] = {}


def _combined(cls: type[Exception], builtin: type[Exception]) -> type[Exception]:
    """``cls`` as a subclass of ``builtin`` too, under its own name (made once per pair)."""
    found = _COMBINED.get((cls, builtin))
    if found is None:
        found = _COMBINED[(cls, builtin)] = type(
            cls.__name__, (cls, builtin), {"__module__": cls.__module__}
        )
    return found


def as_max(exc: Exception, builtin: type[Exception]) -> Exception:
    """``exc`` (a graphdsl error) as an instance of ``builtin`` too, same class name and
    message; unchanged when it already is one."""
    if isinstance(exc, builtin):
        return exc
    new = _combined(type(exc), builtin)(*exc.args)
    new.__traceback__ = exc.__traceback__
    return new


# which builtin max.graph 26 raises for an axis out of range, per op (the recorded
# "errors" cases); the others raise ValueError
_AXIS_INDEX_ERROR = frozenset(
    {"transpose", "permute", "squeeze", "concat", "stack", "split", "chunk", "gather", "flatten"}
)
_GRAPHDSL = (
    ShapeError,
    OpTypeError,
    PromotionError,
    LiteralError,
    DTypeError,
    GraphError,
    IndexRangeError,
)


def _builtin_for(op: str, exc: Exception) -> type[Exception]:
    if isinstance(exc, ShapeError) and "out of range" in str(exc) and op in _AXIS_INDEX_ERROR:
        return IndexError
    if isinstance(exc, OpTypeError) and op in ("cond", "while_loop") and "keeps" in str(exc):
        return TypeError  # MAX: "Results don't match expected types"
    if isinstance(exc, IndexRangeError) and op != "slice_tensor":
        return IndexError  # (already one) an index out of range of gather and the like
    return ValueError


@contextmanager
def max_words(words: str | None) -> Iterator[None]:
    """graphdsl's error raised inside with MAX's ``words`` first: the first line of what
    max.graph says for that mistake (tests/data/max_graph_api.json), so a ``match=`` written
    for MAX passes, and graphdsl's own message after it. The caller passes ``words`` only
    for the arguments that are that mistake (None: the message is left as it is).

    >>> from graphdsl.shapes import ShapeError
    >>> try:
    ...     with max_words("Invalid axis=5 for input x.rank=2"):
    ...         raise ShapeError("sum: axis 5 is out of range for a value of rank 2")
    ... except ShapeError as e:
    ...     print(e)
    Invalid axis=5 for input x.rank=2; sum: axis 5 is out of range for a value of rank 2
    """
    if words is None:
        yield
        return
    try:
        yield
    except _GRAPHDSL as e:
        if e.args and isinstance(e.args[0], str) and not e.args[0].startswith(words):
            sep = " " if words.endswith(".") else "; "
            e.args = (f"{words}{sep}{e.args[0]}", *e.args[1:])
        raise


def refuse(words: str, why: str, error: type[Exception] = OpTypeError) -> NoReturn:
    """Raise MAX's refusal of arguments graphdsl's own op would accept: ``words`` (max.graph's
    first line for the mistake) then graphdsl's explanation ``why``, as graphdsl's ``error``
    (:func:`raising` makes it the builtin MAX raises).

    >>> try:
    ...     refuse("All inputs to stack must have the same dtype.", "got int32 and float32")
    ... except OpTypeError as e:
    ...     print(e)
    All inputs to stack must have the same dtype. got int32 and float32
    """
    sep = " " if words.endswith(".") else "; "
    raise error(f"{words}{sep}{why}")


_MLIR_NAMES = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16"}


def _mlir_name(d: DType) -> str:
    """MAX's (MLIR's) name of a dtype in its messages: si32, ui8, f32, bf16."""
    if d.is_float:
        return _MLIR_NAMES.get(d.name, d.name.replace("float", "f").replace("_", ""))
    return ("ui" if d.name.startswith("uint") else "si") + str(d.bits)


def unsafe_cast_words(a: DType, b: DType) -> str | None:
    """max.graph's words when two dtypes do not promote (None for bools and complex):
    it takes the float of the wider width (the float itself where it is as wide as the
    integer), or the signed integer of the wider width, and refuses the cast of the other
    operand into it (every recorded cell of tests/data/max_graph_promotion.json agrees).

    >>> import graphdsl as gd
    >>> unsafe_cast_words(gd.int32, gd.float16).split(". ")[0]
    'Failed to resolve valid dtype: Unsafe cast from si32 to f32'
    """
    if not all(d.is_float or d.is_integer for d in (a, b)):
        return None
    if a.is_float and b.is_float:
        frm, to = (a, b) if a.name == "float16" else (b, a)
    elif a.is_float or b.is_float:
        f, i = (a, b) if a.is_float else (b, a)
        frm, to = i, f if f.bits >= i.bits else dtype(f"float{i.bits}")
    else:
        u, si = (a, b) if a.name.startswith("uint") else (b, a)
        frm, to = u, dtype(f"int{max(u.bits, si.bits)}")
    return (
        f"Failed to resolve valid dtype: Unsafe cast from {_mlir_name(frm)} to {_mlir_name(to)}."
        " Insert an explicit cast op if this conversion is wanted"
    )


def _promotion_words(e: PromotionError) -> str | None:
    """MAX's words for a max-graph PromotionError of two dtypes (graphdsl names them)."""
    if e.policy != "max-graph":
        return None
    try:
        a, b = (dtype(re.match(r"[a-z0-9_]+", t).group(0)) for t in (e.lhs, e.rhs))  # type: ignore[union-attr]
    except (AttributeError, DTypeError, TypeError, ValueError):
        return None
    weak = [t.endswith("?") for t in (e.lhs, e.rhs)]  # a Python literal's type
    if weak[0] != weak[1]:
        literal, target = (a, b) if weak[0] else (b, a)
        if literal.is_float:
            return f"Unsafe cast: Can't promote python float to dtype(DType.{target.name})."
        return None
    return unsafe_cast_words(a, b)


@contextmanager
def raising(op: str) -> Iterator[None]:
    """Translate graphdsl's errors raised in ``op`` to MAX's builtin exception types (a
    max-graph PromotionError with max.graph's "Unsafe cast" words first)."""
    try:
        yield
    except _GRAPHDSL as e:
        if isinstance(e, PromotionError) and e.args and "Unsafe cast" not in str(e.args[0]):
            words = _promotion_words(e)
            if words is not None:
                e.args = (f"{words}; {e.args[0]}", *e.args[1:])
        raise as_max(e, _builtin_for(op, e)) from None
