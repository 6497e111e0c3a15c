"""cond and while_loop: their types (joins and least fixed points, golden tables under every
policy), their errors, their semantics on the reference and on onnxruntime (ONNX If and
Loop checked with onnx.checker's full check), captures, nesting, the passes, printing and
explain.

The golden tables (tests/data/control_types.txt) were written once from the rules
(``cond``: the join of the branches' types; ``while_loop``: start from the initial type
and join what the body returns until it settles); each cell is checked against the
implementation and, independently, against the policy's join (``Policy.common_dtype``,
itself checked against the seeds' published tables by tests/test_promotion_goldens.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import floats
import numpy as np
import onnx
import pytest
from backend import export, run
from onnx_cases import DTYPES, special_values

import graphdsl as gd
from graphdsl import DType

GOLDEN = Path(__file__).resolve().parent / "data" / "control_types.txt"
LITERALS = {"int?": 1, "float?": 1.5}


def _raw(a: np.ndarray) -> np.ndarray:
    """``a``'s bytes, one row per element: data movement compared byte for byte."""
    return np.ascontiguousarray(a).view(np.uint8).reshape(*a.shape, a.dtype.itemsize)


# ------------------------------------------------------------------------ the type tables


def labels(p: gd.Policy) -> list[str]:
    """The table's headings: the policy's dtypes (as its own tables order them) and the
    literal kinds."""
    from graphdsl.notation import notation_for

    dts = notation_for(p.name).sort(p.table_dtypes())
    return [d.name for d in dts] + list(LITERALS)


def _operand(g: gd.Graph, label: str, name: str) -> object:
    """An input of the dtype ``label`` names, or the literal of a literal kind."""
    return LITERALS[label] if label in LITERALS else g.inputs[[*g.input_names].index(name)]


def _graph(p: gd.Policy, a: str, b: str) -> gd.Graph:
    types: dict[str, object] = {"flag": gd.bool}
    for name, label in (("a", a), ("b", b)):
        if label not in LITERALS:
            types[name] = gd.dtype(label)
    return gd.Graph("t", input_types=types, policy=p)


def _show(t: gd.TensorType) -> str:
    return t.dtype.name + ("?" if t.ambiguous else "")


def cond_cell(p: gd.Policy, a: str, b: str) -> str:
    """The type of ``cond(flag, lambda: a, lambda: b)``."""
    g = _graph(p, a, b)
    x, y = _operand(g, a, "a"), _operand(g, b, "b")
    try:
        z = gd.ops.cond(g.inputs[0], lambda: x, lambda: y)
    except gd.PromotionError:
        return "-"
    except gd.LiteralError:
        return "!"
    assert isinstance(z, gd.Symbol)
    return _show(z.type)


def while_cell(p: gd.Policy, a: str, b: str) -> str:
    """The carried type of ``while_loop(a, lambda v: flag, lambda v: b)``."""
    g = _graph(p, a, b)
    x, y = _operand(g, a, "a"), _operand(g, b, "b")
    flag = g.inputs[0]
    try:
        with g:  # (a literal initial value has no graph of its own)
            z = gd.ops.while_loop(x, lambda v: flag, lambda v: y)
    except gd.PromotionError:
        return "-"
    except gd.LiteralError:
        return "!"
    assert isinstance(z, gd.Symbol)
    return _show(z.type)


def golden() -> dict[tuple[str, str], dict[tuple[str, str], str]]:
    """{(policy, "cond" | "while_loop"): {(row, column): cell}} from the golden file."""
    tables: dict[tuple[str, str], dict[tuple[str, str], str]] = {}
    current: dict[tuple[str, str], str] = {}
    cols: list[str] = []
    for line in GOLDEN.read_text().splitlines():
        head = re.fullmatch(r"\[(\S+) (cond|while_loop)\]", line)
        if head:
            current = tables[(head[1], head[2])] = {}
            cols = []
        elif line and not line.startswith("#"):
            cells = line.split()
            if not cols:
                cols = cells
            else:
                current.update({(cells[0], c): v for c, v in zip(cols, cells[1:], strict=True)})
    return tables


