"""The implicit_cast pass: every conversion an explicit Cast, literals folded to constants.

Goldens are typed in and were checked by hand against the lattices (seed 000/001 for the
JAX family, seed 003 for MAX, seed 004 for {anvil}, seed 002 for the Array API).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

import floats
import numpy as np
import pytest

import graphdsl as gd
from graphdsl.passes import implicit_cast, run_passes
from graphdsl.passes.implicit_cast import is_lossless
from graphdsl.verify import verify

THIS_FILE = "test_implicit_cast.py"


def _line() -> int:
    """The caller's current line number (to point at the line that built a node)."""
    return sys._getframe(1).f_lineno


def _vec(d: gd.DType, n: int = 3) -> gd.TensorType:
    return gd.TensorType(d, (n,))


def _ops(g: gd.Graph) -> Counter[str]:
    return Counter(node.op for node in g.nodes)


def _casts(g: gd.Graph) -> list[gd.Symbol]:
    return [node for node in g.nodes if node.op == "cast"]


def _check_explicit(g2: gd.Graph) -> None:
    """What every implicit_cast result must satisfy."""
    verify(g2, explicit_casts=True)
    for node in g2.nodes:
        assert not node.type.ambiguous, f"%{node.id} {node.op} is still {node.type}"
        assert node.op != "literal", f"literal %{node.id} survived"
        for arg, want in zip(node.inputs, node.in_dtypes, strict=True):
            assert arg.dtype is want, f"%{node.id} {node.op}: operand {arg.type} != {want.name}"
    for c in _casts(g2):
        assert c.inputs[0].dtype is not c.attrs["to"], f"cast to the same dtype: %{c.id}"
        assert c.inputs[0].op not in ("literal", "constant"), f"runtime cast of a constant %{c.id}"


# ---------------------------------------------------------------------------- goldens


def _mixed_default_like(policy: str) -> gd.Graph:
    """int16 and float32 inputs with an int and a float literal, and int64 + uint64."""
    types = {"a": gd.int16, "b": gd.float32, "l": gd.int64, "m": gd.uint64}
    g = gd.Graph("mixed", input_types={k: _vec(v) for k, v in types.items()}, policy=policy)
    a, b, i64, u64 = g.inputs
    g.output(a * 2 + b, a * 2.5, i64 + u64)
    return g


def _mixed_x32() -> gd.Graph:
    types = {"a": gd.int16, "b": gd.float32, "u": gd.uint32, "i": gd.int32}
    g = gd.Graph("mixed", input_types={k: _vec(v) for k, v in types.items()}, policy="jax-x32")
    a, b, u, i = g.inputs
    g.output(a * 2 + b, a * 2.5, u + i)
    return g


def _mixed_strict() -> gd.Graph:
    # strict: known types never promote into each other; only weak literals do
    types = {"a": gd.int16, "b": gd.int16, "f": gd.float32}
    g = gd.Graph("mixed", input_types={k: _vec(v) for k, v in types.items()}, policy="jax-strict")
    a, b, f = g.inputs
    g.output(a * 2 + b, f * 2)
    return g


def _mixed_max() -> gd.Graph:
    # max: a literal takes the known dtype exactly, so a * 2.5 (int16) is an error there
    g = gd.Graph(
        "mixed",
        input_types={"a": _vec(gd.int16), "b": _vec(gd.float32), "l": _vec(gd.int64),
                     "m": _vec(gd.uint64)},
        policy="max",
    )  # fmt: skip
    a, b, i64, u64 = g.inputs
    g.output(a * 2 + b, b * 0.5, i64 + u64)
    return g


def _mixed_max_graph() -> gd.Graph:
    # max-graph: int16 converts exactly into float32; a literal takes the tensor's dtype;
    # int8 / 2 divides in float64 (max.graph's div); exp keeps an int32 operand's dtype,
    # computed in float64: its result converts back with an explicit cast
    types = {"a": gd.int16, "b": gd.float32, "i": gd.int8, "n": gd.int32}
    g = gd.Graph("mixed", input_types={k: _vec(v) for k, v in types.items()}, policy="max-graph")
    a, b, i, n = g.inputs
    g.output(a * 2 + b, i / 2, gd.ops.exp(n))
    return g


