"""Graph construction, Symbol behaviour, operators, ownership, verify(), freeze(), and the
errors raised while building (located at the user's line, naming op, types, policy, fix).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import cast

import numpy as np
import pytest
from example_graphs import issue_mlp

import graphdsl as gd
from graphdsl import DType


def here() -> int:
    """The caller's current line number."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def where(line: int) -> str:
    return f"test_graph.py:{line}"


def int16_graph(policy: str = "default") -> tuple[gd.Graph, gd.Symbol, gd.Symbol]:
    g = gd.Graph(
        "g",
        input_types={"x": gd.TensorType(gd.int16, (3,)), "y": gd.TensorType(gd.int16, (3,))},
        policy=policy,
    )
    x, y = g.inputs
    return g, x, y


# ------------------------------------------------------------------ construction


def test_dict_input_types_name_the_inputs() -> None:
    g = gd.Graph(
        "d",
        input_types={
            "x": gd.TensorType(gd.float32, ("batch", 4)),
            "n": gd.int16,
            "m": ("uint8", (2, "k")),
        },
    )
    assert g.input_names == ["x", "n", "m"]
    x, n, m = g.inputs
    assert x.type == gd.TensorType(gd.float32, ("batch", 4))
    assert n.type == gd.TensorType(gd.int16, ())
    assert m.type == gd.TensorType(gd.uint8, (2, "k"))
    assert all(s.op == "input" and not s.ambiguous for s in g.inputs)
    assert g.name == "d"
    assert g.policy is gd.policy("default")


def test_list_input_types_are_numbered() -> None:
    g = gd.Graph("l", input_types=[gd.int8, gd.TensorType(gd.float64, (2,)), "bf16"])
    assert g.input_names == ["input0", "input1", "input2"]
    assert [s.dtype for s in g.inputs] == [gd.int8, gd.float64, gd.bfloat16]
    assert gd.Graph("empty").inputs == []


def test_with_block_returns_the_graph() -> None:
    with gd.Graph("ctx", input_types=[gd.float32], policy="jax") as g:
        (x,) = g.inputs
        g.output(x * 2)
    assert isinstance(g, gd.Graph)
    assert g.policy.name == "jax"
    assert g.outputs[0].type == gd.TensorType(gd.float32, ())


def test_bad_graph_arguments() -> None:
    with pytest.raises(gd.GraphError, match="name is a str"):
        gd.Graph(None)  # type: ignore[arg-type]
    assert gd.Graph("").name == ""  # MAX allows any str (the exporter names ONNX's 'graph')
    with pytest.raises(gd.GraphError, match="identifier"):
        gd.Graph("g", input_types={"not a name": gd.int8})
    with pytest.raises(gd.GraphError, match="ambiguous"):
        gd.Graph("g", input_types={"x": gd.TensorType(gd.int32, (), ambiguous=True)})
    with pytest.raises(ValueError, match="did you mean 'jax'"):
        gd.Graph("g", policy="jaxx")
    with pytest.raises(gd.ShapeError):
        gd.Graph("g", input_types={"x": gd.TensorType(gd.int8, (-1,))})


def test_bad_dtype_strings() -> None:
    with pytest.raises(gd.DTypeError, match="did you mean 'float32'"):
        gd.dtype("flaot32")
    with pytest.raises(gd.DTypeError, match="flaot32"):
        gd.Graph("g", input_types={"x": ("flaot32", (3,))})
    with pytest.raises(gd.DTypeError, match="ambiguous"):
        gd.dtype("i8")  # numpy's int64 or bit-width int8: rejected
    g = gd.Graph("g", input_types=[gd.int8])
    with pytest.raises(gd.DTypeError):
        g.scalar["int9"](1)
    with pytest.raises(gd.DTypeError):
        gd.ops.cast(g.inputs[0], "flaot32")
    with pytest.raises(gd.DTypeError):
        g.constant([1, 2], "nope")


# ------------------------------------------------------------------ symbols


def test_symbol_accessors() -> None:
    g = gd.Graph("s", input_types={"x": gd.TensorType(gd.float16, ("batch", 3))})
    (x,) = g.inputs
    assert x.type == gd.TensorType(gd.float16, ("batch", 3), False)
    assert (x.dtype, x.shape, x.ambiguous, x.rank) == (gd.float16, ("batch", 3), False, 2)
    lit = g.scalar(2)
    assert (lit.dtype, lit.shape, lit.ambiguous, lit.rank) == (gd.int32, (), True, 0)
    assert str(lit.type) == "int32?[]"
    assert str(x.type) == "float16[batch, 3]"
    line = here() + 1
    y = x * 2
    assert where(line) in repr(y)
    assert "'s'" in repr(y)