def _join(p: gd.Policy, a: str, b: str) -> str:
    """The policy's join of two headings, with literals' fit checked as cond checks them."""

    def typ(label: str) -> tuple[DType, bool]:
        if label in LITERALS:
            lt = p.literal_type(LITERALS[label])
            return lt.dtype, lt.ambiguous
        return gd.dtype(label.rstrip("?")), label.endswith("?")

    try:
        r = p.decide(*typ(a), *typ(b)).result
    except gd.PromotionError:
        return "-"
    for label in (a, b):
        if label in LITERALS and p.literal_problem(LITERALS[label], r.dtype):
            return "!"
    return r.dtype.name + ("?" if r.ambiguous else "")


def _fixed_point(p: gd.Policy, a: str, b: str) -> str:
    """Kleene iteration: from the initial type, join with the body's until it settles."""
    t = a
    for _ in range(64):
        j = _join(p, t, b)
        if j in ("-", "!"):
            return j
        if j == t:
            break
        t = j
    else:
        raise AssertionError(f"{a} x {b} did not settle")
    if a in LITERALS and p.literal_problem(LITERALS[a], gd.dtype(t.rstrip("?"))):
        return "!"  # the initial literal converts to the carried type
    return t


def _policies() -> list[str]:
    return list(gd.policy_names())


def test_the_golden_file_covers_every_policy() -> None:
    tables = golden()
    assert {name for name, _ in tables} == set(gd.policy_names())
    for (name, _), cells in tables.items():
        labs = labels(gd.policy(name))
        assert set(cells) == {(r, c) for r in labs for c in labs}, name


@pytest.mark.parametrize("name", _policies())
def test_cond_type_table(name: str) -> None:
    p = gd.policy(name)
    want = golden()[(name, "cond")]
    bad = [f"{a} x {b}: want {w}, got {g}" for (a, b), w in want.items()
           if (g := cond_cell(p, a, b)) != w]  # fmt: skip
    assert not bad, f"{len(bad)} wrong cells:\n" + "\n".join(bad)
    # the golden is the policy's join of the branches' types, literals' fit checked
    off = [f"{a} x {b}: golden {w}, join {j}" for (a, b), w in want.items()
           if (j := _join(p, a, b)) != w]  # fmt: skip
    assert not off, "\n".join(off)


@pytest.mark.parametrize("name", _policies())
def test_while_loop_type_table(name: str) -> None:
    p = gd.policy(name)
    want = golden()[(name, "while_loop")]
    bad = [f"{a} x {b}: want {w}, got {g}" for (a, b), w in want.items()
           if (g := while_cell(p, a, b)) != w]  # fmt: skip
    assert not bad, f"{len(bad)} wrong cells:\n" + "\n".join(bad)
    off = [f"{a} x {b}: golden {w}, fixed point {f}" for (a, b), w in want.items()
           if (f := _fixed_point(p, a, b)) != w]  # fmt: skip
    assert not off, "\n".join(off)


def test_default_policy_cells_from_the_issue() -> None:
    cells = golden()[("default", "cond")]
    assert cells[("int16", "float32")] == "float32"  # the int16 branch is cast
    assert cells[("int?", "int8")] == "int8"  # a literal branch yields to a known one
    assert cells[("float?", "int8")] == "float32?"  # {anvil}: a float literal meets ints
    assert cells[("int?", "float?")] == "float32?"
    assert cells[("float8_e4m3fn", "float16")] == "-"  # no join
    loops = golden()[("default", "while_loop")]
    assert loops[("int32", "float?")] == "float32?"  # a float literal added: the float
    assert loops[("uint32", "int32")] == "int64"  # the x64 edge
    assert golden()[("jax", "while_loop")][("int32", "float?")] == "float64?"


# ------------------------------------------------------------------------ joins at work


def _nodes(g: gd.Graph) -> list[str]:
    return [n.op for n in g.nodes if n.op != "input"]


