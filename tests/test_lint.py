"""Lossy-promotion lint: gd.passes.lint_lossy and the warn_lossy graph option."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

import pytest

import graphdsl as gd
from graphdsl.passes import LossyCast, LossyCastWarning, lint_lossy

THIS_FILE = "test_lint.py"

Build = Callable[[gd.Symbol, gd.Symbol], gd.Symbol]


def _line() -> int:
    """The caller's current line number."""
    return sys._getframe(1).f_lineno


def _graph(policy: str, *dtypes: gd.DType, warn_lossy: bool = False) -> gd.Graph:
    types = {f"v{i}": gd.TensorType(d, (4,)) for i, d in enumerate(dtypes)}
    return gd.Graph("lint", input_types=types, policy=policy, warn_lossy=warn_lossy)


def _only(found: list[LossyCast]) -> LossyCast:
    assert len(found) == 1, [str(f) for f in found]
    return found[0]


# ---------------------------------------------------------------------------- reported


def test_int64_to_float16_under_jax() -> None:
    # JAX lattice: int64 -> f* -> float16, so int64 + float16 computes in float16
    g = _graph("jax", gd.int64, gd.float16)
    a, h = g.inputs
    line = _line() + 1
    g.output(a + h)
    w = _only(lint_lossy(g))
    assert (w.operand, w.src, w.dst) == (0, gd.int64, gd.float16)
    assert w.node.op == "add"
    assert "magnitude" in w.problem and "65504" in w.problem
    assert "gd.ops.cast" in w.fix
    text = str(w)
    assert f"add at {THIS_FILE}:{line}" in text
    assert "int64 -> float16" in text and w.fix in text


def test_int64_to_float16_fix_silences_it() -> None:
    g = _graph("jax", gd.int64, gd.float16)
    a, h = g.inputs
    g.output(a.cast(gd.float32) + h)  # the fix: an explicit cast to a dtype that holds both
    assert lint_lossy(g) == []


def test_uint32_to_int32_under_jax_x32() -> None:
    # x64 off: uint32 x int32 -> int32, so uint32 values above 2**31 - 1 wrap
    g = _graph("jax-x32", gd.uint32, gd.int32)
    u, i = g.inputs
    g.output(i - u)
    w = _only(lint_lossy(g))
    assert (w.operand, w.src, w.dst) == (1, gd.uint32, gd.int32)
    assert "magnitude" in w.problem
    assert w.fix


def test_uint32_to_int32_is_fine_with_x64() -> None:
    """Under jax (x64 on) the same sum goes to int64, which holds every uint32."""
    g = _graph("jax", gd.uint32, gd.int32)
    u, i = g.inputs
    g.output(i - u)
    assert lint_lossy(g) == []


def test_large_integer_literal_rounded_into_float32() -> None:
    g = _graph("default", gd.float32)
    (x,) = g.inputs
    line = _line() + 1
    g.output(x + 16777217)  # 2**24 + 1 is not a float32
    w = _only(lint_lossy(g))
    assert w.operand == 1 and w.dst is gd.float32
    assert "16777217" in w.problem and "16777216" in w.problem
    assert "16777216" in w.fix
    assert f"{THIS_FILE}:{line}" in str(w)


@pytest.mark.parametrize("policy", ["default", "jax", "jax-x32", "anvil"])
def test_large_integer_literal_rounded_under_each_policy(policy: str) -> None:
    g = _graph(policy, gd.float32)
    (x,) = g.inputs
    g.output(x * 16777217)
    assert _only(lint_lossy(g)).dst is gd.float32


def test_integer_literal_rounded_into_float16() -> None:
    g = _graph("default", gd.float16)
    (x,) = g.inputs
    g.output(x + 2049)  # float16 has 11 significant bits: 2049 -> 2048
    w = _only(lint_lossy(g))
    assert "2049" in w.problem and "2048" in w.problem


def test_literal_fix_silences_it() -> None:
    g = _graph("default", gd.float32)
    (x,) = g.inputs
    g.output(x + 16777216, x + 16777216.0)
    assert lint_lossy(g) == []


def test_int32_into_float32_loses_precision() -> None:
    g = _graph("jax", gd.int32, gd.float32)
    i, f = g.inputs
    g.output(i * f)
    w = _only(lint_lossy(g))
    assert (w.src, w.dst) == (gd.int32, gd.float32)
    assert "precision" in w.problem


# ---------------------------------------------------------------------------- not reported


