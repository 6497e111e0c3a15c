"""A catalogue of bad inputs: what a user can get wrong, and the error each one must raise.

``CATALOGUE`` lists :class:`BadInput` cases: an id, one line saying what the user did, a
callable that does it, the exception type it must raise, and substrings its message must
contain (the cause, and the fix where there is one to name) or must not contain.
tests/test_bad_inputs.py runs every case; :func:`gallery` renders the table with the
actual messages as markdown, for the docs.

``DEFINED`` lists inputs that look bad but have defined results (NaN and inf cast to
integers, integer division by zero, ``INT_MIN // -1``): there the test checks the values.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from backend import export, run

import graphdsl as gd
from exporters.onnx import ExportError, RunError

__all__ = ["CATALOGUE", "DEFINED", "BadInput", "Defined", "gallery"]


@dataclass(frozen=True)
class BadInput:
    """``trigger()`` must raise ``raises`` whose message has every ``says`` and no ``lacks``."""

    id: str
    doc: str
    trigger: Callable[[], object]
    raises: type[BaseException]
    says: tuple[str, ...]
    lacks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Defined:
    """A graph on inputs that look bad but have a defined result: ``want`` per output."""

    id: str
    doc: str
    build: Callable[[], tuple[gd.Graph, dict[str, np.ndarray]]]
    want: Callable[[], list[np.ndarray]]


# ---------------------------------------------------------------------------- helpers


def _vec(d: gd.DType, n: int = 3) -> gd.TensorType:
    return gd.TensorType(d, (n,))


def _binary(a: gd.DType, b: gd.DType | None, rhs: object, policy: str = "default",
            op: str = "add") -> Callable[[], object]:  # fmt: skip
    """``op(x, rhs)`` on an input ``x`` of dtype ``a`` (``rhs`` an input of ``b`` if given)."""

    def trigger() -> object:
        types = {"x": _vec(a)} if b is None else {"x": _vec(a), "y": _vec(b)}
        g = gd.Graph("bad", input_types=types, policy=policy)
        other = g.inputs[1] if b is not None else rhs
        return getattr(gd.ops, op)(g.inputs[0], other)

    return trigger


def _concat(a: tuple[int, ...], b: tuple[int, ...]) -> Callable[[], object]:
    def trigger() -> object:
        g = gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, a),
                                         "y": gd.TensorType(gd.float32, b)})  # fmt: skip
        return gd.ops.concat(g.inputs, axis=0)

    return trigger


def _shapes(a: tuple[int, ...], b: tuple[int, ...], op: str) -> Callable[[], object]:
    def trigger() -> object:
        g = gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, a),
                                         "y": gd.TensorType(gd.float32, b)})  # fmt: skip
        return getattr(gd.ops, op)(*g.inputs)

    return trigger


def _simple_graph(name: str = "model") -> gd.Graph:
    g = gd.Graph(name, input_types={"x": _vec(gd.float32, 2)})
    g.output(g.inputs[0] * 2.0)
    return g


def _exported() -> tuple[gd.Graph, Any]:
    g = _simple_graph()
    return g, export(g)


def _other_graph_operand() -> object:
    g = gd.Graph("main", input_types={"x": gd.float32})
    other = gd.Graph("other", input_types={"y": gd.float32})
    return g.inputs[0] + other.inputs[0]


def _other_graph_operand_same_name() -> object:
    g = gd.Graph("g", input_types={"x": gd.float32})
    other = gd.Graph("g", input_types={"y": gd.float32})
    return g.inputs[0] + other.inputs[0]


def _other_graph_output() -> object:
    g = gd.Graph("main", input_types={"x": gd.float32})
    other = gd.Graph("other", input_types={"y": gd.float32})
    g.output(other.inputs[0])
    return g


def _ambiguous_causal() -> object:
    t = {"q": gd.TensorType(gd.float32, ("seq", 4)), "k": gd.TensorType(gd.float32, ("total", 4))}
    g = gd.Graph("attn", input_types=t)
    q, k = g.inputs
    return gd.ops.scaled_dot_product_attention(q, k, k, is_causal=True)


def _returns_nothing() -> gd.Graph:
    g = gd.Graph("empty", input_types={"x": gd.float32})
    g.output()  # allowed (a MAX subgraph may return nothing); nothing to export
    return g


def _cyclic() -> gd.Graph:
    """add -> mul -> add: the add's operand is corrupted to the mul that uses it."""
    g = gd.Graph("cyclic", input_types={"x": gd.float32})
    (x,) = g.inputs
    a = x + 1.0
    b = a * 2.0
    g.output(b)
    a.inputs = (b, a.inputs[1])
    return g


def _change_after_export() -> object:
    g = _simple_graph("frozen")
    export(g)
    return g.inputs[0] + 1.0


def _output_after_export() -> object:
    g = _simple_graph("frozen")
    export(g)
    g.output(g.inputs[0])
    return g


def _run_model(inputs: dict[str, object]) -> Callable[[], object]:
    return lambda: run(_exported()[1], inputs)


def _run_graph(inputs: dict[str, object]) -> Callable[[], object]:
    return lambda: run(_simple_graph(), inputs)


def _evaluate(inputs: dict[str, object] | list[object]) -> Callable[[], object]:
    return lambda: gd.evaluate(_simple_graph(), inputs)