def test_cond_casts_inside_the_branch_that_needs_it() -> None:
    g = gd.Graph("c", input_types={"p": gd.bool, "n": gd.TensorType(gd.int16, (3,)),
                                   "x": gd.TensorType(gd.float32, (3,))})  # fmt: skip
    p, n, x = g.inputs
    z = gd.ops.cond(p, lambda: n, lambda: x)
    assert isinstance(z, gd.Symbol) and str(z.type) == "float32[3]"
    g.output(z)
    lowered = gd.passes.canonicalize(g)
    then, other = lowered.nodes[-1].attrs["regions"]
    assert _nodes(then.graph) == ["cast"] and _nodes(other.graph) == []
    m = export(g, check="full")
    (node,) = m.graph.node
    assert node.op_type == "If"
    branches = {a.name: [n.op_type for n in a.g.node] for a in node.attribute}
    assert branches == {"then_branch": ["Cast"], "else_branch": ["Identity"]}
    for flag in (True, False):
        ins = [np.array(flag), np.array([1, -2, 300], np.int16),
               np.array([0.5, -0.0, np.nan], np.float32)]  # fmt: skip
        want = np.array([1, -2, 300], np.float32) if flag else ins[2]
        got = gd.evaluate(g, ins)[0]
        floats.assert_bits(got, want)  # a cast or the value itself: exact
        ran = run(m, ins)[0]
        floats.assert_bits(ran.view(np.uint32), got.view(np.uint32))  # NaN's payload too


def test_a_literal_branch_yields_and_must_fit() -> None:
    g = gd.Graph("l", input_types={"p": gd.bool, "x": gd.TensorType(gd.int8, (2,))})
    p, x = g.inputs
    z = gd.ops.cond(p, lambda: 100, lambda: x)
    assert isinstance(z, gd.Symbol) and str(z.type) == "int8[2]"
    g.output(z)
    assert gd.evaluate(g, [np.array(True), np.zeros(2, np.int8)])[0].tolist() == [100, 100]
    assert run(export(g), [np.array(True), np.zeros(2, np.int8)])[0].tolist() == [100, 100]
    with pytest.raises(gd.LiteralError, match=r"then branch's result 0, the literal 300, takes "
                                              r"the joined type int8"):  # fmt: skip
        gd.ops.cond(p, lambda: 300, lambda: x)


def test_no_join_names_the_branch_both_types_and_the_policy() -> None:
    g = gd.Graph("s", input_types={"p": gd.bool, "n": gd.int16, "x": gd.float32},
                 policy="jax-strict")  # fmt: skip
    p, n, x = g.inputs
    with pytest.raises(gd.PromotionError) as e:
        gd.ops.cond(p, lambda: (x, n), lambda: (x, x))
    msg = str(e.value)
    assert "result 1: no join under policy 'jax-strict'" in msg
    assert "the then branch gives int16[], the else branch gives float32[]" in msg
    assert e.value.policy == "jax-strict" and e.value.lhs == "int16[]"
    with pytest.raises(gd.PromotionError) as e:
        gd.ops.while_loop([n, x], lambda i, v: i < 3, lambda i, v: (v, v))
    assert "loop variable 0: no join under policy 'jax-strict'" in str(e.value)
    assert "cast the body's result to the loop variable's type" in str(e.value)
    f = gd.Graph("f", input_types={"a": gd.float8_e4m3fn, "b": gd.float16})
    a, b = f.inputs
    with pytest.raises(gd.PromotionError, match=r"loop variable 0: no join under policy "
                                                r"'default': its type so far gives "
                                                r"float8_e4m3fn\[\], the body's result gives "
                                                r"float16\[\]"):  # fmt: skip
        gd.ops.while_loop(a, lambda v: v < 0, lambda v: b)


def test_while_loop_carries_the_least_fixed_point_from_the_start() -> None:
    g = gd.Graph("w", input_types={"n": gd.int32})
    (n,) = g.inputs
    i, x = gd.ops.while_loop([0, n], lambda i, x: i < 4, lambda i, x: (i + 1, x + 0.5))
    assert str(i.type) == "int32?[]" and str(x.type) == "float32?[]"
    g.output(i, x)
    m = export(g, check="full")
    loop = next(nd for nd in m.graph.node if nd.op_type == "Loop")
    body = loop.attribute[0].g
    elem = [v.type.tensor_type.elem_type for v in body.input]
    assert elem == [onnx.TensorProto.INT64, onnx.TensorProto.BOOL, onnx.TensorProto.INT32,
                    onnx.TensorProto.FLOAT]  # fmt: skip
    # the initial value converts before the loop: a Cast feeds the Loop
    casts = {nd.output[0] for nd in m.graph.node if nd.op_type == "Cast"}
    assert loop.input[3] in casts
    for v in (np.array(7, np.int32), np.array(2**24 + 1, np.int32)):
        want = gd.evaluate(g, [v])
        acc = np.float32(v)  # converted on entry, then 0.5 added four times in float32
        for _ in range(4):
            acc = np.float32(acc + np.float32(0.5))
        assert want[0].tolist() == 4 and want[1].tolist() == float(acc)
        assert [w.tolist() for w in want] == [r.tolist() for r in run(m, [v])]


