"""Lossy-promotion lint: implicit casts that can lose magnitude or precision."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.graph import Graph, Symbol, register_extension
from graphdsl.passes.implicit_cast import is_lossless

__all__ = ["LossyCast", "LossyCastWarning", "lint_lossy", "warn_node"]


class LossyCastWarning(UserWarning):
    """An implicit conversion that can change values, warned about as the graph is built
    when it is made with ``warn_lossy=True`` (at the user's line).

    >>> import warnings, graphdsl as gd
    >>> g = gd.Graph("g", input_types={"a": gd.int64, "h": gd.float16}, policy="jax",
    ...              warn_lossy=True)
    >>> a, h = g.inputs
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     y = a + h
    >>> caught[0].category.__name__
    'LossyCastWarning'
    >>> print(str(caught[0].message).split(": ", 1)[1])
    operand 0 int64 -> float16 can lose magnitude (int64 reaches 9.22337e+18, float16 only
    65504); cast explicitly (gd.ops.cast) to a dtype that holds both, or choose another
    policy than 'jax'
    """


class LossyCast(NamedTuple):
    """An implicit conversion that can change values, as :func:`lint_lossy` reports it: the
    node, which operand, the dtypes, what can happen and how to avoid it.

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"a": gd.int64, "h": gd.float16}, policy="jax")
    >>> a, h = g.inputs
    >>> g.output(a + h)
    >>> (found,) = gd.passes.lint_lossy(g)
    >>> found.node.op, found.operand, found.src, found.dst
    ('add', 0, DType.int64, DType.float16)
    >>> found.problem
    'can lose magnitude (int64 reaches 9.22337e+18, float16 only 65504)'
    """

    node: Symbol
    operand: int
    src: DType
    dst: DType
    problem: str
    fix: str

    def __str__(self) -> str:
        where = f" at {self.node.loc}" if self.node.loc else ""
        return (
            f"{self.node.op}{where}: operand {self.operand} {self.src.name} -> "
            f"{self.dst.name} {self.problem}; {self.fix}"
        )


def _check(node: Symbol) -> list[LossyCast]:
    out = []
    for k, (arg, want) in enumerate(zip(node.inputs, node.in_dtypes, strict=True)):
        if node.op.startswith("logical_") or (node.op == "where" and k == 0):
            continue  # truth-value conversions are the op's meaning, not a promotion
        if arg.op == "literal":
            v = arg.attrs["value"]
            problem, stored = _literal_loss(v, want)
            if problem:
                fix = f"write {stored:.17g} (what {want.name} holds), or compute in a wider dtype"
                out.append(LossyCast(node, k, arg.dtype, want, problem, fix))
            continue
        if arg.dtype is want or is_lossless(arg.dtype, want):
            continue
        src, dst = arg.dtype, want
        if float(dst.max) < float(src.max) or (src.min < 0 <= dst.min):
            problem = (
                (
                    f"can lose magnitude ({src.name} reaches {src.max:g}, "
                    f"{dst.name} only {dst.max:g})"
                )
                if float(dst.max) < float(src.max)
                else (f"cannot hold the negative values of {src.name}")
            )
        else:
            problem = (
                f"can lose precision ({src.mantissa_bits} significant bits -> {dst.mantissa_bits})"
            )
        out.append(
            LossyCast(
                node,
                k,
                src,
                dst,
                problem,
                f"cast explicitly (gd.ops.cast) to a dtype that holds both, or "
                f"choose another policy than {node.graph.policy.name!r}",
            )
        )
    return out


def _literal_loss(v: object, want: DType) -> tuple[str, float]:
    """An integer literal that ``want`` cannot hold exactly, or a float one that underflows.

    A decimal float literal rounding to a float dtype (0.1 into float32) is not reported:
    Python already rounded it once when it read it, and every float program does this.
    """
    if isinstance(v, bool) or not want.is_inexact or isinstance(v, complex):
        return "", 0.0
    with np.errstate(all="ignore"):
        stored = float(np.asarray(v).astype(want.np).astype(np.float64))
    if isinstance(v, int) and stored != v:
        return f"rounds the integer literal {v} to {stored:.17g}", stored
    if isinstance(v, float) and v != 0 and stored == 0:
        return f"underflows the literal {v!r} to 0", stored
    return "", stored


def lint_lossy(graph: Graph) -> list[LossyCast]:
    """Every implicit conversion in ``graph`` that can lose magnitude or precision.

    >>> import graphdsl as gd
    >>> g = gd.Graph("l", input_types=[gd.int64, gd.float16], policy="jax")
    >>> g.output(g.inputs[0] + g.inputs[1])
    >>> for w in gd.passes.lint_lossy(g): print(w)  # doctest: +ELLIPSIS
    add at ...: operand 0 int64 -> float16 can lose magnitude (int64 reaches 9.22337e+18, ...
    """
    found: list[LossyCast] = []
    for node in graph.nodes:
        if node.in_dtypes:
            found.extend(_check(node))
    return found


def warn_node(node: Symbol) -> None:
    """Emit a :class:`LossyCastWarning` for each lossy conversion ``node`` needs."""
    for w in _check(node):
        if node.loc is None:
            warnings.warn(str(w), LossyCastWarning, stacklevel=2)
        else:
            warnings.warn_explicit(str(w), LossyCastWarning, node.loc.file, node.loc.line)


register_extension("warn_lossy", warn_node)
