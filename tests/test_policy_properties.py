"""Algebraic properties of every policy, checked with hypothesis.

For every policy: commutativity, associativity and idempotence of ``common_dtype`` on
``(dtype, ambiguous)`` pairs, and for known types the result is an upper bound of both
operands in the lattice and the least one.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import graphdsl as gd
from graphdsl import DType

POLICIES = gd.policy_names()
Operand = tuple[DType, bool]


def promote(p: gd.Policy, a: Operand, b: Operand) -> gd.Promoted | None:
    try:
        return p.common_dtype(a[0], b[0], a[1], b[1])
    except gd.PromotionError:
        return None


def reachable(p: gd.Policy) -> list[Operand]:
    """The types a user can produce: known dtypes, literals, and what they promote to.

    JAX's weak-type rules are not associative on ambiguous types no program can make
    (a weak uint8: bool x weak-uint8 x weak-uint64 gives float64 or int64 by grouping, in
    jax.numpy too), so the properties range over reachable types only.
    """
    seen: set[Operand] = {(d, False) for d in p.lattice.dtypes()}
    seen |= {(p.default_dtype(k), True) for k in (gd.Kind.signed, gd.Kind.float, gd.Kind.complex)}
    frontier = set(seen)
    while frontier:
        new: set[Operand] = set()
        for a in frontier:
            for b in list(seen):
                res = promote(p, a, b)
                if res is not None and (res.dtype, res.ambiguous) not in seen:
                    new.add((res.dtype, res.ambiguous))
        seen |= new
        frontier = new
    return sorted(seen, key=lambda t: (t[0].name, t[1]))


_REACHABLE = {name: reachable(gd.policy(name)) for name in POLICIES}


def operands(p: gd.Policy) -> st.SearchStrategy[Operand]:
    return st.sampled_from(_REACHABLE[p.name])


@pytest.mark.parametrize("name", POLICIES)
@given(data=st.data())
def test_commutative(name: str, data: st.DataObject) -> None:
    p = gd.policy(name)
    a, b = data.draw(operands(p)), data.draw(operands(p))
    assert promote(p, a, b) == promote(p, b, a)


@pytest.mark.parametrize("name", POLICIES)
@settings(suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_associative(name: str, data: st.DataObject) -> None:
    p = gd.policy(name)
    a, b, c = (data.draw(operands(p)) for _ in range(3))
    ab, bc = promote(p, a, b), promote(p, b, c)
    assume(ab is not None and bc is not None)
    assert ab is not None and bc is not None
    left = promote(p, (ab.dtype, ab.ambiguous), c)
    right = promote(p, a, (bc.dtype, bc.ambiguous))
    assume(left is not None or right is not None)
    assert left == right, f"({a} {b}) {c} = {left} but {a} ({b} {c}) = {right}"


@pytest.mark.parametrize("name", POLICIES)
@given(data=st.data())
def test_idempotent(name: str, data: st.DataObject) -> None:
    p = gd.policy(name)
    a = data.draw(operands(p))
    assert promote(p, a, a) == gd.Promoted(*a)


@pytest.mark.parametrize("name", POLICIES)
@given(data=st.data())
def test_known_result_is_the_least_upper_bound(name: str, data: st.DataObject) -> None:
    p = gd.policy(name)
    lat = p.lattice
    a, b = data.draw(st.sampled_from(lat.dtypes())), data.draw(st.sampled_from(lat.dtypes()))
    common = lat.upper_bounds(a) & lat.upper_bounds(b)
    res = promote(p, (a, False), (b, False))
    if res is None:
        assert not common, f"{a} x {b} raised but {common} are upper bounds"
        return
    node = lat.join(a, b)
    assert node is not None
    assert lat.leq(a, node) and lat.leq(b, node)
    assert all(lat.leq(node, c) for c in common), "a smaller upper bound exists"
    if isinstance(node, DType):
        assert res == (node, False)
    else:  # a weak join gives the policy's default dtype, ambiguous
        assert res == (p.default_dtype(node), True)


@pytest.mark.parametrize("name", POLICIES)
def test_associative_exhaustively(name: str) -> None:
    # every triple of reachable types, where both groupings are defined
    p = gd.policy(name)
    types = _REACHABLE[name]
    for a, b, c in itertools.product(types, repeat=3):
        ab, bc = promote(p, a, b), promote(p, b, c)
        if ab is None or bc is None:
            continue
        left = promote(p, (ab.dtype, ab.ambiguous), c)
        right = promote(p, a, (bc.dtype, bc.ambiguous))
        assert left == right, f"({a} {b}) {c} = {left} but {a} ({b} {c}) = {right}"
