"""Every op's type rule under every policy, and the shape rules of every op.

The expectations are derived from the rule each op's docstring states (``graphdsl/ops.py``)
and from the policy's ``common_dtype`` / ``default_float`` / ``default_int``, never from a
typed-in table: e.g. ``add`` gives the common dtype of its operands, ``div`` of integers
gives the default float, comparisons give bool, a float-only op on an integer computes in
the default float. Each (op, operand pair) cell is checked and every wrong cell is reported
on its own line. Operands range over every dtype of the policy's lattice (known) and over
Python literals (ambiguous, with a value that must fit the dtype it finally takes).

Shapes: broadcasting (with symbolic dims), matmul, reshape, transpose, concat,
expand_dims, squeeze, broadcast_to and reductions are compared with numpy's own shape
results on concrete arrays, and bad shapes raise ShapeError.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis.extra import numpy as hnp

import graphdsl as gd
from graphdsl import DType, Kind
from graphdsl.shapes import bind_dim, derived_dim, sum_dims

POLICIES = gd.policy_names()
Scalar = bool | int | float | complex

B, S, U, F, C = Kind.bool, Kind.signed, Kind.unsigned, Kind.float, Kind.complex
NUMERIC = frozenset({S, U, F, C})
REAL = frozenset({S, U, F})
INTEGER = frozenset({S, U})
ANY = frozenset(Kind)

# ------------------------------------------------------------------ operands


class Operand(NamedTuple):
    """An operand of a rule test: a known input, or a Python literal (ambiguous unless bool)."""

    dtype: DType
    ambiguous: bool
    literal: Scalar | None = None

    def __str__(self) -> str:
        base = f"{self.dtype.name}{'?' if self.ambiguous else ''}"
        return f"{base}(literal {self.literal!r})" if self.literal is not None else base


# Literal values chosen so that "does it fit the dtype it finally takes" matters: 200 fits
# uint8 but not int8 or bool, 1.5 is not an integer, a complex value fits complex only.
LITERALS: tuple[Scalar, ...] = (True, 200, 1.5, 1 + 2j)


def literal_operand(p: gd.Policy, value: Scalar) -> Operand:
    """DESIGN.md: a Python scalar is ambiguous with the policy's default dtype of its kind;
    a Python bool is a known bool (under max-graph a Python int, as max.graph converts it)."""
    if isinstance(value, bool) and p.name != "max-graph":
        return Operand(DType.bool, False, value)
    if isinstance(value, int):
        return Operand(p.default_int, True, value)
    if isinstance(value, float):
        return Operand(p.default_float, True, value)
    return Operand(p.default_complex, True, value)


def operands(p: gd.Policy, *, literals: bool = True) -> list[Operand]:
    known = [Operand(d, False) for d in p.lattice.dtypes()]
    return known + ([literal_operand(p, v) for v in LITERALS] if literals else [])


def fits(value: Scalar, d: DType, *, exact: bool) -> bool:
    """Can the literal ``value`` become a constant of ``d``? (DESIGN.md, 'must fit')."""
    if isinstance(value, bool):
        return True
    if isinstance(value, complex):
        return d.kind is C
    if d.kind in (B, S, U):
        return float(value).is_integer() and d.min <= value <= d.max
    with np.errstate(invalid="ignore"):
        stored = np.real(np.array(value, dtype=np.float64).astype(d.np)).astype(np.float64)
    if not np.isfinite(stored):
        return False
    if d.kind is F and d.bits < 8:  # these saturate: rounding past the largest value
        top = float(d.max)  # overflows (its significand is odd: the tie rounds up)
        edge = top + 2.0 ** (math.floor(math.log2(top)) - (d.mantissa_bits - 1)) / 2
        return abs(float(np.real(value))) < edge
    return not (exact and isinstance(value, int) and int(stored) != value)


def fits_max_graph(p: gd.Policy, value: Scalar, d: DType) -> bool:
    """The max-graph literal rule (graphdsl.policies): an int (True is 1) fits ``d`` within the
    policy's int_literal_ranges (checked against max.graph's recorded cells in
    test_max_graph_policy.py); a float fits floating dtypes unchecked; a complex complex ones."""
    if isinstance(value, complex):
        return d.kind is C
    if d.kind is F and d.bits < 8:
        return False  # max.graph makes no constants of its 4- and 6-bit floats
    if isinstance(value, float):
        return d.kind in (F, C)
    if d in p.int_literal_ranges:
        lo, hi = p.int_literal_ranges[d]
        return lo <= int(value) <= hi
    return fits(value, d, exact=True)


class Graphs:
    """One graph per policy with one input of each lattice dtype (shape ``shape``)."""

    def __init__(self, p: gd.Policy, shape: tuple[int, ...] = (2,)) -> None:
        self.p = p
        self.shape = shape
        dts = p.lattice.dtypes()
        self.g = gd.Graph(
            "rules",
            input_types={d.name: gd.TensorType(d, shape) for d in dts},
            policy=p,
        )
        self.by_dtype = dict(zip(dts, self.g.inputs, strict=True))

    def sym(self, o: Operand, *, rank_for_literals: bool = False) -> gd.Symbol:
        if o.literal is None:
            return self.by_dtype[o.dtype]
        s = self.g.scalar(o.literal)
        if rank_for_literals:  # an ambiguous value of full shape, no longer a literal node
            return gd.ops.broadcast_to(s, self.shape)
        return s


class Want(NamedTuple):
    in_dtypes: tuple[DType, ...]
    out: gd.TensorType


Outcome = Want | type[Exception]


def check_cell(want: Outcome, build: Callable[..., gd.Symbol], *args: object) -> str | None:
    """None when ``build(*args)`` gives ``want``; otherwise a description of what happened."""
    try:
        sym = build(*args)
    except (gd.PromotionError, gd.OpTypeError, gd.LiteralError, gd.ShapeError) as e:
        if isinstance(want, type) and isinstance(e, want):
            return None
        return f"raised {type(e).__name__}: {e}"
    got = Want(sym.in_dtypes, sym.type)
    return None if got == want else f"built {fmt(got)}"


def fmt(w: Outcome) -> str:
    if isinstance(w, type):
        return w.__name__
    return f"{w.out} computing in ({', '.join(d.name for d in w.in_dtypes)})"


def report(failures: list[str]) -> None:
    assert not failures, f"{len(failures)} wrong cells:\n" + "\n".join(failures[:60])


def literal_problem(p: gd.Policy, ops: Sequence[Operand], targets: Sequence[DType]) -> bool:
    exact = p.name == "max"  # MAX: a literal must be exactly representable
    if p.name == "max-graph":
        return any(
            o.literal is not None and not fits_max_graph(p, o.literal, t)
            for o, t in zip(ops, targets, strict=True)
        )
    return any(
        o.literal is not None and not fits(o.literal, t, exact=exact)
        for o, t in zip(ops, targets, strict=True)
    )


def common(p: gd.Policy, ops: Sequence[Operand]) -> gd.Promoted | None:
    """Left fold of the policy's common_dtype; None where a promotion is undefined."""
    acc = gd.Promoted(ops[0].dtype, ops[0].ambiguous)
    for o in ops[1:]:
        try:
            acc = p.common_dtype(acc.dtype, o.dtype, acc.ambiguous, o.ambiguous)
        except gd.PromotionError:
            return None
    return acc


