"""MAX's dimensions at graphdsl.max's boundary: a :class:`~graphdsl.max.Dim` as graphdsl's
plain dimension (an int, or a str: a name or a polynomial text such as ``"n*2+-1"``) and
back. A floor division, which graphdsl's polynomials lack, travels as a name
(``"(n+1)//(2)"``) that converts back to the same ``Dim``.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np

from graphdsl.max._dim import AlgebraicDim, Dim, StaticDim, SymbolicDim, _FloorDiv
from graphdsl.shapes import Dim as CoreDim
from graphdsl.shapes import dim_poly, render_poly

__all__ = ["from_core", "to_core"]

# graphdsl names made for MAX's floor divisions (which graphdsl's polynomials lack), so that
# they convert back to the same Dim
_FLOOR_NAMES: dict[str, Dim] = {}


def to_core(d: Any) -> CoreDim:
    """A MAX dimension (or int, name) as graphdsl's: an int, or a name or polynomial text.

    >>> from graphdsl.max import Dim
    >>> from graphdsl.max._core_dims import to_core
    >>> to_core(Dim("n") * 2 - 1), to_core(Dim(3)), to_core("m")
    ('n*2+-1', 3, 'm')
    """
    d = Dim(d.item() if isinstance(d, np.integer) else d)
    if isinstance(d, StaticDim):
        return int(d.dim)
    if isinstance(d, SymbolicDim):
        return d.name
    assert isinstance(d, AlgebraicDim)
    core: dict[frozenset[tuple[str, int]], Fraction] = {}
    for monomial, coef in d.poly.items():
        names = Counter(a if isinstance(a, str) else _floor_name(a) for a in monomial)
        core[frozenset(names.items())] = Fraction(coef)
    return render_poly(core)


def _floor_name(f: _FloorDiv) -> str:
    name = f"({f.num})//({f.den})".replace(" ", "")
    _FLOOR_NAMES[name] = AlgebraicDim({(f,): 1})
    return name


def from_core(d: CoreDim) -> Dim:
    """graphdsl's dimension as MAX's (a polynomial text becomes an :class:`AlgebraicDim`).

    >>> from graphdsl.max._core_dims import from_core
    >>> from_core(4), from_core("n"), from_core("n*2+-1")
    (Dim(4), Dim('n'), (Dim('n') * Dim(2)) + Dim(-1))
    """
    if isinstance(d, int):
        return StaticDim(d)
    if d in _FLOOR_NAMES:
        return _FLOOR_NAMES[d]
    total: Dim = StaticDim(0)
    for term, coef in dim_poly(d).items():
        if coef.denominator != 1:
            return SymbolicDim._unchecked(d)  # a rational coefficient: not MAX's algebra
        value: Dim = StaticDim(coef.numerator)
        for name, power in sorted(term):
            if power < 0:
                return SymbolicDim._unchecked(d)
            atom = _FLOOR_NAMES.get(name) or SymbolicDim._unchecked(name)
            for _ in range(power):
                value = value * atom
        total = total + value
    return total
