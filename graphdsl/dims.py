"""Dimensions: one algebra for graphdsl's shapes and graphdsl.max, max.graph 26's ``Dim``.

``Dim(3)`` is a :class:`StaticDim`, ``Dim("n")`` a :class:`SymbolicDim`, and arithmetic
(``+``, ``-``, ``*``, ``//``, with ints, names and dims) gives MAX's simplified results: an
:class:`AlgebraicDim` is a polynomial over names and floor divisions (like terms added,
products distributed, ``// c`` exact where every coefficient divides), with MAX's equality,
hashing and printing (tests/data/max_graph_api.json records them). graphdsl's shapes hold
static sizes as plain ints and symbolic ones as these objects, so ``x.shape[1] + y.shape[1]``
is a dimension in graphdsl's API as in MAX's.

Symbolic and algebraic dims are ``str`` subclasses whose string value is graphdsl's compact
text (``"n"``, ``"n*2+-1"``, ``"(h+-1)//(2)+1"``): :func:`dim_text` gives it, graphdsl's
types print it, ONNX models hold it as ``dim_param``, and :func:`as_dim` reads it back.
``str()`` and ``repr()`` give MAX's forms:

>>> n = Dim("n")
>>> n + 1, str(n * 2 - 1), dim_text(n * 2 - 1)
(Dim('n') + Dim(1), '(n * 2) + -1', 'n*2+-1')
>>> as_dim("n*2+-1") == n * 2 - 1, Dim("past") + "seq" == "past+seq", n * 2 // 2
(True, True, Dim('n'))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any, TypeAlias, TypeVar

import numpy as np

from graphdsl._dim_attrs import (
    _SI64,
    POC,
    IntegerAttr,
    IntegerType,
    ParamDeclRefAttr,
    ParamOperatorAttr,
    SignednessSemantics,
    StringAttr,
    TypedAttr,
)

__all__ = [
    "POC",
    "AlgebraicDim",
    "Dim",
    "DynamicDim",
    "IntegerAttr",
    "IntegerType",
    "ParamDeclRefAttr",
    "ParamOperatorAttr",
    "SignednessSemantics",
    "StaticDim",
    "StringAttr",
    "SymbolicDim",
    "TypedAttr",
    "as_dim",
    "core_dim",
    "dim_text",
]

_NAME = re.compile(r"^[a-zA-Z_]\w*$")
_INT64 = (-(2**63), 2**63)

# A polynomial: a term (a sorted tuple of (atom, non-zero power)) -> a non-zero coefficient.
# An atom is a name (str) or a floor division that does not simplify (a FloorDiv).
Atom: TypeAlias = "str | FloorDiv"
Term: TypeAlias = tuple[tuple[Atom, int], ...]
Poly: TypeAlias = dict[Term, Fraction]


class FloorDiv:
    """``num // den`` that does not simplify: an atom of a polynomial."""

    __slots__ = ("den", "num", "text")
    num: Dim
    den: Dim
    text: str  # graphdsl's text, "(num)//(den)"

    def __init__(self, num: Dim, den: Dim) -> None:
        self.num, self.den = num, den
        self.text = f"({dim_text(num)})//({dim_text(den)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FloorDiv, (self.num, self.den))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloorDiv) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def max_text(self, fmt: str) -> str:
        return f"{_wrap(self.num, fmt)} // {_wrap(self.den, fmt)}"


def _akey(a: Atom) -> tuple[int, str]:
    return (0, a) if isinstance(a, str) else (1, a.text)


def _wrap(d: Dim, fmt: str) -> str:
    text = repr(d) if fmt == "repr" else str(d)
    return f"({text})" if isinstance(d, AlgebraicDim) else text