def shape_for(ops: Sequence[Operand], shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if any(o.literal is None for o in ops) else ()


# ------------------------------------------------------------------ elementwise binary ops

# op -> (accepted kinds of the promoted dtype, result rule), from the docstrings in ops.py
ARITH: dict[str, frozenset[Kind]] = {
    "add": NUMERIC,  # "bool + bool is an error (use logical_or)"
    "sub": NUMERIC,
    "mul": NUMERIC,
    "pow": NUMERIC,
    "floordiv": REAL,
    "mod": REAL,
    "maximum": REAL | {B},
    "minimum": REAL | {B},
    "bitwise_and": INTEGER | {B},  # "for bool and integers"
    "bitwise_or": INTEGER | {B},
    "bitwise_xor": INTEGER | {B},
}
COMPARE: dict[str, frozenset[Kind]] = {
    "equal": ANY,
    "not_equal": ANY,
    "less": REAL | {B},
    "less_equal": REAL | {B},
    "greater": REAL | {B},
    "greater_equal": REAL | {B},
}
LOGICAL = ("logical_and", "logical_or", "logical_xor")


def want_max_graph_div(p: gd.Policy, a: Operand, b: Operand, shape: tuple[int, ...]) -> Outcome:
    """max-graph's div: integer / integer computes in float64 (even int8 / uint8, which do not
    promote), a literal still fitting the operands' common dtype (int8 / 200 fails); anything
    else promotes and keeps the common dtype (bool / int8 is int8), a bool or integer one
    computed in float64 (and converted back as cast converts)."""
    c = common(p, [a, b])
    out_shape = shape_for([a, b], shape)
    if a.dtype.kind in INTEGER and b.dtype.kind in INTEGER:
        f64 = DType.float64
        if c is not None and literal_problem(p, [a, b], [c.dtype, c.dtype]):
            return gd.LiteralError
        return Want((f64, f64), gd.TensorType(f64, out_shape, a.ambiguous and b.ambiguous))
    if c is None:
        return gd.PromotionError
    if literal_problem(p, [a, b], [c.dtype, c.dtype]):
        return gd.LiteralError
    compute = DType.float64 if c.dtype.kind in (B, S, U) else c.dtype
    return Want((compute, compute), gd.TensorType(c.dtype, out_shape, c.ambiguous))


def bool_typed(p: gd.Policy, dt: DType, kinds: Iterable[Kind]) -> bool:
    """max-graph types arithmetic on bool as bool, as max.graph does (computing it raises:
    test_max_graph_policy.py)."""
    return p.bool_arithmetic and dt is DType.bool and bool(set(kinds) & NUMERIC)


def want_binary(p: gd.Policy, op: str, a: Operand, b: Operand, shape: tuple[int, ...]) -> Outcome:
    if op == "div" and p.name == "max-graph":
        return want_max_graph_div(p, a, b, shape)
    c = common(p, [a, b])
    if c is None:
        return gd.PromotionError
    dt = c.dtype
    if op == "div" and dt.kind in (B, S, U):
        dt = p.default_float  # "an integer or bool result type becomes the default float"
    kinds = NUMERIC | {B} if op == "div" else {**ARITH, **COMPARE}[op]
    if dt.kind not in kinds and not bool_typed(p, dt, kinds):
        return gd.OpTypeError
    if literal_problem(p, [a, b], [dt, dt]):
        return gd.LiteralError
    out_shape = shape_for([a, b], shape)
    if op in COMPARE:
        return Want((dt, dt), gd.TensorType(DType.bool, out_shape))
    return Want((dt, dt), gd.TensorType(dt, out_shape, c.ambiguous))


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("op", [*ARITH, "div", *COMPARE])
def test_binary_rule(name: str, op: str) -> None:
    p = gd.policy(name)
    gs = Graphs(p)
    fn = getattr(gd.ops, op)
    failures = []
    for a in operands(p):
        for b in operands(p):
            want = want_binary(p, op, a, b, gs.shape)
            got = check_cell(want, fn, gs.sym(a), gs.sym(b))
            if got is not None:
                failures.append(f"{name} {op}({a}, {b}): want {fmt(want)}, {got}")
    report(failures)


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("op", LOGICAL)
def test_logical_rule(name: str, op: str) -> None:
    """By truth value: every operand is cast to bool, the result is bool, nothing promotes
    (so pairs without a common dtype, e.g. int8 and float32 under array-api, are fine);
    under max-graph, as in max.graph, the known operands must be bools."""
    p = gd.policy(name)
    gs = Graphs(p)
    fn = getattr(gd.ops, op)
    failures = []
    for a in operands(p):
        for b in operands(p):
            out = gd.TensorType(DType.bool, shape_for([a, b], gs.shape))
            want: Outcome = Want((DType.bool,) * 2, out)
            if not bools_only(p, a, b):
                want = gd.PromotionError
            got = check_cell(want, fn, gs.sym(a), gs.sym(b))
            if got is not None:
                failures.append(f"{name} {op}({a}, {b}): want {fmt(want)}, {got}")
        want1: Outcome = Want((DType.bool,), gd.TensorType(DType.bool, shape_for([a], gs.shape)))
        if not bools_only(p, a):
            want1 = gd.PromotionError
        got1 = check_cell(want1, gd.ops.logical_not, gs.sym(a))
        if got1 is not None:
            failures.append(f"{name} logical_not({a}): want {fmt(want1)}, {got1}")
    report(failures)


def bools_only(p: gd.Policy, *ops: Operand) -> bool:
    """The max-graph policy's logical ops (op class ``logical``) take known bools, and int
    literals (max.graph refuses a float literal: it cannot become a bool)."""
    return p.name != "max-graph" or all(
        o.dtype is DType.bool or (o.ambiguous and o.dtype.kind in (B, S, U)) for o in ops
    )


# ------------------------------------------------------------------ unary ops

UNARY_KEEP: dict[str, frozenset[Kind]] = {
    "negative": NUMERIC,  # "-x; keeps the dtype"
    "sign": NUMERIC,
    "relu": REAL,  # "max(x, 0) for real dtypes; keeps the dtype"
    "floor": REAL,
    "ceil": REAL,
    "round": REAL,
    "bitwise_not": INTEGER | {B},
}
FLOAT_ONLY = ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "softmax")
# max-graph's float_math op class: a known bool or integer operand keeps its dtype
MAX_GRAPH_KEEPS = ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "softmax")
REAL_OF = {DType.complex64: DType.float32, DType.complex128: DType.float64}


