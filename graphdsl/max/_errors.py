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

from collections.abc import Iterator
from contextlib import contextmanager

from graphdsl.dtypes import DTypeError
from graphdsl.graph import GraphError
from graphdsl.literals import LiteralError
from graphdsl.policies import PromotionError
from graphdsl.shapes import ShapeError
from graphdsl.types import IndexRangeError, OpTypeError

__all__ = ["DeviceMismatchError", "UnsupportedError", "as_max", "max_words", "raising"]


class UnsupportedError(NotImplementedError):
    """A MAX feature (an op, an argument value, a method) that graphdsl does not implement."""


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
        words = words.rstrip(".")
        if e.args and isinstance(e.args[0], str) and not e.args[0].startswith(words):
            e.args = (f"{words}; {e.args[0]}", *e.args[1:])
        raise


@contextmanager
def raising(op: str) -> Iterator[None]:
    """Translate graphdsl's errors raised in ``op`` to MAX's builtin exception types."""
    try:
        yield
    except _GRAPHDSL as e:
        raise as_max(e, _builtin_for(op, e)) from None