def _mixed_array_api() -> gd.Graph:
    # array-api: only same-kind promotions are defined
    types = {"a": gd.int8, "b": gd.int16, "h": gd.float16, "f": gd.float32}
    g = gd.Graph("mixed", input_types={k: _vec(v) for k, v in types.items()}, policy="array-api")
    a, b, h, f = g.inputs
    g.output(a * 2 + b, h * 2 + f)
    return g


BUILDERS: dict[str, Callable[[], gd.Graph]] = {
    "default": lambda: _mixed_default_like("default"),
    "jax": lambda: _mixed_default_like("jax"),
    "jax-x32": _mixed_x32,
    "jax-strict": _mixed_strict,
    "max": _mixed_max,
    "max-graph": _mixed_max_graph,
    "anvil": lambda: _mixed_default_like("anvil"),
    "array-api": _mixed_array_api,
}

# The user's graphs, as built (ambiguous types carry '?').
BEFORE = {
    "max-graph": """\
graph mixed(%a: int16[3], %b: float32[3], %i: int8[3], %n: int32[3]) {
  %0: int64?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = add %1, %b
  %3: float64[3] = div %i, %0
  %4: int32[3] = exp %n
  return %2, %3, %4
}""",
    "default": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int32?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = add %1, %b
  %3: float32?[] = literal 2.5
  %4: float32?[3] = mul %a, %3
  %5: float32?[3] = add %l, %m
  return %2, %4, %5
}""",
    "jax": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int64?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = add %1, %b
  %3: float64?[] = literal 2.5
  %4: float64?[3] = mul %a, %3
  %5: float64?[3] = add %l, %m
  return %2, %4, %5
}""",
    "jax-x32": """\
graph mixed(%a: int16[3], %b: float32[3], %u: uint32[3], %i: int32[3]) {
  %0: int32?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = add %1, %b
  %3: float32?[] = literal 2.5
  %4: float32?[3] = mul %a, %3
  %5: int32[3] = add %u, %i
  return %2, %4, %5
}""",
    "jax-strict": """\
graph mixed(%a: int16[3], %b: int16[3], %f: float32[3]) {
  %0: int64?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: int16[3] = add %1, %b
  %3: float32[3] = mul %f, %0
  return %2, %3
}""",
    "max": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int32?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = add %1, %b
  %3: float32?[] = literal 0.5
  %4: float32[3] = mul %b, %3
  %5: float16[3] = add %l, %m
  return %2, %4, %5
}""",
    "anvil": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int32?[] = literal 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = add %1, %b
  %3: float32?[] = literal 2.5
  %4: float32?[3] = mul %a, %3
  %5: int64[3] = add %l, %m
  return %2, %4, %5
}""",
    "array-api": """\
graph mixed(%a: int8[3], %b: int16[3], %h: float16[3], %f: float32[3]) {
  %0: int32?[] = literal 2
  %1: int8[3] = mul %a, %0
  %2: int16[3] = add %1, %b
  %3: float16[3] = mul %h, %0
  %4: float32[3] = add %3, %f
  return %2, %4
}""",
}