def test_symbols_hash_by_identity_and_eq_builds_a_node() -> None:
    _g, x, y = int16_graph()
    table = {x: "x", y: "y"}
    assert table[x] == "x"
    assert table[y] == "y"
    assert len({x, y, x}) == 2
    e = x == y
    assert isinstance(e, gd.Symbol)
    assert e.op == "equal"
    assert e.inputs == (x, y)
    assert e.type == gd.TensorType(gd.bool, (3,))
    ne = x != 1
    assert ne.op == "not_equal"
    assert ne.inputs[0] is x
    assert ne.inputs[1].attrs["value"] == 1
    # the hash is object's (identity): a dict or set finds a symbol without calling ==
    assert hash(x) == object.__hash__(x) and hash(y) == object.__hash__(y)
    assert {x: 1}.get(y) is None and y not in {x}
    # a list finds the same object by identity before ==; another symbol reaches ==, whose
    # node has no truth value
    assert x in [x, y]
    with pytest.raises(TypeError, match="'x is y' to compare symbols"):
        _ = x in [y]


def test_bool_of_a_symbol_raises() -> None:
    _g, x, y = int16_graph()
    with pytest.raises(TypeError, match="truth value"):
        bool(x)
    with pytest.raises(TypeError, match="where"):
        bool(x == y)
    with pytest.raises(TypeError):
        _ = 1 if x < y else 0


Expr = Callable[[gd.Symbol], gd.Symbol]