def want_unary(p: gd.Policy, op: str, a: Operand, shape: tuple[int, ...]) -> Outcome:
    out_shape = shape_for([a], shape)
    dt, out_dt = a.dtype, a.dtype
    if op in UNARY_KEEP:
        if dt.kind not in UNARY_KEEP[op] and not bool_typed(p, dt, UNARY_KEEP[op]):
            return gd.OpTypeError
    elif op == "abs":  # "keeps the dtype (complex gives its real dtype)"
        if dt.kind not in NUMERIC and not bool_typed(p, dt, NUMERIC):
            return gd.OpTypeError
        out_dt = REAL_OF.get(dt, dt)
    else:  # "Floating only: integers and bool compute in the policy's default float."
        if dt.kind is C:
            return gd.OpTypeError
        keep = p.name == "max-graph" and op in MAX_GRAPH_KEEPS and not a.ambiguous
        if dt.kind in (B, S, U) and keep:  # max-graph: exp(int32) is int32, from float64
            dt = DType.float64
        elif dt.kind in (B, S, U):
            dt = out_dt = p.default_float
        if op == "softmax" and not out_shape:
            return gd.ShapeError
    if literal_problem(p, [a], [dt]):
        return gd.LiteralError
    return Want((dt,), gd.TensorType(out_dt, out_shape, a.ambiguous))


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("op", [*UNARY_KEEP, "abs", *FLOAT_ONLY])
def test_unary_rule(name: str, op: str) -> None:
    p = gd.policy(name)
    gs = Graphs(p)
    fn = getattr(gd.ops, op)
    failures = []
    for a in operands(p):
        want = want_unary(p, op, a, gs.shape)
        got = check_cell(want, fn, gs.sym(a))
        if got is not None:
            failures.append(f"{name} {op}({a}): want {fmt(want)}, {got}")
    report(failures)


