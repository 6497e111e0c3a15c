"""One dimension algebra (graphdsl.dims): MAX's Dim classes are how graphdsl's shapes hold
symbolic dimensions, so ``x.shape[1] + y.shape[1]`` is an expression in graphdsl's own API,
with max.graph 26's arithmetic, equality, hashing and printing (the recorded cases of
tests/data/max_graph_api.json, replayed on graphdsl.dims itself), and graphs whose dimensions
are derived that way export and run."""

from __future__ import annotations

import builtins
import copy
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from backend import export, run

import graphdsl as gd
import graphdsl.max as gm
from exporters.onnx import ExportError
from graphdsl import dims
from graphdsl.dims import AlgebraicDim, Dim, StaticDim, SymbolicDim, as_dim, dim_text
from graphdsl.shapes import bind_dim, floordiv_dim, format_shape, shape_of, sum_dims

RECORD = json.loads((Path(__file__).parent / "data" / "max_graph_api.json").read_text())
# the recorded dimension cases that need no graph: evaluated on graphdsl.dims's classes
DIM_CASES = [
    c
    for c in RECORD["cases"]
    if c["kind"] == "dims" and not c["inputs"] and "ops." not in c["source"]
]


def describe(v: Any) -> dict[str, Any]:
    """A value as the recorder describes MAX's (scripts/record_max_graph.py)."""
    if isinstance(v, (list, tuple)) and not isinstance(v, str):
        return {"value": type(v).__name__, "items": [describe(u) for u in v]}
    return {"value": type(v).__name__, "repr": repr(v)}


@pytest.mark.parametrize("case", DIM_CASES, ids=[c["source"] for c in DIM_CASES])
def test_the_core_dims_do_what_max_does(case: dict[str, Any]) -> None:
    env = {"Dim": Dim, "StaticDim": StaticDim, "SymbolicDim": SymbolicDim,
           "AlgebraicDim": AlgebraicDim, "np": np}  # fmt: skip
    if "error" in case:
        with pytest.raises(getattr(builtins, case["builtin"])):
            eval(case["source"], env)
    else:
        assert describe(eval(case["source"], env)) == case["result"]


def test_graphdsl_max_has_the_cores_classes() -> None:
    assert len(DIM_CASES) > 90
    assert (gm.Dim, gm.StaticDim, gm.SymbolicDim, gm.AlgebraicDim) == (
        Dim, StaticDim, SymbolicDim, AlgebraicDim
    )  # fmt: skip
    g = gm.Graph("g", input_types=[gm.TensorType(gm.DType.float32, ["n", 3], gm.DeviceRef.CPU())])
    with g:
        x = g.inputs[0].tensor
        flat = x.reshape([-1])
    assert flat.shape[0] == Dim("n") * 3 and flat.shape[0] == flat.symbol.shape[0]
    assert type(flat.symbol.shape[0]) is AlgebraicDim and flat.symbol.shape[1:] == ()


def cache_graph() -> gd.Graph:
    types = {"k": gd.TensorType(gd.float32, ("b", "past", 4)),
             "q": gd.TensorType(gd.float32, ("b", "seq", 4))}  # fmt: skip
    return gd.Graph("cache", input_types=types)


def test_a_sum_of_dimensions_is_a_dimension() -> None:
    k, q = cache_graph().inputs
    total = k.shape[1] + q.shape[1]  # was the str 'pastseq'
    assert type(total) is AlgebraicDim and total == "past+seq" == Dim("seq") + Dim("past")
    assert hash(total) == hash(Dim("seq") + "past") and {total: 1}[Dim("past") + "seq"] == 1
    assert (repr(total), str(total), dim_text(total)) == ("Dim('past') + Dim('seq')",
                                                          "past + seq", "past+seq")  # fmt: skip
    assert "past" + q.shape[1] == total and q.shape[1] + "past" == total  # a plain str: a name
    assert k.shape[2] + q.shape[2] == 8 and type(k.shape[2]) is int
    assert total - q.shape[1] == "past" and type(total - q.shape[1]) is SymbolicDim
    assert type(total - k.shape[1] - q.shape[1]) is StaticDim and total - total == 0


