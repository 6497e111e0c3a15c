"""The ``max-graph`` policy against Modular's max.graph 26, cell by cell.

The goldens were recorded from the real ``max`` package (26.7.0) by
``scripts/record_max_graph.py`` (``max`` itself is not needed here):
``tests/data/max_graph_promotion.json`` holds the result dtype (or the error) of every
binary op on every ordered pair of dtypes, of Python literals against every dtype, of unary
ops and of a few single probes; ``tests/data/max_graph_programs.json`` holds programs run on
max.graph's CPU engine, with their outputs.

Each test builds the same expression with graphdsl under ``policy="max-graph"`` and
compares the result dtype, or the error, which maps to graphdsl's exception as follows:
max.graph's "Failed to create op" (its compiler's "Unsafe cast from X to Y") is a
``PromotionError``, "Can't promote python float to dtype(...)" a ``PromotionError`` too (a
float literal never becomes an integer or bool: a type error, whatever the value), and
"Can't promote python int with value (...) ... It would lose precision" a ``LiteralError``.

Where graphdsl deliberately differs (its ops refuse arithmetic on bool in every policy; its
logical ops take operands by truth value; a few float ops on integers are not yet typed by
the policy) the cell is listed with the reason and *pinned*: the test asserts what graphdsl
does there, so a deviation that disappears is reported as well. The dtypes of max.graph
that graphdsl lacks are left out of the cell tests; ``LACKS`` names them, and a test fails
when graphdsl gains one (its cells are then compared: check them).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from backend import run

import graphdsl as gd
from graphdsl import DType
from graphdsl.passes.implicit_cast import is_lossless

DATA = Path(__file__).parent / "data"
PROMOTION: dict[str, Any] = json.loads((DATA / "max_graph_promotion.json").read_text())
PROGRAMS: dict[str, Any] = json.loads((DATA / "max_graph_programs.json").read_text())
POLICY = "max-graph"

MAX_DTYPES: list[str] = PROMOTION["dtypes"]
OURS = [d for d in MAX_DTYPES if d in DType.__members__]
MISSING = [d for d in MAX_DTYPES if d not in DType.__members__]

Outcome = str  # a dtype name, or an exception class name
ERRORS = (gd.PromotionError, gd.LiteralError, gd.OpTypeError, gd.ShapeError)


def max_outcome(cell: str) -> Outcome:
    """A recorded cell as the outcome graphdsl must give (see the module docstring)."""
    if not cell.startswith("error: "):
        return cell
    if "Failed to create op" in cell or "Can't promote python float" in cell:
        return "PromotionError"
    if "since it is a sub-byte type" in cell:  # (max.graph's TypeError; a LiteralError too)
        return "SubByteLiteralError"
    if "It would lose precision" in cell:
        return "LiteralError"
    raise AssertionError(f"no graphdsl equivalent is defined for {cell!r}")


def outcome(build: Callable[[], gd.Symbol]) -> Outcome:
    try:
        return build().dtype.name
    except ERRORS as e:
        return type(e).__name__


def graph(**inputs: tuple[str, tuple[int, ...]]) -> tuple[gd.Graph, list[gd.Symbol]]:
    types = {k: gd.TensorType(DType(d), shape) for k, (d, shape) in inputs.items()}
    g = gd.Graph("max_graph_golden", input_types=types, policy=POLICY)
    return g, list(g.inputs)


def report(bad: list[str], checked: int) -> None:
    assert not bad, f"{len(bad)} of {checked} cells differ:\n" + "\n".join(bad[:80])


# ---------------------------------------------------------------------------- deviations



def binary_deviation(op: str, a: str, b: str) -> tuple[str, Outcome] | None:
    """(reason, graphdsl's outcome) where graphdsl differs from max.graph on purpose: none
    (arithmetic on bool types as bool, as in max.graph; computing it raises, as MAX's
    compiler refuses it: test_bool_arithmetic_types_as_max_and_is_not_computed)."""
    return None


def literal_deviation(op: str, dtype: str, value: object) -> tuple[str, Outcome] | None:
    return None


def unary_deviation(op: str, dtype: str) -> tuple[str, Outcome] | None:
    """None: the unary ops and reductions type as max.graph types them (bool sums stay
    bool; mean, softmax and logsoftmax of integers keep the dtype, computed in float64)."""
    return None


def compare(
    where: str, want: Outcome, got: Outcome, deviation: tuple[str, Outcome] | None
) -> str | None:
    """None when ``got`` is right: max.graph's outcome, or the pinned deviation's."""
    if deviation is None:
        return None if got == want else f"{where}: max.graph {want}, graphdsl {got}"
    reason, ours = deviation
    if got == ours and got != want:
        return None
    if got == want:
        return f"{where}: now agrees with max.graph ({want}); drop the deviation ({reason})"
    return f"{where}: deviation pinned as {ours} ({reason}), graphdsl gives {got}"


# ---------------------------------------------------------------------------- dtypes


def test_recorded_version_and_dtypes() -> None:
    assert PROMOTION["version"] == "26.7.0"
    assert PROMOTION["skipped_dtypes"] == {}, "every max.graph DType was a graph input"
    assert {DType(d) for d in OURS} == set(gd.policy(POLICY).lattice.dtypes())


def test_every_max_dtype_is_compared() -> None:
    """graphdsl has every max.graph DType (issue 30 added the sub-byte floats, e8m0 and the
    fnuz float8s), so every recorded cell is compared."""
    assert not MISSING, f"graphdsl lacks {sorted(MISSING)}"


def test_lattice_edges_are_exact_conversions() -> None:
    """An edge of the max-graph order is a conversion that keeps every value."""
    lat = gd.policy(POLICY).lattice
    # max.graph promotes bool x e8m0 to e8m0 (which has no zero) and e8m0 x float16 to
    # float16 (whose range ends at 65504, e8m0's at 2**127): edges kept as max.graph has them
    inexact = {(DType.bool, DType.float8_e8m0fnu), (DType.float8_e8m0fnu, DType.float16)}
    for child, parents in lat.parents.items():
        for parent in parents:
            assert isinstance(child, DType) and isinstance(parent, DType)
            exact = is_lossless(child, parent)
            assert exact != ((child, parent) in inexact), f"{child.name} -> {parent.name}"
    assert lat.comparable_only
    small = [d for d in DType if d.is_float and d.bits <= 8]
    assert {frozenset(k) for k in lat.chosen} == {
        frozenset((a, b)) for a in (DType.int8, DType.uint8, *small) for b in small if a is not b
    }


# ---------------------------------------------------------------------------- binary ops

BINARY: dict[str, Callable[..., gd.Symbol]] = {
    "add": gd.ops.add,
    "sub": gd.ops.sub,
    "mul": gd.ops.mul,
    "div": gd.ops.div,
    "floor_div": gd.ops.floordiv,
    "mod": gd.ops.mod,
    "pow": gd.ops.pow,
    "max": gd.ops.maximum,
    "min": gd.ops.minimum,
    "equal": gd.ops.equal,
    "not_equal": gd.ops.not_equal,
    "greater": gd.ops.greater,
    "greater_equal": gd.ops.greater_equal,
    "matmul": gd.ops.matmul,
    "outer": gd.ops.outer,
}


def test_every_recorded_binary_op_is_checked() -> None:
    logical = {"logical_and", "logical_or", "logical_xor"}
    assert set(PROMOTION["binary"]) == set(BINARY) | {"where"} | logical
    assert PROMOTION["missing_ops"] == []


@pytest.mark.parametrize("op", [*BINARY, "where"])
def test_binary_op_on_every_dtype_pair(op: str) -> None:
    shape = tuple(PROMOTION["conventions"]["binary_shapes"][op])
    bad, checked = [], 0
    for a in OURS:
        for b in OURS:
            _, (x, y, c) = graph(x=(a, shape), y=(b, shape), c=("bool", shape))
            if op == "where":
                got = outcome(lambda: gd.ops.where(c, x, y))  # noqa: B023
            else:
                got = outcome(lambda: BINARY[op](x, y))  # noqa: B023
            want = max_outcome(PROMOTION["binary"][op][a][b])
            checked += 1
            if msg := compare(f"{op}({a}, {b})", want, got, binary_deviation(op, a, b)):
                bad.append(msg)
    report(bad, checked)


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_take_bools_only(op: str) -> None:
    """max.graph builds bool x bool only, as the max-graph policy (op class ``logical``); the
    other policies take every pair by truth value."""
    for a in OURS:
        for b in OURS:
            want = max_outcome(PROMOTION["binary"][op][a][b])
            assert want == ("bool" if a == b == "bool" else "PromotionError"), (a, b)
            _, (x, y) = graph(x=(a, (2,)), y=(b, (2,)))
            assert outcome(lambda: getattr(gd.ops, op)(x, y)) == want  # noqa: B023
    g = gd.Graph("truth", input_types={"x": gd.TensorType(gd.int8, (2,))}, policy="jax")
    assert getattr(gd.ops, op)(g.inputs[0], g.inputs[0]).dtype is gd.bool


def test_add_table_is_the_policy_table() -> None:
    """The known x known promotion the policy prints is max.graph's add, cell by cell."""
    p = gd.policy(POLICY)
    for a in OURS:
        for b in OURS:
            want = max_outcome(PROMOTION["binary"]["add"][a][b])
            try:
                got = p.promote_types(a, b).name
            except gd.PromotionError:
                got = "PromotionError"
            assert got == want, (a, b)


def test_comparisons_are_defined_exactly_where_add_is() -> None:
    for op in ("equal", "not_equal", "greater", "greater_equal"):
        for a in OURS:
            for b in OURS:
                add = max_outcome(PROMOTION["binary"]["add"][a][b])
                cmp = max_outcome(PROMOTION["binary"][op][a][b])
                assert cmp == ("PromotionError" if add == "PromotionError" else "bool")


def test_integer_division_is_float64_even_without_a_common_dtype() -> None:
    """max.graph's div: integer / integer is float64 (int8 / uint8 too, which add refuses);
    bool is no integer there (bool / int8 is int8)."""
    ints = [d for d in OURS if DType(d).is_integer]
    for a in ints:
        for b in ints:
            assert PROMOTION["binary"]["div"][a][b] == "float64"
    assert PROMOTION["binary"]["div"]["bool"]["int8"] == "int8"
    assert PROMOTION["binary"]["div"]["int8"]["uint8"] == "float64"
    assert max_outcome(PROMOTION["binary"]["add"]["int8"]["uint8"]) == "PromotionError"
    _, (x, u, t) = graph(x=("int8", (2,)), u=("uint8", (2,)), t=("bool", (2,)))
    q = x / u
    assert q.type == gd.TensorType(gd.float64, (2,)) and q.in_dtypes == (gd.float64,) * 2
    assert (t / x).type == gd.TensorType(gd.int8, (2,))


# ---------------------------------------------------------------------------- literals

LITERAL_OPS: dict[str, Callable[..., gd.Symbol]] = {
    "add": gd.ops.add,
    "div": gd.ops.div,
    "sub": gd.ops.sub,
    "mul": gd.ops.mul,
    "floor_div": gd.ops.floordiv,
    "mod": gd.ops.mod,
    "pow": gd.ops.pow,
    "equal": gd.ops.equal,
    "max": gd.ops.maximum,
}


def literal_value(src: str) -> int | float:
    value = eval(src, {"float": float})  # the recorder's own sources: ints, floats, bools
    assert isinstance(value, (int, float))
    return value


@pytest.mark.parametrize("op", LITERAL_OPS)
def test_literals_against_every_dtype(op: str) -> None:
    """x <op> lit and lit <op> x for every recorded literal: a Python int fits a dtype
    within max.graph's range for it, a Python float fits floating dtypes unchecked."""
    assert set(PROMOTION["literals"]) == set(LITERAL_OPS)
    fn = LITERAL_OPS[op]
    bad, checked = [], 0
    for dtype in OURS:
        for src, cells in PROMOTION["literals"][op][dtype].items():
            value = literal_value(src)
            for order in ("x_op_lit", "lit_op_x"):
                _, (x,) = graph(x=(dtype, (2,)))
                args = (x, value) if order == "x_op_lit" else (value, x)
                got = outcome(lambda: fn(*args))  # noqa: B023
                want = max_outcome(cells[order])
                checked += 1
                where = f"{op} {order} {dtype} with {src}"
                if msg := compare(where, want, got, literal_deviation(op, dtype, value)):
                    bad.append(msg)
    report(bad, checked)


@pytest.mark.parametrize(
    ("symbol", "op", "fwd", "rev"),
    [("+", "add", operator.add, operator.add), ("/", "div", operator.truediv, operator.truediv)],
)
def test_literals_through_operators(
    symbol: str, op: str, fwd: Callable[..., Any], rev: Callable[..., Any]
) -> None:
    """``x + lit``, ``lit + x``, ``x / lit``, ``lit / x``: max.graph's dunders agree with its
    ops (the recorder found no mismatch in 4116 cells), and graphdsl's with the goldens."""
    assert PROMOTION["literals_via_operators"]["mismatches"] == []
    bad, checked = [], 0
    for dtype in OURS:
        for src, cells in PROMOTION["literals"][op][dtype].items():
            value = literal_value(src)
            _, (x,) = graph(x=(dtype, (2,)))
            for order, build in (
                ("x_op_lit", lambda: fwd(x, value)),  # noqa: B023
                ("lit_op_x", lambda: rev(value, x)),  # noqa: B023
            ):
                checked += 1
                got, want = outcome(build), max_outcome(cells[order])
                where = f"{order.replace('op', symbol)} {dtype} with {src}"
                if msg := compare(where, want, got, literal_deviation(op, dtype, value)):
                    bad.append(msg)
    report(bad, checked)


def test_int_literal_ranges_are_max_graphs() -> None:
    """The policy's ranges for int literals reproduce the recorded boundaries: float16 takes
    2048 but not 2049, bfloat16 256 but not 1000 (exact in bfloat16, still refused),
    float32 2**24 but not 2**31 (exact, refused), float64 2**53 but not 2**53 + 1,
    float8_e4m3fn 256 but not 1000, float8_e5m2 65536 (above its largest value, 57344) but
    not 2**24."""
    add = PROMOTION["literals"]["add"]
    boundaries = {
        "float16": ("2048", "2049"),
        "bfloat16": ("256", "1000"),
        "float32": ("16777216", "2**31"),
        "float64": ("2**53", "2**53 + 1"),
        "float8_e4m3fn": ("256", "1000"),
        "float8_e5m2": ("65536", "16777216"),
    }
    p = gd.policy(POLICY)
    for dtype, (ok, refused) in boundaries.items():
        assert add[dtype][ok]["x_op_lit"] == dtype
        assert max_outcome(add[dtype][refused]["x_op_lit"]) == "LiteralError"
        assert p.literal_problem(literal_value(ok), DType(dtype)) == ""
        assert p.literal_problem(literal_value(refused), DType(dtype)) != ""
    # float literals are not range-checked: 1e300 becomes float16 (inf) in max.graph too
    assert add["float16"]["1e300"]["x_op_lit"] == "float16"
    assert p.literal_problem(1e300, gd.float16) == ""


def test_numpy_scalars_are_literals() -> None:
    """NumPy scalars are weak in max.graph as Python scalars are, and literals in graphdsl.
    Pinned deviations: ``np.bool_`` (max.graph refuses it; graphdsl takes it as True) and
    NumPy arrays (max.graph converts them to the tensor's dtype after a value check;
    graphdsl makes a constant of the array's own dtype, which then promotes)."""
    bad, checked = [], 0
    for dtype in OURS:
        for src, cell in PROMOTION["numpy_literals"][dtype].items():
            if src.startswith("np.array") or src.startswith("np.bool_"):
                continue
            value = eval(src, {"np": np})
            _, (x,) = graph(x=(dtype, (2,)))
            got, want = outcome(lambda: gd.ops.add(x, value)), max_outcome(cell)  # noqa: B023
            dev = literal_deviation("add", dtype, value.item())
            checked += 1
            if msg := compare(f"add {dtype} with {src}", want, got, dev):
                bad.append(msg)
    report(bad, checked)
    # the pinned deviations
    _, (x,) = graph(x=("int8", (2,)))
    assert PROMOTION["numpy_literals"]["int8"]["np.array([1, 2], dtype=np.int64)"] == "int8"
    assert (x + np.array([1, 2], dtype=np.int64)).dtype is gd.int64
    assert PROMOTION["numpy_literals"]["int8"]["np.bool_(True)"].startswith("error: ")
    assert (x + np.bool_(True)).dtype is gd.int8


# ---------------------------------------------------------------------------- unary ops


def _axis(fn: Callable[..., gd.Symbol]) -> Callable[[gd.Symbol], gd.Symbol]:
    return lambda x: fn(x, axis=-1)


UNARY: dict[str, Callable[[gd.Symbol], gd.Symbol]] = {
    "abs": gd.ops.abs,
    "negate": gd.ops.negative,
    "exp": gd.ops.exp,
    "log": gd.ops.log,
    "sqrt": gd.ops.sqrt,
    "rsqrt": gd.ops.rsqrt,
    "sin": gd.ops.sin,
    "cos": gd.ops.cos,
    "tanh": gd.ops.tanh,
    "erf": gd.ops.erf,
    "relu": gd.ops.relu,
    "sigmoid": gd.ops.sigmoid,
    "silu": gd.ops.silu,
    "gelu": gd.ops.gelu,
    "floor": gd.ops.floor,
    "ceil": gd.ops.ceil,
    "round": gd.ops.round,
    "trunc": gd.ops.trunc,
    "is_nan": gd.ops.is_nan,
    "is_inf": gd.ops.is_inf,
    "logical_not": gd.ops.logical_not,
    "softmax": gd.ops.softmax,
    "logsoftmax": gd.ops.logsoftmax,
    "sum": _axis(gd.ops.sum),
    "mean": _axis(gd.ops.mean),
    "prod": _axis(gd.ops.prod),
    "argmax": _axis(gd.ops.argmax),
    "cumsum": _axis(gd.ops.cumsum),
}


def test_unary_ops_keep_the_dtype() -> None:
    """Every recorded unary op on every dtype: max.graph keeps the operand's dtype, bool and
    integers included (exp(int32) is int32), except the predicates (bool) and argmax
    (int64); graphdsl's float_math ops do the same under max-graph."""
    assert set(PROMOTION["unary"]) == set(UNARY)
    bad, checked = [], 0
    for op, fn in UNARY.items():
        for dtype in OURS:
            _, (x,) = graph(x=(dtype, (2, 3)))
            got = outcome(lambda: fn(x))  # noqa: B023
            want = max_outcome(PROMOTION["unary"][op][dtype])
            checked += 1
            if msg := compare(f"{op}({dtype})", want, got, unary_deviation(op, dtype)):
                bad.append(msg)
    report(bad, checked)


def test_float_math_on_integers_keeps_the_dtype_computing_in_float64() -> None:
    """exp(int32) is int32, as max.graph types it. What max.graph computes there is not
    recorded (the goldens only build graphs); graphdsl computes in float64 and converts the
    result as ``cast`` does, and implicit_cast makes that conversion an explicit cast."""
    g, (n, x) = graph(n=("int32", (3,)), x=("float16", (3,)))
    e = gd.ops.exp(n)
    assert e.type == gd.TensorType(gd.int32, (3,)) and e.in_dtypes == (gd.float64,)
    assert gd.ops.exp(x).type == gd.TensorType(gd.float16, (3,))
    # a literal operand is no tensor: it computes in the default float, as in other policies
    assert gd.ops.exp(g.scalar(2)).type == gd.TensorType(gd.float64, (), True)
    g.output(e)
    out = gd.passes.implicit_cast(g).outputs[0]  # cast(exp(cast(n, float64)), int32)
    assert (out.op, out.attrs["to"], out.inputs[0].op, out.inputs[0].dtype) == (
        "cast",
        gd.int32,
        "exp",
        gd.float64,
    )
    feed = {"n": np.array([0, 1, 3], np.int32), "x": np.zeros(3, np.float16)}
    (r,) = gd.evaluate(g, feed)
    assert r.dtype == np.int32 and r.tolist() == [1, 2, 20]  # e**3 = 20.09 truncates to 20
    assert run(g, feed)[0].tolist() == [1, 2, 20]


# ---------------------------------------------------------------------------- misc probes

# misc probe -> graphdsl expression on x float32[2], i int32[2], b bool[2]; None: not a
# promotion question graphdsl shares (the reason is the value)
MISC: dict[str, str | tuple[None, str]] = {
    "int_div_int": "i / i",
    "int_floordiv_int": "i // i",
    "float_floordiv_float": "x // x",
    "int_div_python_int": "i / 2",
    "python_int_div_int": "2 / i",
    "int_floordiv_python_float": "i // 2.0",
    "float_pow_python_int": "x ** 2",
    "int_pow_python_float": "i ** 0.5",
    "eq_operator_tensor": "gd.ops.equal(x, x)",
    "eq_operator_int_literal_on_float": "gd.ops.equal(x, 1)",
    "eq_operator_float_literal_on_int": "gd.ops.equal(i, 0.5)",
    "lt_operator_literal": "i < 3",
    "where_tensor_literal": "gd.ops.where(b, x, 0)",
    "where_literal_tensor_int": "gd.ops.where(b, 0.5, i)",
    "and_operator_bool_bool": "b & b",
    "and_operator_bool_literal": "b & True",
    "or_operator_bool_literal_int": "b | 1",
    "xor_operator_bool_bool": "b ^ b",
    "invert_operator_on_bool": "~b",
    "method_cast": "x.cast(gd.int8)",
    "broadcast_shapes": "x + g.constant(np.array([[1.0], [2.0], [3.0]], np.float32))",
    "broadcast_mismatch": (None, "a shape error (ShapeError in graphdsl), not a promotion"),
    "and_operator_int_int": (None, "graphdsl's & is bitwise on integers; max.graph's is logical"),
    "invert_operator_on_int": (None, "graphdsl's ~ is bitwise on integers; max.graph's logical"),
    "neg_operator_on_bool_input": "-b",
    "divmod_int": (None, "graphdsl symbols have no divmod"),
    "round_builtin": (None, "graphdsl symbols have no __round__"),
    "abs_builtin": (None, "max.graph's TensorValue has no __abs__; graphdsl's has"),
    "both_weak_add": (None, "Python adds two Python ints before any library sees them"),
    "both_weak_add_float": (None, "Python adds two Python floats before any library sees them"),
    "where_bool_literals": (None, "two literal branches: graphdsl keeps them ambiguous (int64?)"),
    "unary_on_python_float": (None, "graphdsl's unary ops take literals (default float)"),
    "unary_on_python_int": (None, "graphdsl's unary ops take literals (default float)"),
    "matmul_with_python_int": (None, "graphdsl's matmul takes a literal as a scalar operand"),
    "matmul_with_python_float": (None, "graphdsl's matmul takes a literal as a scalar operand"),
    "tensor_value_from_int": (None, "max.graph API (TensorValue constructor), not promotion"),
    "constant_without_dtype": (None, "max.graph API (ops.constant arguments), not promotion"),
    "constant_without_device": (None, "max.graph API (ops.constant arguments), not promotion"),
    "constant_float_into_int32": (None, "explicit constants (g.scalar): not promotion"),
    "constant_numpy_f64_default": (None, "explicit constants (g.constant): not promotion"),
    "constant_numpy_dtype_mismatch": (None, "explicit constants (g.constant): not promotion"),
    "constant_list": (None, "explicit constants (g.constant): not promotion"),
    "constant_ragged": (None, "explicit constants (g.constant): not promotion"),
    "cast_same_dtype_is_identity": (None, "an identity question, not promotion"),
    "eq_operator_string": (None, "a string operand: not promotion"),
    "shape_dim_plus_int_tensor": (None, "graphdsl has no Dim values (max.graph's are int64)"),
    "shape_dim_plus_float_tensor": (None, "graphdsl has no Dim values (max.graph's are int64)"),
}


def test_misc_probes() -> None:
    assert set(MISC) == set(PROMOTION["misc"])
    bad = []
    for name, expr in MISC.items():
        if isinstance(expr, tuple):
            continue
        g, (x, i, b) = graph(x=("float32", (2,)), i=("int32", (2,)), b=("bool", (2,)))
        env = {"gd": gd, "np": np, "g": g, "x": x, "i": i, "b": b}
        got = outcome(lambda: eval(expr, env))  # noqa: B023
        want = max_outcome(PROMOTION["misc"][name]["result"])
        if got != want:
            bad.append(f"{name} ({PROMOTION['misc'][name]['source']} as {expr}): max.graph "
                       f"{want}, graphdsl {got}")  # fmt: skip
    report(bad, sum(1 for e in MISC.values() if not isinstance(e, tuple)))


# ---------------------------------------------------------------------------- programs


def _feed(dtype: str, values: list[Any]) -> np.ndarray:
    return np.asarray(values, dtype=DType(dtype).np)


def _recorded(entry: dict[str, Any]) -> np.ndarray:
    vals = [float(v) if isinstance(v, str) else v for v in entry["values"]]
    return np.asarray(vals, dtype=DType(entry["dtype"]).np)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind in "biu":
        return bool(np.array_equal(got, want))
    g, w = got.astype(np.float64), want.astype(np.float64)
    return bool(np.array_equal(g, w, equal_nan=True) and
                np.array_equal(np.signbit(g), np.signbit(w)))  # fmt: skip


SCALARS = PROGRAMS["programs"]["scalars"]["results"]
SCALAR_CASES = [(dt, e) for dt, r in SCALARS.items() for e in r["outputs"]]


@pytest.mark.parametrize(
    ("dtype", "expr"), SCALAR_CASES, ids=[f"{d}: {e}" for d, e in SCALAR_CASES]
)
def test_scalars_program_evaluates_as_max_graph_ran_it(dtype: str, expr: str) -> None:
    """Python scalars against [8] tensors, run on max.graph's CPU engine: graphdsl builds the
    same dtype (or error) and ``gd.evaluate`` gives the same values, bit for bit (integers
    wrap, bfloat16 and float16 round after every op, x / 2 of int8 is float64)."""
    rec = SCALARS[dtype]
    entry = rec["outputs"][expr]
    g, (x,) = graph(x=(dtype, (8,)))
    got = outcome(lambda: eval(expr, {"x": x}))
    if "error" in entry:
        assert got == max_outcome(entry["error"])
        return
    if "compile_error" in entry:
        # uint8 -x builds in max.graph and fails in its compiler; graphdsl negates mod 2**8
        assert (dtype, expr) == ("uint8", "-x")
        assert got == "uint8"
        return
    assert got == entry["dtype"]
    g.output(eval(expr, {"x": x}))
    (out,) = gd.evaluate(g, {"x": _feed(dtype, rec["input"]["values"])})
    want = _recorded(entry)
    assert _same(out, want), (
        f"{expr} on {dtype}: graphdsl {out.tolist()}, max.graph {want.tolist()}"
    )


RUN_CASES = [(d, e) for d, e in SCALAR_CASES if "dtype" in SCALARS[d]["outputs"][e]]


@pytest.mark.parametrize(("dtype", "expr"), RUN_CASES, ids=[f"{d}: {e}" for d, e in RUN_CASES])
def test_scalars_program_runs_on_onnxruntime_as_max_graph_ran_it(dtype: str, expr: str) -> None:
    """The same programs exported and run on onnxruntime (CPU) give max.graph's outputs."""
    rec = SCALARS[dtype]
    g, (x,) = graph(x=(dtype, (8,)))
    g.output(eval(expr, {"x": x}))
    (out,) = run(g, {"x": _feed(dtype, rec["input"]["values"])})
    want = _recorded(rec["outputs"][expr])
    assert _same(np.asarray(out), want), f"{expr} on {dtype}: {out.tolist()} != {want.tolist()}"


def test_all_recorded_programs_are_known() -> None:
    # the MLP and attention programs are float32 only: they check the MAX-compatible API
    # (issue 17's later parts), not promotion
    assert set(PROGRAMS["programs"]) == {"mlp", "attention", "scalars"}
    assert PROGRAMS["version"] == "26.7.0"


# ---------------------------------------------------------------------------- errors


def test_promotion_error_names_types_policy_and_fix() -> None:
    _, (x, u) = graph(x=("int8", (2,)), u=("uint8", (2,)))
    with pytest.raises(gd.PromotionError) as e:
        x + u
    msg = str(e.value)
    assert "int8 and uint8 (in that order)" in msg
    assert "policy 'max-graph'" in msg
    assert "neither converts exactly into the other" in msg
    assert "cast both operands to int16" in msg
    assert (e.value.lhs, e.value.rhs, e.value.policy) == ("int8", "uint8", "max-graph")
    assert e.value.fix.startswith("cast both operands to int16")
    with pytest.raises(gd.PromotionError) as e2:
        gd.policy(POLICY).promote_types(gd.float16, gd.bfloat16)
    assert "float16 and bfloat16" in str(e2.value) and "cast both operands to float32" in str(
        e2.value
    )


def test_literal_errors_name_value_dtype_policy_and_fix() -> None:
    _, (x, i) = graph(x=("float32", (2,)), i=("int8", (2,)))
    with pytest.raises(gd.LiteralError) as e:
        x + 2**31
    msg = str(e.value)
    assert "2147483648" in msg and "float32" in msg and "policy 'max-graph'" in msg
    assert "-16777216..16777216" in msg and "cast the other operand" in msg
    with pytest.raises(gd.LiteralError, match=r"1000 does not fit int8 \(range -128..127\)"):
        i / 1000  # max.graph checks the literal in int8, although the division is float64
    with pytest.raises(gd.PromotionError) as e3:
        i * 0.5
    msg3 = str(e3.value)
    assert "int8 and float64?" in msg3 and "policy 'max-graph'" in msg3
    assert "Python float literal does not become an integer dtype" in msg3
    assert "cast the int8 operand to float64" in msg3


def test_bool_arithmetic_types_as_max_and_is_not_computed() -> None:
    """max.graph types bool - bool, bool * 2 and sum(bool) as bool, and its compiler refuses
    them on every device (tests/data/max_graph_runtime.json): the max-graph policy builds
    them typed as max.graph does, and evaluate and export raise saying why. The other
    policies refuse them when they are built, as JAX and the Array API do."""
    from exporters.onnx import ExportError, export

    ops: list[Callable[[gd.Symbol, gd.Symbol], gd.Symbol]] = [
        lambda a, b: a - b,
        lambda a, b: a * True,
        lambda a, b: gd.ops.sum(a),
        lambda a, b: gd.ops.mean(a),
        lambda a, b: gd.ops.cumsum(a, 0),
        lambda a, b: -a,
        lambda a, b: a / b,
    ]
    feeds = [np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)]
    for build in ops:
        h, (a, b) = graph(x=("bool", (4,)), y=("bool", (4,)))
        built = build(a, b)
        assert built.dtype is DType.bool
        h.output(built)
        with pytest.raises(gd.OpTypeError, match=r"types arithmetic on bool as max\.graph"):
            gd.evaluate(h, feeds)
        with pytest.raises(ExportError, match="MAX's compiler"):
            export(h)
    # what MAX computes on bool: max (or), min (and), abs (the identity), comparisons
    h, (a, b) = graph(x=("bool", (4,)), y=("bool", (4,)))
    h.output(gd.ops.maximum(a, b), gd.ops.minimum(a, b), gd.ops.abs(a), a < b)
    got = gd.evaluate(h, feeds)
    assert [v.tolist() for v in got] == [[False, True, True, True], [False, False, False, True],
                                         [False, False, True, True], [False, True, False, False]]
    for name in ("jax", "array-api", "default"):
        k = gd.Graph("b", input_types={"x": gd.TensorType(gd.bool, (4,))}, policy=name)
        with pytest.raises(gd.OpTypeError, match=f"policy {name!r}, but the op needs numeric"):
            k.inputs[0] - k.inputs[0]
