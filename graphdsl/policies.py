"""Promotion policies: a lattice, a rule for ambiguous (literal) types, and default dtypes.

A value's type for promotion is ``(dtype, ambiguous)``. Known types promote by the
lattice join; ambiguous types (Python literals and what they flow into) follow the
policy's literal rule:

``jax``        JAX weak types: an ambiguous value is the weak node ``i*``/``f*``/``c*``
               of its kind; two ambiguous values join their dtypes and stay ambiguous.
``anvil``      {anvil}'s ``common_dtype``: an ambiguous type yields to a known one, unless
               it is of a higher kind (a float literal meets an integer) or the known
               type is bool; then both go to their join, still ambiguous.
``max``        a literal takes the known operand's dtype; its value must be exactly
               representable there (checked where the value is known).
``array-api``  a literal takes the array's dtype when its kind fits (bool -> bool,
               int -> integer or floating, float -> floating, complex -> complex).
``max-graph``  max.graph 26: a literal takes the known operand's dtype. A Python int (bool
               included: True is 1) fits bool, integer and floating dtypes within the
               policy's ``int_literal_ranges`` (max.graph's table: float16 -2048..2048,
               float32 -2**24..2**24, ...); a Python float fits floating dtypes only, with
               no range check (1e300 becomes float16 inf); a literal of an op that computes
               in a wider dtype must still fit the operands' common dtype (int8 / 1000 fails).

A join landing on a weak node (int64 x uint64 -> ``f*`` in JAX's lattice) gives the
policy's default dtype of that kind, marked ambiguous.

A policy may also type some ops itself (``op_rules``, classes in :data:`OP_CLASSES`).
As max.graph types them, the ``max-graph`` policy divides two integers in float64 and
keeps a bool or integer dtype through exp, log, sqrt, tanh, erf... (computed in float64).

>>> import graphdsl as gd
>>> p = gd.policy("default")
>>> p.promote_types(gd.int16, gd.float32)
DType.float32
>>> p.common_dtype(gd.bool, gd.int32, b_ambiguous=True)
Promoted(dtype=DType.int32, ambiguous=True)
>>> p.common_dtype(gd.int16, gd.int32, b_ambiguous=True)
Promoted(dtype=DType.int16, ambiguous=False)
>>> gd.policy("jax").result_type(gd.int64, gd.uint64)
Promoted(dtype=DType.float64, ambiguous=True)
>>> gd.policy("array-api").promote_types(gd.int8, gd.float32)
Traceback (most recent call last):
    ...
graphdsl.policies.PromotionError: cannot promote int8 and float32 (in that order) under policy
'array-api': the lattice has no upper bound for them; cast explicitly, e.g. cast the int8 operand
to float32
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

import numpy as np

from graphdsl._promotion_rules import PromotionRules
from graphdsl._promotion_types import (
    OP_CLASSES,
    Decision,
    LiteralRule,
    OpTyping,
    Promoted,
    PromotionError,
)
from graphdsl._table import render_table
from graphdsl.dtypes import DType, dtype
from graphdsl.lattice import Lattice, Weak
from graphdsl.literals import (
    literal_error,
    literal_fix,
    literal_problem,
    ranged_literal_problem,
)
from graphdsl.notation import JAX_CODES, notation_for

__all__ = [
    "OP_CLASSES",
    "Decision",
    "LiteralRule",
    "OpRule",
    "OpTyping",
    "Policy",
    "Promoted",
    "PromotionError",
]


Operand: TypeAlias = "DType | tuple[DType, bool] | Promoted | bool | int | float | complex | str"
# a policy's typing of one op class (see OP_CLASSES)
OpRule: TypeAlias = "Callable[[Policy, Sequence[Promoted]], OpTyping | None]"


class Policy(PromotionRules):
    """A promotion policy: how two types promote (its base, ``PromotionRules``: the
    lattice join and the literal rule), and what a graph asks of it besides: literal types
    and values, op rules and tables.

    Args:
        name: the policy's name, used in messages.
        lattice: the promotion lattice for known types.
        literals: the rule for ambiguous types (a :class:`LiteralRule` or its value).
        defaults: the dtype of a Python ``int``, ``float`` and ``complex`` literal.
        strict_weak: JAX strict mode: two ambiguous values join their weak nodes rather
            than their dtypes.
        description: one line for tables and docs.
        int_literal_ranges: for the ``max-graph`` literal rule, ``dtype -> (lo, hi)``: a
            Python int fits ``dtype`` when ``lo <= value <= hi`` (dtypes not listed: it must
            be exactly representable).
        op_rules: ``op class -> rule`` (classes in :data:`OP_CLASSES`): op-specific operand
            dtypes and results, asked for by the ops of that class (see :meth:`op_typing`).
        bool_arithmetic: type arithmetic on bool operands (``bool - bool``, ``sum`` of a
            bool) as bool, as max.graph does, instead of refusing it; such a graph builds
            and prints, but evaluating or exporting it raises, as MAX's compiler refuses it.

    >>> import graphdsl as gd
    >>> from graphdsl import DType as T
    >>> lat = gd.Lattice("mine", {T.bool: [T.int32], T.int32: [T.float32]})
    >>> mine = gd.Policy("mine", lat, literals="anvil")
    >>> mine.promote_types(T.bool, T.float32)
    DType.float32
    """

    def __init__(
        self,
        name: str,
        lattice: Lattice,
        *,
        literals: LiteralRule | str = LiteralRule.anvil,
        defaults: Mapping[str, DType | str] | None = None,
        strict_weak: bool = False,
        description: str = "",
        int_literal_ranges: Mapping[DType, tuple[int | float, int | float]] | None = None,
        op_rules: Mapping[str, OpRule] | None = None,
        bool_arithmetic: bool = False,
    ) -> None:
        super().__init__(
            name, lattice, literals=literals, defaults=defaults, strict_weak=strict_weak
        )
        self.description = description
        self.int_literal_ranges = dict(int_literal_ranges or {})
        unknown = sorted(set(op_rules or {}) - set(OP_CLASSES))
        if unknown:
            raise ValueError(
                f"policy {name!r}: unknown op class {unknown[0]!r} in op_rules; the classes "
                f"are {', '.join(map(repr, OP_CLASSES))}"
            )
        self.op_rules: dict[str, OpRule] = dict(op_rules or {})
        self.bool_arithmetic = bool_arithmetic

    def __repr__(self) -> str:
        return f"Policy({self.name!r})"

    def literal_type(self, value: bool | int | float | complex) -> Promoted:
        """The type of a Python scalar: its default dtype, ambiguous unless it is a bool.

        Under ``max-graph`` a Python bool is a Python int (max.graph converts True as 1).

        >>> import graphdsl as gd
        >>> gd.policy("jax").literal_type(2), gd.policy("default").literal_type(2.0)
        (Promoted(dtype=DType.int64, ambiguous=True), Promoted(dtype=DType.float32, ambiguous=True))
        >>> gd.policy("max-graph").literal_type(True)
        Promoted(dtype=DType.int64, ambiguous=True)
        """
        if isinstance(value, (bool, np.bool_)):
            if self.literals is LiteralRule.max_graph:
                return Promoted(self.default_int, True)
            return Promoted(DType.bool, False)
        if isinstance(value, (int, np.integer)):
            return Promoted(self.default_int, True)
        if isinstance(value, (float, np.floating)):
            return Promoted(self.default_float, True)
        if isinstance(value, (complex, np.complexfloating)):
            return Promoted(self.default_complex, True)
        raise TypeError(f"{value!r} (of type {type(value).__name__}) is not a Python scalar")

    # ------------------------------------------------------------------ promotion

    def promote_types(self, a: DType | str, b: DType | str) -> DType:
        """The dtype two known dtypes promote to (MAX's ``implicit_cast_type``)."""
        return self.common_dtype(a, b).dtype

    def common_dtype(
        self,
        a: DType | str,
        b: DType | str,
        a_ambiguous: bool = False,
        b_ambiguous: bool = False,
    ) -> Promoted:
        """The common type of two ``(dtype, ambiguous)`` pairs: {anvil}'s ``common_dtype``."""
        return self.decide(dtype(a), a_ambiguous, dtype(b), b_ambiguous).result

    def explain(
        self, a: DType | str, b: DType | str, a_ambiguous: bool = False, b_ambiguous: bool = False
    ) -> str:
        """The rule or lattice path that decides ``common_dtype(a, b, ...)``."""
        return self.decide(dtype(a), a_ambiguous, dtype(b), b_ambiguous).rule

    def result_type(self, *operands: Operand) -> Promoted:
        """Fold :meth:`common_dtype` over operands, left to right.

        Operands may be DTypes (or anything :func:`graphdsl.dtype` reads), ``(dtype,
        ambiguous)`` pairs, or Python scalars (ambiguous literals, whose values are then
        checked to fit the result).

        >>> import graphdsl as gd
        >>> gd.policy("default").result_type(gd.int8, 1, 2.5)
        Promoted(dtype=DType.float32, ambiguous=True)
        >>> gd.policy("default").result_type(gd.int8, 1000)
        Traceback (most recent call last):
            ...
        graphdsl.literals.LiteralError: the literal 1000 does not fit int8 (range -128..127) under
        policy 'default'; cast the other operand to a wider type than int8, or use a smaller
        literal
        """
        if not operands:
            raise TypeError("result_type() needs at least one operand")
        types: list[Promoted] = []
        values: list[bool | int | float | complex] = []
        for op in operands:
            if isinstance(op, (bool, int, float, complex)):
                types.append(self.literal_type(op))
                values.append(op)
            elif isinstance(op, tuple):
                types.append(Promoted(dtype(op[0]), bool(op[1])))
            else:
                types.append(Promoted(dtype(op), False))
        acc = types[0]
        for t in types[1:]:
            acc = self.decide(acc.dtype, acc.ambiguous, t.dtype, t.ambiguous).result
        for v in values:
            self.check_literal(v, acc.dtype)
        return acc

    # ------------------------------------------------------------------ literal values

    def check_literal(self, value: bool | int | float | complex, target: DType) -> None:
        """Raise :class:`LiteralError` unless ``value`` can be represented in ``target``.

        Integers must be in range (and, into a float dtype, finite there; under ``max``
        exact; under ``max-graph`` within the policy's ``int_literal_ranges``). Floats must
        not overflow a float dtype (under ``max-graph`` they are not checked); into an
        integer dtype (possible only under ``max``) they must be integral and in range. NaN
        and inf literals may go to float dtypes only.
        """
        problem = self.literal_problem(value, target)
        if problem:
            raise literal_error(
                self.literals is LiteralRule.max_graph,
                value,
                target,
                f"the literal {value!r} {problem} under policy {self.name!r}; "
                + literal_fix(value, target),
            )

    def literal_problem(self, value: bool | int | float | complex, target: DType) -> str:
        """Why ``value`` cannot become a ``target`` constant under this policy ('' if it can)."""
        if self.literals is LiteralRule.max_graph:
            return ranged_literal_problem(value, target, self.int_literal_ranges)
        return literal_problem(value, target, exact=self.literals is LiteralRule.max)

    def literal_dtype(
        self, operands: Sequence[Promoted], in_dtypes: Sequence[DType]
    ) -> DType | None:
        """The dtype every literal operand of an op must fit, or None when each must fit
        the dtype the op computes it in. ``operands`` are the op's operand types and
        ``in_dtypes`` the dtypes it computes them in (truth-value operands left out).

        None, except under ``max-graph``, where a literal first becomes the operands' common
        dtype and is checked there, as max.graph does: when an op computes all its operands
        in one other dtype (``int8 / 1000`` divides in float64), the literal must still fit
        the common dtype (int8).

        >>> import graphdsl as gd
        >>> ops = [gd.Promoted(gd.int8, False), gd.Promoted(gd.int64, True)]
        >>> gd.policy("max-graph").literal_dtype(ops, [gd.float64, gd.float64])
        DType.int8
        >>> gd.policy("default").literal_dtype(ops, [gd.float32, gd.float32]) is None
        True
        """
        if self.literals is not LiteralRule.max_graph or len(operands) < 2:
            return None
        if any(d is not in_dtypes[0] for d in in_dtypes):
            return None  # not one computing dtype: the op does not promote these operands
        acc = operands[0]
        try:
            for o in operands[1:]:
                acc = self.decide(acc.dtype, acc.ambiguous, o.dtype, o.ambiguous).result
        except PromotionError:
            return None
        return None if acc.dtype is in_dtypes[0] else acc.dtype

    # ------------------------------------------------------------------ op rules

    def op_typing(self, op_class: str, operands: Sequence[Promoted]) -> OpTyping | None:
        """The policy's own typing of an op of class ``op_class`` (see :data:`OP_CLASSES`)
        on ``operands``, or None to leave the op to its own rule.

        >>> import graphdsl as gd
        >>> ops = [gd.Promoted(gd.int8, False), gd.Promoted(gd.uint8, False)]
        >>> gd.policy("max-graph").op_typing("true_divide", ops).result
        Promoted(dtype=DType.float64, ambiguous=False)
        >>> gd.policy("default").op_typing("true_divide", ops) is None
        True
        """
        if op_class not in OP_CLASSES:
            raise ValueError(
                f"unknown op class {op_class!r}; the classes are {', '.join(map(repr, OP_CLASSES))}"
            )
        rule = self.op_rules.get(op_class)
        return None if rule is None else rule(self, operands)

    # ------------------------------------------------------------------ tables

    def table_dtypes(self) -> list[DType]:
        return self.lattice.dtypes()

    def table(self, *, fmt: str = "md", ambiguous_rows: bool = False) -> str:
        """The promotion table, generated from the lattice and the literal rule.

        Rows and columns are the lattice's dtypes (plus, for JAX notation, the Python
        scalar types ``i*``, ``f*``, ``c*``). With ``ambiguous_rows=True`` the rows are the
        ambiguous versions of the dtypes and the columns the known ones (seed 004's
        second table). ``-`` marks an undefined promotion.
        """
        notation = notation_for(self.name)
        dts = notation.sort(self.table_dtypes())
        cols: list[tuple[DType, bool]] = [(d, False) for d in dts]
        if ambiguous_rows:
            rows = [(d, True) for d in dts]
        else:
            rows = list(cols)
            if notation is JAX_CODES:
                kinds = [DType.int64, DType.float64, DType.complex128]
                covered = [k for k in kinds if Weak.of(k.kind) in self.lattice or k.kind.rank]
                lits = [(self.default_dtype(k.kind), True) for k in covered]
                rows += lits
                cols += lits

        def label(t: tuple[DType, bool]) -> str:
            return notation.ambiguous(t[0], t[0].kind) if t[1] else notation.code(t[0])

        def cell(r: tuple[DType, bool], c: tuple[DType, bool]) -> str:
            try:
                res = self.decide(r[0], r[1], c[0], c[1]).result
            except PromotionError:
                return "-"
            return label((res.dtype, res.ambiguous))

        return render_table(
            [label(r) for r in rows],
            [label(c) for c in cols],
            [[cell(r, c) for c in cols] for r in rows],
            fmt=fmt,
        )