def test_the_fixed_point_takes_as_many_steps_as_it_needs() -> None:
    """(a, b) -> (b, c): b takes c's type after one step, a after two."""
    g = gd.Graph("chain", input_types={"a": gd.int8, "c": gd.float16})
    a, c = g.inputs
    traced: list[tuple[str, str]] = []

    def body(x: gd.Symbol, y: gd.Symbol) -> tuple[gd.Symbol, gd.Symbol]:
        traced.append((str(x.type), str(y.type)))
        return y, c

    x, y = gd.ops.while_loop([a, a], lambda x, y: x < 5, body)
    assert traced == [("int8[]", "int8[]"), ("int8[]", "float16[]"),
                      ("float16[]", "float16[]")]  # fmt: skip
    assert str(x.type) == str(y.type) == "float16[]"
    g.output(x, y)
    ins = [np.array(3, np.int8), np.array(7.5, np.float16)]
    assert [v.tolist() for v in gd.evaluate(g, ins)] == [7.5, 7.5]
    assert [v.tolist() for v in run(export(g, check="full"), ins)] == [7.5, 7.5]


def test_loop_counts_data_dependent_iterations() -> None:
    """Collatz steps: a data-dependent trip count, zero for 1, a cond in the body."""
    g = gd.Graph("collatz", input_types={"n": gd.int64})
    (n,) = g.inputs

    def body(k: gd.Symbol, v: gd.Symbol) -> tuple[gd.Symbol, gd.Symbol]:
        nxt = gd.ops.cond(v % 2 == 0, lambda: v // 2, lambda: 3 * v + 1)
        return k + 1, nxt

    steps, last = gd.ops.while_loop([0, n], lambda k, v: v != 1, body)
    g.output(steps, last)
    m = export(g, check="full")
    for start, want in ((1, 0), (6, 8), (27, 111)):
        got = gd.evaluate(g, [np.array(start)])
        assert got[0].tolist() == want and got[1].tolist() == 1
        assert [r.tolist() for r in run(m, [np.array(start)])] == [want, 1]


def test_nested_and_symbolic() -> None:
    g = gd.Graph("nest", input_types={"x": gd.TensorType(gd.float32, ("n", 2)), "k": gd.int8,
                                      "p": gd.bool})  # fmt: skip
    x, k, p = g.inputs

    def body(i: gd.Symbol, acc: gd.Symbol) -> tuple[gd.Symbol, gd.Symbol]:
        step = gd.ops.cond(i % 2 == 0, lambda: acc * 2, lambda: acc + x)
        return i + 1, step

    def looped() -> gd.Symbol:
        _, acc = gd.ops.while_loop([g.scalar(0, gd.int8), x], lambda i, acc: i < k, body)
        return gd.ops.reshape(acc, (-1,))

    z = gd.ops.cond(p, looped, lambda: gd.ops.reshape(x, (-1,)))
    assert isinstance(z, gd.Symbol) and z.shape == ("n*2",)
    g.output(z)
    m = export(g, check="full")
    for rows in (0, 1, 3):
        for steps in (0, 3):
            for flag in (True, False):
                ins = {"x": np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) - 1.5,
                       "k": np.array(steps, np.int8), "p": np.array(flag)}  # fmt: skip
                want = gd.evaluate(g, ins)[0]
                floats.assert_bits(run(m, ins)[0], want)  # * 2 and + x: each rounds once
    acc = np.array([[-1.5, -0.5], [0.5, 1.5]], np.float32)
    ins = {"x": acc, "k": np.array(3, np.int8), "p": np.array(True)}
    expect = (acc * 2 + acc) * 2  # i = 0: *2, 1: +x, 2: *2
    floats.assert_bits(gd.evaluate(g, ins)[0], expect.reshape(-1))