@pytest.mark.parametrize("name", POLICIES)
def test_unary_operators_match_ops(name: str) -> None:
    """``-x``, ``abs(x)`` and ``~x`` build the same nodes as the gd.ops functions."""
    p = gd.policy(name)
    gs = Graphs(p)
    for a in operands(p, literals=False):
        x = gs.sym(a)
        for op, fn in (("negative", operator.neg), ("abs", abs), ("bitwise_not", operator.invert)):
            want = want_unary(p, op, a, gs.shape)
            assert check_cell(want, fn, x) is None, (name, op, str(a))


# ------------------------------------------------------------------ cast, where


@pytest.mark.parametrize("name", POLICIES)
def test_cast_rule(name: str) -> None:
    """cast gives exactly the target dtype, never ambiguous, and computes from the source."""
    p = gd.policy(name)
    gs = Graphs(p)
    failures = []
    for a in operands(p):
        for to in p.lattice.dtypes():
            shape = shape_for([a], gs.shape)
            want: Outcome = Want((a.dtype,), gd.TensorType(to, shape, False))
            if a.dtype.kind is C and to.kind is not C:
                want = gd.OpTypeError  # would drop the imaginary part (see the rule's message)
            got = check_cell(want, gd.ops.cast, gs.sym(a), to)
            if got is not None:
                failures.append(f"{name} cast({a}, {to.name}): want {fmt(want)}, {got}")
    report(failures)


def test_cast_accepts_names_and_symbol_method() -> None:
    g = gd.Graph("c", input_types=[gd.TensorType(gd.int8, (2,))])
    (x,) = g.inputs
    assert gd.ops.cast(x, "float32").type == gd.TensorType(gd.float32, (2,))
    assert x.cast("bf16").type == gd.TensorType(gd.bfloat16, (2,))
    assert gd.ops.cast(g.scalar(1.5), gd.float64).type == gd.TensorType(gd.float64, ())


def want_where(
    p: gd.Policy, cond: Operand, a: Operand, b: Operand, shape: tuple[int, ...]
) -> Outcome:
    c = common(p, [a, b])
    if c is None:
        return gd.PromotionError
    if literal_problem(p, [a, b], [c.dtype, c.dtype]):
        return gd.LiteralError
    out = gd.TensorType(c.dtype, shape_for([cond, a, b], shape), c.ambiguous)
    return Want((DType.bool, c.dtype, c.dtype), out)


@pytest.mark.parametrize("name", POLICIES)
def test_where_rule(name: str) -> None:
    """The condition is cast to bool by truth value; the branches promote together."""
    p = gd.policy(name)
    gs = Graphs(p)
    failures = []
    conds = [Operand(DType.bool, False), Operand(DType.bool, False, True)]
    conds += [Operand(d, False) for d in p.lattice.dtypes() if d is not DType.bool][:3]
    for cond in conds:
        for a in operands(p):
            for b in operands(p):
                want = want_where(p, cond, a, b, gs.shape)
                got = check_cell(want, gd.ops.where, gs.sym(cond), gs.sym(a), gs.sym(b))
                if got is not None:
                    failures.append(f"{name} where({cond}, {a}, {b}): want {fmt(want)}, {got}")
    report(failures)


@pytest.mark.parametrize("value", [2, 0, 1.5])
def test_where_literal_condition_is_a_truth_value(value: int | float) -> None:
    """ops.where: "``cond`` is cast to bool by truth value" - so any literal condition works,
    as it does for the logical ops (2 -> True, 0 -> False, 1.5 -> True)."""
    for name in POLICIES:
        g = gd.Graph("w", input_types=[gd.TensorType(gd.int8, (2,))] * 2, policy=name)
        x, y = g.inputs
        w = gd.ops.where(value, x, y)
        assert w.type == gd.TensorType(gd.int8, (2,)), name
    assert w.in_dtypes[0] is DType.bool


# ------------------------------------------------------------------ reductions

REDUCE: dict[str, frozenset[Kind]] = {
    "sum": NUMERIC | {B},  # bool sums in the default int
    "prod": NUMERIC | {B},
    "max": REAL | {B},
    "min": REAL | {B},
    "mean": NUMERIC | {B},  # integers and bool give the default float
}