class Dim:
    """A tensor dimension, as max.graph's ``Dim``: ``Dim(3)`` is a :class:`StaticDim`,
    ``Dim("n")`` a :class:`SymbolicDim`, a ``Dim`` stays itself; arithmetic (``+``, ``-``,
    ``*``, ``//``) with ints, names and dims gives MAX's simplified results.

    >>> Dim(3) * 4, Dim("x") + Dim("y") == Dim("y") + Dim("x"), int(Dim(7) // 2)
    (Dim(12), True, 3)
    """

    __slots__ = ()

    def __new__(cls, value: Any = None) -> Any:
        if isinstance(value, Dim):
            return value
        if isinstance(value, (int, np.integer)):
            return StaticDim(value)
        if isinstance(value, str):
            return SymbolicDim(value)
        if isinstance(value, IntegerAttr):
            return StaticDim(value)
        if isinstance(value, ParamDeclRefAttr):
            return SymbolicDim(value)
        if isinstance(value, ParamOperatorAttr):
            return attr_dim(value)
        raise TypeError(f"Unsupported dimension type {value} ({type(value)})")

    @staticmethod
    def dynamic(name: str) -> DynamicDim:
        """A :class:`DynamicDim` named ``name``: a symbolic dim marked as varying from run to
        run (MAX's ``Dim.dynamic``); equal to ``Dim(name)``.

        >>> Dim.dynamic("k") == Dim("k"), type(Dim.dynamic("k")).__name__
        (True, 'DynamicDim')
        """
        return DynamicDim(name)

    def __index__(self) -> int:
        raise TypeError(
            "when using dims to index into a list or NumPy array, explicitly convert to int "
            "with int(dim)"
        )

    def __int__(self) -> int:
        raise TypeError(f"int({self!r}): Int conversions only supported for static dims")

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __add__(self, rhs: Any) -> Dim:
        if not _dimlike(rhs):
            return NotImplemented
        return poly_dim(_sum(dim_poly(self), dim_poly(Dim(rhs))))

    def __radd__(self, lhs: Any) -> Dim:
        return Dim(lhs) + self if _dimlike(lhs) else NotImplemented

    def __mul__(self, rhs: Any) -> Dim:
        if not _dimlike(rhs):
            return NotImplemented
        return poly_dim(times(dim_poly(self), dim_poly(Dim(rhs))))

    def __rmul__(self, lhs: Any) -> Dim:
        return Dim(lhs) * self if _dimlike(lhs) else NotImplemented

    def __neg__(self) -> Dim:
        return -1 * self

    def __sub__(self, rhs: Any) -> Dim:
        return self + -Dim(rhs) if _dimlike(rhs) else NotImplemented

    def __rsub__(self, lhs: Any) -> Dim:
        return Dim(lhs) + -self if _dimlike(lhs) else NotImplemented

    def __floordiv__(self, rhs: Any) -> Dim:
        return _floordiv(self, Dim(rhs)) if _dimlike(rhs) else NotImplemented

    def __rfloordiv__(self, lhs: Any) -> Dim:
        return _floordiv(Dim(lhs), self) if _dimlike(lhs) else NotImplemented

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        """The symbolic dimensions this one depends on."""
        raise NotImplementedError

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        """This dim with named symbols replaced per ``mapping`` (folded where static)."""
        raise NotImplementedError

    def to_mlir(self) -> TypedAttr:
        """MAX's attribute for this dim, as graphdsl's record (see :class:`TypedAttr`): an
        ``IntegerAttr``, a ``ParamDeclRefAttr`` or a ``ParamOperatorAttr``.

        >>> Dim(4).to_mlir(), Dim.from_mlir((Dim("n") * 2).to_mlir())
        (IntegerAttr(4 : si64), Dim('n') * Dim(2))
        """
        raise NotImplementedError

    @staticmethod
    def from_mlir(attr: TypedAttr) -> Dim:
        """The dim that MAX's attribute ``attr`` (graphdsl's record) describes; MAX's
        ValueError for any other attribute.

        >>> Dim.from_mlir(Dim(3).to_mlir()), Dim.from_mlir((Dim("n") - Dim("n")).to_mlir())
        (Dim(3), Dim(0))
        """
        if isinstance(attr, IntegerAttr):
            return StaticDim.from_mlir(attr)
        if isinstance(attr, ParamDeclRefAttr):
            return SymbolicDim.from_mlir(attr)
        if isinstance(attr, ParamOperatorAttr):
            return attr_dim(attr)  # MAX's attribute is folded already: any kind of dim
        raise ValueError("graph api does not support unknown dimensions")