def _symbolic_pair() -> gd.Graph:
    g = gd.Graph("sym", input_types={"x": gd.TensorType(gd.float32, ("n",)),
                                     "y": gd.TensorType(gd.float32, ("n",))})  # fmt: skip
    g.output(g.inputs[0] + g.inputs[1])
    return g


_MISMATCHED_N = {"x": np.zeros(2, np.float32), "y": np.zeros(3, np.float32)}


def _unbound_dim() -> gd.Graph:
    """broadcast_to a symbolic dimension 'm' that no input has."""
    g = gd.Graph("unbound", input_types={"x": _vec(gd.float32)})
    g.output(gd.ops.broadcast_to(g.inputs[0], ("m", 3)))
    return g


def _reshape_of(dims: tuple[int | str, ...], target: tuple[int | str, ...]) -> Callable[[], object]:
    return lambda: gd.ops.reshape(
        gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, dims)}).inputs[0], target
    )


def _odd_reshape() -> gd.Graph:
    """(b, 3) reshaped to (-1, 2): its type (b*3/2, 2) holds for even b only."""
    g = gd.Graph("odd", input_types={"x": gd.TensorType(gd.float32, ("b", 3))})
    g.output(gd.ops.reshape(g.inputs[0], (-1, 2)))
    return g


def _damaged_data(damage: str) -> Callable[[], object]:
    """A model saved with its weights in m.onnx.data, then the data file truncated or gone."""

    def trigger() -> object:
        from exporters.onnx import _export as export_module

        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "m.onnx")
        g = gd.Graph("weights", input_types={"x": gd.TensorType(gd.float32, (1, 64))})
        g.output(g.inputs[0] @ g.constant(np.ones((64, 64), np.float32)))
        threshold = export_module.EXTERNAL_DATA_THRESHOLD
        export_module.EXTERNAL_DATA_THRESHOLD = 1024
        try:
            export(g, path)
        finally:
            export_module.EXTERNAL_DATA_THRESHOLD = threshold
        if damage == "truncate":
            os.truncate(path + ".data", 100)
        else:
            os.remove(path + ".data")
        return run(path, {"x": np.ones((1, 64), np.float32)})

    return trigger


def _export_to(path: str, opset: int = 21, dt: gd.DType = gd.float32) -> Callable[[], object]:
    def trigger() -> object:
        g = gd.Graph("out", input_types={"x": dt})
        g.output(-g.inputs[0])
        return export(g, path or None, opset=opset)

    return trigger


def _float8_constant_opset18() -> object:
    g = gd.Graph("f8", input_types={"x": gd.float32})
    c = g.constant(np.ones(2, gd.float8_e4m3fn.np))
    g.output(g.inputs[0] + c.cast(gd.float32))
    return export(g, opset=18)


def _complex_export() -> object:
    g = gd.Graph("cplx", input_types={"x": gd.complex64})
    g.output(g.inputs[0] * 2)
    return export(g)


def _unary_on(
    d: gd.DType | gd.TensorType, fn: Callable[[gd.Symbol], object]
) -> Callable[[], object]:
    return lambda: fn(gd.Graph("bad", input_types={"x": d}).inputs[0])


# ---------------------------------------------------------------------------- the catalogue

_T = gd.DType
# fmt: off
def _indexed(fn: Callable[[gd.Symbol], object]) -> object:
    g = gd.Graph("indexed", input_types={"x": gd.TensorType(gd.float32, ("n", 5))})
    return fn(g.inputs[0])


def _gather_out_of_range(on_onnxruntime: bool) -> Callable[[], object]:
    def trigger() -> object:
        g = gd.Graph("gather", input_types={"x": gd.TensorType(gd.float32, ("n", 5)),
                                            "i": gd.TensorType(gd.int64, (2,))})  # fmt: skip
        x, i = g.inputs
        g.output(x[i])
        data = {"x": np.zeros((2, 5), np.float32), "i": np.array([0, 7])}
        return run(export(g), data) if on_onnxruntime else gd.evaluate(g, data)

    return trigger


def _structured(fn: Callable[[gd.Graph, list[gd.Symbol]], object],
                policy: str = "default") -> Callable[[], object]:  # fmt: skip
    """``fn(g, inputs)`` on a graph with p: bool, n: int16, x: float32, v: float32[3]."""

    def trigger() -> object:
        g = gd.Graph("structured", input_types={"p": gd.bool, "n": gd.int16, "x": gd.float32,
                                                "v": gd.TensorType(gd.float32, (3,))},
                     policy=policy)  # fmt: skip
        return fn(g, g.inputs)

    return trigger


def _called(arg: Callable[[gd.Graph], gd.Symbol]) -> Callable[[], object]:
    """A call of a float32[3] subgraph on ``arg(g)``."""

    def trigger() -> object:
        g = gd.Graph("caller")
        sub = g.subgraph("layer", {"h": gd.TensorType(gd.float32, (3,))})
        sub.output(sub.inputs[0] * 2)
        return gd.ops.call(sub, arg(g))

    return trigger


def _weighted(weights: object) -> Callable[[], object]:
    """evaluate a graph that declares a float32[3] weight 'w', with ``weights``."""

    def trigger() -> object:
        g = gd.Graph("weighted", input_types={"x": gd.TensorType(gd.float32, (3,))})
        g.output(g.inputs[0] * g.weight("w", gd.float32, (3,)))
        return gd.evaluate(g, [np.ones(3, np.float32)], weights=weights)  # type: ignore[arg-type]

    return trigger