# After implicit_cast. Why each cast is there:
#   default   int16 x float32 -> float32 (JAX lattice); int16 x f32? -> f32? ({anvil} exception:
#             a float literal meets an integer); int64 x uint64 -> f* -> float32 (default float)
#   jax       as default, but the weak float is float64 (x64)
#   jax-x32   uint32 x int32 -> int32 (x64 off); the weak float is float32
#   jax-strict no known x known promotion at all: only literals become constants
#   max       int16 -> ... -> int64 -> float16 -> bfloat16 -> float32; int64 x uint64 -> float16
#   anvil     uint64 -> int64 in {anvil}'s lattice, so only %m is cast
#   array-api int8 x int16 -> int16, float16 x float32 -> float32; literals take the array's dtype
AFTER = {
    "max-graph": """\
graph mixed(%a: int16[3], %b: float32[3], %i: int8[3], %n: int32[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = cast %1, to=float32
  %3: float32[3] = add %2, %b
  %4: float64[3] = cast %i, to=float64
  %5: float64[] = constant 2.0
  %6: float64[3] = div %4, %5
  %7: float64[3] = cast %n, to=float64
  %8: float64[3] = exp %7
  %9: int32[3] = cast %8, to=int32
  return %3, %6, %9
}""",
    "default": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = cast %1, to=float32
  %3: float32[3] = add %2, %b
  %4: float32[3] = cast %a, to=float32
  %5: float32[] = constant 2.5
  %6: float32[3] = mul %4, %5
  %7: float32[3] = cast %l, to=float32
  %8: float32[3] = cast %m, to=float32
  %9: float32[3] = add %7, %8
  return %3, %6, %9
}""",
    "jax": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = cast %1, to=float32
  %3: float32[3] = add %2, %b
  %4: float64[3] = cast %a, to=float64
  %5: float64[] = constant 2.5
  %6: float64[3] = mul %4, %5
  %7: float64[3] = cast %l, to=float64
  %8: float64[3] = cast %m, to=float64
  %9: float64[3] = add %7, %8
  return %3, %6, %9
}""",
    "jax-x32": """\
graph mixed(%a: int16[3], %b: float32[3], %u: uint32[3], %i: int32[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = cast %1, to=float32
  %3: float32[3] = add %2, %b
  %4: float32[3] = cast %a, to=float32
  %5: float32[] = constant 2.5
  %6: float32[3] = mul %4, %5
  %7: int32[3] = cast %u, to=int32
  %8: int32[3] = add %7, %i
  return %3, %6, %8
}""",
    "jax-strict": """\
graph mixed(%a: int16[3], %b: int16[3], %f: float32[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: int16[3] = add %1, %b
  %3: float32[] = constant 2.0
  %4: float32[3] = mul %f, %3
  return %2, %4
}""",
    "max": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = cast %1, to=float32
  %3: float32[3] = add %2, %b
  %4: float32[] = constant 0.5
  %5: float32[3] = mul %b, %4
  %6: float16[3] = cast %l, to=float16
  %7: float16[3] = cast %m, to=float16
  %8: float16[3] = add %6, %7
  return %3, %5, %8
}""",
    "anvil": """\
graph mixed(%a: int16[3], %b: float32[3], %l: int64[3], %m: uint64[3]) {
  %0: int16[] = constant 2
  %1: int16[3] = mul %a, %0
  %2: float32[3] = cast %1, to=float32
  %3: float32[3] = add %2, %b
  %4: float32[3] = cast %a, to=float32
  %5: float32[] = constant 2.5
  %6: float32[3] = mul %4, %5
  %7: int64[3] = cast %m, to=int64
  %8: int64[3] = add %l, %7
  return %3, %6, %8
}""",
    "array-api": """\
