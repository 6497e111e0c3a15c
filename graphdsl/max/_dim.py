"""MAX's dimensions and shapes: ``Dim`` (a class: ``Dim(3)`` is a :class:`StaticDim`,
``Dim("n")`` a :class:`SymbolicDim`, arithmetic on them an :class:`AlgebraicDim`) and the
list-like :class:`Shape`, with max.graph 26's arithmetic, equality, hashing and printing
(tests/data/max_graph_api.json records them).

graphdsl's core keeps its own plain dimensions (an int, or a str: a name or a polynomial in
names such as ``"n*2+-1"``); ``graphdsl.max._core_dims`` converts at graphdsl.max's boundary.

>>> from graphdsl.max import Dim, Shape, StaticDim
>>> n = Dim("n")
>>> n + 1, (n + 1) * 2, n * 2 // 2, isinstance(Dim(3), StaticDim)
(Dim('n') + Dim(1), (Dim('n') * Dim(2)) + Dim(2), Dim('n'), True)
>>> Shape([1, "n"]) == [1, "n"], str(n - 1)
(True, 'n + -1')
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeAlias

import numpy as np

__all__ = [
    "AlgebraicDim",
    "Dim",
    "DimLike",
    "Shape",
    "ShapeLike",
    "StaticDim",
    "SymbolicDim",
]

_NAME = re.compile(r"^[a-zA-Z_]\w*$")
_INT64 = (-(2**63), 2**63)

# A polynomial over atoms: an atom is a symbol name (str) or a floor division (a _FloorDiv);
# a monomial is a sorted tuple of atoms (with repeats), mapped to a non-zero int coefficient.
Atom: TypeAlias = "str | _FloorDiv"
Monomial: TypeAlias = tuple[Atom, ...]
Poly: TypeAlias = dict[Monomial, int]


class _FloorDiv:
    """``numerator // denominator`` that does not simplify: an atom of a polynomial."""

    __slots__ = ("den", "num")

    def __init__(self, num: Dim, den: Dim) -> None:
        self.num, self.den = num, den

    def key(self) -> tuple[str, str]:
        return (repr(self.num), repr(self.den))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FloorDiv) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __lt__(self, other: object) -> bool:
        return _atom_key(self) < _atom_key(other)  # type: ignore[arg-type]

    def text(self, fmt: str) -> str:
        return f"{_wrap(self.num, fmt)} // {_wrap(self.den, fmt)}"


def _atom_key(a: Atom) -> tuple[int, str]:
    return (0, a) if isinstance(a, str) else (1, repr(a.key()))


def _wrap(d: Dim, fmt: str) -> str:
    text = repr(d) if fmt == "repr" else str(d)
    return f"({text})" if isinstance(d, AlgebraicDim) else text


class Dim:
    """A tensor dimension, as max.graph's ``Dim``: ``Dim(3)`` is a :class:`StaticDim`,
    ``Dim("n")`` a :class:`SymbolicDim`, a ``Dim`` stays itself; arithmetic (``+``, ``-``,
    ``*``, ``//``) with ints, names and dims gives MAX's simplified results.

    >>> from graphdsl.max import Dim
    >>> Dim(3) * 4, Dim("x") + Dim("y") == Dim("y") + Dim("x"), int(Dim(7) // 2)
    (Dim(12), True, 3)
    """

    __slots__ = ()

    def __new__(cls, value: Any = None) -> Any:
        if cls is not Dim:
            if isinstance(value, cls):
                return value
            return super().__new__(cls)
        if isinstance(value, Dim):
            return value
        if isinstance(value, (int, np.integer)):
            return super().__new__(StaticDim)
        if isinstance(value, str):
            return super().__new__(SymbolicDim)
        raise TypeError(f"Unsupported dimension type {value} ({type(value)})")

    def __index__(self) -> int:
        raise TypeError(
            "when using dims to index into a list or NumPy array, explicitly convert to int "
            "with int(dim)"
        )

    def __int__(self) -> int:
        raise TypeError(f"int({self!r}): Int conversions only supported for static dims")

    def __ne__(self, other: object) -> bool:
        return not self == other

    # -- arithmetic (MAX simplifies; see _poly_dim)
    def __add__(self, rhs: Any) -> Dim:
        if not _dimlike(rhs):
            return NotImplemented
        return _poly_dim(_sum(_poly(self), _poly(Dim(rhs))))

    def __radd__(self, lhs: Any) -> Dim:
        if not _dimlike(lhs):
            return NotImplemented
        return Dim(lhs) + self  # type: ignore[no-any-return]

    def __mul__(self, rhs: Any) -> Dim:
        if not _dimlike(rhs):
            return NotImplemented
        return _poly_dim(_product(_poly(self), _poly(Dim(rhs))))

    def __rmul__(self, lhs: Any) -> Dim:
        if not _dimlike(lhs):
            return NotImplemented
        return Dim(lhs) * self  # type: ignore[no-any-return]

    def __neg__(self) -> Dim:
        return -1 * self

    def __sub__(self, rhs: Any) -> Dim:
        if not _dimlike(rhs):
            return NotImplemented
        return self + -Dim(rhs)  # type: ignore[no-any-return]

    def __rsub__(self, lhs: Any) -> Dim:
        if not _dimlike(lhs):
            return NotImplemented
        return Dim(lhs) + -self  # type: ignore[no-any-return]

    def __floordiv__(self, rhs: Any) -> Dim:
        if not _dimlike(rhs):
            return NotImplemented
        return _floordiv(self, Dim(rhs))

    def __rfloordiv__(self, lhs: Any) -> Dim:
        if not _dimlike(lhs):
            return NotImplemented
        return Dim(lhs) // self  # type: ignore[no-any-return]

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        """The symbolic dimensions this one depends on."""
        raise NotImplementedError

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        """This dim with named symbols replaced per ``mapping`` (folded where static)."""
        raise NotImplementedError