def test_products_and_floor_divisions() -> None:
    k, _ = cache_graph().inputs
    b, past = k.shape[0], k.shape[1]
    assert repr(b * past * 2) == "Dim('b') * Dim('past') * Dim(2)"
    assert (b + 1) * (past + 1) == b * past + b + past + 1
    assert past * 2 // 2 == past and (past * 4) // 2 == 2 * past
    assert repr((past + 1) // 2) == "(Dim('past') + Dim(1)) // Dim(2)"
    assert str(past // 2 * 2) == "(past // 2) * 2" and dim_text(past // 2 * 2) == "(past)//(2)*2"
    assert (past + 1) // 2 == (1 + past) // 2 and hash((past + 1) // 2) == hash((1 + past) // 2)
    with pytest.raises(ZeroDivisionError):
        past // 0
    with pytest.raises(TypeError, match="Int conversions only supported for static dims"):
        int(past * 2)


def test_shapes_hold_ints_and_dims() -> None:
    shape = shape_of([Dim(2), "batch", "n*2+-1", "seq len", 3])
    assert [type(d) for d in shape] == [int, SymbolicDim, AlgebraicDim, SymbolicDim, int]
    assert shape[2] == Dim("n") * 2 - 1 and shape[3].name == "seq len"
    assert shape_of(["x-y"])[0].name == "x-y"  # no graphdsl text: a name of the user's own
    k, _ = cache_graph().inputs
    r = gd.ops.reshape(k, ("b", "past*4"))  # a rule passes on the user's strs: Dims
    assert [type(d) for d in r.shape] == [SymbolicDim, AlgebraicDim]
    assert str(r.type) == "float32[b, past*4]" and format_shape(r.shape) == "(b, past*4)"
    y = gd.ops.reshape(k, (k.shape[0] * k.shape[1], -1))
    assert y.shape == ("b*past", 4) and y.shape[0] == k.shape[0] * k.shape[1]
    with pytest.raises(gd.ShapeError, match=r"name it: \('b', 'past', 2, 2\)"):
        gd.ops.reshape(k, (0, 0, 2, 2))


def test_graphs_with_derived_dimensions_export_and_run() -> None:
    g = cache_graph()
    k, q = g.inputs
    past_seq = k.shape[1] + q.shape[1]
    mask_type = gd.TensorType(gd.float32, (k.shape[0], past_seq))
    with g.subgraph("scale", {"m": mask_type}) as sub:  # the derived dim as an input's
        sub.output(sub.inputs[0] * 2)
    c = gd.ops.concat([k, q], axis=1)
    assert c.shape == ("b", past_seq, 4)
    scaled = gd.ops.call(sub, gd.ops.sum(c, axis=2))
    flat = c.reshape(c.shape[0] * c.shape[1], 4)
    g.output(flat, scaled, c)
    m = export(g, check="full")
    assert [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in m.graph.output] == [["b*past+b*seq", 4], ["b", "past+seq"],
                                         ["b", "past+seq", 4]]  # fmt: skip
    xs = {"k": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
          "q": np.arange(40, dtype=np.float32).reshape(2, 5, 4)}  # fmt: skip
    got, want = run(m, xs), gd.evaluate(g, xs)
    assert [a.shape for a in got] == [(16, 4), (2, 8), (2, 8, 4)]
    for a, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, w, strict=True)


def test_floor_division_text_binds_and_round_trips() -> None:
    h = floordiv_dim("h+-1", 2)
    assert dim_text(h) == "(h+-1)//(2)" and as_dim("(h+-1)//(2)") == h == (Dim("h") - 1) // 2
    out = sum_dims([h, 1])
    assert out == "(h+-1)//(2)+1" and bind_dim(out, {"h": 224}) == 112
    assert bind_dim(out * 3, {"h": 7}) == 12 and bind_dim(out, {}) is None
    for d in (out, Dim("n"), as_dim("b*3/2"), as_dim("(n)/(n+1)")):
        assert pickle.loads(pickle.dumps(d)) == d and copy.deepcopy(d) == d
        assert type(pickle.loads(pickle.dumps(d))) is type(d) and as_dim(dim_text(d)) == d
        assert as_dim(str(d)) == d  # MAX's str reads back too
    x = gd.Graph("pool", input_types={"x": gd.TensorType(gd.float32, (1, "h", "h", 2))})
    pooled = gd.ops.max_pool2d(x.inputs[0], (3, 3), stride=2, padding=1)
    assert pooled.shape[1] == out and type(pooled.shape[1]) is AlgebraicDim
    assert dims.parsed_text("h // 2") == "(h)//(2)"


# ------------------------------------------------------------ MAX's dimension attributes

_SI64 = dims.IntegerType(64, dims.SignednessSemantics.signed)
_ATTR_DIMS = [
    Dim(5),
    Dim(-3),
    Dim("batch"),
    Dim("batch") + 10,
    (Dim("batch") + 1) * 2,
    -Dim("n"),
    Dim("x") * Dim("y") * 3 + Dim("z") * 2,
    Dim("a") * Dim("a"),
    Dim("x") // Dim("y"),
    Dim("x") // 2 * 2,
    (Dim("h") - 1) // 2 + 1,
]


@pytest.mark.parametrize("d", _ATTR_DIMS, ids=repr)
def test_dims_round_trip_through_max_attributes(d: Dim) -> None:
    attr = d.to_mlir()
    assert Dim.from_mlir(attr) == d and type(Dim.from_mlir(attr)) is type(d)
    assert Dim(attr) == d and type(d).from_mlir(attr) == d and type(d)(attr) == d
    assert attr == d.to_mlir() and hash(attr) == hash(d.to_mlir())  # records, equal by value
    assert pickle.loads(pickle.dumps(attr)) == attr


def test_max_attributes_have_maxs_form() -> None:
    from graphdsl.max._core_dialects import builtin, kgen

    batch, ten = Dim("batch").to_mlir(), Dim(10).to_mlir()
    assert batch == kgen.ParamDeclRefAttr("batch", _SI64) and batch.name.value == "batch"
    assert ten == builtin.IntegerAttr(_SI64, 10) and ten.value == 10
    d = AlgebraicDim(kgen.ParamOperatorAttr(kgen.POC.add, [batch, ten]))
    assert d == Dim("batch") + 10 and d.attr.opcode == kgen.POC.add
    assert d.attr.operands == (batch, ten)
    # MAX's shape: an n-ary add of terms, a term an n-ary product with the coefficient last
    x, y, z = (Dim(n).to_mlir() for n in "xyz")
    mul = dims.POC.mul_no_wrap
    assert (Dim("x") * Dim("y") * 3 + Dim("z") * 2).to_mlir() == dims.ParamOperatorAttr(
        dims.POC.add,
        [dims.ParamOperatorAttr(mul, [x, y, Dim(3).to_mlir()]),
         dims.ParamOperatorAttr(mul, [z, Dim(2).to_mlir()])],
    )  # fmt: skip
    floor = dims.ParamOperatorAttr(dims.POC.div, [x, Dim(2).to_mlir()])
    assert (Dim("x") // 2 * 2).to_mlir() == dims.ParamOperatorAttr(mul, [floor, Dim(2).to_mlir()])
    # an attribute evaluates (MAX's attributes fold when made): Dim gives the simplest dim
    assert Dim(dims.ParamOperatorAttr(dims.POC.add, [batch, Dim(0).to_mlir()])) == "batch"
    assert Dim(dims.ParamOperatorAttr(mul, [ten, ten])) == 100
    assert isinstance(Dim(dims.ParamOperatorAttr(mul, [ten, ten])), StaticDim)


@pytest.mark.parametrize(
    ("make", "value", "message"),
    [
        (AlgebraicDim, StaticDim(5), "AlgebraicDim.__init__ only accepts kgen.ParamOperatorAttr "
         "or AlgebraicDim, got StaticDim"),
        (AlgebraicDim, 5, "AlgebraicDim.__init__ only accepts kgen.ParamOperatorAttr or "
         "AlgebraicDim, got int"),
        (AlgebraicDim, Dim(5).to_mlir(), "AlgebraicDim.__init__ only accepts "
         "kgen.ParamOperatorAttr or AlgebraicDim, got IntegerAttr"),
        (AlgebraicDim, (Dim("n") + 1).to_mlir().operands[0], "got ParamDeclRefAttr"),
        (SymbolicDim, StaticDim(5), "SymbolicDim.__init__ only accepts str, "
         "kgen.ParamDeclRefAttr, or SymbolicDim, got StaticDim"),
        (SymbolicDim, 5, "SymbolicDim.__init__ only accepts str, kgen.ParamDeclRefAttr, or "
         "SymbolicDim, got int"),
        (SymbolicDim, (Dim("n") + 1).to_mlir(), "got ParamOperatorAttr"),
        (StaticDim, SymbolicDim("batch"), "StaticDim.__init__ only accepts int, "
         "builtin.IntegerAttr, or StaticDim, got SymbolicDim"),
        (StaticDim, "5", "StaticDim.__init__ only accepts int, builtin.IntegerAttr, or "
         "StaticDim, got str"),
        (StaticDim, Dim("n").to_mlir(), "got ParamDeclRefAttr"),
        (AlgebraicDim.from_mlir, Dim(5).to_mlir(), "AlgebraicDim.from_mlir only accepts "
         "kgen.ParamOperatorAttr, got IntegerAttr"),
        (StaticDim.from_mlir, Dim("n").to_mlir(), "StaticDim.from_mlir only accepts "
         "builtin.IntegerAttr, got ParamDeclRefAttr"),
        (SymbolicDim.from_mlir, (Dim("n") + 1).to_mlir(), "SymbolicDim.from_mlir only accepts "
         "kgen.ParamDeclRefAttr, got ParamOperatorAttr"),
    ],
)  # fmt: skip
def test_dims_refuse_other_kinds_with_maxs_messages(make: Any, value: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        make(value)
    assert message in str(info.value)


def test_attributes_that_fold_to_another_kind_or_have_no_max_form() -> None:
    n, one, zero = Dim("n").to_mlir(), Dim(1).to_mlir(), Dim(0).to_mlir()
    # MAX folds add(n, 0) to n: AlgebraicDim refuses it as MAX refuses a ParamDeclRefAttr
    with pytest.raises(TypeError, match=r"got ParamDeclRefAttr .* folds to Dim\('n'\)"):
        AlgebraicDim(dims.ParamOperatorAttr(dims.POC.add, [n, zero]))
    with pytest.raises(ValueError, match="graph api does not support unknown dimensions"):
        Dim.from_mlir(dims.StringAttr("n"))
    with pytest.raises(ValueError, match="evaluate only"):
        Dim(dims.ParamOperatorAttr(dims.POC.max, [n, one]))
    with pytest.raises(ZeroDivisionError):
        Dim(dims.ParamOperatorAttr(dims.POC.div, [n, zero]))
    with pytest.raises(ValueError, match="exact division"):
        dims.divide(Dim("b") * 3, Dim(2)).to_mlir()  # graphdsl's b*3/2: not MAX's
    with pytest.raises(TypeError, match="operands must be attributes"):
        dims.ParamOperatorAttr(dims.POC.add, [n, 1])  # type: ignore[list-item]
    assert Dim("n") + one == Dim("n") + 1  # an attribute is dim-like in arithmetic


def test_dynamic_dim_is_a_marked_symbolic_dim() -> None:
    """MAX's Dim.dynamic: a SymbolicDim subclass, equal and hashed as its name; re-wrapping
    and pickling keep the mark, MAX's attribute record does not carry it."""
    import pickle

    from graphdsl.dims import Dim, DynamicDim, SymbolicDim

    d = Dim.dynamic("k")
    assert isinstance(d, DynamicDim) and isinstance(d, SymbolicDim) and d.name == "k"
    assert d == Dim("k") and hash(d) == hash(Dim("k")) and d == "k"
    assert isinstance(Dim(d), DynamicDim) and isinstance(SymbolicDim(d), DynamicDim)
    assert isinstance(pickle.loads(pickle.dumps(d)), DynamicDim)
    back = Dim.from_mlir(d.to_mlir())
    assert back == d and not isinstance(back, DynamicDim)
    assert d + 1 == Dim("k") + 1
    with pytest.raises(ValueError, match="Invalid name"):
        Dim.dynamic("1k")


# ---------------------------------------------------------------------------- dim_size


def test_dim_size_is_a_dimensions_run_time_size() -> None:
    # a symbolic dimension as a value (MAX's Dim used as a tensor): its names' sizes come from
    # the inputs that have them, in the reference and in the model alike
    g = gd.Graph("d", input_types={"x": gd.TensorType(gd.float32, ("n", "m")),
                                   "y": gd.TensorType(gd.int8, ("k",))})  # fmt: skip
    x, y = g.inputs
    with g:
        sizes = [gd.ops.dim_size(d) for d in (x.shape[0] * 2 + y.shape[0], x.shape[1], 7)]
    assert all(s.type == gd.TensorType(gd.int64, ()) for s in sizes)
    g.output(*sizes, x * gd.ops.cast(sizes[0], gd.float32))
    feeds = [np.ones((3, 5), np.float32), np.zeros(4, np.int8)]
    for got in (gd.evaluate(g, feeds), run(export(g), feeds)):
        assert [int(v) for v in got[:3]] == [3 * 2 + 4, 5, 7]
        assert got[0].dtype == np.int64
        assert (got[3] == 10.0).all()


def test_a_dimension_is_an_operand() -> None:
    # as max.graph takes a Dim where a tensor goes: a symbolic one is its run-time size, an
    # int64 scalar (dim_size); a static one the int a shape holds. A str is not a Dim.
    g = gd.Graph("d", input_types={"x": gd.TensorType(gd.float32, ("b", "s", 3)),
                                   "m": gd.TensorType(gd.int32, ("b", "t"))})  # fmt: skip
    x, m = g.inputs
    last = gd.ops.minimum(m.sum(axis=1), x.shape[1]) - 1
    both = x.shape[0] * 2 + m.sum(axis=1) + StaticDim(3)
    assert last.type == both.type == gd.TensorType(gd.int64, ("b",))
    assert [n.op for n in g.nodes].count("dim_size") == 2
    g.output(last, both)
    feeds = [np.zeros((2, 4, 3), np.float32), np.array([[1, 1, 0, 0, 0], [1] * 5], np.int32)]
    for got in (gd.evaluate(g, feeds), run(export(g), feeds)):
        np.testing.assert_array_equal(got[0], [1, 3])
        np.testing.assert_array_equal(got[1], [2 * 2 + 2 + 3, 2 * 2 + 5 + 3])
    with pytest.raises(gd.OpTypeError, match=r"cannot use 's' \(of type str\) as an operand; "
                                          r"use a Symbol, a Python scalar, a Dim"):
        gd.ops.minimum(m, "s")


def test_dim_size_of_a_name_no_input_has_is_refused() -> None:
    g = gd.Graph("d", input_types={"x": gd.TensorType(gd.float32, (3,))})
    with g:
        size = gd.ops.dim_size("batch")
    g.output(size)
    with pytest.raises(gd.ShapeError, match=r"'batch' is not a dimension of any graph input"):
        gd.evaluate(g, [np.zeros(3, np.float32)])
    with pytest.raises(ExportError, match=r"'batch' is not a dimension of any graph input"):
        export(g)


def test_tile_by_symbolic_counts() -> None:
    # MAX's tile takes symbolic repeats: the result's dims are products, the counts bound
    # when the model runs (from the inputs that have them), in the reference and the model
    g = gd.Graph("t", input_types={"x": gd.TensorType(gd.int8, ("n", 2)),
                                   "k": gd.TensorType(gd.int8, ("k",))})  # fmt: skip
    x, k = g.inputs
    z = gd.ops.tile(x, [k.shape[0], 2])
    assert z.type.shape == (x.shape[0] * k.shape[0], 4)
    g.output(z)
    xs = np.array([[1, 2], [3, 4]], np.int8)
    for got in (gd.evaluate(g, [xs, np.zeros(3, np.int8)]),
                run(export(g), [xs, np.zeros(3, np.int8)])):  # fmt: skip
        np.testing.assert_array_equal(got[0], np.tile(xs, (3, 2)))
    with pytest.raises(gd.ShapeError, match=r"one repeat count \(an int >= 0 or a symbolic"):
        gd.ops.tile(x, [True, 2])