graph mixed(%a: int8[3], %b: int16[3], %h: float16[3], %f: float32[3]) {
  %0: int8[] = constant 2
  %1: int8[3] = mul %a, %0
  %2: int16[3] = cast %1, to=int16
  %3: int16[3] = add %2, %b
  %4: float16[] = constant 2.0
  %5: float16[3] = mul %h, %4
  %6: float32[3] = cast %5, to=float32
  %7: float32[3] = add %6, %f
  return %3, %7
}""",
}


def test_goldens_cover_every_policy() -> None:
    assert set(BUILDERS) == set(BEFORE) == set(AFTER) == set(gd.policy_names())


@pytest.mark.parametrize("policy", sorted(BUILDERS))
def test_golden_cast_placement(policy: str) -> None:
    g = BUILDERS[policy]()
    before = str(g)
    assert before == BEFORE[policy]
    g2 = implicit_cast(g)
    assert str(g2) == AFTER[policy]
    assert str(g) == before, "implicit_cast changed its input graph"
    assert g2 is not g
    assert g2.policy is g.policy
    _check_explicit(g2)


@pytest.mark.parametrize("policy", sorted(BUILDERS))
def test_cast_graph_computes_what_the_original_does(policy: str) -> None:
    g = BUILDERS[policy]()
    rng = np.random.default_rng(7)
    inputs = {}
    for s in g.inputs:
        info = np.iinfo(s.dtype.np) if s.dtype.is_integer else None
        if info is not None:
            lo, hi = max(info.min, -1000), min(info.max, 1000)
            inputs[s.attrs["name"]] = rng.integers(lo, hi, size=3, endpoint=True, dtype=s.dtype.np)
        else:
            inputs[s.attrs["name"]] = (rng.standard_normal(3) * 100).astype(s.dtype.np)
    want = gd.evaluate(g, inputs)
    got = gd.evaluate(implicit_cast(g), inputs)
    for w, o in zip(want, got, strict=True):
        # elementwise ops that round once (exp of an int32: the same float64 kernel on the
        # same values, then an integer): bit for bit, zero signs included (tests/floats.py)
        floats.assert_bits(o, w)


def test_verify_rejects_the_uncast_graph() -> None:
    """The explicit_casts check is real: the user's graphs fail it, their cast versions pass."""
    g = gd.Graph("uncast", input_types={"a": _vec(gd.int16), "b": _vec(gd.float32)})
    a, b = g.inputs
    g.output(a + b)
    verify(g)
    with pytest.raises(gd.GraphError, match="implicit_cast pass should have inserted a cast"):
        verify(g, explicit_casts=True)
    verify(implicit_cast(g), explicit_casts=True)
    g = gd.Graph("literal", input_types={"b": _vec(gd.float32)})
    g.output(g.inputs[0] * 2)
    with pytest.raises(gd.GraphError, match="ambiguous literal survived"):
        verify(g, explicit_casts=True)
    verify(implicit_cast(g), explicit_casts=True)


# ---------------------------------------------------------------------------- literals


def test_literals_become_constants_of_their_final_dtype() -> None:
    g = gd.Graph(
        "lits",
        input_types={"h": gd.float16, "d": gd.float64, "l": gd.int64, "u": gd.uint8},
    )
    h, d, i64, u = g.inputs
    g.output(h + 0.1, d + 0.1, i64 + 3_000_000_000, u * 200, h * 2, 7, 2.5)
    g2 = implicit_cast(g)
    _check_explicit(g2)
    consts = [n for n in g2.nodes if n.op == "constant"]
    got = [(n.dtype, n.attrs["value"]) for n in consts]
    # each literal stored once, directly in the dtype the op computes in: no detour through
    # its 32-bit default (0.1 in float64 is the float64 nearest 0.1, not float32(0.1))
    expected = [
        (gd.float16, np.float16(0.1)),
        (gd.float64, np.float64(0.1)),
        (gd.int64, np.int64(3_000_000_000)),
        (gd.uint8, np.uint8(200)),
        (gd.float16, np.float16(2)),
        (gd.int32, np.int32(7)),  # literals returned as outputs keep their default dtype
        (gd.float32, np.float32(2.5)),
    ]
    assert len(got) == len(expected)
    for (dt, value), (want_dt, want_value) in zip(got, expected, strict=True):
        assert dt is want_dt
        assert value.dtype == want_dt.np and value.shape == ()
        floats.assert_bits(value, np.asarray(want_value))  # literals: exact
    assert np.float64(0.1) != np.float64(np.float32(0.1))  # the detour would be visible


def test_literal_that_does_not_fit_names_value_dtype_op_and_line() -> None:
    g = gd.Graph("fit", input_types={"x": gd.int8})
    (x,) = g.inputs
    line = _line() + 2
    with pytest.raises(gd.LiteralError) as info:
        x + 1000
    msg = str(info.value)
    assert "1000" in msg and "int8" in msg and "add" in msg
    assert f"{THIS_FILE}:{line}" in msg


def test_identical_literals_become_one_constant() -> None:
    g = gd.Graph("lits", input_types={"x": _vec(gd.float32)})
    (x,) = g.inputs
    y = x
    for _ in range(50):
        y = y * 1.5
    g.output(y)
    g2 = implicit_cast(g)
    assert _ops(g)["literal"] == 1  # a graph interns its literals: one node per distinct value
    assert _ops(g)["mul"] == 50
    assert _ops(g2)["constant"] == 1
    assert _ops(g2)["literal"] == 0


