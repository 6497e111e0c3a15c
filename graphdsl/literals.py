"""Literal fitting: whether a Python scalar can become a constant of a dtype, and why not.

>>> import graphdsl as gd
>>> literal_problem(1000, gd.int8, exact=False)
'does not fit int8 (range -128..127)'
>>> literal_problem(16777217, gd.float32, exact=True)
'is not exactly representable in float32'
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from graphdsl.dtypes import DType, Kind

__all__ = [
    "LiteralError",
    "SubByteLiteralError",
    "literal_error",
    "literal_fix",
    "literal_problem",
    "max_graph_words",
    "ranged_literal_problem",
]


class LiteralError(ValueError):
    """A Python literal that cannot be represented in the dtype it must take.

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.int8})
    >>> g.inputs[0] + 1000
    Traceback (most recent call last):
        ...
    graphdsl.literals.LiteralError: add (at ...): the literal 1000 does not fit int8 (range
    -128..127) (operand types int8[], int32?[], policy 'default'); cast the other operand to a
    wider type than int8, or use a smaller literal
    """


class SubByteLiteralError(LiteralError, TypeError):
    """A literal for a 4- or 6-bit float under max-graph, which max.graph refuses with a
    TypeError (it makes no constants of them); a :class:`LiteralError` too."""


def max_graph_words(value: bool | int | float | complex, target: DType) -> str:
    """max.graph's first line for a literal it refuses to convert to ``target`` (graphdsl's
    explanation follows it in the message).

    >>> import graphdsl as gd
    >>> print(max_graph_words(300, gd.int8))
    Unsafe cast: Can't promote python int with value (300) to dtype(DType.int8). It would lose
    precision.
    """
    if isinstance(value, float):
        return f"Unsafe cast: Can't promote python float to dtype(DType.{target.name})."
    shown = int(value) if isinstance(value, (bool, np.bool_)) else value
    return (
        f"Unsafe cast: Can't promote python int with value ({shown}) to "
        f"dtype(DType.{target.name}). It would lose precision."
    )


def literal_error(
    max_graph: bool, value: bool | int | float | complex, target: DType, text: str
) -> LiteralError:
    """The error for a literal that does not fit ``target``: ``text``, after max.graph's own
    words under the max-graph rule (as the class max.graph raises)."""
    if not max_graph:
        return LiteralError(text)
    if "since it is a sub-byte type" in text:  # (the words are in the problem already)
        return SubByteLiteralError(f"{_SUB_BYTE_WORDS.format(target.name)} ({text})")
    return LiteralError(f"{max_graph_words(value, target)} ({text})")


@functools.lru_cache(maxsize=4096, typed=True)
def literal_problem(value: bool | int | float | complex, target: DType, *, exact: bool) -> str:
    """Why ``value`` cannot be a constant of ``target`` ('' when it can)."""
    if isinstance(value, (bool, np.bool_)):
        return ""
    k = target.kind
    if k is Kind.bool:
        return "" if value in (0, 1) else f"is not a bool ({target.name} holds only 0 and 1)"
    if isinstance(value, complex) and k is not Kind.complex:
        return f"is complex and cannot become {target.name}"
    if k.is_integer:
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return f"is not an integer and cannot become {target.name} exactly"
            value = int(value)
        lo, hi = target.min, target.max
        if not lo <= value <= hi:  # type: ignore[operator]
            return f"does not fit {target.name} (range {lo}..{hi})"
        return ""
    parts = [value.real, value.imag] if isinstance(value, complex) else [value]
    for part in parts:
        if isinstance(part, float) and not math.isfinite(part):
            continue  # inf and nan are values of every float dtype we have
        if target is DType.float8_e8m0fnu and part <= 0:
            return (
                f"is not a value of {target.name}, whose values are the powers of two "
                "2**-127..2**127 (and NaN): it has no zero and no negative values"
            )
        with np.errstate(over="ignore", invalid="ignore"):
            stored = np.array(part, dtype=np.float64).astype(target.np)
        as_float = np.real(stored).astype(np.float64)
        if not np.isfinite(as_float) or abs(part) >= _overflow_edge(target):
            return f"overflows {target.name} (largest finite value {target.max:g})"
        if exact and isinstance(part, int) and int(as_float) != part:
            return f"is not exactly representable in {target.name}"
    return ""


def ranged_literal_problem(
    value: bool | int | float | complex,
    target: DType,
    int_ranges: Mapping[DType, tuple[int | float, int | float]],
) -> str:
    """Why ``value`` cannot become a ``target`` constant under max.graph's rule ('' if it can).

    A Python int (a bool is one: True is 1) fits ``target`` when it lies in
    ``int_ranges[target]`` (into a float dtype that is max.graph's range, not exact
    representability: 2**31 is refused by float32). A Python float fits any floating dtype
    unchecked (it may round to inf) and no other. Dtypes without a range, and complex
    values, follow :func:`literal_problem` with exact integers.

    >>> import graphdsl as gd
    >>> ranges = {gd.float16: (-2048, 2048)}
    >>> ranged_literal_problem(2049, gd.float16, ranges)
    'is outside -2048..2048, the integers max.graph converts to float16'
    >>> ranged_literal_problem(1e300, gd.float16, ranges)
    ''
    >>> ranged_literal_problem(-2048, gd.float16, ranges)
    ''
    """
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    sub_byte = target.kind is Kind.float and target.bits < 8
    if isinstance(value, float):
        if sub_byte:
            return _SUB_BYTE.format(target.name)
        if target.kind is Kind.float:
            return ""
        if target.kind is not Kind.complex:
            return f"is a float and cannot become {target.name} (max.graph refuses it)"
    if isinstance(value, int) and target in int_ranges:
        lo, hi = int_ranges[target]
        if lo <= value <= hi:
            return _SUB_BYTE.format(target.name) if sub_byte else ""
        if target.kind is not Kind.float:
            return f"does not fit {target.name} (range {lo}..{hi})"
        return (
            f"is outside {_number(lo)}..{_number(hi)}, the integers max.graph converts to "
            f"{target.name}"
        )
    return literal_problem(value, target, exact=True)


def _overflow_edge(target: DType) -> float:
    """For the 4- and 6-bit floats, which saturate where others overflow: the magnitude from
    which a value would round past the largest value (that value plus half its spacing
    there; their largest values have odd significands, so the tie rounds up). Others: inf
    (their conversions say it: inf or NaN)."""
    if target.kind is not Kind.float or target.bits >= 8:
        return math.inf
    top = float(target.max)
    return top + 2.0 ** (math.floor(math.log2(top)) - (target.mantissa_bits - 1)) / 2


_SUB_BYTE_WORDS = "Cannot create a constant of type 'DType.{0}' since it is a sub-byte type."
# max.graph's words, then why
_SUB_BYTE = (
    "cannot become a constant: Cannot create a constant of type 'DType.{0}' since it is a "
    "sub-byte type (max.graph makes no constants of its 4- and 6-bit floats)"
)


def _number(v: int | float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def literal_fix(value: bool | int | float | complex, target: DType) -> str:
    """How to fix a literal that does not fit ``target``."""
    if target.is_integer and isinstance(value, float):
        return "use an integer literal, or cast the other operand to a float dtype"
    if target is DType.float8_e8m0fnu and not isinstance(value, complex) and value <= 0:
        return "use a positive literal, or cast the other operand to a float that holds it"
    return f"cast the other operand to a wider type than {target.name}, or use a smaller literal"
