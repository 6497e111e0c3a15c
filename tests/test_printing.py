"""Golden printed IR and Graphviz dot text.

Every golden below was written by hand from the printing rules (numbered values, inputs by
name, a type on every value with ``?`` on ambiguous ones, literals and constants by value)
and the promotion rules, then compared with the output: it is not a copy of it.
"""

from __future__ import annotations

import re

import numpy as np
from example_graphs import issue_mlp

import graphdsl as gd

MLP = """\
graph mlp(%x: float32[batch, 4], %n: int16[]) {
  %0: float32[4, 3] = constant <12 elements>
  %1: float32[batch, 3] = matmul %x, %0
  %2: float32[batch, 3] = add %1, %n
  %3: float32[batch, 3] = relu %2
  %4: int32?[] = literal 2
  %5: float32[batch, 3] = mul %3, %4
  %6: int16[] = constant 1
  %7: float32?[] = literal 1.5
  %8: float32?[] = add %6, %7
  return %5, %8
}"""

# After implicit_cast: n is cast once, literals become constants of the dtype their op
# computes in, and nothing is ambiguous any more.
MLP_CAST = """\
graph mlp(%x: float32[batch, 4], %n: int16[]) {
  %0: float32[4, 3] = constant <12 elements>
  %1: float32[batch, 3] = matmul %x, %0
  %2: float32[] = cast %n, to=float32
  %3: float32[batch, 3] = add %1, %2
  %4: float32[batch, 3] = relu %3
  %5: float32[] = constant 2.0
  %6: float32[batch, 3] = mul %4, %5
  %7: int16[] = constant 1
  %8: float32[] = cast %7, to=float32
  %9: float32[] = constant 1.5
  %10: float32[] = add %8, %9
  return %6, %10
}"""


def test_issue_example_prints() -> None:
    g = issue_mlp()
    assert str(g) == MLP
    assert str(g) == MLP  # names are made at print time, the same each time


def test_issue_example_after_implicit_cast() -> None:
    h = gd.passes.implicit_cast(issue_mlp())
    h.verify()
    assert str(h) == MLP_CAST


OPS = """\
graph ops(%input0: int8[2, 3], %input1: uint8[3]) {
  %0: int16[2, 3] = add %input0, %input1
  %1: int16[2, 1] = sum %0, axis=(1,), keepdims=True
  %2: float16[2, 1] = cast %1, to=float16
  %3: float16[2] = reshape %2, shape=(-1,)
  %4: int8[3, 2] = transpose %input0, perm=(1, 0)
  %5: float32[2] = constant [1.5, -2.0]
  %6: float32[2] = mul %3, %5
  %7: int32?[] = literal 0
  %8: bool[2] = greater %6, %7
  %9: float32?[] = literal 0.5
  %10: float32[2] = where %8, %6, %9
  return %10, %4
}"""


def test_attributes_and_list_inputs() -> None:
    g = gd.Graph("ops", input_types=[gd.TensorType(gd.int8, (2, 3)), gd.TensorType(gd.uint8, (3,))])
    a, b = g.inputs
    c = a + b  # int8 x uint8 -> int16
    d = gd.ops.sum(c, axis=1, keepdims=True)
    e = gd.ops.cast(d, "float16")
    f = gd.ops.reshape(e, (-1,))
    t = gd.ops.transpose(a)  # perm is filled in: the reversed axes
    k = g.constant(np.array([1.5, -2.0], np.float32))
    m = f * k  # float16 x float32 -> float32
    w = gd.ops.where(m > 0, m, 0.5)  # 0.5 yields to float32: the result is known
    g.output(w, t)
    assert str(g) == OPS


LITS = """\
graph lits() {
  %0: bool[] = literal True
  %1: complex64?[] = literal 2.5j
  %2: uint8[] = constant 7
  %3: int8[2, 2] = constant [0, 0, 0, 0]
  %4: float64[7] = constant <7 elements>
  %5: int32?[] = literal 3
  return %0, %5, %1, %2, %3, %4
}"""