@pytest.mark.parametrize(
    ("policy", "lhs", "rhs"),
    [
        ("default", gd.int8, gd.int16),
        ("default", gd.float16, gd.float32),
        ("default", gd.uint8, gd.int16),
        ("default", gd.int16, gd.float32),
        ("default", gd.bool, gd.int8),
        ("jax", gd.uint32, gd.int64),
        ("jax", gd.float32, gd.float64),
        ("max", gd.int8, gd.int32),
        ("anvil", gd.uint16, gd.int32),
        ("array-api", gd.float16, gd.float64),
    ],
)
def test_lossless_promotions_are_not_reported(policy: str, lhs: gd.DType, rhs: gd.DType) -> None:
    g = _graph(policy, lhs, rhs)
    a, b = g.inputs
    g.output(a + b, b - a)
    assert lint_lossy(g) == []


def test_exact_literals_are_not_reported() -> None:
    g = _graph("default", gd.int8, gd.float32, gd.float16)
    i, f, h = g.inputs
    g.output(i + 1, i * -128, f * 0.5, f + 16777216, h * 2048, h - 0.25)
    assert lint_lossy(g) == []


def test_float_literal_in_its_own_dtype_is_not_a_lossy_cast() -> None:
    """Under 'default' 0.1 is a float32? literal in a float32 op: no conversion happens.

    Reporting "float32 -> float32 rounds the literal 0.1" would flag every decimal
    literal in float32 code; the issue asks about *large integer* literals rounded into
    float32 (a value the user wrote exactly and that is no longer exact).
    """
    g = _graph("default", gd.float32)
    (x,) = g.inputs
    g.output(x * 0.1)
    assert lint_lossy(g) == []


def test_truth_value_conversions_are_not_reported() -> None:
    g = _graph("default", gd.int64, gd.float64, gd.float32)
    i, d, f = g.inputs
    g.output(gd.ops.where(i, f, f), gd.ops.logical_and(d, i), gd.ops.logical_not(f))
    assert lint_lossy(g) == []


# ---------------------------------------------------------------------------- warn_lossy


def test_warn_lossy_warns_at_build_time_naming_the_line() -> None:
    g = _graph("jax", gd.int64, gd.float16, warn_lossy=True)
    a, h = g.inputs
    line = _line() + 2
    with pytest.warns(LossyCastWarning, match="int64 -> float16") as record:
        a + h
    assert len(record) == 1
    msg = str(record[0].message)
    assert f"add at {THIS_FILE}:{line}" in msg
    assert "gd.ops.cast" in msg  # the fix


def _add_operator(a: gd.Symbol, b: gd.Symbol) -> int:
    line = _line() + 1
    a + b
    return line


def _add_function(a: gd.Symbol, b: gd.Symbol) -> int:
    line = _line() + 1
    gd.ops.add(a, b)
    return line


@pytest.mark.parametrize("build", [_add_operator, _add_function], ids=["operator", "ops.add"])
def test_warning_is_attributed_to_the_users_line(build: Callable[..., int]) -> None:
    """The warning's own file and line (what Python prints) are the user's, not graphdsl's."""
    g = _graph("jax-x32", gd.uint32, gd.int32, warn_lossy=True)
    u, i = g.inputs
    with pytest.warns(LossyCastWarning) as record:
        line = build(u, i)
    (w,) = record
    assert (w.filename, w.lineno) == (__file__, line), f"warning points at {w.filename}:{w.lineno}"


def test_no_warning_without_warn_lossy_or_for_lossless() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _graph("jax", gd.int64, gd.float16)
        a, h = g.inputs
        g.output(a + h)
        g = _graph("default", gd.int8, gd.int16, warn_lossy=True)
        a, b = g.inputs
        g.output(a + b, a * 2)


def _lossy_jax_graph() -> gd.Graph:
    g = _graph("jax", gd.int64, gd.float16, warn_lossy=True)
    a, h = g.inputs
    g.output(a + h)
    return g


def _lossy_default_graph() -> gd.Graph:
    g = _graph("default", gd.int64, gd.uint64, gd.float32, warn_lossy=True)
    i, u, f = g.inputs
    g.output(i + u, f + 16777217, i * 2)
    return g


def test_passes_do_not_warn_again() -> None:
    with pytest.warns(LossyCastWarning):
        g = _lossy_jax_graph()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gd.passes.run_passes(g, verify=True)


def test_lint_matches_warn_lossy() -> None:
    """lint_lossy(g) reports what warn_lossy=True warned about while g was built."""
    with pytest.warns(LossyCastWarning) as record:
        g = _lossy_default_graph()
    assert sorted(str(w.message) for w in record) == sorted(str(x) for x in lint_lossy(g))
    assert len(record) == 3  # int64 -> float32, uint64 -> float32 (f* default), the literal