def want_reduce(p: gd.Policy, op: str, a: Operand, out_shape: tuple[int, ...]) -> Outcome:
    dt = a.dtype
    if dt.kind not in REDUCE[op]:
        return gd.OpTypeError
    max_graph = p.name == "max-graph"
    if op in ("sum", "prod") and dt is DType.bool and not max_graph:
        dt = p.default_int  # (max-graph: bool, as max.graph types it)
    compute = dt
    if op == "mean" and dt.kind in (B, S, U) and not (max_graph and not a.ambiguous):
        dt = compute = p.default_float
    elif op == "mean" and dt.kind in (S, U):  # max-graph: mean(int8) is int8, in float64
        compute = DType.float64
    if literal_problem(p, [a], [compute]):
        return gd.LiteralError
    return Want((compute,), gd.TensorType(dt, out_shape, a.ambiguous))


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("op", REDUCE)
def test_reduction_rule(name: str, op: str) -> None:
    """Reductions keep the dtype (and ambiguity); sum/prod of bool give the default int;
    mean of integers or bool gives the default float."""
    p = gd.policy(name)
    gs = Graphs(p, shape=(2, 3))
    fn = getattr(gd.ops, op)
    failures = []
    for a in operands(p):
        for kwargs, shape in (
            ({}, ()),
            ({"axis": 1}, (2,)),
            ({"axis": 0, "keepdims": True}, (1, 3)),
        ):
            if a.literal is not None and kwargs:
                continue  # a literal is a scalar: no axes
            want = want_reduce(p, op, a, shape)
            got = check_cell(want, functools.partial(fn, **kwargs), gs.sym(a))
            if got is not None:
                failures.append(f"{name} {op}({a}, {kwargs}): want {fmt(want)}, {got}")
    report(failures)


# ------------------------------------------------------------------ matmul, concat, shape ops


@pytest.mark.parametrize("name", POLICIES)
def test_matmul_rule(name: str) -> None:
    """matmul promotes like add (numeric only); ambiguous operands are broadcast literals."""
    p = gd.policy(name)
    gs = Graphs(p, shape=(2, 2))
    failures = []
    for a in operands(p):
        for b in operands(p):
            c = common(p, [a, b])
            want: Outcome = gd.PromotionError
            if c is not None:
                want = gd.OpTypeError
                if c.dtype.kind in NUMERIC or bool_typed(p, c.dtype, NUMERIC):
                    want = Want((c.dtype,) * 2, gd.TensorType(c.dtype, (2, 2), c.ambiguous))
            x, y = gs.sym(a, rank_for_literals=True), gs.sym(b, rank_for_literals=True)
            got = check_cell(want, operator.matmul, x, y)
            if got is not None:
                failures.append(f"{name} matmul({a}, {b}): want {fmt(want)}, {got}")
    report(failures)


def concat2(x: gd.Symbol, y: gd.Symbol) -> gd.Symbol:
    return gd.ops.concat([x, y])


@pytest.mark.parametrize("name", POLICIES)
def test_concat_rule(name: str) -> None:
    """concat: "their dtypes promote together"; the concatenated axis adds up."""
    p = gd.policy(name)
    gs = Graphs(p, shape=(2,))
    failures = []
    for a in operands(p):
        for b in operands(p):
            c = common(p, [a, b])
            want: Outcome = gd.PromotionError
            if c is not None:
                want = Want((c.dtype,) * 2, gd.TensorType(c.dtype, (4,), c.ambiguous))
            x, y = gs.sym(a, rank_for_literals=True), gs.sym(b, rank_for_literals=True)
            got = check_cell(want, concat2, x, y)
            if got is not None:
                failures.append(f"{name} concat({a}, {b}): want {fmt(want)}, {got}")
    report(failures)


SHAPE_OPS: dict[str, tuple[Callable[[gd.Symbol], gd.Symbol], tuple[int, ...]]] = {
    "reshape": (lambda s: gd.ops.reshape(s, (3, -1)), (3, 2)),
    "transpose": (lambda s: gd.ops.transpose(s), (3, 2)),
    "expand_dims": (lambda s: gd.ops.expand_dims(s, 0), (1, 2, 3)),
    "squeeze": (lambda s: gd.ops.squeeze(gd.ops.expand_dims(s, 1)), (2, 3)),
    "broadcast_to": (lambda s: gd.ops.broadcast_to(s, (4, 2, 3)), (4, 2, 3)),
}


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("op", SHAPE_OPS)
def test_shape_ops_keep_dtype_and_ambiguity(name: str, op: str) -> None:
    p = gd.policy(name)
    gs = Graphs(p, shape=(2, 3))
    fn, shape = SHAPE_OPS[op]
    for a in operands(p):
        s = fn(gs.sym(a, rank_for_literals=True))
        assert s.op == op
        assert s.type == gd.TensorType(a.dtype, shape, a.ambiguous), (name, op, str(a))
        assert s.in_dtypes == (a.dtype,)


# ------------------------------------------------------------------ literal types


@pytest.mark.parametrize("name", POLICIES)
def test_literal_types(name: str) -> None:
    p = gd.policy(name)
    g = gd.Graph("lit", policy=p)
    for v in LITERALS:
        o = literal_operand(p, v)
        assert g.scalar(v).type == gd.TensorType(o.dtype, (), o.ambiguous)