def test_zero_and_negative_zero_literals_stay_distinct() -> None:
    g = gd.Graph("zeros", input_types={"x": gd.float32})
    (x,) = g.inputs
    g.output(x + 0.0, x + (-0.0))
    g2 = implicit_cast(g)
    consts = [n.attrs["value"] for n in g2.nodes if n.op == "constant"]
    assert sorted(np.signbit(c).item() for c in consts) == [False, True]
    out = gd.evaluate(g2, {"x": np.float32(-0.0)})
    assert not np.signbit(out[0]) and np.signbit(out[1])  # -0 + 0 = +0, -0 + -0 = -0


# ---------------------------------------------------------------------------- deduplication


def test_identical_casts_of_one_value_are_made_once() -> None:
    g = gd.Graph("dedup", input_types={"x": _vec(gd.int16), "f": _vec(gd.float32)})
    x, f = g.inputs
    acc = f
    for _ in range(2000):
        acc = acc + x
    g.output(acc)
    g2 = implicit_cast(g)
    casts = _casts(g2)
    assert len(casts) == 1
    assert casts[0].inputs[0] is g2.inputs[0] and casts[0].attrs["to"] is gd.float32
    assert _ops(g2)["add"] == 2000
    assert all(n.inputs[1] is casts[0] for n in g2.nodes if n.op == "add")
    _check_explicit(g2)


def test_casts_of_one_value_to_different_dtypes_are_distinct() -> None:
    g = gd.Graph("two", input_types={"x": _vec(gd.int16), "f": _vec(gd.float32),
                                     "d": _vec(gd.float64)})  # fmt: skip
    x, f, d = g.inputs
    g.output(x + f, f - x, x + d, d * x)
    g2 = implicit_cast(g)
    targets = sorted(c.attrs["to"].name for c in _casts(g2) if c.inputs[0] is g2.inputs[0])
    # x -> float32 serves x + f and f - x; x -> float64 serves x + d and d * x
    assert targets == ["float32", "float64"]
    assert len(_casts(g2)) == 2
    _check_explicit(g2)


def test_no_cast_when_dtypes_already_agree() -> None:
    g = gd.Graph("same", input_types={"x": _vec(gd.float32), "y": _vec(gd.float32)})
    x, y = g.inputs
    g.output(x * y + 2.0, gd.ops.where(x > y, x, y), gd.ops.sum(x * 3), x / y)
    g2 = implicit_cast(g)
    assert _casts(g2) == []
    _check_explicit(g2)


# ---------------------------------------------------------------------------- chains


def _operand_cast(g2: gd.Graph, op: str, k: int = 0) -> gd.Symbol:
    (node,) = [n for n in g2.nodes if n.op == op]
    c = node.inputs[k]
    assert c.op == "cast", f"operand {k} of {op} is {c.op}, not a cast"
    return c


def test_lossless_chain_is_shortened() -> None:
    """int8 -> int32 (explicit) -> int64 (implicit) is int8 -> int64: one step, same values."""
    g = gd.Graph("chain", input_types={"x": _vec(gd.int8), "l": _vec(gd.int64)})
    x, wide = g.inputs
    c = x.cast(gd.int32)
    g.output(c + wide)
    g2 = implicit_cast(g)
    assert str(g2) == """\
graph chain(%x: int8[3], %l: int64[3]) {
  %0: int32[3] = cast %x, to=int32
  %1: int64[3] = cast %x, to=int64
  %2: int64[3] = add %1, %l
  return %2
}"""
    cast = _operand_cast(g2, "add")
    assert cast.inputs[0] is g2.inputs[0] and cast.in_dtypes == (gd.int8,)
    _check_explicit(g2)
    inputs = {"x": np.array([-128, 0, 127], np.int8), "l": np.array([1, 2, 3], np.int64)}
    np.testing.assert_array_equal(gd.evaluate(g2, inputs)[0], [-127, 2, 130])