CATALOGUE: list[BadInput] = [
    # -- dtype names
    BadInput("dtype-misspelled", 'gd.dtype("flaot32")', lambda: gd.dtype("flaot32"),
             gd.DTypeError, ("unknown dtype 'flaot32'", "did you mean 'float32'")),
    BadInput("dtype-ambiguous-code", 'gd.dtype("i8"): int64 to numpy, int8 by bit width',
             lambda: gd.dtype("i8"), gd.DTypeError,
             ("'i8' is ambiguous", "int64", "int8", "write 'int64' or 'int8'")),
    BadInput("dtype-misspelled-input-type", 'an input declared as "flaot32"',
             lambda: gd.Graph("bad", input_types={"x": "flaot32"}), gd.DTypeError,
             ("'flaot32'", "did you mean 'float32'")),
    BadInput("dtype-misspelled-cast", 'x.cast("flaot32")',
             _unary_on(gd.float32, lambda x: x.cast("flaot32")), gd.DTypeError,
             ("'flaot32'", "did you mean 'float32'")),
    BadInput("policy-misspelled", 'gd.Graph(..., policy="jaxx")',
             lambda: gd.Graph("bad", policy="jaxx"), ValueError,
             ("unknown policy 'jaxx'", "did you mean 'jax'")),
    BadInput("policy-unknown-literal-rule", 'gd.Policy(..., literals="nonsense")',
             lambda: gd.Policy("p", gd.policy("default").lattice, literals="nonsense"),
             ValueError, ("'nonsense'", "anvil", "jax", "array-api")),
    # -- literals that do not fit
    BadInput("literal-int8-plus-1000", "int8 value + 1000", _binary(_T.int8, None, 1000),
             gd.LiteralError, ("add", "1000", "does not fit int8", "-128..127",
                               "cast the other operand to a wider type")),
    BadInput("literal-1e40-into-float32", "float32 value + 1e40",
             _binary(_T.float32, None, 1e40), gd.LiteralError,
             ("add", "1e+40", "overflows float32", "cast the other operand to a wider type")),
    BadInput("literal-minus-1-into-uint8", "uint8 value + (-1)", _binary(_T.uint8, None, -1),
             gd.LiteralError, ("add", "-1", "does not fit uint8", "0..255",
                               "cast the other operand to a wider type")),
    BadInput("literal-float-into-int-under-max", 'int32 value * 2.5 under policy "max"',
             _binary(_T.int32, None, 2.5, "max", "mul"), gd.LiteralError,
             ("mul", "2.5", "not an integer", "int32", "'max'", "use an integer literal",
              "cast the other operand to a float dtype")),
    BadInput("literal-too-big-for-float16-under-max", 'float16 value + 65537 under "max"',
             _binary(_T.float16, None, 65537, "max"), gd.LiteralError,
             ("65537", "overflows float16", "'max'")),
    BadInput("typed-scalar-out-of-range", "g.scalar[gd.uint8](-1)",
             lambda: gd.Graph("bad").scalar[gd.uint8](-1), gd.LiteralError,
             ("scalar", "-1", "does not fit uint8", "0..255")),
    BadInput("typed-scalar-overflows", "g.scalar(1e40, gd.float32)",
             lambda: gd.Graph("bad").scalar(1e40, gd.float32), gd.LiteralError,
             ("1e+40", "overflows float32")),
    BadInput("literal-output-too-big", "g.output(2**40): the literal is returned as int32",
             lambda: gd.Graph("bad").output(2**40), gd.LiteralError,
             ("1099511627776", "returned as int32", "g.scalar(value, dtype)")),
    # -- undefined promotions
    BadInput("promotion-array-api-int8-float32", 'int8 + float32 under "array-api"',
             _binary(_T.int8, _T.float32, None, "array-api"), gd.PromotionError,
             ("add", "int8 and float32 (in that order)", "'array-api'",
              "cast the int8 operand to float32")),
    BadInput("promotion-array-api-argument-order", 'float32 + int8 under "array-api"',
             _binary(_T.float32, _T.int8, None, "array-api"), gd.PromotionError,
             ("float32 and int8 (in that order)", "cast the int8 operand to float32")),
    BadInput("promotion-jax-strict-int8-int16", 'int8 + int16 under "jax-strict"',
             _binary(_T.int8, _T.int16, None, "jax-strict"), gd.PromotionError,
             ("int8 and int16 (in that order)", "'jax-strict'", "cast the int8 operand to int16")),
    # -- op and operand kinds
    BadInput("bitwise-on-float", "float32 value & 1",
             _binary(_T.float32, None, 1, op="bitwise_and"), gd.OpTypeError,
             ("bitwise_and", "float32", "bool or integer", "gd.ops.cast")),
    BadInput("arithmetic-on-bool", "bool + bool", _binary(_T.bool, _T.bool, None),
             gd.OpTypeError, ("add", "bool", "logical_*", "cast to an integer dtype")),
    BadInput("string-operand", 'x + "1"', _binary(_T.float32, None, "1"), gd.OpTypeError,
             ("cannot use '1' (of type str)", "a Symbol, a Python scalar, a Dim or a numpy array")),
    BadInput("no-symbol-operand", "gd.ops.add(1, 2): no graph to build in",
             lambda: gd.ops.add(1, 2), gd.OpTypeError,
             ("no operand is a Symbol", "g.constant(...) or g.scalar(...)")),
    BadInput("symbol-truth-value", "if x > 0: ... (a Symbol in a Python condition)",
             _unary_on(gd.float32, lambda x: bool(x > 0)), TypeError,
             ("no truth value", "gd.ops.where(cond, a, b)")),
    BadInput("complex-cast-to-int", "complex64 value cast to int32",
             _unary_on(gd.complex64, lambda x: x.cast(gd.int32)), gd.OpTypeError,
             ("drop the imaginary part", "gd.ops.real/abs")),
    # -- shapes
    BadInput("shape-broadcast-mismatch", "(2, 3) + (4, 3)", _shapes((2, 3), (4, 3), "add"),
             gd.ShapeError, ("add", "(2, 3) and (4, 3) do not broadcast", "dimension 2 vs 4",
                              "broadcast_to first")),
    BadInput("shape-matmul-contraction", "(2, 3) @ (4, 3)", _shapes((2, 3), (4, 3), "matmul"),
             gd.ShapeError, ("matmul", "contracting dimensions 3 and 4 differ", "transpose")),
    BadInput("shape-matmul-of-scalars", "() @ ()", _shapes((), (), "matmul"), gd.ShapeError,
             ("matmul needs operands of rank >= 1", "mul (*)")),
    BadInput("shape-concat-dimension", "concat (2, 3) and (2, 4) on axis 0",
             _concat((2, 3), (2, 4)),
             gd.ShapeError, ("concat along axis 0: dimension 1 differs", "must agree")),
    BadInput("shape-broadcast-to-lower-rank", "broadcast_to (2, 1) -> (3,)",
             _unary_on(gd.TensorType(gd.float32, (2, 1)),
                       lambda x: gd.ops.broadcast_to(x, (3,))),
             gd.ShapeError, ("cannot broadcast (2, 1) to (3,)", "or be 1")),
    BadInput("shape-reshape-count", "reshape (3,) to (2, 2)",
             _unary_on(_vec(gd.float32), lambda x: gd.ops.reshape(x, (2, 2))),
             gd.ShapeError, ("cannot reshape (3,)", "(2, 2) (4 elements)", "counts must match")),
    BadInput("shape-axis-out-of-range", "sum over axis 2 of a vector",
             _unary_on(_vec(gd.float32), lambda x: gd.ops.sum(x, axis=2)),
             gd.ShapeError, ("axis 2 is out of range", "rank 1", "from -1 to 0")),
    BadInput("shape-squeeze-non-unit-axis", "squeeze axis 0 of a (3,) vector",
             _unary_on(_vec(gd.float32), lambda x: gd.ops.squeeze(x, 0)), gd.ShapeError,
             ("squeeze", "cannot squeeze axis 0 of shape (3,)", "size 3", "size 1")),
    BadInput("shape-transpose-not-a-permutation", "transpose a matrix with perm (0, 0)",
             _unary_on(gd.TensorType(gd.float32, (2, 3)), lambda x: gd.ops.transpose(x, (0, 0))),
             gd.ShapeError, ("perm (0, 0) is not a permutation of 2 axes", "each axis 0..1 once")),
    BadInput("shape-reshape-two-unknowns", "reshape to (-1, -1)",
             _unary_on(gd.TensorType(gd.float32, (2, 3)), lambda x: gd.ops.reshape(x, (-1, -1))),
             gd.ShapeError, ("at most one dimension may be -1", "give the others")),
    BadInput("shape-repeated-axis", "sum over axis=(0, 0)",
             _unary_on(gd.TensorType(gd.float32, (2, 3)), lambda x: gd.ops.sum(x, axis=(0, 0))),
             gd.ShapeError, ("repeated axis", "(0, 0)", "each axis once")),
    BadInput("shape-softmax-of-scalar", "softmax of a rank-0 value",
             _unary_on(gd.float32, gd.ops.softmax), gd.ShapeError,
             ("softmax", "rank >= 1", "expand_dims")),
    BadInput("shape-symbolic-dimension-without-name", "an input of shape ('',)",
             lambda: gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, ("",))}),
             gd.ShapeError, ("symbolic dimension needs a name", "like 'batch'")),
    BadInput("shape-negative-dimension", "an input of shape (-1,)",
             lambda: gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, (-1,))}),
             gd.ShapeError, ("dimension must be >= 0", "-1", "name a dimension")),
    BadInput("symbolic-dimension-unbound-export", "broadcast_to (m, 3), no input has m; export",
             lambda: export(_unbound_dim()), ExportError,
             ("'m'", "not a dimension of any graph input", "use a concrete size")),
    BadInput("reshape-zero-is-zero-length",
             "reshape x: (b, seq, 8) to (0, 0, 2, 4) (ONNX's 'copy this dimension')",
             _reshape_of(("b", "seq", 8), (0, 0, 2, 4)), gd.ShapeError,
             ("zero-length dimension", "name it: ('b', 'seq', 2, 4)")),
    BadInput("reshape-symbolic-counts-unequal",
             "reshape x: (b, 8) to (c, 8), c no dimension of x",
             _reshape_of(("b", 8), ("c", 8)), gd.ShapeError,
             ("b*8 elements", "c*8 elements", "use -1")),
    BadInput("symbolic-dimension-unbound-evaluate",
             "broadcast_to (m, 3), no input has m; gd.evaluate",
             lambda: gd.evaluate(_unbound_dim(), {"x": np.zeros(3, np.float32)}),
             gd.ShapeError, ("'m'", "input")),
    # -- graph structure
    BadInput("symbol-of-another-graph", "x + y where y belongs to another graph",
             _other_graph_operand, gd.GraphError,
             ("belongs to graph 'other', not 'main'", "pass it as an input instead")),
    BadInput("symbol-of-another-graph-with-the-same-name",
             "x + y where y belongs to another graph that has the same name",
             _other_graph_operand_same_name, gd.GraphError,
             ("belongs to", "pass it as an input instead"), ("graph 'g', not 'g'",)),
    BadInput("output-of-another-graph", "g.output(y) where y belongs to another graph",
             _other_graph_output, gd.GraphError,
             ("belongs to graph 'other', not 'main'", "pass it as an input instead")),
    BadInput("graph-name-not-str", "gd.Graph(3)",
             lambda: gd.Graph(3), gd.GraphError,  # type: ignore[arg-type]
             ("a graph's name is a str, got 3",)),
    BadInput("input-type-ambiguous", "an input declared ambiguous (float32?)",
             lambda: gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, (), True)}),
             gd.GraphError, ("input 'x' cannot be ambiguous", "inputs have known types")),
    BadInput("scalar-of-a-string", 'g.scalar("1")',
             lambda: gd.Graph("bad").scalar("1"),  # type: ignore[arg-type]
             gd.OpTypeError, ("scalar", "'1' is not a Python scalar")),
    BadInput("constant-of-objects", "g.constant([object()])",
             lambda: gd.Graph("bad").constant([object()]), gd.OpTypeError,
             ("constant", "cannot make a tensor of")),
    BadInput("input-name-not-identifier", 'an input named "1x"',
             lambda: gd.Graph("bad", input_types={"1x": gd.float32}), gd.GraphError,
             ("input names must be identifiers", "'1x'")),
    BadInput("no-outputs-export", "export a graph without g.output(...)",
             lambda: export(gd.Graph("empty", input_types={"x": gd.float32})), gd.GraphError,
             ("graph 'empty' has no outputs", "call g.output(")),
    BadInput("no-outputs-evaluate", "gd.evaluate a graph without g.output(...)",
             lambda: gd.evaluate(gd.Graph("empty", input_types={"x": gd.float32}),
                                 {"x": np.float32(1)}),
             gd.GraphError, ("graph 'empty' has no outputs", "call g.output(")),
    BadInput("output-of-nothing", "export a graph whose g.output() was given no values",
             lambda: export(_returns_nothing()), gd.GraphError,
             ("graph 'empty' has no outputs",)),
    BadInput("sdpa-causal-ambiguous",
             "scaled_dot_product_attention(is_causal=True) of 'seq' queries and 'total' keys",
             _ambiguous_causal, gd.OpTypeError,
             ("is ambiguous", "is_causal='top_left'", "'bottom_right'")),
    BadInput("cycle-export", "node.inputs corrupted into a cycle, then export",
             lambda: export(_cyclic()), gd.GraphError,
             ("cycle", "add", "%", "defined later")),
    BadInput("cycle-evaluate", "node.inputs corrupted into a cycle, then gd.evaluate",
             lambda: gd.evaluate(_cyclic(), {"x": np.float32(1)}), gd.GraphError,
             ("cycle", "add")),
    BadInput("change-after-export", "x + 1.0 after export(g)", _change_after_export,
             gd.GraphError, ("graph 'frozen' was exported to ONNX and is frozen",
                             "graph.copy()")),
    BadInput("output-after-export", "g.output(...) after export(g)", _output_after_export,
             gd.GraphError, ("frozen", "graph.copy()")),
    # -- inputs at run time: onnxruntime (model) ...
    BadInput("run-model-wrong-input-name", "run(model, {'y': ...}) for input x",
             _run_model({"y": np.zeros(2, np.float32)}), RunError,
             ("takes inputs ['x']", "missing 'x'", "unexpected 'y'")),
    BadInput("run-model-wrong-dtype", "run(model, {'x': float64 array}) for float32 x",
             _run_model({"x": np.zeros(2, np.float64)}), RunError,
             ("input 'x'", "expected dtype float32", "got float64")),
    BadInput("run-model-wrong-shape", "run(model, {'x': shape (3,)}) for shape (2,)",
             _run_model({"x": np.zeros(3, np.float32)}), RunError,
             ("input 'x'", "expected shape", "got (3,)")),
    BadInput("run-model-missing-input", "run(model, {})", _run_model({}), RunError,
             ("missing 'x'",)),
    BadInput("run-model-extra-input", "run(model, {'x': ..., 'z': ...})",
             _run_model({"x": np.zeros(2, np.float32), "z": np.float32(1)}), RunError,
             ("unexpected 'z'",)),
    BadInput("run-model-symbolic-dimension-mismatch",
             "run(model) with x of 2 and y of 3 elements, both declared (n,)",
             lambda: run(export(_symbolic_pair()), _MISMATCHED_N), RunError,
             ("'y'", "'n'")),
    BadInput("run-model-truncated-external-data",
             "run(path) after the model's .data file was truncated",
             _damaged_data("truncate"), RunError,
             ("m.onnx.data", "holds 100 bytes", "tensor", "export the model again")),
    BadInput("run-model-missing-external-data",
             "run(path) after the model's .data file was removed",
             _damaged_data("remove"), RunError,
             ("m.onnx.data", "does not exist", "tensor", "copy its .data file beside it")),
    BadInput("run-reshape-size-fails-at-run-time",
             "run() of reshape (b, 3) -> (-1, 2) with b = 3 (b*3/2 is not whole)",
             lambda: run(export(_odd_reshape()), {"x": np.ones((3, 3), np.float32)}),
             RunError, ("onnxruntime could not run", "Reshape")),
    BadInput("evaluate-reshape-size-fails-at-run-time",
             "gd.evaluate of reshape (b, 3) -> (-1, 2) with b = 3",
             lambda: gd.evaluate(_odd_reshape(), {"x": np.ones((3, 3), np.float32)}),
             gd.ShapeError, ("reshape (at", "(3, 3) (9 elements)", "(b*3/2, 2)")),
    BadInput("run-model-no-file", "run('missing.onnx', ...)",
             lambda: run(os.path.join(tempfile.gettempdir(), "no-such-model.onnx"), {}),
             RunError, ("no model file at",)),
    # ... onnxruntime (graph) ...
    BadInput("run-graph-wrong-dtype", "run(graph, {'x': float64 array}) for float32 x",
             _run_graph({"x": np.zeros(2, np.float64)}), RunError,
             ("input 'x'", "expected dtype float32", "got float64",
              "convert it with .astype(gd.float32.np)")),
    BadInput("run-graph-missing-input", "run(graph, {})", _run_graph({}), RunError,
             ("missing 'x'",)),
    # ... and the numpy reference
    BadInput("evaluate-wrong-input-name", "gd.evaluate(g, {'y': ...}) for input x",
             _evaluate({"y": np.zeros(2, np.float32)}), gd.InputError,
             ("takes inputs ['x']", "missing 'x'", "unexpected 'y'")),
    BadInput("evaluate-wrong-dtype", "gd.evaluate(g, {'x': float64 array}) for float32 x",
             _evaluate({"x": np.zeros(2, np.float64)}), gd.InputError,
             ("input 'x'", "expected dtype float32", "got float64", ".astype(gd.float32.np)")),
    BadInput("evaluate-wrong-shape", "gd.evaluate(g, {'x': shape (3,)}) for shape (2,)",
             _evaluate({"x": np.zeros(3, np.float32)}), gd.InputError,
             ("input 'x'", "expected shape (2,)", "got (3,)")),
    BadInput("evaluate-wrong-rank", "gd.evaluate(g, {'x': shape (2, 1)}) for shape (2,)",
             _evaluate({"x": np.zeros((2, 1), np.float32)}), gd.InputError,
             ("input 'x'", "expected rank 1", "(2, 1)")),
    BadInput("evaluate-missing-input", "gd.evaluate(g, {})", _evaluate({}), gd.InputError,
             ("missing 'x'",)),
    BadInput("evaluate-extra-input", "gd.evaluate(g, {'x': ..., 'z': ...})",
             _evaluate({"x": np.zeros(2, np.float32), "z": 1}), gd.InputError,
             ("unexpected 'z'",)),
    BadInput("evaluate-input-count", "gd.evaluate(g, []) for one input", _evaluate([]),
             gd.InputError, ("takes 1 inputs ['x']", "got 0")),
    BadInput("evaluate-bool-input-given-int8", "gd.evaluate(g, {'x': np.int8(1)}) for a bool x",
             lambda: gd.evaluate(_bool_graph(), {"x": np.int8(1)}), gd.InputError,
             ("input 'x'", "expected dtype bool", "got int8", ".astype(gd.bool.np)")),
    BadInput("evaluate-inexact-python-value", "gd.evaluate(g, {'x': 2.5}) for an int32 x",
             lambda: gd.evaluate(_int_graph(), {"x": 2.5}), gd.InputError,
             ("input 'x'", "2.5 is not exactly representable as int32")),
    BadInput("evaluate-string-value", "gd.evaluate(g, {'x': 'abc'}) for an int32 x",
             lambda: gd.evaluate(_int_graph(), {"x": "abc"}), gd.InputError,
             ("input 'x'", "'abc'")),
    BadInput("evaluate-symbolic-dimension-mismatch",
             "gd.evaluate with x of 2 and y of 3 elements, both declared (n,)",
             lambda: gd.evaluate(_symbolic_pair(), _MISMATCHED_N), gd.InputError,
             ("input 'y'", "'n'", "bound to 2")),
    # -- custom lattices
    BadInput("lattice-two-least-upper-bounds", "int8, uint8 -> both int16 and uint16",
             lambda: gd.Lattice("bad", {_T.int8: [_T.int16, _T.uint16],
                                        _T.uint8: [_T.int16, _T.uint16]}),
             gd.LatticeError, ("'bad' is not a lattice", "int8 and uint8",
                               "no least upper bound", "int16, uint16")),
    BadInput("lattice-no-upper-bound", "int8 -> int16 and uint8 -> uint16 only",
             lambda: gd.Lattice("bad", {_T.int8: [_T.int16], _T.uint8: [_T.uint16]}),
             gd.LatticeError, ("int8 and uint8", "no common upper bound", "add an edge",
                               "partial=True")),
    BadInput("lattice-cycle", "int8 -> int16 -> int8",
             lambda: gd.Lattice("bad", {_T.int8: [_T.int16], _T.int16: [_T.int8]}),
             gd.LatticeError, ("has a cycle", "int8 -> int16 -> int8")),
    # -- export
    BadInput("export-opset-too-old", "export(g, opset=17)", _export_to("", opset=17),
             ExportError, ("opset 17 is not supported", "from 18")),
    BadInput("export-float8-input-opset-18", "a float8_e4m3fn input exported with opset=18",
             _export_to("", opset=18, dt=gd.float8_e4m3fn), ExportError,
             ("float8_e4m3fn", "opset >= 19", "opset=19", "'x'"), ("at None",)),
    BadInput("export-float8-constant-opset-18", "a float8_e4m3fn constant with opset=18",
             _float8_constant_opset18, ExportError,
             ("constant", "float8_e4m3fn", "opset >= 19", "opset=19")),
    BadInput("export-path-unwritable", "export(g, '/nonexistent/dir/model.onnx')",
             _export_to("/nonexistent-graphdsl-dir/model.onnx"), ExportError,
             ("cannot write the model to '/nonexistent-graphdsl-dir/model.onnx'",
              "No such file or directory")),
    BadInput("export-path-is-a-directory", "export(g, <a directory>)",
             lambda: _export_to(tempfile.gettempdir())(), ExportError,
             ("cannot write the model to", "Is a directory")),
    BadInput("export-unknown-target", 'export(g, target="tpu")',
             lambda: export(_simple_graph(), target="tpu"), ExportError,
             ("unknown target 'tpu'", "'cpu'", "'cuda'")),
    BadInput("export-complex", "export a graph with complex64 values", _complex_export,
             ExportError, ("complex dtypes cannot be exported", "keep complex values out")),
    # -- indexing
    BadInput("index-out-of-range-static", "x[:, 5] on a (n, 5) value",
             lambda: _indexed(lambda x: x[:, 5]), gd.IndexRangeError,
             ("index 5 is out of range for axis 1 of size 5", "[-5, 5)")),
    BadInput("index-out-of-range-evaluate", "x[idx] with idx = [0, 7] for a (n, 5) value",
             _gather_out_of_range(False), gd.IndexRangeError,
             ("gather (at", "index 7 is out of range for axis 0", "[-2, 2)")),
    BadInput("index-out-of-range-run", "run() with idx = [0, 7] for a (n, 5) value",
             _gather_out_of_range(True), RunError,
             ("gather at bad_input_catalogue.py:", "is out of range for")),
    BadInput("index-symbolic-slice", "x[1:] on a symbolic first dimension",
             lambda: _indexed(lambda x: x[1:]), gd.ShapeError,
             ("symbolic dimension 'n'", "name it as MAX does", "slice_tensor")),
    BadInput("index-boolean-mask", "x[mask] with a boolean mask",
             lambda: _indexed(lambda x: x[np.array([True, False])]), gd.OpTypeError,
             ("boolean mask", "gd.ops.where")),
    BadInput("index-float-indices", "gd.ops.gather(x, [0.5])",
             lambda: _indexed(lambda x: gd.ops.gather(x, np.array([0.5]))), gd.OpTypeError,
             ("must have an integer dtype", "gd.ops.cast(indices, gd.int64)")),
    BadInput("range-outside-a-graph", "gd.ops.range(0, 3) outside `with graph:`",
             lambda: gd.ops.range(0, 3), gd.OpTypeError,
             ("no operand is a Symbol", "with graph")),
    # -- control flow, subgraphs, weights
    BadInput("cond-predicate-not-bool", "gd.ops.cond(n, ...) with an int16 predicate",
             _structured(lambda g, i: gd.ops.cond(i[1], lambda: i[2], lambda: i[2])),
             gd.OpTypeError, ("the predicate is int16[]", "a bool scalar", "x != 0")),
    BadInput("cond-no-join", "branches of int16 and float32 under jax-strict",
             _structured(lambda g, i: gd.ops.cond(i[0], lambda: i[1], lambda: i[2]),
                         "jax-strict"), gd.PromotionError,
             ("result 0: no join under policy 'jax-strict'", "the then branch gives int16[]",
              "the else branch gives float32[]", "cast a branch's result")),
    BadInput("cond-literal-does-not-fit", "gd.ops.cond(p, lambda: 40000, lambda: n)",
             _structured(lambda g, i: gd.ops.cond(i[0], lambda: 40000, lambda: i[1])),
             gd.LiteralError, ("the literal 40000", "joined type int16")),
    BadInput("while-loop-no-join", "a loop variable of int16 that the body makes float32 "
             "under jax-strict",
             _structured(lambda g, i: gd.ops.while_loop(i[1], lambda k: i[0],
                                                        lambda k: i[2]), "jax-strict"),
             gd.PromotionError, ("loop variable 0: no join under policy 'jax-strict'",
                                 "int16[]", "float32[]", "cast the body's result")),
    BadInput("while-loop-shape-changes", "a body that returns a longer value",
             _structured(lambda g, i: gd.ops.while_loop(
                 i[3], lambda v: i[0], lambda v: gd.ops.concat([v, v]))),
             gd.ShapeError, ("loop variable 0 is float32[3]", "keeps its shape")),
    BadInput("call-narrowing-argument", "a float64 argument for a float32 parameter",
             _called(lambda g: g.constant(np.ones(3))), gd.OpTypeError,
             ("argument 0 of subgraph 'layer'", "float64 does not convert implicitly to "
              "float32", "cast it explicitly")),
    BadInput("weights-not-given", "evaluate a graph with a weight, without weights=",
             _weighted(None), gd.WeightError, ("declares weights 'w'", "pass their data")),
    BadInput("weight-of-another-dtype", "a float16 array for a float32 weight",
             _weighted({"w": np.ones(3, np.float16)}), gd.WeightError,
             ("weight 'w' is float16", "declares it float32")),
    BadInput("weights-missing-and-extra", "weights named other than declared",
             _weighted({"v": np.ones(3, np.float32)}), gd.WeightError,
             ("missing: 'w'", "not declared by the graph: 'v'")),
]