# ------------------------------------------------------------------ broadcasting


def binary_shape(a: Sequence[int | str], b: Sequence[int | str]) -> tuple[int | str, ...]:
    g = gd.Graph(
        "b", input_types=[gd.TensorType(gd.float32, tuple(a)), gd.TensorType(gd.float32, tuple(b))]
    )
    x, y = g.inputs
    return (x + y).shape


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ((), (3,), (3,)),
        ((2, 1), (1, 3), (2, 3)),
        (("batch", 1, 4), (3, 1), ("batch", 3, 4)),
        (("batch",), (1,), ("batch",)),
        (("batch", "n"), ("n",), ("batch", "n")),
        ((1, "n"), ("m", 1), ("m", "n")),
        ((5, 1, 1), (1, 4, 1), (5, 4, 1)),
    ],
)
def test_broadcast_shapes(
    a: tuple[int | str, ...], b: tuple[int | str, ...], want: tuple[int | str, ...]
) -> None:
    assert binary_shape(a, b) == want
    assert binary_shape(b, a) == want


@pytest.mark.parametrize(
    ("a", "b"),
    [((2, 3), (4, 3)), (("batch",), (3,)), (("batch",), ("n",)), ((2, "n"), (3, "n"))],
)
def test_broadcast_mismatch_names_both_shapes(
    a: tuple[int | str, ...], b: tuple[int | str, ...]
) -> None:
    with pytest.raises(gd.ShapeError) as info:
        binary_shape(a, b)
    msg = str(info.value)
    assert str(a).replace("'", "").replace(",)", ")") in msg.replace(",)", ")")
    assert str(b).replace("'", "").replace(",)", ")") in msg.replace(",)", ")")


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
def test_broadcast_matches_numpy(shapes: Any) -> None:
    a, b = shapes.input_shapes
    assert binary_shape(a, b) == tuple(np.broadcast_shapes(a, b))


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=1, max_side=4))
def test_symbolic_broadcast_matches_numpy(shapes: Any) -> None:
    """Name every size > 1 ("d2", "d3", ...): broadcasting commutes with the renaming,
    since a symbolic dim matches exactly itself or 1."""

    def sym(shape: tuple[int, ...]) -> tuple[int | str, ...]:
        return tuple(f"d{n}" if n > 1 else n for n in shape)

    a, b = shapes.input_shapes
    assert binary_shape(sym(a), sym(b)) == sym(tuple(np.broadcast_shapes(a, b)))


def test_where_broadcasts_all_three() -> None:
    g = gd.Graph(
        "w",
        input_types=[
            gd.TensorType(gd.bool, ("batch", 1, 1)),
            gd.TensorType(gd.float32, (3, 1)),
            gd.TensorType(gd.float32, (4,)),
        ],
    )
    c, x, y = g.inputs
    assert gd.ops.where(c, x, y).shape == ("batch", 3, 4)
    with pytest.raises(gd.ShapeError):
        gd.ops.where(c, x, g.constant(np.zeros((2, 1), np.float32)))


# ------------------------------------------------------------------ matmul shapes


def mm_shape(a: Sequence[int | str], b: Sequence[int | str]) -> tuple[int | str, ...]:
    g = gd.Graph(
        "m", input_types=[gd.TensorType(gd.float32, tuple(a)), gd.TensorType(gd.float32, tuple(b))]
    )
    x, y = g.inputs
    return (x @ y).shape


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((3,), (5, 3, 4)),
        ((5, 2, 3), (5, 3, 4)),
        ((1, 2, 3), (6, 3, 4)),
        ((7, 1, 2, 3), (6, 3, 4)),
    ],
)
def test_matmul_shapes_match_numpy(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    want = np.matmul(np.zeros(a), np.zeros(b)).shape
    assert mm_shape(a, b) == want


def test_matmul_symbolic_shapes() -> None:
    assert mm_shape(("batch", 4), (4, 3)) == ("batch", 3)
    assert mm_shape(("batch", 1, "n", 4), (7, 4, "m")) == ("batch", 7, "n", "m")
    assert mm_shape((2, "k"), ("k",)) == (2,)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((2, 3), (4, 5)),
        ((3,), (4,)),
        ((), (3,)),
        ((3,), ()),
        ((2, 2, 3), (3, 3, 4)),
        (("k",), (3,)),
    ],
)
def test_matmul_shape_errors(a: tuple[int | str, ...], b: tuple[int | str, ...]) -> None:
    with pytest.raises(gd.ShapeError, match="matmul"):
        mm_shape(a, b)


# ------------------------------------------------------------------ shape ops


def f32(shape: Sequence[int | str]) -> gd.Symbol:
    g = gd.Graph("s", input_types=[gd.TensorType(gd.float32, tuple(shape))])
    return g.inputs[0]