def test_longer_lossless_chain_goes_back_to_the_source() -> None:
    g = gd.Graph("chain", input_types={"x": _vec(gd.int8), "l": _vec(gd.int64)})
    x, wide = g.inputs
    g.output(x.cast(gd.int16).cast(gd.int32) + wide)
    cast = _operand_cast(implicit_cast(g), "add")
    assert cast.inputs[0].op == "input" and cast.inputs[0].dtype is gd.int8


def test_shortened_chain_shares_the_direct_cast() -> None:
    """x + l and x.cast(int32) + l both need x as int64: one cast node serves both."""
    g = gd.Graph("share", input_types={"x": _vec(gd.int8), "l": _vec(gd.int64)})
    x, wide = g.inputs
    g.output(x + wide, x.cast(gd.int32) + wide)
    g2 = implicit_cast(g)
    to64 = [c for c in _casts(g2) if c.attrs["to"] is gd.int64]
    assert len(to64) == 1 and to64[0].inputs[0] is g2.inputs[0]
    _check_explicit(g2)


def test_lossy_round_trip_chain_is_kept() -> None:
    """float64 -> float32 -> float64 rounds: the float32 value is what gets widened."""
    g = gd.Graph("keep", input_types={"d": _vec(gd.float64)})
    (d,) = g.inputs
    f = d.cast(gd.float32)
    g.output(f + d)
    g2 = implicit_cast(g)
    assert str(g2) == """\
graph keep(%d: float64[3]) {
  %0: float32[3] = cast %d, to=float32
  %1: float64[3] = cast %0, to=float64
  %2: float64[3] = add %1, %d
  return %2
}"""
    _check_explicit(g2)
    vals = np.array([0.1, 1e300, 1 / 3], np.float64)
    got = gd.evaluate(g2, {"d": vals})[0]
    with np.errstate(over="ignore"):
        rounded = vals.astype(np.float32).astype(np.float64)
    floats.assert_bits(got, rounded + vals)  # a cast and an add, each rounding once
    assert not np.array_equal(got, vals + vals)  # shortening would have been visible


@pytest.mark.parametrize(
    ("src", "mid", "other"),
    [
        (gd.int32, gd.int8, gd.int64),  # narrowing first step wraps
        (gd.int8, gd.uint8, gd.int16),  # sign change: -1 -> 255
        (gd.float32, gd.float16, gd.float32),  # rounding first step
        (gd.int32, gd.float32, gd.float64),  # int32 -> float32 rounds above 2**24
    ],
)
def test_chain_with_lossy_first_step_is_kept(src: gd.DType, mid: gd.DType, other: gd.DType) -> None:
    g = gd.Graph("keep", input_types={"x": _vec(src), "o": _vec(other)})
    x, o = g.inputs
    g.output(x.cast(mid) + o)
    g2 = implicit_cast(g)
    cast = _operand_cast(g2, "add")
    assert cast.inputs[0].op == "cast" and cast.inputs[0].dtype is mid
    assert cast.attrs["to"] is other
    _check_explicit(g2)


def test_bool_round_trip_through_int_drops_both_casts() -> None:
    """where(b.cast(int8), ...): the condition is int8 -> bool of a bool -> int8, i.e. b."""
    g = gd.Graph("cond", input_types={"b": _vec(gd.bool), "a": _vec(gd.float32)})
    b, a = g.inputs
    g.output(gd.ops.where(b.cast(gd.int8), a, 0.0))
    g2 = implicit_cast(g)
    (where,) = [n for n in g2.nodes if n.op == "where"]
    assert where.inputs[0] is g2.inputs[0]
    _check_explicit(g2)


def test_chain_through_float_into_narrower_int_is_kept() -> None:
    """uint8 -> float16 is lossless, but float16 -> int8 saturates while uint8 -> int8 wraps.

    Under a user lattice where float16 promotes to int8, cast(cast(x, float16), int8) maps
    200 to 127; cast(x, int8) maps it to -56. So the chain is not value preserving and must
    stay two casts.
    """
    lat = gd.Lattice("f16-to-i8", {gd.float16: [gd.int8]})
    pol = gd.Policy("f16-to-i8", lat, literals="anvil")
    g = gd.Graph("sat", input_types={"x": _vec(gd.uint8), "y": _vec(gd.int8)}, policy=pol)
    x, y = g.inputs
    g.output(x.cast(gd.float16) + y)
    inputs = {"x": np.array([200, 1, 255], np.uint8), "y": np.zeros(3, np.int8)}
    want = gd.evaluate(g, inputs)[0]
    np.testing.assert_array_equal(want, [127, 1, 127])
    g2 = implicit_cast(g)
    np.testing.assert_array_equal(gd.evaluate(g2, inputs)[0], want)
    cast = _operand_cast(g2, "add")
    assert cast.inputs[0].dtype is gd.float16