_D = TypeVar("_D", bound="Dim")


def _from_attr(cls: type[_D], attr: TypedAttr, kind: type, dialect: str) -> _D:
    """``cls.from_mlir(attr)``: the dim of an attribute record of ``kind``; MAX's TypeError
    for another kind."""
    if not isinstance(attr, kind):
        raise TypeError(
            f"{cls.__name__}.from_mlir only accepts {dialect}.{kind.__name__}, got "
            f"{type(attr).__name__}"
        )
    return cls(attr)


def _dimlike(v: object) -> bool:
    return isinstance(v, (int, str, Dim, np.integer, TypedAttr))


@functools.total_ordering
class StaticDim(Dim):
    """A dimension of known size, as max.graph's ``StaticDim`` (equal to the int, hashed
    as it, ordered). graphdsl's shapes hold it as the plain int.

    >>> StaticDim(4) == 4, hash(StaticDim(4)) == hash(4), StaticDim(3) < 4
    (True, True, True)
    """

    __slots__ = ("dim",)
    dim: int

    def __new__(cls, dim: Any = None) -> StaticDim:
        return dim if isinstance(dim, StaticDim) else object.__new__(cls)

    def __init__(self, dim: Any) -> None:
        if isinstance(dim, ParamOperatorAttr) and hasattr(self, "dim"):
            return  # Dim(attr) evaluated to this dim (type() calls __init__ with attr)
        if isinstance(dim, StaticDim):
            dim = dim.dim
        elif isinstance(dim, IntegerAttr):
            dim = dim.value
        elif not isinstance(dim, int):
            raise TypeError(
                f"StaticDim.__init__ only accepts int, builtin.IntegerAttr, or StaticDim, got "
                f"{type(dim).__name__}"
            )
        if not _INT64[0] <= dim < _INT64[1]:
            raise ValueError("Dim value must be -2**63 <= dim < 2**63")
        object.__setattr__(self, "dim", dim)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (StaticDim, (self.dim,))

    def __str__(self) -> str:
        return str(self.dim)

    def __repr__(self) -> str:
        return f"Dim({self.dim!r})"

    def __int__(self) -> int:
        return int(self.dim)

    def __eq__(self, other: object) -> bool:
        return bool(self.dim == other) or (isinstance(other, StaticDim) and self.dim == other.dim)

    def __lt__(self, other: int | StaticDim) -> bool:
        return bool(self.dim < (other.dim if isinstance(other, StaticDim) else other))

    def __hash__(self) -> int:
        return hash(self.dim)

    def to_mlir(self) -> IntegerAttr:
        """MAX's attribute for this dim: an ``IntegerAttr`` (si64) record.

        >>> StaticDim(5).to_mlir().value
        5
        """
        return IntegerAttr(_SI64, self.dim)

    @staticmethod
    def from_mlir(attr: TypedAttr) -> StaticDim:
        """The static dim of an ``IntegerAttr`` record; MAX's TypeError for another kind.

        >>> StaticDim.from_mlir(StaticDim(5).to_mlir())
        Dim(5)
        """
        return _from_attr(StaticDim, attr, IntegerAttr, "builtin")

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        return iter(())

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        return self