@pytest.mark.parametrize(
    ("shape", "req"),
    [
        ((2, 3, 4), (6, -1)),
        ((2, 3, 4), (-1,)),
        ((2, 3, 4), (4, -1, 2)),
        ((2, 3, 4), (24,)),
        ((6,), (1, 6, 1)),
        ((0, 3), (-1, 3)),
        ((), (1, 1)),
    ],
)
def test_reshape_matches_numpy(shape: tuple[int, ...], req: tuple[int, ...]) -> None:
    assert gd.ops.reshape(f32(shape), req).shape == np.zeros(shape).reshape(req).shape


@pytest.mark.parametrize(
    ("shape", "req"),
    [((2, 3), (5, -1)), ((2, 3), (-1, -1)), ((2, 3), (7,)), ((2, 3), (0, -1)), ((2, 3), (2, -2))],
)
def test_reshape_errors(shape: tuple[int, ...], req: tuple[int, ...]) -> None:
    with pytest.raises(gd.ShapeError):
        gd.ops.reshape(f32(shape), req)


def test_reshape_symbolic() -> None:
    assert gd.ops.reshape(f32(("batch", 4)), ("batch", 2, 2)).shape == ("batch", 2, 2)
    flat = gd.ops.reshape(f32(("batch", 4)), (-1,))
    assert flat.shape == ("batch*4",)


@pytest.mark.parametrize(
    ("shape", "req", "want"),
    [
        (("batch", 4), (-1, 2), ("batch*2", 2)),  # 4 / 2: integer factors cancel
        (("batch", 3), (-1, 2), ("batch*3/2", 2)),  # 3 / 2 is not whole: kept
        (("batch", "n"), ("n", -1), ("n", "batch")),  # symbols cancel
        (("batch", 4), ("batch", -1), ("batch", 4)),  # everything cancels: a plain size
        (("batch", 6), (-1, 3, 2), ("batch", 3, 2)),
        (("b", "t", 8), ("t", -1, 4), ("t", "b*2", 4)),
    ],
)
def test_reshape_names_the_derived_dimension_in_lowest_terms(
    shape: tuple[int | str, ...], req: tuple[int | str, ...], want: tuple[int | str, ...]
) -> None:
    assert gd.ops.reshape(f32(shape), req).shape == want


def test_a_product_distributes_over_a_summed_dimension() -> None:
    # concat gives 'n+1'; flattening (n+1, 15) is (n+1)*15 = n*15+15 elements. It once read
    # 'n+1*15', which binds to n+15 (a wrong size that reshape's check could not catch)
    g = gd.Graph("s", input_types=[gd.TensorType(gd.float32, d) for d in (("n", 15), (1, 15))])
    n1 = gd.ops.concat(g.inputs, axis=0)
    flat = gd.ops.reshape(n1, (-1,))
    assert flat.shape == ("n*15+15",)
    assert bind_dim(flat.shape[0], {"n": 2}) == 45
    assert gd.ops.reshape(flat, (-1, 15)).shape == ("n+1", 15)  # the sum cancels back
    assert gd.ops.reshape(flat, (-1, 5)).shape == ("n*3+3", 5)
    # a quotient by a sum that does not cancel stays whole: no sizes bind it
    assert derived_dim(["n"], ["n+1"]) == "(n)/(n+1)"
    assert bind_dim("(n)/(n+1)", {"n": 3}) is None
    assert bind_dim(sum_dims(["n", -2]), {"n": 5}) == 3  # a negative constant term


def test_derived_dimensions_compose_back_to_the_input_name() -> None:
    # flatten then unflatten: the batch dimension comes back as 'batch', so the result
    # broadcasts with other batch-shaped values
    x = f32(("batch", 4))
    flat = gd.ops.reshape(x, (-1,))
    back = gd.ops.reshape(flat, (-1, 4))
    assert (flat.shape, back.shape) == (("batch*4",), ("batch", 4))
    assert (back + x).shape == ("batch", 4)


@pytest.mark.parametrize(
    ("shape", "perm"),
    [((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)), ((2, 3, 4), (-1, 0, 1)), ((5,), None), ((), None)],
)
def test_transpose_matches_numpy(shape: tuple[int, ...], perm: tuple[int, ...] | None) -> None:
    assert gd.ops.transpose(f32(shape), perm).shape == np.transpose(np.zeros(shape), perm).shape


def test_transpose_symbolic_and_errors() -> None:
    assert gd.ops.transpose(f32(("batch", 4))).shape == (4, "batch")
    for perm in ((0, 0, 1), (0, 1), (0, 1, 3)):
        with pytest.raises(gd.ShapeError):
            gd.ops.transpose(f32((2, 3, 4)), perm)


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 5)], 1), ([(2, 3), (2, 1), (2, 2)], -1), ([(3,)], 0)],
)
def test_concat_matches_numpy(shapes: list[tuple[int, ...]], axis: int) -> None:
    g = gd.Graph("c", input_types=[gd.TensorType(gd.float32, s) for s in shapes])
    want = np.concatenate([np.zeros(s) for s in shapes], axis=axis).shape
    assert gd.ops.concat(g.inputs, axis=axis).shape == want