# ------------------------------------------------------------------------ ONNX structure


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_if_and_loop_move_every_dtype_on_the_cpu(dt: DType) -> None:
    """If and Loop have no entries in the kernel tables (exporters/onnx/_targets.py assumes
    them): onnxruntime's CPU provider runs both on every dtype, values kept bit for bit."""
    g = gd.Graph("m", input_types={"p": gd.bool, "x": gd.TensorType(dt, (5,))})
    p, x = g.inputs
    z = gd.ops.cond(p, lambda: x, lambda: x[::-1])
    _, w = gd.ops.while_loop([0, x], lambda i, v: i < 2, lambda i, v: (i + 1, v[::-1]))
    g.output(z, w)
    m = export(g, check="full")
    assert {nd.op_type for nd in m.graph.node} >= {"If", "Loop"}
    vals = special_values(dt)
    arr = np.resize(vals, 5).astype(dt.np)
    for flag in (True, False):
        got = run(m, [np.array(flag), arr])
        want = gd.evaluate(g, [np.array(flag), arr])
        for r, w_ in zip(got, want, strict=True):
            assert r.dtype == w_.dtype
            floats.assert_bits(_raw(r), _raw(w_))  # data movement: every byte, NaN payloads


def test_checker_full_and_names_read_inside_branches() -> None:
    """A value both returned and read inside a branch keeps its name (an Identity names the
    output); values only a branch reads are not dropped as unused."""
    g = gd.Graph("r", input_types={"p": gd.bool, "x": gd.TensorType(gd.float32, (2, 3))})
    p, x = g.inputs
    y = x * 2
    t = gd.ops.transpose(gd.ops.transpose(x + 1))  # a transpose pair: a bypassed node
    z = gd.ops.cond(p, lambda: y + t, lambda: y)
    g.output(y, z)
    m = export(g, check="full")
    onnx.checker.check_model(m, full_check=True)
    ins = [np.array(True), np.arange(6, dtype=np.float32).reshape(2, 3)]
    for a, b in zip(run(m, ins), gd.evaluate(g, ins), strict=True):
        floats.assert_bits(a, b)  # * 2, + 1, + t: each rounds once


def test_one_if_for_several_results_and_one_loop_for_several_variables() -> None:
    g = gd.Graph("k", input_types={"p": gd.bool, "a": gd.int32, "b": gd.float64})
    p, a, b = g.inputs
    r = gd.ops.cond(p, lambda: (a, b, a + b), lambda: (b, a, 0))
    assert isinstance(r, list) and [str(v.type) for v in r] == ["float64[]"] * 3
    s = gd.ops.while_loop([a, b, 0], lambda u, v, w: u < 10, lambda u, v, w: (u + 3, v / 2, w - 1))
    g.output(*r, *s)
    m = export(g, check="full")
    assert [nd.op_type for nd in m.graph.node].count("If") == 1
    assert [nd.op_type for nd in m.graph.node].count("Loop") == 1
    ins = [np.array(False), np.array(1, np.int32), np.array(8.0)]
    want = [8.0, 1.0, 0.0, 10, 1.0, -3]  # the else branch; three iterations
    assert [v.tolist() for v in gd.evaluate(g, ins)] == want
    assert [v.tolist() for v in run(m, ins)] == want


# ------------------------------------------------------------------------ errors


def test_predicates_are_bool_scalars() -> None:
    g = gd.Graph("p", input_types={"n": gd.int32, "v": gd.TensorType(gd.bool, (2,))})
    n, v = g.inputs
    with pytest.raises(gd.OpTypeError, match=r"the predicate is int32\[\], but a predicate is "
                                             r"a bool scalar"):  # fmt: skip
        gd.ops.cond(n, lambda: n, lambda: n)
    with pytest.raises(gd.OpTypeError, match=r"bool\[2\]"):
        gd.ops.cond(v, lambda: n, lambda: n)
    with pytest.raises(gd.OpTypeError, match="known now"):
        gd.ops.cond(True, lambda: n, lambda: n)  # type: ignore[arg-type]
    with pytest.raises(gd.OpTypeError, match=r"the predicate returns a value is int32\[\]"):
        gd.ops.while_loop(n, lambda i: i, lambda i: i + 1)
    with pytest.raises(gd.OpTypeError, match="returns 2 values"):
        gd.ops.while_loop(n, lambda i: (i < 2, i < 3), lambda i: i + 1)