# fmt: on


def _bool_graph() -> gd.Graph:
    g = gd.Graph("bools", input_types={"x": gd.bool})
    g.output(gd.ops.logical_not(g.inputs[0]))
    return g


def _int_graph() -> gd.Graph:
    g = gd.Graph("ints", input_types={"x": gd.int32})
    g.output(g.inputs[0] + 1)
    return g


# ---------------------------------------------------------------------------- defined results

SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 2.9, -2.9, 1e30, -1e30, 300.0,
                  -300.0, 70000.0, 3e9, -3e9, 1e19]  # fmt: skip
INT_TARGETS = [gd.int8, gd.int16, gd.int32, gd.int64, gd.uint8, gd.uint16, gd.uint32, gd.uint64]


def saturating_cast(values: list[float], src: gd.DType, to: gd.DType) -> np.ndarray:
    """The documented float -> integer cast, computed in Python: the value is first stored
    in ``src`` (rounding, overflow to inf), then truncated toward zero and saturated to
    ``to``'s range; NaN gives 0."""
    with np.errstate(all="ignore"):
        stored = np.array(values, np.float64).astype(src.np).astype(np.float64)
    out = []
    for v in stored.tolist():
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(int(to.max) if v > 0 else int(to.min))
        else:
            out.append(min(max(math.trunc(v), int(to.min)), int(to.max)))
    return np.array(out, dtype=to.np)