def test_concat_symbolic_and_errors() -> None:
    g = gd.Graph(
        "c",
        input_types=[
            gd.TensorType(gd.float32, ("batch", 4)),
            gd.TensorType(gd.float32, (2, 4)),
            gd.TensorType(gd.float32, (2, 5)),
            gd.TensorType(gd.float32, (4,)),
        ],
    )
    a, b, c, d = g.inputs
    cat = gd.ops.concat([a, b], axis=0)
    assert cat.shape[1] == 4
    assert "batch" in str(cat.shape[0])
    assert gd.ops.concat([a, a], axis=1).shape == ("batch", 8)
    with pytest.raises(gd.ShapeError):
        gd.ops.concat([b, c], axis=0)  # dimension 1 differs
    with pytest.raises(gd.ShapeError):
        gd.ops.concat([b, d])  # ranks differ
    with pytest.raises(gd.ShapeError):
        gd.ops.concat([b, b], axis=2)
    with pytest.raises(gd.ShapeError):
        gd.ops.concat([g.scalar(1.0), g.scalar(2.0)])  # rank 0


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((2, 3), (0, 2)), ((2, 3), (0, -1)), ((), 0)],
)
def test_expand_dims_matches_numpy(shape: tuple[int, ...], axis: int | tuple[int, ...]) -> None:
    assert gd.ops.expand_dims(f32(shape), axis).shape == np.expand_dims(np.zeros(shape), axis).shape


def test_expand_dims_errors() -> None:
    assert gd.ops.expand_dims(f32(("batch",)), 0).shape == (1, "batch")
    with pytest.raises(gd.ShapeError):
        gd.ops.expand_dims(f32((2, 3)), 3)
    with pytest.raises(gd.ShapeError):
        gd.ops.expand_dims(f32((2, 3)), (0, 0))


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((1, 2, 1), None), ((1, 2, 1), 0), ((1, 2, 1), -1), ((1, 2, 1), (0, 2)), ((1,), None)],
)
def test_squeeze_matches_numpy(shape: tuple[int, ...], axis: int | tuple[int, ...] | None) -> None:
    assert gd.ops.squeeze(f32(shape), axis).shape == np.squeeze(np.zeros(shape), axis).shape


def test_squeeze_errors() -> None:
    assert gd.ops.squeeze(f32(("batch", 1))).shape == ("batch",)
    with pytest.raises(gd.ShapeError, match="squeeze"):
        gd.ops.squeeze(f32((1, 2, 1)), 1)
    with pytest.raises(gd.ShapeError):
        gd.ops.squeeze(f32(("batch", 1)), 0)  # a symbolic dim is not known to be 1
    with pytest.raises(gd.ShapeError):
        gd.ops.squeeze(f32((1, 2)), 2)


@pytest.mark.parametrize(
    ("shape", "target"),
    [((3,), (2, 3)), ((), (2, 2)), ((2, 1), (2, 5)), ((1, 1), (3, 1, 4)), ((3,), (3,))],
)
def test_broadcast_to_matches_numpy(shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    got = gd.ops.broadcast_to(f32(shape), target).shape
    assert got == np.broadcast_to(np.zeros(shape), target).shape


def test_broadcast_to_symbolic_and_errors() -> None:
    assert gd.ops.broadcast_to(f32(("batch", 1)), ("batch", 4)).shape == ("batch", 4)
    assert gd.ops.broadcast_to(f32((1,)), ("n",)).shape == ("n",)
    for shape, target in (((3,), (4,)), ((2, 3), (3,)), (("batch",), (5,)), ((2,), ("n",))):
        with pytest.raises(gd.ShapeError):
            gd.ops.broadcast_to(f32(shape), target)


REDUCTIONS = ("sum", "prod", "max", "min", "mean")


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize(
    ("axis", "keepdims"),
    [
        (None, False),
        (None, True),
        (0, False),
        (-1, False),
        ((0, 2), False),
        ((2, 0), True),
        (1, True),
    ],
)
def test_reduction_shapes_match_numpy(
    op: str, axis: int | tuple[int, ...] | None, keepdims: bool
) -> None:
    shape = (2, 3, 4)
    want = getattr(np, op)(np.ones(shape), axis=axis, keepdims=keepdims).shape
    got = getattr(gd.ops, op)(f32(shape), axis=axis, keepdims=keepdims).shape
    assert got == want


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_symbolic_and_errors(op: str) -> None:
    fn = getattr(gd.ops, op)
    assert fn(f32(("batch", 4)), axis=0).shape == (4,)
    assert fn(f32(("batch", 4)), axis=1, keepdims=True).shape == ("batch", 1)
    with pytest.raises(gd.ShapeError, match="out of range"):
        fn(f32((2, 3)), axis=2)
    with pytest.raises(gd.ShapeError):
        fn(f32((2, 3)), axis=-3)
    with pytest.raises(gd.ShapeError, match="repeated"):
        fn(f32((2, 3)), axis=(1, -1))


def test_softmax_axis() -> None:
    assert gd.ops.softmax(f32(("batch", 4)), axis=0).shape == ("batch", 4)
    with pytest.raises(gd.ShapeError):
        gd.ops.softmax(f32((2, 3)), axis=2)
