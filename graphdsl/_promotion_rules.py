"""How two types promote under a lattice and a literal rule, and why: the part of a
:class:`~graphdsl.Policy` that decides (:meth:`PromotionRules.decide`).

Known types join in the lattice; an ambiguous type (a Python literal, and what it flows
into) follows the literal rule (see :mod:`graphdsl.policies`); a join on a weak node gives
the default dtype of its kind, ambiguous. Every decision carries the rule or lattice path
that made it, and every refusal is a :class:`~graphdsl.PromotionError` with a fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from graphdsl._promotion_types import Decision, LiteralRule, Promoted, PromotionError
from graphdsl.dtypes import DType, Kind, dtype
from graphdsl.lattice import Lattice, Node, Weak, node_name

__all__ = ["PromotionRules"]


class PromotionRules:
    """A lattice, a literal rule and default dtypes, deciding each pair of types once.

    Args:
        name: the policy's name, used in messages.
        lattice: the promotion lattice for known types.
        literals: the rule for ambiguous types (a :class:`LiteralRule` or its value).
        defaults: the dtype of a Python ``int``, ``float`` and ``complex`` literal.
        strict_weak: JAX strict mode: two ambiguous values join their weak nodes rather
            than their dtypes.
    """

    def __init__(
        self,
        name: str,
        lattice: Lattice,
        *,
        literals: LiteralRule | str = LiteralRule.anvil,
        defaults: Mapping[str, DType | str] | None = None,
        strict_weak: bool = False,
    ) -> None:
        self.name = name
        self.lattice = lattice
        try:
            self.literals = LiteralRule(literals)
        except ValueError:
            rules = ", ".join(repr(r.value) for r in LiteralRule)
            raise ValueError(
                f"policy {name!r}: unknown literal rule {literals!r}; use one of {rules}"
            ) from None
        d = {"int": DType.int32, "float": DType.float32, "complex": DType.complex64}
        d.update({k: dtype(v) for k, v in (defaults or {}).items()})
        self.default_int, self.default_float, self.default_complex = (
            d["int"],
            d["float"],
            d["complex"],
        )
        self.strict_weak = strict_weak
        self._cache: dict[tuple[DType, bool, DType, bool], Decision] = {}

    def default_dtype(self, kind: Kind | Weak) -> DType:
        """The dtype a literal (or a weak join result) of ``kind`` takes."""
        k = kind.kind if isinstance(kind, Weak) else kind
        if k is Kind.bool:
            return DType.bool
        if k.is_integer:
            return self.default_int
        return self.default_float if k is Kind.float else self.default_complex

    def decide(self, a: DType, a_amb: bool, b: DType, b_amb: bool) -> Decision:
        """Promote two types and say why (cached: each pair is decided once)."""
        key = (a, a_amb, b, b_amb)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._decide(a, a_amb, b, b_amb)
        return hit

    def _decide(self, a: DType, a_amb: bool, b: DType, b_amb: bool) -> Decision:
        a_amb = a_amb and a is not DType.bool
        b_amb = b_amb and b is not DType.bool
        if a is b and not (a_amb and b_amb):
            return Decision(Promoted(a, False), f"{a.name} and {a.name} are the same dtype")
        if a is b and not self.strict_weak:
            return Decision(Promoted(a, True), f"both are ambiguous {a.name}")
        if a_amb and b_amb:
            return self._both_ambiguous(a, b)
        if a_amb or b_amb:
            amb, known = (a, b) if a_amb else (b, a)
            return self._ambiguous_known(a, a_amb, b, b_amb, amb, known)
        return self._known(a, b, a, b, False)

    def _join(self, x: Node, y: Node, a: DType, a_amb: bool, b: DType, b_amb: bool) -> Node:
        for n, d in ((x, a), (y, b)):
            if n not in self.lattice:
                raise self._error(
                    a, a_amb, b, b_amb, f"{d.name} is not in the {self.lattice.name} lattice"
                )
        j = self.lattice.join(x, y)
        if j is None:
            why = "the lattice has no upper bound for them"
            if self.lattice.comparable_only:
                why = (
                    f"neither converts exactly into the other (the {self.lattice.name} order "
                    "joins only comparable types)"
                )
            raise self._error(a, a_amb, b, b_amb, why)
        return j

    def _path_rule(self, x: Node, y: Node, j: Node) -> str:
        def chain(n: Node) -> str:
            return " -> ".join(node_name(p) for p in self.lattice.path(n, j))

        lat = self.lattice
        if not lat.comparable_only:
            return f"join in the {lat.name} lattice: {chain(x)}; {chain(y)}"
        if (x, y) in lat.chosen:
            return (
                f"the {lat.name} order's chosen join of {node_name(x)} and {node_name(y)}: "
                f"{chain(x)}; {chain(y)}"
            )
        low = y if j is x else x
        return f"{node_name(low)} converts exactly into {node_name(j)}: {chain(low)}"

    def _as_promoted(self, j: Node, ambiguous: bool) -> Promoted:
        if isinstance(j, Weak):
            return Promoted(self.default_dtype(j), True)
        return Promoted(j, ambiguous and j is not DType.bool)

    def _known(
        self,
        a: DType,
        b: DType,
        x: Node,
        y: Node,
        ambiguous: bool,
        flags: tuple[bool, bool] | None = None,
    ) -> Decision:
        """Join nodes ``x`` and ``y`` standing for ``a`` and ``b`` (``flags``: their ambiguity,
        for error messages)."""
        fa, fb = flags if flags is not None else (ambiguous, ambiguous)
        j = self._join(x, y, a, fa, b, fb)
        res = self._as_promoted(j, ambiguous)
        rule = self._path_rule(x, y, j)
        if isinstance(j, Weak):
            rule += f"; {j} is weak, so the result is the default {res.dtype.name}, ambiguous"
        return Decision(res, rule)

    def _both_ambiguous(self, a: DType, b: DType) -> Decision:
        if self.strict_weak:
            wa, wb = Weak.of(a.kind), Weak.of(b.kind)
            assert wa is not None
            assert wb is not None
            d = self._known(a, b, wa, wb, True)
            return Decision(d.result, "both ambiguous (strict): " + d.rule)
        if self.literals in (LiteralRule.array_api, LiteralRule.max_graph) and (
            a not in self.lattice or b not in self.lattice or self.lattice.join(a, b) is None
        ):
            hi = a if a.kind.rank >= b.kind.rank else b
            if a.kind.rank == b.kind.rank:
                raise self._error(a, True, b, True, "the lattice has no upper bound for them")
            return Decision(Promoted(hi, True), "both are literals: the higher kind wins")
        d = self._known(a, b, a, b, True)
        return Decision(
            d.result, "both ambiguous, so they join as known types and stay ambiguous: " + d.rule
        )

    def _ambiguous_known(
        self, a: DType, a_amb: bool, b: DType, b_amb: bool, amb: DType, known: DType
    ) -> Decision:
        rule = self.literals
        lat = self.lattice
        if rule is LiteralRule.max_graph:
            return self._max_graph_literal(a, a_amb, b, b_amb, amb, known)
        if known not in lat or rule in (LiteralRule.max, LiteralRule.array_api):
            if rule is LiteralRule.array_api and not _literal_kind_fits(amb.kind, known.kind):
                raise self._error(
                    a,
                    a_amb,
                    b,
                    b_amb,
                    f"{_a(_kind_word(amb.kind))} literal does not fit the "
                    f"{_kind_word(known.kind)} dtype {known.name}",
                )
            if known not in lat and not _literal_kind_fits(amb.kind, known.kind):
                raise self._error(
                    a,
                    a_amb,
                    b,
                    b_amb,
                    f"{known.name} is not in the {lat.name} lattice and "
                    f"{_a(_kind_word(amb.kind))} literal does not fit it",
                )
            return Decision(
                Promoted(known, False),
                f"the ambiguous {amb.name}? takes the known dtype {known.name} "
                f"({rule.value} literal rule)",
            )
        if rule is LiteralRule.jax:
            w = Weak.of(amb.kind)
            assert w is not None
            wx: Node = w if a_amb else a
            wy: Node = b if a_amb else w
            d = self._known(a, b, wx, wy, False, (a_amb, b_amb))
            return Decision(d.result, f"the ambiguous {amb.name}? is the weak type {w}; " + d.rule)
        # anvil
        if amb.kind.rank > known.kind.rank or known is DType.bool:
            why = (
                "the known type is bool"
                if known is DType.bool
                else f"the ambiguous type is {_kind_word(amb.kind)}, the known one is not"
            )
            weak = Weak.of(amb.kind)
            if not self._absorbed(known, amb.kind):
                # The known type is not below every type of the literal's kind (float64
                # meets a complex literal): it decides the width, and the result is known,
                # as JAX's c* x float64 -> complex128. Keeps the rule associative.
                x: Node = a
                y: Node = b
                if weak is not None and weak in self.lattice:
                    x, y = (weak, b) if a_amb else (a, weak)
                d = self._known(a, b, x, y, False, (a_amb, b_amb))
                return Decision(
                    d.result, f"{{anvil}} exception ({why}); {known.name} is wider than the "
                    f"literal's kind, so it decides: " + d.rule
                )
            d = self._known(a, b, a, b, True, (a_amb, b_amb))
            return Decision(
                Promoted(d.result.dtype, True),
                f"{{anvil}} exception ({why}): both join as known types and the "
                "result stays ambiguous: " + d.rule,
            )
        return Decision(
            Promoted(known, False),
            f"{{anvil}}: the ambiguous {amb.name}? yields to the known {known.name}",
        )

    def _max_graph_literal(
        self, a: DType, a_amb: bool, b: DType, b_amb: bool, amb: DType, known: DType
    ) -> Decision:
        """max.graph's ``_promote_to_strong``: the literal becomes the known dtype. A Python
        int becomes any bool, integer or floating dtype (its value is checked later); a
        Python float only a floating one; a complex one only a complex one."""
        if amb.kind.is_integer:
            fits, word = True, "int"
        elif amb.kind is Kind.float:
            fits, word = known.kind in (Kind.float, Kind.complex), "float"
        else:
            fits, word = known.kind is Kind.complex, "complex"
        if not fits:
            raise self._error(
                a,
                a_amb,
                b,
                b_amb,
                f"a Python {word} literal does not become {_a(_kind_word(known.kind))} dtype "
                f'(max.graph: "Can\'t promote python {word} to dtype({known.name})")',
            )
        return Decision(
            Promoted(known, False),
            f"the ambiguous {amb.name}? takes the known dtype {known.name} "
            "(max-graph literal rule: its value must fit there)",
        )

    def _absorbed(self, known: DType, kind: Kind) -> bool:
        """True if ``known`` promotes to every type of ``kind`` (to the weak node, if any)."""
        lat = self.lattice
        weak = Weak.of(kind)
        if weak is not None and weak in lat:
            return lat.leq(known, weak)
        same = [d for d in lat.dtypes() if d.kind.rank == kind.rank]
        return all(lat.leq(known, d) for d in same)

    def _error(self, a: DType, a_amb: bool, b: DType, b_amb: bool, why: str) -> PromotionError:
        lhs, rhs = _type_str(a, a_amb), _type_str(b, b_amb)
        fix = _suggest_cast(a, b)
        lat = self.lattice
        if lat.comparable_only and a in lat and b in lat and not (a_amb or b_amb):
            common = lat.upper_bounds(a) & lat.upper_bounds(b)
            minimal = [
                d
                for d in lat.dtypes()
                if d in common and not any(o is not d and lat.leq(o, d) for o in common)
            ]
            if minimal:
                alternatives = f" (or {', '.join(d.name for d in minimal[1:])})"
                fix = f"cast both operands to {minimal[0].name}" + (
                    alternatives if minimal[1:] else ""
                )
        return PromotionError(
            f"cannot promote {lhs} and {rhs} (in that order) under policy {self.name!r}: "
            f"{why}; cast explicitly, e.g. {fix}",
            lhs=lhs,
            rhs=rhs,
            policy=self.name,
            fix=fix,
        )


def _type_str(d: DType, ambiguous: bool) -> str:
    return f"{d.name}{'?' if ambiguous else ''}"


def _kind_word(k: Kind) -> str:
    return {
        Kind.bool: "bool",
        Kind.signed: "integer",
        Kind.unsigned: "integer",
        Kind.float: "floating",
        Kind.complex: "complex",
    }[k]


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _literal_kind_fits(lit: Kind, known: Kind) -> bool:
    if lit is Kind.bool:
        return known is Kind.bool
    return known is not Kind.bool and lit.rank <= known.rank


def _suggest_cast(a: DType, b: DType) -> str:
    if (a.kind.rank, a.bits) >= (b.kind.rank, b.bits):
        return f"cast the {b.name} operand to {a.name}"
    return f"cast the {a.name} operand to {b.name}"