def test_literals_and_constants() -> None:
    g = gd.Graph("lits")
    g.output(
        g.scalar(True),
        3,  # made a literal by output(), after the arguments before it
        g.scalar(2.5j),
        g.scalar[gd.uint8](7),
        g.constant(np.zeros((2, 2), np.int8)),
        g.constant(np.arange(7, dtype=np.float64)),
    )
    assert str(g) == LITS


JAX = """\
graph j(%x: int16[n]) {
  %0: int64?[] = literal 2
  %1: int16[n] = mul %x, %0
  %2: float64?[] = literal 1.5
  %3: float64?[] = add %2, %0
  %4: float64?[n] = add %1, %2
}"""


def test_jax_weak_literals_and_no_outputs() -> None:
    """Under "jax" literals default to 64 bits (weak types): i* yields to int16; f* + i*
    stays weak; int16 + f* joins at the weak node f*, so it is the default float64, still
    ambiguous (JAX's weak_type=True). No outputs: no return line."""
    g = gd.Graph("j", input_types={"x": gd.TensorType(gd.int16, ("n",))}, policy="jax")
    (x,) = g.inputs
    two = g.scalar(2)
    y = x * two
    h = g.scalar(1.5)
    _ = h + two
    _ = y + h
    assert str(g) == JAX


def test_value_names_and_format_graph_agree() -> None:
    from graphdsl.printing import format_graph, value_names

    g = issue_mlp()
    names = value_names(g)
    assert [names[id(s)] for s in g.inputs] == ["%x", "%n"]
    body = [n for n in g.nodes if n.op != "input"]
    assert [names[id(n)] for n in body] == [f"%{i}" for i in range(len(body))]
    assert format_graph(g) == str(g)


# ------------------------------------------------------------------ dot

DOT = r"""digraph "d" {
  rankdir=TB;
  node [shape=box, style=rounded];
  "%n" [label="%n\nint16[]", style="rounded,filled", fillcolor="#a8dadc"];
  "%0" [label="%0 = cast to=float32\nfloat32[]", style="rounded,filled", fillcolor="#f4a261"];
  "%n" -> "%0";
  "%1" [label="%1 = constant 1.5\nfloat32[]", style="rounded,filled", fillcolor="#e0e0e0"];
  "%2" [label="%2 = mul\nfloat32[]"];
  "%0" -> "%2";
  "%1" -> "%2";
  "out0" [shape=plaintext];
  "%2" -> "out0";
}
"""

CAST_COLOR = 'fillcolor="#f4a261"'


def test_dot_golden_after_implicit_cast() -> None:
    g = gd.Graph("d", input_types={"n": gd.int16})
    g.output(g.inputs[0] * 1.5)  # int16 x float32? -> float32?: n is cast to float32
    h = gd.passes.implicit_cast(g)
    assert h.to_dot() == DOT


def node_lines(dot: str) -> dict[str, str]:
    """Node name -> its declaration line."""
    out = {}
    for line in dot.splitlines():
        m = re.match(r'\s*"([^"]+)" \[label=', line)
        if m:
            out[m.group(1)] = line
    return out


def test_dot_highlights_exactly_the_casts() -> None:
    g = issue_mlp()
    before = g.to_dot()
    assert CAST_COLOR not in before
    h = gd.passes.implicit_cast(g)
    dot = h.to_dot()
    assert dot.startswith('digraph "mlp" {\n')
    assert dot.endswith("}\n")
    lines = node_lines(dot)
    casts = {n for n, line in lines.items() if CAST_COLOR in line}
    assert casts == {"%2", "%8"}  # as numbered in MLP_CAST
    assert "cast to=float32" in lines["%2"]
    assert '"%n" -> "%2";' in dot
    assert '"%7" -> "%8";' in dot
    for name in ("%0", "%5", "%7", "%9"):  # constants are grey
        assert 'fillcolor="#e0e0e0"' in lines[name]
    for name in ("%x", "%n"):
        assert 'fillcolor="#a8dadc"' in lines[name]
    assert '"%6" -> "out0";' in dot
    assert '"%10" -> "out1";' in dot
    # every edge joins declared nodes
    for a, b in re.findall(r'"([^"]+)" -> "([^"]+)";', dot):
        assert a in lines
        assert b in lines or b.startswith("out")