def _cast_case(src: gd.DType) -> Defined:
    def build() -> tuple[gd.Graph, dict[str, np.ndarray]]:
        g = gd.Graph(f"nan_cast_{src.name}", input_types={"x": _vec(src, len(SPECIAL_FLOATS))})
        (x,) = g.inputs
        g.output(*[x.cast(to) for to in INT_TARGETS], x.cast(gd.bool))
        with np.errstate(all="ignore"):
            xs = np.array(SPECIAL_FLOATS, np.float64).astype(src.np)
        return g, {"x": xs}

    def want() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            stored = np.array(SPECIAL_FLOATS, np.float64).astype(src.np).astype(np.float64)
        truth = np.array([v != 0 for v in stored.tolist()], np.bool_)  # NaN is True
        return [*[saturating_cast(SPECIAL_FLOATS, src, to) for to in INT_TARGETS], truth]

    return Defined(f"nan-inf-cast-from-{src.name}",
                   f"NaN, inf and out-of-range {src.name} cast to every integer dtype and bool: "
                   "truncate, saturate, NaN -> 0", build, want)  # fmt: skip


def _division_case(d: gd.DType) -> Defined:
    """x // y and x % y on the edge cases: by zero (0), INT_MIN // -1 (wraps to INT_MIN)."""
    lo, hi = int(d.min), int(d.max)
    signed = d.kind is gd.Kind.signed
    xs = [7, -7, lo, hi, 0, lo, 5] if signed else [7, hi, 0, hi, 5]
    ys = [0, 0, -1, -1, 0, 0, 2] if signed else [0, 0, 0, 1, 2]

    def build() -> tuple[gd.Graph, dict[str, np.ndarray]]:
        g = gd.Graph(f"divide_{d.name}", input_types={"x": _vec(d, len(xs)), "y": _vec(d, len(xs))})
        x, y = g.inputs
        g.output(x // y, x % y)
        return g, {"x": np.array(xs, d.np), "y": np.array(ys, d.np)}

    def want() -> list[np.ndarray]:
        q, r = [], []
        for a, b in zip(xs, ys, strict=True):
            if b == 0:
                q.append(0)
                r.append(0)
            else:
                qq = a // b  # Python floors, like numpy
                q.append(((qq - lo) % (hi - lo + 1)) + lo if signed else qq)  # INT_MIN // -1 wraps
                r.append(a % b)
        return [np.array(q, d.np), np.array(r, d.np)]

    return Defined(f"integer-division-edges-{d.name}",
                   f"{d.name} x // 0, x % 0 (0) and INT_MIN // -1 (wraps to INT_MIN)", build,
                   want)  # fmt: skip


DEFINED: list[Defined] = [
    *[_cast_case(src) for src in (gd.float16, gd.bfloat16, gd.float32, gd.float64,
                                  gd.float8_e4m3fn, gd.float8_e5m2)],
    *[_division_case(d) for d in (gd.int8, gd.int16, gd.int32, gd.int64, gd.uint32, gd.uint64)],
]


# ---------------------------------------------------------------------------- gallery


def gallery() -> str:
    """The catalogue as markdown: each case, what the user did, and the actual error."""
    lines = ["| case | what the user did | error |", "|---|---|---|"]
    for case in CATALOGUE:
        try:
            case.trigger()
            got = "(no error)"
        except Exception as e:  # the gallery shows whatever happens
            # temporary folders differ per run and machine: shown as <tmp>
            text = re.sub(re.escape(tempfile.gettempdir()) + r"/tmp\w+", "<tmp>", str(e))
            got = f"`{type(e).__name__}`: {text.replace('|', '/')}"
        lines.append(f"| {case.id} | {case.doc} | {got} |")
    return "\n".join(lines) + "\n"