# ---------------------------------------------------------------------------- is_lossless


@pytest.mark.parametrize(
    ("src", "dst", "lossless"),
    [
        (gd.int8, gd.int8, True),
        (gd.bool, gd.int8, True),
        (gd.bool, gd.float16, True),
        (gd.int8, gd.bool, False),
        (gd.int8, gd.int16, True),
        (gd.int16, gd.int8, False),
        (gd.int8, gd.uint8, False),  # negatives
        (gd.uint8, gd.int8, False),  # 128..255
        (gd.uint8, gd.int16, True),
        (gd.uint32, gd.int32, False),
        (gd.uint32, gd.int64, True),
        (gd.int64, gd.uint64, False),
        (gd.uint8, gd.float16, True),  # 0..255 within float16's 11 bits
        (gd.int8, gd.float16, True),
        (gd.uint16, gd.float16, False),  # 65535 > 2**11 and > float16's max
        (gd.int16, gd.float32, True),
        (gd.int32, gd.float32, False),  # 2**24 + 1
        (gd.int32, gd.float64, True),
        (gd.int64, gd.float64, False),
        (gd.float16, gd.float32, True),
        (gd.float32, gd.float16, False),
        (gd.float16, gd.bfloat16, False),  # 11 -> 8 significant bits
        (gd.bfloat16, gd.float16, False),  # bfloat16's range exceeds float16's
        (gd.bfloat16, gd.float32, True),
        (gd.float32, gd.float64, True),
        (gd.float64, gd.float32, False),
        (gd.float32, gd.int64, False),
        (gd.float32, gd.complex64, True),
        (gd.float64, gd.complex64, False),
        (gd.complex64, gd.complex128, True),
        (gd.complex128, gd.complex64, False),
    ],
)
def test_is_lossless(src: gd.DType, dst: gd.DType, lossless: bool) -> None:
    assert is_lossless(src, dst) is lossless


@pytest.mark.parametrize(
    ("src", "dst"), [(gd.int8, gd.int16), (gd.uint8, gd.float16), (gd.int16, gd.float32)]
)
def test_is_lossless_round_trips_every_value(src: gd.DType, dst: gd.DType) -> None:
    """Exhaustive check of the claim for small source types."""
    info = np.iinfo(src.np)
    vals = np.arange(info.min, info.max + 1).astype(src.np)
    assert np.array_equal(vals.astype(dst.np).astype(src.np), vals)


def test_is_lossless_false_cases_have_a_witness() -> None:
    witnesses: list[tuple[gd.DType, gd.DType, object]] = [
        (gd.int32, gd.float32, 2**24 + 1),
        (gd.uint16, gd.float16, 2049),
        (gd.float16, gd.bfloat16, 1 + 2**-10),
        (gd.bfloat16, gd.float16, 1e30),
        (gd.uint8, gd.int8, 200),
    ]
    for src, dst, v in witnesses:
        x = np.asarray(v).astype(src.np)
        with np.errstate(all="ignore"):
            in_dst = float(x.astype(dst.np).astype(np.float64))
        assert in_dst != float(x.astype(np.float64)), (src, dst, v)
        assert not is_lossless(src, dst)


# ---------------------------------------------------------------------------- the long chain


def _long_chain(n: int = 2000) -> tuple[gd.Graph, int]:
    g = gd.Graph("chain", input_types={"x": _vec(gd.float32, 1024), "n": _vec(gd.int16, 1024)})
    x, n_ = g.inputs
    y = x
    line = _line() + 2
    for _ in range(n):
        y = y * 1.0001 + n_  # the chain
    g.output(y)
    return g, line