def test_branch_and_body_shapes_and_counts() -> None:
    g = gd.Graph("e", input_types={"p": gd.bool, "x": gd.TensorType(gd.float32, (3,)),
                                   "y": gd.TensorType(gd.float32, (4,))})  # fmt: skip
    p, x, y = g.inputs
    with pytest.raises(gd.OpTypeError, match="returns 2 values and the else branch 1"):
        gd.ops.cond(p, lambda: (x, x), lambda: x)
    with pytest.raises(gd.ShapeError, match=r"result 0 is float32\[3\] in the then branch and "
                                            r"float32\[4\] in the else branch"):  # fmt: skip
        gd.ops.cond(p, lambda: x, lambda: y)
    z = gd.ops.cond(p, lambda: x, lambda: 0.0)  # a scalar broadcasts to the other's shape
    assert isinstance(z, gd.Symbol) and str(z.type) == "float32[3]"
    with pytest.raises(gd.ShapeError, match="a loop variable keeps its shape"):
        gd.ops.while_loop(x, lambda v: p, lambda v: gd.ops.concat([v, v]))
    with pytest.raises(gd.OpTypeError, match="returns 1 values for 2 loop variables"):
        gd.ops.while_loop([x, x], lambda a, b: p, lambda a, b: a)
    with pytest.raises(gd.OpTypeError, match="returned 'no'"):
        gd.ops.cond(p, lambda: x, lambda: "no")  # type: ignore[arg-type,return-value]


def test_captures() -> None:
    g = gd.Graph("cap", input_types={"p": gd.bool, "x": gd.TensorType(gd.int32, (2,))})
    p, x = g.inputs
    k = g.constant(np.array([10, 20], np.int32))
    y = x + 1

    def inner() -> gd.Symbol:  # reads x and y two graphs out, and a constant
        z = gd.ops.cond(p, lambda: y * k, lambda: x - k)
        assert isinstance(z, gd.Symbol)
        return z

    z = gd.ops.cond(p, inner, lambda: x)
    assert isinstance(z, gd.Symbol)
    then = z.attrs["regions"][0].graph
    assert [s.attrs["name"] for s in then.inputs] == ["c0", "x", "p"]  # y, x, the predicate
    assert [n.op for n in then.nodes].count("constant") == 1  # the constant copied in
    g.output(z)
    m = export(g, check="full")
    for flag in (True, False):
        ins = [np.array(flag), np.array([3, -4], np.int32)]
        want = [40, -60] if flag else [3, -4]
        assert gd.evaluate(g, ins)[0].tolist() == want
        assert run(m, ins)[0].tolist() == want
    other = gd.Graph("other", input_types={"q": gd.float32})
    with pytest.raises(gd.GraphError, match="values cannot cross graphs"):
        gd.ops.cond(p, lambda: other.inputs[0], lambda: 1.0)


def test_weights_inside_branches_come_from_the_graph_around() -> None:
    g = gd.Graph("wb", input_types={"p": gd.bool, "x": gd.TensorType(gd.float32, (2,))})
    p, x = g.inputs
    z = gd.ops.cond(p, lambda: x * g.weight("w", gd.float32, (2,)), lambda: x)
    g.output(z)
    w = {"w": np.array([2.0, 3.0], np.float32)}
    ins = [np.array(True), np.ones(2, np.float32)]
    assert gd.evaluate(g, ins, weights=w)[0].tolist() == [2.0, 3.0]
    assert run(export(g, weights=w), ins)[0].tolist() == [2.0, 3.0]
    with pytest.raises(gd.GraphError, match="declare weights on the top-level graph"):
        gd.ops.cond(p, lambda: x * x.graph.innermost().weight("v", gd.float32, (2,)),
                    lambda: x)  # fmt: skip


# ------------------------------------------------------------------------ passes and text


def _sample() -> gd.Graph:
    g = gd.Graph("c", input_types={"p": gd.bool, "n": gd.TensorType(gd.int16, (3,)),
                                   "x": gd.TensorType(gd.float32, (3,))})  # fmt: skip
    p, n, x = g.inputs
    z = gd.ops.cond(p, lambda: n, lambda: x * 2)
    _, acc = gd.ops.while_loop([0, n], lambda i, acc: i < 3, lambda i, acc: (i + 1, acc + 0.5))
    g.output(z, acc)
    return g