# (expression with x and the literal 2, op built, x is the first operand?, result dtype)
# x is int16[3] under "default": an int literal yields to int16; / gives the default float.
OPERATORS: list[tuple[str, Expr, str, bool, DType]] = [
    ("x + 2", lambda x: x + 2, "add", True, gd.int16),
    ("2 + x", lambda x: 2 + x, "add", False, gd.int16),
    ("x - 2", lambda x: x - 2, "sub", True, gd.int16),
    ("2 - x", lambda x: 2 - x, "sub", False, gd.int16),
    ("x * 2", lambda x: x * 2, "mul", True, gd.int16),
    ("2 * x", lambda x: 2 * x, "mul", False, gd.int16),
    ("x / 2", lambda x: x / 2, "div", True, gd.float32),
    ("2 / x", lambda x: 2 / x, "div", False, gd.float32),
    ("x // 2", lambda x: x // 2, "floordiv", True, gd.int16),
    ("2 // x", lambda x: 2 // x, "floordiv", False, gd.int16),
    ("x % 2", lambda x: x % 2, "mod", True, gd.int16),
    ("2 % x", lambda x: 2 % x, "mod", False, gd.int16),
    ("x ** 2", lambda x: x**2, "pow", True, gd.int16),
    ("2 ** x", lambda x: 2**x, "pow", False, gd.int16),
    ("x & 2", lambda x: x & 2, "bitwise_and", True, gd.int16),
    ("2 & x", lambda x: 2 & x, "bitwise_and", False, gd.int16),
    ("x | 2", lambda x: x | 2, "bitwise_or", True, gd.int16),
    ("2 | x", lambda x: 2 | x, "bitwise_or", False, gd.int16),
    ("x ^ 2", lambda x: x ^ 2, "bitwise_xor", True, gd.int16),
    ("2 ^ x", lambda x: 2 ^ x, "bitwise_xor", False, gd.int16),
    ("x == 2", lambda x: x == 2, "equal", True, gd.bool),
    ("2 == x", lambda x: cast(gd.Symbol, 2 == x), "equal", True, gd.bool),  # noqa: SIM300
    ("x != 2", lambda x: x != 2, "not_equal", True, gd.bool),
    ("x < 2", lambda x: x < 2, "less", True, gd.bool),
    ("2 < x", lambda x: 2 < x, "greater", True, gd.bool),  # noqa: SIM300
    ("x <= 2", lambda x: x <= 2, "less_equal", True, gd.bool),
    ("2 <= x", lambda x: 2 <= x, "greater_equal", True, gd.bool),  # noqa: SIM300
    ("x > 2", lambda x: x > 2, "greater", True, gd.bool),
    ("2 > x", lambda x: 2 > x, "less", True, gd.bool),  # noqa: SIM300
    ("x >= 2", lambda x: x >= 2, "greater_equal", True, gd.bool),
    ("2 >= x", lambda x: 2 >= x, "less_equal", True, gd.bool),  # noqa: SIM300
]


@pytest.mark.parametrize(("text", "expr", "op", "x_first", "dt"), OPERATORS)
def test_operator_with_literal(text: str, expr: Expr, op: str, x_first: bool, dt: DType) -> None:
    g, x, _ = int16_graph()
    s = expr(x)
    assert s.op == op, text
    assert len(s.inputs) == 2
    xs, lit = (s.inputs[0], s.inputs[1]) if x_first else (s.inputs[1], s.inputs[0])
    assert xs is x
    assert lit.op == "literal"
    assert lit.attrs["value"] == 2
    assert lit.type == gd.TensorType(gd.int32, (), True)
    assert s.type == gd.TensorType(dt, (3,), False)
    assert s.graph is g
    assert g.nodes[-1] is s


@pytest.mark.parametrize(
    ("expr", "op"),
    [
        (operator.add, "add"),
        (operator.sub, "sub"),
        (operator.mul, "mul"),
        (operator.truediv, "div"),
        (operator.floordiv, "floordiv"),
        (operator.mod, "mod"),
        (operator.pow, "pow"),
        (operator.matmul, "matmul"),
        (operator.and_, "bitwise_and"),
        (operator.or_, "bitwise_or"),
        (operator.xor, "bitwise_xor"),
        (operator.eq, "equal"),
        (operator.ne, "not_equal"),
        (operator.lt, "less"),
        (operator.le, "less_equal"),
        (operator.gt, "greater"),
        (operator.ge, "greater_equal"),
    ],
)
def test_operator_between_symbols(expr: Callable[[object, object], gd.Symbol], op: str) -> None:
    _g, x, y = int16_graph()
    s = expr(x, y)
    assert s.op == op
    assert s.inputs == (x, y)
    r = expr(y, x)
    assert r.inputs == (y, x)


def test_unary_operators() -> None:
    _g, x, _ = int16_graph()
    assert (-x).op == "negative"
    assert (-x).inputs == (x,)
    assert abs(x).op == "abs"
    assert (~x).op == "bitwise_not"
    assert +x is x
    assert (-x).type == gd.TensorType(gd.int16, (3,))


def test_float_literals_on_either_side() -> None:
    _g, x, _ = int16_graph()
    # {anvil} rule: a float literal meeting a known integer -> default float, ambiguous
    for s in (x * 2.5, 2.5 * x, x + 0.5, 0.5 - x):
        assert s.type == gd.TensorType(gd.float32, (3,), True)
    assert (x + True).type == gd.TensorType(gd.int16, (3,))  # a Python bool is a known bool


def test_matmul_with_literal_raises_on_rank() -> None:
    _g, x, _ = int16_graph()
    with pytest.raises(gd.ShapeError, match=r"int32\?\[\] and int16\[3\]"):
        _ = 2 @ x  # reflected: matmul(2, x), operands in argument order


def test_numpy_and_bad_operands() -> None:
    _g, x, _ = int16_graph()
    s = x + np.array([1, 2, 3], np.int8)
    assert s.inputs[1].op == "constant"
    assert s.inputs[1].type == gd.TensorType(gd.int8, (3,))
    assert s.type == gd.TensorType(gd.int16, (3,))
    with pytest.raises(gd.OpTypeError, match="str"):
        _ = x + "a"  # type: ignore[operator]
    with pytest.raises(gd.OpTypeError, match="no operand is a Symbol"):
        gd.ops.add(1, 2)


# ------------------------------------------------------------------ scalars and constants


def test_scalar_ambiguous_and_typed() -> None:
    g = gd.Graph("sc")
    h = g.scalar(1.5)
    assert h.op == "literal"
    assert h.type == gd.TensorType(gd.float32, (), True)
    assert str(h.type) == "float32?[]"
    assert g.scalar(3).type == gd.TensorType(gd.int32, (), True)
    assert g.scalar(1j).type == gd.TensorType(gd.complex64, (), True)
    assert g.scalar(True).type == gd.TensorType(gd.bool, (), False)
    a = g.scalar[gd.int16](1)
    b = g.scalar(1, gd.int16)
    c = g.scalar["int16"](1)
    for s in (a, b, c):
        assert s.op == "constant"
        assert s.type == gd.TensorType(gd.int16, (), False)
        assert s.attrs["value"].dtype == np.int16
        assert s.attrs["value"] == 1
    assert (a.op, a.type, a.attrs["value"].item()) == (b.op, b.type, b.attrs["value"].item())
    jg = gd.Graph("j", policy="jax")
    assert jg.scalar(1.5).type == gd.TensorType(gd.float64, (), True)
    assert jg.scalar(7).type == gd.TensorType(gd.int64, (), True)


def test_scalar_errors() -> None:
    g = gd.Graph("sc")
    line = here() + 2
    with pytest.raises(gd.LiteralError) as info:
        g.scalar[gd.int8](1000)
    msg = str(info.value)
    assert where(line) in msg
    assert "1000" in msg
    assert "int8" in msg
    with pytest.raises(gd.LiteralError, match="float32"):
        g.scalar(1e40, gd.float32)
    with pytest.raises(gd.LiteralError, match="uint8"):
        g.scalar(-1, "uint8")
    with pytest.raises(gd.LiteralError):
        g.scalar(1.5, gd.int32)
    with pytest.raises(gd.OpTypeError):
        g.scalar("1")  # type: ignore[arg-type]


def test_constant() -> None:
    g = gd.Graph("c")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = g.constant(a)
    assert c.op == "constant"
    assert c.type == gd.TensorType(gd.float32, (2, 3), False)
    np.testing.assert_array_equal(c.attrs["value"], a)
    assert g.constant([1, 2, 3]).type == gd.TensorType(gd.int64, (3,))  # numpy's default
    t = g.constant(a.T, gd.float64)
    assert t.type == gd.TensorType(gd.float64, (3, 2))
    assert t.attrs["value"].flags.c_contiguous
    np.testing.assert_array_equal(t.attrs["value"], a.T)
    bf = g.constant([1.5, 2.0], "bfloat16")
    assert bf.dtype is gd.bfloat16
    with pytest.raises(gd.OpTypeError):
        g.constant([object()])


# ------------------------------------------------------------------ ownership, output


def test_symbols_cannot_cross_graphs() -> None:
    g1 = gd.Graph("first", input_types=[gd.int8])
    g2 = gd.Graph("second", input_types=[gd.int8])
    (a,) = g1.inputs
    (b,) = g2.inputs
    line = here() + 2
    with pytest.raises(gd.GraphError) as info:
        _ = b + a
    msg = str(info.value)
    assert "'first'" in msg
    assert "'second'" in msg
    assert where(line) in msg
    with pytest.raises(gd.GraphError, match=r"'first'.*'second'"):
        g2.output(a)
    with pytest.raises(gd.GraphError, match="first"):
        gd.ops.where(b > 0, b, a)


def test_output() -> None:
    g, x, y = int16_graph()
    g.output()  # nothing, as a MAX subgraph that only moves values; it cannot be evaluated
    assert g.outputs == []
    with pytest.raises(gd.GraphError, match="has no outputs"):
        gd.evaluate(g, [np.int16(1), np.int16(2)])
    g.output(x + y)
    assert len(g.outputs) == 1
    g.output(x, 3)  # replaces; a Python scalar becomes a literal output
    assert g.outputs[0] is x
    assert g.outputs[1].op == "literal"
    assert g.outputs[1].type == gd.TensorType(gd.int32, (), True)
    g.verify()


# ------------------------------------------------------------------ verify


def test_issue_example_types() -> None:
    g = issue_mlp()
    y, sh = g.outputs
    assert y.type == gd.TensorType(gd.float32, ("batch", 3), False)
    # int16 (known) + 1.5 (float32?): {anvil}'s exception, the join stays ambiguous
    assert sh.type == gd.TensorType(gd.float32, (), True)
    add = y.inputs[0].inputs[0]
    assert add.op == "add"
    assert add.in_dtypes == (gd.float32, gd.float32)  # n (int16) is promoted
    assert y.inputs[1].op == "literal"
    assert y.in_dtypes == (gd.float32, gd.float32)  # 2 yields to float32


def many_graphs() -> list[gd.Graph]:
    out = [issue_mlp()]
    for name in gd.policy_names():
        g = gd.Graph("v", input_types=[gd.TensorType(gd.int8, (2, 3))] * 2, policy=name)
        x, y = g.inputs
        z = gd.ops.where(x > y, x * 2, y - 1)
        g.output(gd.ops.sum(z, axis=1), gd.ops.reshape(z, (-1,)), gd.ops.cast(z, gd.uint8))
        out.append(g)
    return out


def test_verify_passes_on_good_graphs() -> None:
    for g in many_graphs():
        g.verify()
        gd.passes.implicit_cast(g).verify()
        g.copy().verify()


def corrupt_and_verify(corrupt: Callable[[gd.Graph], None], match: str) -> None:
    g = issue_mlp()
    g.verify()
    corrupt(g)
    with pytest.raises(gd.GraphError, match=match):
        g.verify()


def node(g: gd.Graph, op: str) -> gd.Symbol:
    return next(n for n in g.nodes if n.op == op)


def test_verify_finds_use_before_definition() -> None:
    def swap(g: gd.Graph) -> None:
        matmul, relu = node(g, "matmul"), node(g, "relu")
        matmul.inputs = (relu, matmul.inputs[1])  # a cycle: relu depends on matmul

    corrupt_and_verify(swap, "cycle or is out of topological order")


def test_verify_finds_a_self_loop() -> None:
    def loop(g: gd.Graph) -> None:
        add = node(g, "add")
        add.inputs = (add, add.inputs[1])

    corrupt_and_verify(loop, "itself")


def test_verify_finds_reordered_nodes() -> None:
    def reorder(g: gd.Graph) -> None:
        # list.index would compare with ==, which builds nodes: find by identity
        i, j = (
            next(k for k, n in enumerate(g.nodes) if n is node(g, op)) for op in ("matmul", "relu")
        )
        g.nodes[i], g.nodes[j] = g.nodes[j], g.nodes[i]

    corrupt_and_verify(reorder, "position")


def test_verify_finds_tampered_types() -> None:
    def retype(g: gd.Graph) -> None:
        add = node(g, "add")
        add.type = gd.TensorType(gd.float64, add.shape)

    def reshape(g: gd.Graph) -> None:
        add = node(g, "add")
        add.type = gd.TensorType(gd.float32, (5, 3))

    def ambiguity(g: gd.Graph) -> None:
        relu = node(g, "relu")
        relu.type = relu.type._replace(ambiguous=True)

    def in_dtypes(g: gd.Graph) -> None:
        node(g, "add").in_dtypes = (gd.float32, gd.int16)

    for corrupt in (retype, reshape, ambiguity, in_dtypes):
        corrupt_and_verify(corrupt, "recorded")


def test_verify_finds_other_corruptions() -> None:
    def duplicate(g: gd.Graph) -> None:
        g.nodes.append(g.nodes[-1])

    def foreign(g: gd.Graph) -> None:
        other = gd.Graph("other", input_types=[gd.float32])
        g.outputs = [other.inputs[0]]

    def no_outputs(g: gd.Graph) -> None:
        g.outputs = []

    def unknown_op(g: gd.Graph) -> None:
        node(g, "relu").op = "frobnicate"

    def bad_attr(g: gd.Graph) -> None:
        node(g, "matmul").inputs = (node(g, "constant"), g.inputs[0])  # (4,3) @ (batch,4)

    def foreign_node(g: gd.Graph) -> None:
        other = gd.Graph("other", input_types=[gd.float32])
        g.nodes.append(other.inputs[0] + 1)

    corrupt_and_verify(foreign_node, "other")
    corrupt_and_verify(duplicate, "twice")
    corrupt_and_verify(foreign, "not a node")
    corrupt_and_verify(no_outputs, "no outputs")
    corrupt_and_verify(unknown_op, "frobnicate")
    corrupt_and_verify(bad_attr, "type rule fails")


def test_verify_checks_constant_types_against_their_values() -> None:
    """A constant's recorded type must describe its value (an exporter writes the value)."""

    def retype(g: gd.Graph) -> None:
        c = node(g, "constant")
        c.type = gd.TensorType(gd.float64, c.shape)  # the value is a float32 array

    def reshape(g: gd.Graph) -> None:
        c = node(g, "constant")
        c.type = gd.TensorType(gd.float32, (3, 4))  # the value has shape (4, 3)

    corrupt_and_verify(retype, "constant")
    corrupt_and_verify(reshape, "constant")


# ------------------------------------------------------------------ implicit_cast (MAX)


@pytest.mark.parametrize(
    ("policy", "a", "b"),
    [
        ("max", gd.int16, gd.float32),
        ("max", gd.int64, gd.float16),  # MAX's lattice: int64 -> float16
        ("max", gd.float32, gd.bfloat16),
        ("max", gd.uint32, gd.int8),
        ("default", gd.int16, gd.float32),
        ("default", gd.uint8, gd.int8),
    ],
)
def test_implicit_cast(policy: str, a: DType, b: DType) -> None:
    g = gd.Graph("ic", input_types=[gd.TensorType(a, (2,)), gd.TensorType(b, (2,))], policy=policy)
    lhs, rhs = g.inputs
    to = gd.implicit_cast_type(a, b, policy=policy)
    assert to is g.policy.promote_types(a, b)
    x, y = gd.implicit_cast(lhs, rhs)
    for before, after in ((lhs, x), (rhs, y)):
        assert after.type == gd.TensorType(to, (2,))
        if before.dtype is to:
            assert after is before
        else:
            assert after.op == "cast"
            assert after.inputs == (before,)
            assert after.attrs["to"] is to


def test_implicit_cast_type_examples() -> None:
    assert gd.implicit_cast_type(gd.int64, gd.float16, policy="max") is gd.float16
    assert gd.implicit_cast_type("int16", "float32") is gd.float32
    assert gd.implicit_cast_type(gd.bfloat16, gd.float16, policy="max") is gd.bfloat16


def test_implicit_cast_same_type_and_errors() -> None:
    g = gd.Graph("ic", input_types=[gd.float32, gd.float32])
    a, b = g.inputs
    x, y = gd.implicit_cast(a, b)
    assert x is a
    assert y is b
    with pytest.raises(gd.OpTypeError):
        gd.implicit_cast(a, 1)  # type: ignore[arg-type]
    h = gd.Graph("aa", input_types=[gd.int8, gd.float32], policy="array-api")
    with pytest.raises(gd.PromotionError):
        gd.implicit_cast(*h.inputs)


# ------------------------------------------------------------------ freeze


def test_freeze_forbids_building() -> None:
    g, x, y = int16_graph()
    g.output(x + y)
    g.freeze("exported to ONNX")
    g.freeze("again")  # the first reason stays
    with pytest.raises(gd.GraphError, match="exported to ONNX"):
        _ = x + 1
    with pytest.raises(gd.GraphError, match="frozen"):
        _ = x * y
    with pytest.raises(gd.GraphError, match="frozen"):
        g.output(x)
    with pytest.raises(gd.GraphError, match="frozen"):
        g.constant(np.zeros(3, np.int16))
    with pytest.raises(gd.GraphError, match="frozen"):
        g.scalar(1)
    with pytest.raises(gd.GraphError, match="frozen"):
        gd.ops.sum(x)
    assert len(g.outputs) == 1
    c = g.copy()
    c.verify()
    (cx, cy) = c.inputs
    c.output(cx - cy)  # a copy is not frozen


# ------------------------------------------------------------------ located, explained errors


def assert_explains(msg: str, line: int, *parts: str) -> None:
    assert where(line) in msg, msg
    for p in parts:
        assert p in msg, (p, msg)


def test_literal_that_does_not_fit_int8() -> None:
    g = gd.Graph("lit", input_types={"x": gd.TensorType(gd.int8, (3,))})
    (x,) = g.inputs
    with pytest.raises(gd.LiteralError) as info:
        _ = ((line := here()), x + 1000)
    assert_explains(
        str(info.value), line, "add", "1000", "int8", "int8[3], int32?[]", "'default'", "cast"
    )
    with pytest.raises(gd.LiteralError) as info:
        _ = ((line := here()), 1000 + x)
    assert_explains(str(info.value), line, "add", "int32?[], int8[3]", "'default'")


def test_negative_literal_into_uint8() -> None:
    g = gd.Graph("lit", input_types={"u": gd.TensorType(gd.uint8, (2,))})
    (u,) = g.inputs
    with pytest.raises(gd.LiteralError) as info:
        _ = ((line := here()), u * -1)
    assert_explains(str(info.value), line, "mul", "-1", "uint8", "uint8[2], int32?[]", "'default'")


def test_huge_float_literal_into_float32() -> None:
    g = gd.Graph("lit", input_types={"f": gd.float32})
    (f,) = g.inputs
    with pytest.raises(gd.LiteralError) as info:
        _ = ((line := here()), f - 1e40)
    assert_explains(str(info.value), line, "sub", "1e+40", "float32", "float32[], float32?[]")
    assert "'default'" in str(info.value)
    g64 = gd.Graph("lit", input_types={"f": gd.float64})
    assert (g64.inputs[0] - 1e40).dtype is gd.float64  # fits float64


def test_literal_must_fit_under_jax_too() -> None:
    g = gd.Graph("lit", input_types={"x": gd.int8}, policy="jax")
    with pytest.raises(gd.LiteralError, match="'jax'"):
        _ = g.inputs[0] + 1000


@pytest.mark.parametrize(
    ("policy", "a", "b"),
    [
        ("array-api", gd.int8, gd.float32),
        ("array-api", gd.float32, gd.int8),
        ("array-api", gd.int64, gd.uint64),
        ("jax-strict", gd.int8, gd.float32),
        ("jax-strict", gd.int8, gd.int16),
        ("anvil", gd.float32, gd.complex64),
    ],
)
def test_undefined_promotion(policy: str, a: DType, b: DType) -> None:
    g = gd.Graph("p", input_types=[gd.TensorType(a, (2,)), gd.TensorType(b, (2,))], policy=policy)
    x, y = g.inputs
    with pytest.raises(gd.PromotionError) as info:
        _ = ((line := here()), x + y)
    e = info.value
    msg = str(e)
    assert_explains(msg, line, "add", f"{a.name} and {b.name} (in that order)", f"'{policy}'")
    assert (e.lhs, e.rhs, e.policy) == (a.name, b.name, policy)
    assert "cast" in e.fix
    assert e.fix in msg
    wider = a if (a.kind.rank, a.bits) >= (b.kind.rank, b.bits) else b
    assert wider.name in e.fix


def test_promotion_error_literal_under_array_api() -> None:
    g = gd.Graph("p", input_types=[gd.TensorType(gd.int8, (2,))], policy="array-api")
    (x,) = g.inputs
    with pytest.raises(gd.PromotionError) as info:
        _ = ((line := here()), x * 1.5)
    assert_explains(str(info.value), line, "mul", "int8 and float32? (in that order)", "array-api")


def test_float_only_ops_reject_complex() -> None:
    """Each error names the op, the operand type, the policy and a fix (STYLE.md 9)."""
    g = gd.Graph("c", input_types=[gd.TensorType(gd.complex64, (3,))])
    (z,) = g.inputs
    problems = []
    for op in ("sqrt", "exp", "log", "sin", "cos", "tanh", "sigmoid", "softmax", "relu", "floor"):
        fn = getattr(gd.ops, op)
        with pytest.raises(gd.OpTypeError) as info:
            _ = ((line := here()), fn(z))
        msg = str(info.value)
        for part in (where(line), op, "complex64[3]", "'default'", "cast"):
            if part not in msg:
                problems.append(f"{op}: {part!r} missing from {msg!r}")
    assert not problems, "\n".join(problems)


def test_binary_op_type_error_names_types_in_order() -> None:
    g = gd.Graph("c", input_types=[gd.TensorType(gd.float32, (3,)), gd.complex64])
    a, z = g.inputs
    with pytest.raises(gd.OpTypeError) as info:
        _ = ((line := here()), a % z)
    assert_explains(str(info.value), line, "mod", "float32[3], complex64[]", "'default'", "cast")
    b = gd.Graph("b", input_types=[gd.bool, gd.bool])
    with pytest.raises(gd.OpTypeError, match="logical"):
        _ = b.inputs[0] + b.inputs[1]  # "bool + bool is an error (use logical_or)"


def test_shape_mismatch_names_both_shapes() -> None:
    g = gd.Graph(
        "s", input_types=[gd.TensorType(gd.float32, (3,)), gd.TensorType(gd.float32, (4,))]
    )
    a, b = g.inputs
    with pytest.raises(gd.ShapeError) as info:
        _ = ((line := here()), a * b)
    assert_explains(str(info.value), line, "mul", "(3,)", "(4,)")
    with pytest.raises(gd.ShapeError) as info:
        _ = ((line := here()), gd.ops.matmul(gd.ops.expand_dims(a, 0), gd.ops.expand_dims(b, 0)))
    assert_explains(str(info.value), line, "matmul", "(1, 3)", "(1, 4)")


def test_bad_axis() -> None:
    g = gd.Graph("s", input_types=[gd.TensorType(gd.float32, (3, 2))])
    (a,) = g.inputs
    with pytest.raises(gd.ShapeError) as info:
        _ = ((line := here()), gd.ops.sum(a, axis=2))
    assert_explains(str(info.value), line, "sum", "axis 2", "rank 2")
    with pytest.raises(gd.ShapeError) as info:
        _ = ((line := here()), gd.ops.squeeze(a, axis=0))
    assert_explains(str(info.value), line, "squeeze", "(3, 2)")


def test_non_integer_axis_is_a_shape_error() -> None:
    g = gd.Graph("s", input_types=[gd.TensorType(gd.float32, (3, 2))])
    (a,) = g.inputs
    with pytest.raises(gd.ShapeError, match="axis"):
        gd.ops.sum(a, axis=(0, 1.5))  # type: ignore[arg-type]
    with pytest.raises(gd.ShapeError, match="axis"):
        gd.ops.mean(a, axis=1.5)  # type: ignore[arg-type]


def test_error_in_a_helper_points_at_the_helper_line() -> None:
    def helper(x: gd.Symbol) -> gd.Symbol:
        return x + 1000  # the line that builds the op

    line = inspect.getsourcelines(helper)[1] + 1
    g = gd.Graph("h", input_types=[gd.int8])
    with pytest.raises(gd.LiteralError) as info:
        helper(g.inputs[0])
    assert where(line) in str(info.value)


def test_memoized_rules_share_types_and_still_check_every_literal() -> None:
    g = gd.Graph("memo", input_types={"x": gd.TensorType(gd.int8, (3,))})
    x = g.inputs[0]
    a, b = x + 1, x + 2  # the same op on the same operand types: decided once
    assert a.type is b.type and a.in_dtypes is b.in_dtypes
    with pytest.raises(gd.LiteralError, match=r"1000 does not fit int8"):
        x + 1000  # the rule comes from the memo; the literal is checked all the same
    # -0.0 and 0.0, 1 and 1.0 and True, nan: distinct literals (interned by value and type)
    lits = [g.scalar(v) for v in (0.0, -0.0, 1, 1.0, True, float("nan"), float("nan"))]
    assert len({id(s) for s in lits}) == 6 and lits[5] is lits[6]
    assert [repr(s.attrs["value"]) for s in lits[:5]] == ["0.0", "-0.0", "1", "1.0", "True"]


def test_nodes_without_attributes_share_a_read_only_mapping() -> None:
    g = gd.Graph("attrs", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    x = g.inputs[0]
    a, b = x * 2, gd.ops.exp(x)
    assert a.attrs is b.attrs and not a.attrs
    c = x * 3  # the rule comes from the graph's memo: the node shares the mapping all the same
    assert c.attrs is a.attrs
    with pytest.raises(TypeError):
        a.attrs["to"] = gd.int8
    with pytest.raises(TypeError):
        c.attrs["to"] = gd.int8
    # a rule that fills in defaults keeps its own dict (sum over all axes records them)
    s = gd.ops.sum(x)
    assert s.attrs is not a.attrs and s.attrs and not a.attrs


def test_graphs_deepcopy_and_pickle() -> None:
    import copy
    import pickle

    g = gd.Graph("p", input_types={"x": gd.TensorType(gd.int16, (3,))})
    x = g.inputs[0]
    g.output(gd.ops.sum(x * 2 + 1.5), gd.ops.exp(x))
    xs = {"x": np.array([1, -2, 3], np.int16)}
    for h in (copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert str(h) == str(g)
        for a, b in zip(gd.evaluate(h, xs), gd.evaluate(g, xs), strict=True):
            np.testing.assert_array_equal(a, b, strict=True)
        with pytest.raises(TypeError, match="read-only"):
            h.outputs[1].attrs["to"] = gd.int8  # still the shared, read-only empty dict


def test_named_outputs_reach_the_onnx_model() -> None:
    """g.output(name=value): the names survive the passes and name the ONNX outputs (a KV
    cache's present.0.key); positional outputs beside them are output0, output1, ..."""
    from exporters.onnx import export, run

    g = gd.Graph("kv", input_types={"x": gd.TensorType(gd.float32, ("n",))})
    (x,) = g.inputs
    y = x + 1
    g.output(y * 3, logits=y, **{"present.0.key": x * 2, "same": x})
    assert g.output_names == ["output0", "logits", "present.0.key", "same"]
    model = export(g)
    assert [o.name for o in model.graph.output] == g.output_names
    a = np.arange(3, dtype=np.float32)
    for got, want in zip(run(model, {"x": a}), [(a + 1) * 3, a + 1, a * 2, a], strict=True):
        np.testing.assert_array_equal(got, want)
    g = gd.Graph("kv", input_types={"x": gd.TensorType(gd.float32, ("n",))})
    (x,) = g.inputs
    y = x + 1
    g.output(y, a=y)
    g.output(y)  # replacing the outputs drops the names
    assert g.output_names == [] and [o.name for o in export(g.copy()).graph.output] == ["output0"]
    for bad, words in [({"x": y}, "has the name of an input"), ({"": y}, "non-empty")]:
        with pytest.raises(gd.GraphError, match=words):
            g.output(**bad)
    with pytest.raises(gd.GraphError, match="two outputs are named 'output0'"):
        g.output(y, output0=y)