def test_long_chain_pipeline_has_one_cast_and_one_constant() -> None:
    g, _ = _long_chain()
    g2 = run_passes(g, verify=True)
    ops = _ops(g2)
    assert ops == Counter({"mul": 2000, "add": 2000, "input": 2, "cast": 1, "constant": 1})
    (cast,) = _casts(g2)
    assert cast.inputs[0] is g2.inputs[1] and cast.attrs["to"] is gd.float32
    (const,) = [n for n in g2.nodes if n.op == "constant"]
    assert const.attrs["value"].dtype == np.float32
    assert const.attrs["value"].item() == np.float32(1.0001).item()
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(1024).astype(np.float32)
    ns = rng.integers(-3, 3, 1024, dtype=np.int16)
    ref = xs.copy()
    for _ in range(2000):
        ref = ref * np.float32(1.0001) + ns.astype(np.float32)
    # 4000 elementwise ops, each rounding once, in the same order: bit for bit
    floats.assert_bits(gd.evaluate(g2, {"x": xs, "n": ns})[0], ref)


def test_explain_lists_and_groups_conversions() -> None:
    g, line = _long_chain()
    text = g.explain()
    lines = text.splitlines()
    assert lines[0] == "graph chain, policy 'default': 4000 implicit conversions"
    where = f"{THIS_FILE}:{line}"
    mul = [t for t in lines if t.startswith("  mul at")]
    add = [t for t in lines if t.startswith("  add at")]
    assert len(mul) == 1 and len(add) == 1, text
    assert mul[0].startswith(f"  mul at {where} (2000 times): literal 1.0001 -> constant float32")
    assert "(operand types float32[1024], float32?[])" in mul[0]
    assert add[0].startswith(f"  add at {where} (2000 times): operand 1 %n int16 -> float32")
    assert "(operand types float32[1024], int16[1024])" in add[0]
    assert "join in the jax lattice: float32; int16 -> int32 -> int64 -> f* ->" in add[0]
    assert text.count("| y = y * 1.0001 + n_  # the chain") == 2


def test_explain_names_policy_lattice_path_anvil_rule_and_source() -> None:
    g = gd.Graph("ex", input_types={"a": _vec(gd.int16), "b": _vec(gd.float32)}, policy="anvil")
    a, b = g.inputs
    line = _line() + 1
    y = a * 2 + b  # explained
    g.output(y)
    text = g.explain()
    assert text.splitlines()[0] == "graph ex, policy 'anvil': 2 implicit conversions"
    where = f"{THIS_FILE}:{line}"
    mul = f"  mul at {where}: literal 2 -> constant int16 (operand types int16[3], int32?[])"
    add = f"  add at {where}: operand 0 %1 int16 -> float32 (operand types int16[3], float32[3])"
    assert mul in text and add in text
    assert "{anvil}: the ambiguous int32? yields to the known int16" in text
    assert "join in the anvil lattice: int16 -> int32 -> int64 -> float32; float32" in text
    assert text.count("| y = a * 2 + b  # explained") == 2


def test_explain_names_the_anvil_exception_and_weak_join() -> None:
    types = {"a": gd.int16, "l": gd.int64, "m": gd.uint64}
    g = gd.Graph("ex", input_types={k: _vec(v) for k, v in types.items()})
    a, i64, u64 = g.inputs
    g.output(a * 2.5, i64 + u64)
    text = g.explain()
    assert "{anvil} exception" in text  # a float literal meets an integer: both join
    assert "operand 0 %a int16 -> float32" in text
    # int64 x uint64 lands on the weak f*: the default float, as DESIGN.md says
    assert "operand 0 %l int64 -> float32" in text and "operand 1 %m uint64 -> float32" in text
    assert "f* is weak, so the result is the default float32" in text


def test_explain_lists_nothing_when_nothing_converts() -> None:
    g = gd.Graph("none", input_types={"x": _vec(gd.float32)}, policy="jax")
    (x,) = g.inputs
    g.output(x * x)
    assert g.explain() == "graph none, policy 'jax': 0 implicit conversions"