def _dimlike(v: object) -> bool:
    return isinstance(v, (int, str, Dim, np.integer))


@functools.total_ordering
class StaticDim(Dim):
    """A dimension of known size, as max.graph's ``StaticDim`` (equal to the int, hashed
    as it, ordered).

    >>> from graphdsl.max import StaticDim
    >>> StaticDim(4) == 4, hash(StaticDim(4)) == hash(4), StaticDim(3) < 4
    (True, True, True)
    """

    __slots__ = ("dim",)
    dim: int

    def __init__(self, dim: Any) -> None:
        if isinstance(dim, StaticDim):
            dim = dim.dim
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

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        return iter(())

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        return self


class SymbolicDim(Dim):
    """A dimension known by name, as max.graph's ``SymbolicDim`` (equal to its name).

    >>> from graphdsl.max import SymbolicDim
    >>> SymbolicDim("batch") == "batch", str(SymbolicDim("batch"))
    (True, 'batch')
    """

    __slots__ = ("name",)
    name: str

    def __init__(self, name: Any) -> None:
        if isinstance(name, SymbolicDim):
            name = name.name
        elif not isinstance(name, str):
            raise TypeError(
                "SymbolicDim.__init__ only accepts str, kgen.ParamDeclRefAttr, or SymbolicDim, "
                f"got {type(name).__name__}"
            )
        if not _NAME.match(name):
            raise ValueError("Invalid name for symbolic dimension")
        object.__setattr__(self, "name", name)

    @classmethod
    def _unchecked(cls, name: str) -> SymbolicDim:
        """A symbol for one of graphdsl's derived names (``(n)/(n+1)``), which MAX's name
        rule would refuse."""
        dim = object.__new__(cls)
        object.__setattr__(dim, "name", name)
        return dim

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Dim({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return self.name == other or (isinstance(other, SymbolicDim) and self.name == other.name)

    def __hash__(self) -> int:
        return hash((self.name,))

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        yield self

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        replacement = mapping.get(self.name)
        return self if replacement is None else Dim(replacement)


class AlgebraicDim(Dim):
    """A dimension computed from symbolic ones, as max.graph's ``AlgebraicDim``: a sum of
    products (MAX's simplified form: like terms added, products distributed, ``// c`` taken
    exactly where every coefficient divides) and floor divisions that do not simplify.

    >>> from graphdsl.max import AlgebraicDim, Dim
    >>> d = (Dim("x") + 1) * (Dim("y") + 1)
    >>> isinstance(d, AlgebraicDim), d, str(Dim("x") // 2 * 2)
    (True, (Dim('x') * Dim('y')) + Dim('x') + Dim('y') + Dim(1), '(x // 2) * 2')
    """

    __slots__ = ("poly",)
    poly: Poly

    def __init__(self, poly: Any) -> None:
        if isinstance(poly, AlgebraicDim):
            poly = poly.poly
        elif not isinstance(poly, dict):
            raise TypeError(
                "AlgebraicDim.__init__ only accepts kgen.ParamOperatorAttr or AlgebraicDim, got "
                f"{type(poly).__name__}"
            )
        object.__setattr__(self, "poly", dict(poly))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def _text(self, fmt: str) -> str:
        terms = sorted(self.poly.items(), key=_term_order)
        parts = [_term_text(m, c, fmt, alone=len(terms) == 1) for m, c in terms]
        return " + ".join(parts)

    def __str__(self) -> str:
        return self._text("str")

    def __repr__(self) -> str:
        return self._text("repr")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AlgebraicDim) and _canon(self.poly) == _canon(other.poly)

    def __hash__(self) -> int:
        return hash(_canon(self.poly))

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        seen: list[str] = []
        for monomial in sorted(self.poly, key=lambda m: [_atom_key(a) for a in m]):
            for atom in monomial:
                names = [atom] if isinstance(atom, str) else [
                    p.name for part in (atom.num, atom.den) for p in part.parameters
                ]  # fmt: skip
                seen += [n for n in names if n not in seen]
        for n in seen:
            yield SymbolicDim._unchecked(n)

    def substitute(self, mapping: Mapping[str, Any]) -> Dim:
        total: Dim = StaticDim(0)
        for monomial, coef in self.poly.items():
            term: Dim = StaticDim(coef)
            for atom in monomial:
                if isinstance(atom, str):
                    term = term * SymbolicDim._unchecked(atom).substitute(mapping)
                else:
                    term = term * (atom.num.substitute(mapping) // atom.den.substitute(mapping))
            total = total + term
        return total


# ---------------------------------------------------------------------------- polynomials


def _poly(d: Dim) -> Poly:
    if isinstance(d, StaticDim):
        return {(): int(d.dim)} if d.dim else {}
    if isinstance(d, SymbolicDim):
        return {(d.name,): 1}
    assert isinstance(d, AlgebraicDim)
    return dict(d.poly)


def _sum(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for m, c in b.items():
        total = out.get(m, 0) + c
        if total:
            out[m] = total
        else:
            out.pop(m, None)
    return out


def _product(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            out = _sum(out, {tuple(sorted(ma + mb, key=_atom_key)): ca * cb})
    return out


def _poly_dim(poly: Poly) -> Dim:
    """The simplest Dim for ``poly``: static, a lone symbol, else algebraic."""
    if not poly:
        return StaticDim(0)
    if list(poly) == [()]:
        return StaticDim(poly[()])
    if len(poly) == 1:
        ((monomial, coef),) = poly.items()
        if coef == 1 and len(monomial) == 1 and isinstance(monomial[0], str):
            return SymbolicDim._unchecked(monomial[0])
    return AlgebraicDim(poly)


def _floordiv(a: Dim, b: Dim) -> Dim:
    if isinstance(b, StaticDim) and b.dim == 0:
        raise ZeroDivisionError
    if isinstance(a, StaticDim) and isinstance(b, StaticDim):
        return StaticDim(a.dim // b.dim)
    if isinstance(b, StaticDim):
        poly = _poly(a)
        if all(c % b.dim == 0 for c in poly.values()):
            return _poly_dim({m: c // b.dim for m, c in poly.items()})
    return AlgebraicDim({(_FloorDiv(a, b),): 1})


def _canon(poly: Poly) -> tuple[tuple[tuple[tuple[int, str], ...], int], ...]:
    return tuple(sorted(((tuple(_atom_key(a) for a in m), c) for m, c in poly.items())))


def _term_order(item: tuple[Monomial, int]) -> tuple[int, list[tuple[int, str]]]:
    """MAX's order of terms: products (and scaled atoms) first, then lone atoms, then the
    constant; by name within each group."""
    monomial, coef = item
    if not monomial:
        return (2, [])
    simple = len(monomial) == 1 and coef == 1
    return (1 if simple else 0, [_atom_key(a) for a in monomial])


def _term_text(monomial: Monomial, coef: int, fmt: str, alone: bool) -> str:
    def show(d: Dim) -> str:
        return repr(d) if fmt == "repr" else str(d)

    factors = [show(SymbolicDim._unchecked(a)) if isinstance(a, str) else f"({a.text(fmt)})"
               for a in monomial]  # fmt: skip
    if len(monomial) == 1 and coef == 1 and not isinstance(monomial[0], str):
        factors = [monomial[0].text(fmt)]  # a lone floor division needs no parentheses
    if coef != 1 or not monomial:
        factors.append(show(StaticDim(coef)))
    text = " * ".join(factors)
    return f"({text})" if len(factors) > 1 and not alone else text


# ---------------------------------------------------------------------------- shapes


class Shape(list[Dim]):
    """A tensor's shape, as max.graph's ``Shape``: a list of :class:`Dim`, equal to a list
    of ints, names and dims.

    >>> from graphdsl.max import Shape
    >>> s = Shape([2, "n"])
    >>> s, s == [2, "n"], s.rank, s.static_dims
    ([Dim(2), Dim('n')], True, 2, [2])
    """

    def __init__(self, dims: Iterable[Any] = ()) -> None:
        super().__init__(Dim(d) for d in dims)

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self)

    @property
    def static_dims(self) -> list[int]:
        """The static dimensions, as ints."""
        return [d.dim for d in self if isinstance(d, StaticDim)]

    @property
    def parameters(self) -> Iterator[SymbolicDim]:
        """The symbolic dimensions the shape depends on."""
        for d in self:
            yield from d.parameters

    @staticmethod
    def is_static(shape: Shape) -> bool:
        """Whether every dimension is static and non-negative."""
        return all(isinstance(d, StaticDim) and d.dim >= 0 for d in shape)


DimLike: TypeAlias = int | str | Dim | np.integer
ShapeLike: TypeAlias = Iterable[DimLike]