def test_printing_shows_the_nested_graphs() -> None:
    text = str(_sample())
    assert "  %0: float32[3] = cond %p, %n, %x, index=0\n    then(%n: int16[3]) -> float32 {\n" \
           "      return %n\n    }\n    else(%x: float32[3]) -> float32 {\n" in text  # fmt: skip
    assert "predicate(%v0: int32?[], %v1: float32?[3]) -> bool {" in text
    assert "body(%v0: int32?[], %v1: float32?[3]) -> (int32, float32) {" in text
    lowered = str(gd.passes.canonicalize(_sample()))
    assert "then(%n: int16[3]) -> float32 {\n      %0: float32[3] = cast %n, to=float32" in lowered
    assert "body(%v0: int32[], %v1: float32[3])" in lowered


def test_explain_names_the_node_and_what_converts_inside() -> None:
    text = _sample().explain()
    lines = text.splitlines()
    assert lines[0] == "graph c, policy 'default': 7 implicit conversions"
    assert any(re.match(r"  cond at .*: the then branch's result 0, int16\[3\] -> float32 \(the "
                        r"join of the branches' types int16\[3\] x float32\[3\]", s)
               for s in lines)  # fmt: skip
    assert any(re.match(r"  cond at .*, in the else branch: mul at .*: literal 2 -> constant "
                        r"float32", s) for s in lines)  # fmt: skip
    assert any(re.match(r"  while_loop at .*: the initial value of loop variable 1, %n int16 "
                        r"-> float32 \(the carried type: float32, the least fixed point", s)
               for s in lines)  # fmt: skip
    assert any(re.match(r"  while_loop at .*, in the body: add at .*: literal 0.5", s)
               for s in lines)  # fmt: skip


def test_passes_verify_and_agree() -> None:
    g = _sample()
    gd.verify.verify(g)
    one = gd.passes.canonicalize(g)
    gd.verify.verify(one, explicit_casts=True)
    assert str(one) == str(gd.passes.run_passes(g, verify=True))
    # a branch whose result was not cast inside it is caught once casts are explicit
    bad = gd.passes.implicit_cast(g)
    node = next(n for n in bad.nodes if n.op == "cond")
    then = node.attrs["regions"][0].graph
    then.outputs = [then.inputs[0]]
    with pytest.raises(gd.GraphError, match="result 0 of its then graph is int16 but the "
                                            "node takes it as float32"):  # fmt: skip
        gd.verify.verify(bad, explicit_casts=True)


def test_constant_conds_fold() -> None:
    g = gd.Graph("f", input_types={"x": gd.float32})
    (x,) = g.inputs
    p = g.constant(np.array(False))
    k = g.constant(np.array(2.0, np.float32))
    z = gd.ops.cond(p, lambda: k * 3, lambda: k + 1)
    g.output(x + z)
    lowered = gd.passes.canonicalize(g)
    assert [n.op for n in lowered.nodes if n.op != "input"] == ["constant", "add"]
    assert gd.evaluate(g, [np.array(1.0, np.float32)])[0].tolist() == 4.0


def test_tracing_leaves_no_state_behind() -> None:
    g = gd.Graph("t", input_types={"p": gd.bool, "x": gd.float32})
    p, x = g.inputs

    def boom() -> gd.Symbol:
        raise RuntimeError("in the branch")

    with pytest.raises(RuntimeError):
        gd.ops.cond(p, boom, lambda: x)
    y = x + 1  # builds in g again, not in the abandoned branch
    assert y.graph is g and g.innermost() is g


def test_call_of_a_subgraph_that_returns_nothing() -> None:
    """A subgraph given g.output() of nothing (as a MAX subgraph that only moves values)
    is called for nothing: [] (a pure graph's call computes nothing); one never given
    output(...) is refused."""
    g = gd.Graph("main", input_types={"x": gd.float32})
    sub = g.subgraph("nothing", {"v": gd.float32})
    with pytest.raises(gd.GraphError, match=r"has no outputs; call nothing.output\(...\)"):
        gd.ops.call(sub, g.inputs[0])
    sub.output()
    assert gd.ops.call(sub, g.inputs[0]) == []
    g.output(g.inputs[0] + 1)
    assert gd.evaluate(g, [np.float32(1)])[0] == 2