class _TextDim(Dim, str):  # type: ignore[misc]  # Dim's operators replace str's
    """A symbolic or algebraic dim: a str holding graphdsl's text, equal to the dims and
    texts of the same value, hashed as its text."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str):
            return False
        same = str.__eq__(self, other)  # a dim's text is canonical: equal values, equal texts
        if same or isinstance(other, Dim):
            return same
        return str.__eq__(self, parsed_text(other))  # a plain str: the text it reads as

    __hash__ = str.__hash__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class SymbolicDim(_TextDim):
    """A dimension known by name, as max.graph's ``SymbolicDim`` (equal to its name).

    >>> SymbolicDim("batch") == "batch", str(SymbolicDim("batch")), {"batch": 2}[Dim("batch")]
    (True, 'batch', 2)
    """

    __slots__ = ()

    def __new__(cls, name: Any = None) -> SymbolicDim:
        if isinstance(name, SymbolicDim):
            return name
        if isinstance(name, ParamDeclRefAttr):
            name = name.name.value
        if not isinstance(name, str) or isinstance(name, Dim):
            raise TypeError(
                "SymbolicDim.__init__ only accepts str, kgen.ParamDeclRefAttr, or SymbolicDim, "
                f"got {type(name).__name__}"
            )
        if not _NAME.match(name):
            raise ValueError("Invalid name for symbolic dimension")
        return str.__new__(cls, name)

    @classmethod
    def _unchecked(cls, name: str) -> SymbolicDim:
        """A symbol named by graphdsl (an opaque ``(n)/(n+1)``), which MAX's name rule would
        refuse."""
        return str.__new__(cls, name)

    @property
    def name(self) -> str:
        """The name."""
        return str.__str__(self)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_symbol, (self.name,))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Dim({self.name!r})"

    def to_mlir(self) -> ParamDeclRefAttr:
        """MAX's attribute for this dim: a ``ParamDeclRefAttr`` (si64) record.

        >>> SymbolicDim("batch").to_mlir().name.value
        'batch'
        """
        return ParamDeclRefAttr(self.name, _SI64)

    @staticmethod
    def from_mlir(attr: TypedAttr) -> SymbolicDim:
        """The symbolic dim of a ``ParamDeclRefAttr`` record; MAX's TypeError for another kind.

        >>> SymbolicDim.from_mlir(SymbolicDim("batch").to_mlir())
        Dim('batch')
        """
        return _from_attr(SymbolicDim, attr, ParamDeclRefAttr, "kgen")

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        yield self

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        replacement = mapping.get(self.name)
        return self if replacement is None else Dim(replacement)


class DynamicDim(SymbolicDim):
    """A symbolic dim marked as one that varies from run to run (MAX's ``Dim.dynamic``):
    equal to, and hashed as, the :class:`SymbolicDim` of its name. Re-wrapping keeps the
    mark (``Dim(d)``, ``SymbolicDim(d)`` return ``d``); MAX's attribute record does not
    carry it, so ``from_mlir`` gives a plain SymbolicDim.

    >>> d = Dim.dynamic("k")
    >>> isinstance(SymbolicDim(d), DynamicDim), d == "k", {Dim("k"): 1}[d]
    (True, True, 1)
    """

    __slots__ = ()

    def __new__(cls, name: Any = None) -> DynamicDim:
        if isinstance(name, DynamicDim):
            return name
        return str.__new__(cls, SymbolicDim(name).name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DynamicDim, (self.name,))


def _symbol(name: str) -> SymbolicDim:
    return SymbolicDim._unchecked(name)


class AlgebraicDim(_TextDim):
    """A dimension computed from symbolic ones, as max.graph's ``AlgebraicDim``: a sum of
    products (like terms added, products distributed, ``// c`` taken exactly where every
    coefficient divides) and floor divisions that do not simplify. graphdsl's reshape
    inference adds rational coefficients and division by names (``b*3/2``).

    >>> d = (Dim("x") + 1) * (Dim("y") + 1)
    >>> isinstance(d, AlgebraicDim), d, str(Dim("x") // 2 * 2), dim_text(d)
    (True, (Dim('x') * Dim('y')) + Dim('x') + Dim('y') + Dim(1), '(x // 2) * 2', 'x*y+x+y+1')
    """

    poly: Poly

    def __new__(cls, poly: Any = None) -> AlgebraicDim:
        if isinstance(poly, AlgebraicDim):
            return poly
        if isinstance(poly, ParamOperatorAttr):
            d = attr_dim(poly)
            if isinstance(d, AlgebraicDim):
                return d
            raise TypeError(  # MAX's attribute would have folded to another kind
                "AlgebraicDim.__init__ only accepts kgen.ParamOperatorAttr or AlgebraicDim, got "
                f"{_attr_kind(d)} ({poly!r} folds to {d!r})"
            )
        if not isinstance(poly, dict):
            raise TypeError(
                "AlgebraicDim.__init__ only accepts kgen.ParamOperatorAttr or AlgebraicDim, got "
                f"{type(poly).__name__}"
            )
        poly = {t: Fraction(c) for t, c in poly.items() if c}
        self = str.__new__(cls, _poly_text(poly))
        object.__setattr__(self, "poly", poly)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (AlgebraicDim, (self.poly,))

    def _text(self, fmt: str) -> str:
        terms = sorted(self.poly.items(), key=_term_order)
        return " + ".join(_term_text(t, c, fmt, alone=len(terms) == 1) for t, c in terms)

    def __str__(self) -> str:
        return self._text("str")

    def __repr__(self) -> str:
        return self._text("repr")

    @property
    def attr(self) -> ParamOperatorAttr:
        """MAX's attribute for this dim (as :meth:`to_mlir`), as max.graph's field.

        >>> (Dim("n") + 1).attr.opcode
        <POC.add: 2>
        """
        attr = poly_attr(self)
        assert isinstance(attr, ParamOperatorAttr)  # one name would be a SymbolicDim
        return attr

    def to_mlir(self) -> ParamOperatorAttr:
        """MAX's attribute for this dim: a ``ParamOperatorAttr`` record in MAX's form (see
        :func:`poly_attr`); a ValueError for graphdsl's exact division (``b*3/2``), which MAX
        does not have.

        >>> AlgebraicDim.from_mlir((Dim("n") * 2 + 1).to_mlir())
        (Dim('n') * Dim(2)) + Dim(1)
        """
        return self.attr

    @staticmethod
    def from_mlir(attr: TypedAttr) -> AlgebraicDim:
        """The algebraic dim of a ``ParamOperatorAttr`` record; MAX's TypeError for another
        kind (or one that folds to a static or symbolic dim).

        >>> AlgebraicDim.from_mlir((Dim("n") * Dim("m")).to_mlir())
        Dim('m') * Dim('n')
        """
        return _from_attr(AlgebraicDim, attr, ParamOperatorAttr, "kgen")

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        seen: list[str] = []
        for term, _ in sorted(self.poly.items(), key=lambda tc: _term_order(tc)[1]):
            for atom, _ in term:
                names = [atom] if isinstance(atom, str) else [
                    p.name for part in (atom.num, atom.den) for p in part.parameters
                ]  # fmt: skip
                seen += [n for n in names if n not in seen]
        for n in seen:
            yield SymbolicDim._unchecked(n)

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        total: Dim = StaticDim(0)
        for term, coef in self.poly.items():
            value = poly_dim({(): coef})
            for atom, power in term:
                v = (SymbolicDim._unchecked(atom).substitute(mapping) if isinstance(atom, str)
                     else atom.num.substitute(mapping) // atom.den.substitute(mapping))  # fmt: skip
                for _ in range(abs(power)):
                    value = value * v if power > 0 else divide(value, v)
            total = total + value
        return total


# ---------------------------------------------------------------------------- the algebra


def dim_poly(d: Dim) -> Poly:
    """A dim as a polynomial (a new dict)."""
    if isinstance(d, StaticDim):
        return {(): Fraction(d.dim)} if d.dim else {}
    if isinstance(d, AlgebraicDim):
        return dict(d.poly)
    assert isinstance(d, SymbolicDim)
    return {((d.name, 1),): Fraction(1)}


def _sum(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for t, c in b.items():
        total = out.get(t, 0) + c
        if total:
            out[t] = total
        else:
            out.pop(t, None)
    return out


def times(a: Poly, b: Poly) -> Poly:
    """The product of two polynomials, distributed."""
    out: Poly = {}
    for ta, ca in a.items():
        for tb, cb in b.items():
            powers = dict(ta)
            for atom, p in tb:
                powers[atom] = powers.get(atom, 0) + p
            kept = [(k, v) for k, v in powers.items() if v]
            term = tuple(sorted(kept, key=lambda x: _akey(x[0])))
            out = _sum(out, {term: ca * cb})
    return out


def poly_dim(poly: Poly) -> Dim:
    """The simplest Dim for ``poly``: static (where whole), a lone name, else algebraic."""
    if not poly:
        return StaticDim(0)
    if list(poly) == [()] and poly[()].denominator == 1:
        return StaticDim(int(poly[()]))
    if len(poly) == 1:
        ((term, coef),) = poly.items()
        if coef == 1 and len(term) == 1 and isinstance(term[0][0], str) and term[0][1] == 1:
            return SymbolicDim._unchecked(term[0][0])
    return AlgebraicDim(poly)


def _floordiv(a: Dim, b: Dim) -> Dim:
    """MAX's ``a // b``: exact where ``b`` is static and divides every coefficient."""
    if isinstance(b, StaticDim) and b.dim == 0:
        raise ZeroDivisionError
    if isinstance(a, StaticDim) and isinstance(b, StaticDim):
        return StaticDim(a.dim // b.dim)
    if isinstance(b, StaticDim):
        poly = dim_poly(a)
        if all(c % b.dim == 0 for c in poly.values()):
            return poly_dim({t: c / b.dim for t, c in poly.items()})
    return AlgebraicDim({((FloorDiv(a, b), 1),): Fraction(1)})


def divide(a: Dim, b: Dim) -> Dim:
    """``a / b`` exactly (graphdsl's reshape inference): a rational polynomial where ``b`` is
    one term or ``a`` a multiple of ``b``; otherwise the opaque name ``(a)/(b)``.

    >>> divide(Dim("b") * 3, Dim(2)), divide(Dim("n") * 4 + 4, Dim("n") + 1)
    (Dim('b') * Dim(3) / Dim(2), Dim(4))
    """
    top, bottom = dim_poly(a), dim_poly(b)
    if len(bottom) == 1:
        ((term, coef),) = bottom.items()
        return poly_dim(times(top, {tuple((k, -v) for k, v in term): 1 / coef}))
    if bottom and top:  # a multiple of a sum: the same terms, in one ratio
        ratio = top.get(next(iter(bottom)), Fraction(0)) / next(iter(bottom.values()))
        if ratio and top == {t: c * ratio for t, c in bottom.items()}:
            return poly_dim({(): ratio})
    return SymbolicDim._unchecked(f"({dim_text(a)})/({dim_text(b)})")


# ---------------------------------------------------------------------------- printing


def _term_order(item: tuple[Term, Fraction]) -> tuple[int, list[Any], list[Any]]:
    """MAX's order of terms: products (and scaled atoms) first, then lone atoms, then the
    constant; by name within each group."""
    term, coef = item
    if not term:
        return (2, [], [])
    simple = len(term) == 1 and term[0][1] == 1 and coef == 1
    ups = [_akey(a) for a, p in term for _ in range(p)]
    return (1 if simple else 0, ups, [(_akey(a), p) for a, p in term if p < 0])


def _term_text(term: Term, coef: Fraction, fmt: str, alone: bool) -> str:
    def show(d: Dim) -> str:
        return repr(d) if fmt == "repr" else str(d)

    def atom(a: Atom) -> str:
        return show(SymbolicDim._unchecked(a)) if isinstance(a, str) else f"({a.max_text(fmt)})"

    ups = [atom(a) for a, p in term for _ in range(p)]
    downs = [atom(a) for a, p in term for _ in range(-p)]
    if len(term) == 1 and term[0][1] == 1 and coef == 1 and not isinstance(term[0][0], str):
        ups = [term[0][0].max_text(fmt)]  # a lone floor division needs no parentheses
    if coef.numerator != 1 or not ups:
        ups.append(show(StaticDim(coef.numerator)))
    if coef.denominator != 1:
        downs.append(show(StaticDim(coef.denominator)))
    text = " * ".join(ups) + "".join(f" / {d}" for d in downs)
    return f"({text})" if len(ups) + len(downs) > 1 and not alone else text


def _poly_text(poly: Poly) -> str:
    """graphdsl's text: terms joined by ``+`` in MAX's order, each ``-``? then its factors
    joined by ``*`` (floor divisions first, as ``(a)//(b)``; the coefficient last) and
    ``/`` before each divisor: ``n*2+-1``, ``b*3/2``, ``(h+-1)//(2)+1``."""
    parts = []
    for term, coef in sorted(poly.items(), key=_term_order):
        ordered = sorted(term, key=lambda ap: (not isinstance(ap[0], FloorDiv), _akey(ap[0])))
        up: list[str] = []
        for a, p in ordered:
            text = a if isinstance(a, str) else a.text
            wrapped = f"({text})" if isinstance(a, FloorDiv) and up else text
            up += [wrapped] * p
        down = [f"({a.text})" if isinstance(a, FloorDiv) else a
                for a, p in ordered for _ in range(-p)]  # fmt: skip
        sign, c = ("-" if coef < 0 else ""), abs(coef)
        if c.numerator != 1 or not up:
            up.append(str(c.numerator))
        if c.denominator != 1:
            down.append(str(c.denominator))
        parts.append(sign + "*".join(up) + "".join("/" + d for d in down))
    return "+".join(parts) or "0"


def dim_text(d: Any) -> str:
    """graphdsl's text of a dimension (an int, a Dim or a str): what its types print.

    >>> dim_text(4), dim_text(Dim(4)), dim_text(Dim("n") * 2 + Dim("m") - 1), dim_text("n+1")
    ('4', '4', 'n*2+m+-1', 'n+1')
    """
    if isinstance(d, StaticDim):
        return str(d.dim)
    if isinstance(d, str):
        return str.__str__(d)
    return str(d)


# ---------------------------------------------------------------------------- text read back
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(//|[-+*/()]))")


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Dim:
    """``text`` (graphdsl's text, or MAX's ``str``) as a Dim; a name if it is no such text."""
    tokens: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            return SymbolicDim._unchecked(text)
        kind = "int" if m.group(1) else "name" if m.group(2) else m.group(3)
        tokens.append((kind, m.group(m.lastindex or 0)))
        pos = m.end()
    try:
        value, at = _expr(tokens, 0)
    except (IndexError, ValueError, ZeroDivisionError):
        return SymbolicDim._unchecked(text)
    return value if at == len(tokens) else SymbolicDim._unchecked(text)


def _expr(tokens: list[tuple[str, str]], at: int) -> tuple[Dim, int]:
    value, at = _term(tokens, at)
    while at < len(tokens) and tokens[at][0] == "+":
        rhs, at = _term(tokens, at + 1)
        value = value + rhs
    return value, at


def _term(tokens: list[tuple[str, str]], at: int) -> tuple[Dim, int]:
    value, at = _unary(tokens, at)
    while at < len(tokens) and tokens[at][0] in ("*", "//", "/"):
        op = tokens[at][0]
        rhs, at = _unary(tokens, at + 1)
        value = value * rhs if op == "*" else value // rhs if op == "//" else divide(value, rhs)
    return value, at


def _unary(tokens: list[tuple[str, str]], at: int) -> tuple[Dim, int]:
    kind, token = tokens[at]
    if kind == "-":
        value, at = _unary(tokens, at + 1)
        return -value, at
    if kind == "int":
        return StaticDim(int(token)), at + 1
    if kind == "name":
        return SymbolicDim._unchecked(token), at + 1
    if kind != "(":
        raise ValueError(token)
    value, at = _expr(tokens, at + 1)
    if tokens[at][0] != ")":
        raise ValueError(tokens[at][1])
    return value, at + 1


@functools.lru_cache(maxsize=4096)
def parsed_text(text: str) -> str:
    """graphdsl's text of the dimension that ``text`` reads as."""
    return dim_text(_parse(text))


def as_dim(d: Any) -> Dim:
    """A dimension given as an int (numpy's too), a Dim, or a str as a Dim. A str is a name,
    or graphdsl's text of a dimension (``"n*2+-1"``: the text that graphdsl prints, read back);
    one that is neither stays a name of the user's own (``"seq len"``).

    >>> as_dim(3), as_dim("batch"), as_dim("n*2+-1"), as_dim("(h+-1)//(2)+1")
    (Dim(3), Dim('batch'), (Dim('n') * Dim(2)) + Dim(-1), (Dim('h') + Dim(-1)) // Dim(2) + Dim(1))
    """
    if isinstance(d, Dim):
        return d
    if isinstance(d, (int, np.integer)):
        return StaticDim(int(d))
    if isinstance(d, str):
        return _parse(str.__str__(d))
    raise TypeError(f"Unsupported dimension type {d} ({type(d)})")


def core_dim(d: Any) -> int | str:
    """A dimension as graphdsl's shapes hold it: a static one as the int, a symbolic one as
    its :class:`SymbolicDim` or :class:`AlgebraicDim` (see :func:`as_dim`).

    >>> core_dim(Dim(3)), core_dim("n") == Dim("n"), type(core_dim("n*2")).__name__
    (3, True, 'AlgebraicDim')
    """
    if type(d) is int:
        return d
    d = as_dim(d)
    if isinstance(d, StaticDim):
        return d.dim
    assert isinstance(d, str)
    return d


def _attr_kind(d: Dim) -> str:
    """The name of the attribute kind that MAX folds ``d``'s expression to."""
    return type(d.to_mlir()).__name__ if not isinstance(d, AlgebraicDim) else "ParamOperatorAttr"


def attr_dim(attr: ParamOperatorAttr) -> Dim:
    """The dim that ``attr`` evaluates to with graphdsl's algebra (MAX's folding).

    >>> attr_dim(ParamOperatorAttr(POC.div, [Dim("n").to_mlir(), Dim(1).to_mlir()]))
    Dim('n')
    """
    dims: list[Dim] = [Dim(o) for o in attr.operands]
    if not dims:
        raise ValueError(f"{attr!r} has no operands")
    result = dims[0]
    if attr.opcode is POC.add:
        for d in dims[1:]:
            result = result + d
        return result
    if attr.opcode in (POC.mul_no_wrap, POC.mul):
        for d in dims[1:]:
            result = result * d
        return result
    if attr.opcode is POC.div and len(dims) == 2:
        return _floordiv(result, dims[1])
    raise ValueError(
        f"{attr!r}: graphdsl's dims evaluate only POC.add, POC.mul_no_wrap, POC.mul and a "
        "two-operand POC.div"
    )


def _term_attr(term: Term, coef: Fraction, d: Dim) -> TypedAttr:
    if coef.denominator != 1 or any(p < 0 for _, p in term):
        raise ValueError(
            f"{d!r}.to_mlir(): graphdsl's exact division ({dim_text(d)}) has no MAX attribute"
        )
    factors: list[TypedAttr] = [
        ParamDeclRefAttr(a, _SI64) if isinstance(a, str)
        else ParamOperatorAttr(POC.div, [a.num.to_mlir(), a.den.to_mlir()])
        for a, p in term for _ in range(p)
    ]  # fmt: skip
    if coef != 1 or not factors:
        factors.append(IntegerAttr(_SI64, int(coef)))
    return factors[0] if len(factors) == 1 else ParamOperatorAttr(POC.mul_no_wrap, factors)


def poly_attr(d: AlgebraicDim) -> TypedAttr:
    """MAX's attribute for ``d``: an n-ary ``add`` of terms in MAX's order, a term an n-ary
    ``mul_no_wrap`` of names and floor divisions (``div``) with the coefficient last.

    >>> poly_attr(Dim("x") * 2 + 1) == ParamOperatorAttr(POC.add, [
    ...     ParamOperatorAttr(POC.mul_no_wrap, [Dim("x").to_mlir(), Dim(2).to_mlir()]),
    ...     Dim(1).to_mlir()])
    True
    """
    parts = [_term_attr(t, c, d) for t, c in sorted(d.poly.items(), key=_term_order)]
    return parts[0] if len(parts) == 1 else ParamOperatorAttr(POC.add, parts)
