"""graphdsl.max, MAX's graph API over graphdsl (issue 17, part 2): its surface against the one
recorded from max 26.7 (tests/data/max_graph_ops.json: every op's parameters, kinds and
defaults; Graph, TensorType, DeviceRef, TensorValue), what MAX's names mean where graphdsl's
differ (reductions keep the axis, transpose swaps two axes, max/min dispatch, logical
operators, ``<`` as ``not >=``), constants as max.graph makes them (its recorded table in
tests/data/max_graph_promotion.json), devices and providers, weights, and the errors: a MAX
op graphdsl lacks names itself, an argument value it cannot honour says so.

Value goldens are numpy, written from MAX's documentation of each op.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import warnings
from enum import Enum
from pathlib import Path
from typing import Any

import floats
import numpy as np
import onnxruntime as ort
import pytest
from backend import export, run
from norm_bounds import bound as norm_bound

import exporters.onnx as xo
import graphdsl as gd
from exporters.onnx import _run, providers_for
from graphdsl.max import (
    ConvInputLayout,
    DeviceRef,
    Dim,
    DType,
    FilterLayout,
    Graph,
    InterpolationMode,
    MissingOpError,
    TensorType,
    TensorValue,
    UnsupportedError,
    Weight,
    ops,
)
from graphdsl.types import OpTypeError

DATA = Path(__file__).parent / "data"
RECORDED: dict[str, Any] = json.loads((DATA / "max_graph_ops.json").read_text())
PROMOTION: dict[str, Any] = json.loads((DATA / "max_graph_promotion.json").read_text())
CPU, GPU = DeviceRef.CPU(), DeviceRef.GPU()
# Ops newer than the recorded max 26.7 that MAX's own graph tests of later releases call
# (ops/test_compatibility.py: ops.bitwise_xor on bools); their typing is graphdsl's bitwise ops.
NEWER_THAN_RECORDED = {"bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor"}
COVERED = [n for n in ops._OPS if n != "InterpolationMode" and n not in NEWER_THAN_RECORDED]


def graph(*types: tuple[DType, list[int | str]], device: DeviceRef = CPU) -> Graph:
    return Graph("t", input_types=[TensorType(d, s, device) for d, s in types])


def evaluate(g: Graph, *feeds: np.ndarray) -> list[np.ndarray]:
    return gd.evaluate(g, list(feeds))


def params(fn: Any) -> list[tuple[str, str, str | None]]:
    """(name, kind, repr of the default) of each parameter, as the recorder wrote them."""
    return [
        (p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default))
        for p in inspect.signature(fn).parameters.values()
    ]


def recorded(entry: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(p["name"], p["kind"], p["default"]) for p in entry["parameters"]]


# ---------------------------------------------------------------------------- the surface


def test_recorded_version() -> None:
    assert RECORDED["version"] == "26.7.0"


def test_every_max_op_is_covered_or_named_missing() -> None:
    names = set(RECORDED["ops"])
    assert not names & NEWER_THAN_RECORDED
    assert set(ops._OPS) | set(ops.MISSING) == names | NEWER_THAN_RECORDED
    assert not set(ops._OPS) & set(ops.MISSING)
    assert (len(ops._OPS), len(ops.MISSING), len(names)) == (124, 13, 133)
    # MAX's op submodules are there too
    assert set(ops.__all__) - set(ops._OPS) == {"complex", "elementwise", "random", "reduction"}


@pytest.mark.parametrize("name", COVERED)
def test_signature_is_maxs(name: str) -> None:
    """Parameter names, kinds and defaults (enum defaults by repr) as max 26.7 has them."""
    assert params(getattr(ops, name)) == recorded(RECORDED["ops"][name])


def test_interpolation_mode_is_maxs() -> None:
    assert issubclass(InterpolationMode, Enum) and ops.InterpolationMode is InterpolationMode
    assert {m.name: m.value for m in InterpolationMode} == {
        "NEAREST": "nearest",
        "BILINEAR": "bilinear",
        "BICUBIC": "bicubic",
    }
    assert str(InterpolationMode.BICUBIC) == "bicubic"


@pytest.mark.parametrize("name", sorted(RECORDED["ops"].keys() - set(ops.__all__)))
def test_a_missing_op_names_itself(name: str) -> None:
    assert not hasattr(ops, name)
    with pytest.raises(MissingOpError, match=rf"max\.graph\.ops\.{name} \(.*\) is not in graphdsl"):
        getattr(ops, name)
    with pytest.raises(NotImplementedError):  # MissingOpError is an UnsupportedError too
        getattr(ops, name)


def test_an_unknown_name_is_a_plain_attribute_error() -> None:
    with pytest.raises(AttributeError) as e:
        ops.no_such_op  # noqa: B018
    assert not isinstance(e.value, MissingOpError)


def test_graph_tensor_type_and_device_ref_signatures() -> None:
    classes = RECORDED["classes"]
    # MAX's Graph parameters, in order; graphdsl adds the keyword-only policy
    ours = [p for p in params(Graph.__init__) if p[0] != "policy"]
    theirs = recorded(classes["Graph.__init__"])
    assert [p[:2] for p in ours] == [p[:2] for p in theirs]
    # max 26.7's TensorType(dtype, shape, device); later MAX adds the private keyword
    # _layout (a FilterLayout mark, part of equality), which its own type tests pass
    assert [p[0] for p in params(TensorType.__init__)] == [
        "self",
        "dtype",
        "shape",
        "device",
        "_layout",
    ]
    assert params(TensorType.__init__)[-1] == ("_layout", "POSITIONAL_OR_KEYWORD", "None")
    t = TensorType(DType.float32, [7, 2], CPU, _layout=FilterLayout.RSCF)
    assert t == TensorType(DType.float32, [7, 2], CPU, _layout=FilterLayout.RSCF)
    assert hash(t) == hash(TensorType(DType.float32, [7, 2], CPU, _layout=FilterLayout.RSCF))
    assert (
        t != TensorType(DType.float32, [7, 2], CPU)
        and TensorType(DType.float32, [], CPU)._layout is None
    )
    for name in ("DeviceRef.CPU", "DeviceRef.GPU"):
        assert params(getattr(DeviceRef, name.split(".")[1])) == recorded(classes[name])
    assert params(DeviceRef.__init__)[:3] == [
        p[:3] for p in recorded(classes["DeviceRef.__init__"])
    ]
    assert params(ops.constant) == recorded(classes["ops.constant"])


@pytest.mark.parametrize("name", sorted(RECORDED["tensor_value"]))
def test_tensor_value_members(name: str) -> None:
    """Every recorded TensorValue member, with MAX's parameter names."""
    entry = RECORDED["tensor_value"][name]
    member = inspect.getattr_static(TensorValue, name)
    assert member is not None
    if entry["kind"] == "method" and name != "__init__":
        want = [p["name"] for p in entry["parameters"]]
        assert [p[0] for p in params(getattr(TensorValue, name))] == want


def test_tensor_value_operators() -> None:
    for name, entry in RECORDED["tensor_value_dunders"].items():
        if entry["kind"] == "method":
            assert callable(getattr(TensorValue, name)), name


def test_dtype_members() -> None:
    """MAX's DType, every member in MAX's order, each a graphdsl dtype of the same name
    (the core also has int4 and uint4, which MAX lacks); casts to each build."""
    assert list(DType.__members__) == RECORDED["dtype_members"]
    assert all(d.name in gd.DType.__members__ for d in DType)
    for d in DType:
        with graph((DType.float32, [2])) as g:
            assert ops.cast(g.inputs[0].tensor, d).dtype is d


# ---------------------------------------------------------------------------- graphs


def test_graph_is_a_graphdsl_graph_under_max_graph() -> None:
    g = graph((DType.int8, [2]))
    assert isinstance(g, gd.Graph) and g.policy.name == "max-graph"
    x = g.inputs[0].tensor
    assert isinstance(x, TensorValue) and x is g.inputs[0]  # inputs are MAX's values
    assert isinstance(x + 1, TensorValue) and (x + 1).dtype is DType.int8  # literal takes int8
    # graphdsl's own modules read the same graph as graphdsl's IR: its input symbols
    assert [type(s) for s in g.core_inputs] == [gd.Symbol] and g.core_inputs[0] is x.symbol
    assert Graph("p", policy="default").policy.name == "default"


def test_graph_current_and_forward() -> None:
    with pytest.raises(gd.GraphError, match="no current graph"):
        Graph.current  # noqa: B018
    with graph((DType.float32, [3])) as g:
        assert Graph.current is g
        with Graph("inner") as h:
            assert Graph.current is h
        assert Graph.current is g
    t = TensorType(DType.float32, [3], CPU)
    f = Graph("f", lambda x, y, scale: x * scale + y, [t, t], None, 2.0)
    out = evaluate(f, np.array([1, 2, 3], np.float32), np.ones(3, np.float32))
    assert out[0].tolist() == [3.0, 5.0, 7.0]


def test_graph_errors() -> None:
    t = TensorType(DType.float32, [3], CPU)
    with pytest.raises(UnsupportedError, match="path"):
        Graph("g", input_types=[t], path="model.mlir")
    with pytest.raises(UnsupportedError, match="custom_extensions"):
        Graph("g", input_types=[t], custom_extensions=["kernels.mojopkg"])
    with pytest.raises(UnsupportedError, match="BufferType"):
        Graph("g", input_types=["not a type"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="DeviceRef"):
        TensorType(DType.float32, [3], "cpu")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="non-negative"):  # MAX: a negative Dim, but no such type
        TensorType(DType.float32, [-1], CPU)
    assert (Dim(3), Dim("seq")) == (3, "seq") and repr(Dim(-1)) == "Dim(-1)"


def test_graphdsl_symbols_become_max_values() -> None:
    """A graphdsl symbol given to a MAX op is a value on the CPU; the result is MAX's."""
    g = gd.Graph("plain", input_types=[gd.TensorType(gd.float32, (2,))])
    y = ops.exp(g.inputs[0])
    assert isinstance(y, TensorValue) and y.type == TensorType(DType.float32, [2], CPU)
    assert y.symbol.graph is g


# ---------------------------------------------------------------------------- MAX's meanings

X = np.array([[1.5, -2.0, 7.0], [0.0, 3.0, 3.0]], np.float32)
U32 = floats.unit_roundoff(np.float32)


@pytest.mark.parametrize(
    ("op", "golden"),
    [
        ("sum", lambda x, a: np.sum(x, a, keepdims=True)),
        ("mean", lambda x, a: np.mean(x, a, keepdims=True)),
        ("prod", lambda x, a: np.prod(x, a, keepdims=True)),
        ("max", lambda x, a: np.max(x, a, keepdims=True)),
        ("min", lambda x, a: np.min(x, a, keepdims=True)),
        ("argmax", lambda x, a: np.argmax(x, a, keepdims=True)),
        ("argmin", lambda x, a: np.argmin(x, a, keepdims=True)),
    ],
)
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_reductions_keep_the_axis(op: str, golden: Any, axis: int | None) -> None:
    """MAX's reductions keep the reduced axis with size 1 (axis -1 by default), as do the
    TensorValue methods; argmax/argmin are int64 and take the first of ties."""
    with graph((DType.float32, [2, 3])) as g:
        x = g.inputs[0].tensor
        fn = getattr(ops, op)
        a = -1 if axis is None else axis
        outs = [fn(x) if axis is None else fn(x, axis=axis)]
        if hasattr(TensorValue, op):
            outs.append(getattr(x, op)(a))
        g.output(*outs)
    want = golden(X, a)
    # X's sums and products are exact by construction (halves and small integers: checked
    # for the sums; the products' partial products are -3, -21, 0, 9), a mean's division
    # then rounds once: bit for bit but for the sign of a zero sum (none here)
    assert floats.exactly_summable(X.astype(np.float64), np.float32)
    for got in [*evaluate(g, X), *run(g, [X])]:
        if op in ("sum", "mean", "prod"):
            floats.assert_close(got, want, 0.0, op)
        else:
            floats.assert_bits(got, want, op)  # a selection


def test_var_and_stdev_are_population_statistics() -> None:
    with graph((DType.float32, [2, 3])) as g:
        x = g.inputs[0].tensor
        g.output(x.var(), x.stdev(axis=0))
    var, std = evaluate(g, X)
    # two float32 evaluations (numpy's and the reference's) of a variance of n values: each
    # within (n + 3) u relatively plus the square of its mean's error (n u mean|x|) of the
    # exact one (tests/norm_bounds.py's analysis); the square root halves the relative part
    # and rounds once more
    x64 = X.astype(np.float64)
    for got, axis in ((var, -1), (std, 0)):
        n = X.shape[axis]
        v = x64.var(axis, keepdims=True)
        m2 = (n * U32 * np.abs(x64).mean(axis, keepdims=True)) ** 2
        if got is var:
            want, b = np.var(X, axis, keepdims=True), (n + 4) * U32 * v + m2
        else:
            want = np.std(X, axis, keepdims=True)
            b = ((n + 3) / 2 + 2) * U32 * np.sqrt(v) + m2 / (2 * np.sqrt(v))
        floats.assert_close(got, want, 2 * b * (1 + 2.0**-20), "var" if got is var else "std")
    with pytest.raises(gd.OpTypeError, match="bool"):
        graph((DType.bool, [2])).inputs[0].var()


def test_elementwise_max_min_and_their_errors() -> None:
    with graph((DType.float32, [2, 3]), (DType.float32, [3])) as g:
        x, y = g.inputs
        g.output(ops.max(x, y), ops.min(x, y))
        with pytest.raises(ValueError, match="Axis not allowed for elementwise max"):
            ops.max(x, y, axis=0)
        with pytest.raises(ValueError, match="Axis not allowed for elementwise min"):
            ops.min(x, y, axis=0)
    y_in = np.array([0.0, 5.0, 7.0], np.float32)
    hi, lo = evaluate(g, X, y_in)
    floats.assert_bits(hi, np.maximum(X, y_in))  # selections: exact
    floats.assert_bits(lo, np.minimum(X, y_in))


def test_transpose_permute_and_shape_ops() -> None:
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    with graph((DType.int32, [2, 3, 4])) as g:
        x = g.inputs[0].tensor
        g.output(
            ops.transpose(x, 0, 2),
            ops.permute(x, [1, 2, 0]),
            x.T,
            ops.reshape(x, [4, -1]),
            ops.flatten(x, 1),
            ops.squeeze(ops.unsqueeze(x, 1), 1),
            ops.concat([x, x], axis=-1),
            ops.stack([x, x], axis=1),
            ops.tile(x, [1, 2, 1]),
            ops.broadcast_to(ops.unsqueeze(x, 0), [2, 2, 3, 4]),
            *ops.split(x, [1, 3], axis=2),
            *ops.chunk(x, 3, axis=1),
        )
    got = evaluate(g, a)
    want = [
        np.swapaxes(a, 0, 2),
        np.transpose(a, (1, 2, 0)),
        np.swapaxes(a, -1, -2),
        a.reshape(4, -1),
        a.reshape(2, 12),
        a,
        np.concatenate([a, a], -1),
        np.stack([a, a], 1),
        np.tile(a, (1, 2, 1)),
        np.broadcast_to(a[None], (2, 2, 3, 4)),
        a[:, :, :1],
        a[:, :, 1:],
        a[:, :1],
        a[:, 1:2],
        a[:, 2:],
    ]
    assert len(got) == len(want)
    for out, w in zip(got, want, strict=True):
        floats.assert_bits(out, w)  # data movement


def test_indexing_ops() -> None:
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([[3, 0], [1, 1]], np.int64)
    with graph((DType.float32, [4, 3]), (DType.int64, [2, 2])) as g:
        t, i = g.inputs
        g.output(
            ops.gather(t, i, axis=0),
            ops.gather(t, ops.constant(np.array([2, 0])), 1),
            ops.slice_tensor(t, [slice(1, 3), -1]),
            t[1::2, 1:],
            ops.band_part(t, num_lower=1, num_upper=0),
            ops.scatter(t, ops.constant(np.full((4, 1), -1.0, np.float32)),
                        ops.constant(np.array([[0], [2], [1], [0]])), axis=1),
            ops.top_k(ops.flatten(t), 2)[1],
            ops.argsort(ops.constant(np.array([3, 1, 2], np.int8)), ascending=False),
            ops.cumsum(t, axis=0, exclusive=True),
        )  # fmt: skip
    got = evaluate(g, table, ids)
    band = np.array([[0, 0, 0], [3, 4, 0], [0, 7, 8], [0, 0, 11]], np.float32)
    scattered = table.copy()
    scattered[[0, 1, 2, 3], [0, 2, 1, 0]] = -1.0
    want = [
        table[ids],
        table[:, [2, 0]],
        table[1:3, -1],
        table[1::2, 1:],
        band,
        scattered,
        np.array([11, 10]),
        np.array([0, 2, 1]),
        np.cumsum(table, 0) - table,
    ]
    # data movement, and the cumsum's sums of small integers: exact by construction (checked)
    assert floats.exactly_summable(table.astype(np.float64), np.float32)
    for out, w in zip(got, want, strict=True):
        floats.assert_bits(out, w)


def test_range_and_constants_outside_an_op() -> None:
    with graph((DType.float32, ["n", 2])) as g:
        x = g.inputs[0].tensor
        r = ops.range(0, x.shape[0], 1, dtype=DType.int32, device=CPU)
        g.output(r, ops.range(0.5, 2, 0.5, dtype=DType.float32, device=GPU))
    assert r.type == TensorType(DType.int32, ["n"], CPU) and r.symbol.type == gd.TensorType(
        gd.int32, ("n",)
    )
    a, b = evaluate(g, np.zeros((3, 2), np.float32))
    assert a.tolist() == [0, 1, 2] and a.dtype == np.int32
    assert b.tolist() == [0.5, 1.0, 1.5] and b.dtype == np.float32
    assert [t.device for t in g.output_types] == [CPU, GPU]
    with pytest.raises(gd.GraphError, match="no current graph"):
        ops.range(0, 3, dtype=DType.int64, device=CPU)
    with (
        graph((DType.int64, [])) as g2,
        pytest.raises(ValueError, match="Dynamic ranges must provide an explicit out_dim"),
    ):
        ops.range(0, g2.inputs[0], dtype=DType.int64, device=CPU)


def test_logical_operators_are_maxs() -> None:
    """&, |, ^, ~ are logical in MAX (bitwise in graphdsl); x < y is not (x >= y) and x <= y
    is not (x > y), MAX's definitions: true where either operand is NaN."""
    b_in = np.array([True, True, False, False])
    c_in = np.array([True, False, True, False])
    with graph((DType.bool, [4]), (DType.bool, [4])) as g:
        b, c = g.inputs
        g.output(b & c, b | c, b ^ c, ~b, b & True, 1 | c)
    got = evaluate(g, b_in, c_in)
    for out, w in zip(got, [b_in & c_in, b_in | c_in, b_in ^ c_in, ~b_in, b_in, np.ones(4, bool)],
                      strict=True):  # fmt: skip
        assert out.dtype == np.bool_ and out.tolist() == w.tolist()
    x_in = np.array([1.0, 2.0, np.nan, 3.0], np.float32)
    y_in = np.array([2.0, 2.0, 1.0, np.nan], np.float32)
    with graph((DType.float32, [4]), (DType.float32, [4])) as g:
        x, y = g.inputs
        g.output(x < y, x <= y, 2.0 > x, round(x), *divmod(x, 2.0))  # noqa: SIM300
    lt, le, gt, rounded, q, r = evaluate(g, x_in, y_in)
    assert lt.tolist() == [True, False, True, True]
    assert le.tolist() == [True, True, True, True]
    assert gt.tolist() == [True, False, True, False]  # 2.0 > x is x.__lt__(2.0)
    floats.assert_bits(rounded, np.round(x_in))  # elementwise, exact
    floats.assert_bits(q, np.floor_divide(x_in, np.float32(2.0)))
    floats.assert_bits(r, np.mod(x_in, np.float32(2.0)))
    assert run(g, [x_in, y_in])[0].tolist() == lt.tolist()


def test_nn_ops() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4)).astype(np.float32)
    gamma = rng.standard_normal(4).astype(np.float32)
    beta = rng.standard_normal(4).astype(np.float32)
    with graph((DType.float32, [2, 4])) as g:
        x = g.inputs[0].tensor
        g.output(
            ops.layer_norm(x, ops.constant(gamma), ops.constant(beta), epsilon=1e-5),
            ops.rms_norm(x, ops.constant(gamma), 1e-6),
            ops.softmax(x),
            ops.logsoftmax(x, axis=0),
            ops.gelu(x, approximate="tanh"),
            ops.matmul(x, ops.transpose(x, 0, 1)),
            ops.outer(ops.flatten(x), ops.constant(np.ones(2, np.float32))),
        )
    ln, rms, sm, lsm, gelu, mm, outer = evaluate(g, a)
    a64 = a.astype(np.float64)
    f32 = lambda v: np.asarray(v).astype(np.float32)  # noqa: E731
    # against the float64 formulas, rounded to float32: the norms and GELU within
    # tests/norm_bounds.py's bounds for a float32 computation
    mu, var = a64.mean(-1, keepdims=True), a64.var(-1, keepdims=True)
    want = f32((a64 - mu) / np.sqrt(var + 1e-5) * gamma + beta)
    b = norm_bound("layer_norm", {"epsilon": 1e-5}, [a, gamma, beta], want)
    floats.assert_close(ln, want, b.bound, "layer_norm")
    want = f32(a64 / np.sqrt((a64**2).mean(-1, keepdims=True) + 1e-6) * gamma)
    attrs = {"epsilon": 1e-6, "weight_offset": 0.0, "multiply_before_cast": False}
    floats.assert_close(rms, want, norm_bound("rms_norm", attrs, [a, gamma], want).bound, "rms")
    # softmax of 4: exp within 2 ulps (4u), a sum of 4 (γ_4 and its terms' 4u), the division
    # (u): 13u relatively, under 7 ulps of float32 (eps = 2u), and the rounding of want
    e = np.exp(a64 - a64.max(-1, keepdims=True))
    want = f32(e / e.sum(-1, keepdims=True))
    floats.assert_close(sm, want, floats.ulp_bound(want, np.float32, 7.5), "softmax")
    # logsoftmax over 2, a - log(Σ exp a): the sum within 6u relatively (two exps, an add),
    # so its log within 6u absolutely plus log's ulp, the subtraction and want rounding once
    s = np.exp(a64).sum(0, keepdims=True)
    want = f32(a64 - np.log(s))
    b = 6 * U32 + 2 * U32 * np.abs(np.log(s)) + 2 * U32 * np.abs(want.astype(np.float64))
    floats.assert_close(lsm, want, b * (1 + 2.0**-20), "logsoftmax")
    t = f32(0.5 * a64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (a64 + 0.044715 * a64**3))))
    b = norm_bound("gelu", {"approximate": "tanh"}, [a], t)
    floats.assert_close(gelu, t, b.bound, "gelu")
    floats.assert_matmul(mm, f32(a64 @ a64.T), a, a.T)  # (want: the exact sums, rounded)
    floats.assert_bits(outer, np.outer(a, np.ones(2, np.float32)).reshape(outer.shape))  # x * 1


def test_conv_pool_pad_and_resize_take_maxs_enums() -> None:
    img = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)  # NHWC
    with graph((DType.float32, [1, 4, 4, 1])) as g:
        x = g.inputs[0].tensor
        nchw = ops.permute(x, [0, 3, 1, 2])
        g.output(
            ops.conv2d(x, ops.constant(np.ones((2, 2, 1, 1), np.float32))),
            ops.conv2d(nchw, ops.constant(np.ones((1, 1, 2, 2), np.float32)),
                       input_layout=ConvInputLayout.NCHW, filter_layout=FilterLayout.FCRS),
            ops.max_pool2d(x, (2, 2), stride=2),
            ops.avg_pool2d(x, (2, 2), stride=2),
            ops.pad(x, [0, 0, 1, 0, 0, 1, 0, 0], value=-1),
            ops.resize(nchw, [1, 1, 2, 2], InterpolationMode.NEAREST),
            ops.resize_bicubic(nchw, [1, 1, 4, 4]),
        )  # fmt: skip
    conv, conv_nchw, mx, avg, padded, nearest, same = evaluate(g, img)
    a = img[0, :, :, 0]
    # the windows' sums of small integers (and their quarters): exact by construction
    taps = np.stack([a[:-1, :-1], a[1:, :-1], a[:-1, 1:], a[1:, 1:]], -1).astype(np.float64)
    sums = a[:-1, :-1] + a[1:, :-1] + a[:-1, 1:] + a[1:, 1:]
    floats.assert_exact_sum(conv[0, :, :, 0], sums, taps, "conv2d")
    floats.assert_exact_sum(conv_nchw[0, 0], sums, taps, "conv2d NCHW")
    floats.assert_bits(mx[0, :, :, 0], a.reshape(2, 2, 2, 2).max((1, 3)))
    windows = a.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(2, 2, 4).astype(np.float64)
    floats.assert_exact_sum(avg[0, :, :, 0], a.reshape(2, 2, 2, 2).mean((1, 3)), windows / 4,
                            "avg_pool2d")  # fmt: skip
    floats.assert_bits(padded[0, :, :, 0], np.pad(a, ((1, 0), (0, 1)), constant_values=-1))
    # half-pixel nearest, 4 -> 2: source (o + 0.5) * 2 - 0.5 = 0.5, 2.5 rounds half down
    floats.assert_bits(nearest[0, 0], a[[0, 2]][:, [0, 2]])
    floats.assert_bits(same[0, 0], a)  # an unchanged size is copied


def test_resize_modes_graphdsl_lacks_raise() -> None:
    with graph((DType.float32, [1, 1, 2, 2])) as g:
        x = g.inputs[0].tensor
        with pytest.raises(UnsupportedError, match="coordinate_transform_mode=1"):
            ops.resize_linear(x, [1, 1, 4, 4], coordinate_transform_mode=1)
        with pytest.raises(UnsupportedError, match="antialias=True"):
            ops.resize_linear(x, [1, 1, 1, 1], antialias=True)
        with pytest.raises(UnsupportedError, match="round_mode=2"):
            ops.resize_nearest(x, [1, 1, 4, 4], round_mode=2)
        assert ops.resize_linear(x, [1, 1, 4, 4]).shape == [1, 1, 4, 4]


def test_unsupported_arguments_say_so() -> None:
    with graph((DType.float32, [4]), (DType.int64, [4])) as g:
        x, r = g.inputs
        with pytest.raises(UnsupportedError, match="repeats given as a tensor"):
            ops.repeat_interleave(x, r)
        with pytest.raises(UnsupportedError, match="padding value given as a tensor"):
            ops.pad(x, [1, 1], value=x)
        with pytest.raises(UnsupportedError, match="shape given as a tensor"):
            ops.broadcast_to(x, r)
        with pytest.raises(ValueError, match="Wrong rank for rebind"):
            x.rebind([4, 1])
        assert x.print() is None  # a no-op: graphdsl's graphs have no side effects
        assert ops.repeat_interleave(x, 2).shape == [8]
        st = ops.shape_to_tensor([2, 3])
        assert (st.dtype, st.device) == (DType.int64, CPU)


def test_symbolic_dims_as_tensors_are_their_run_time_sizes() -> None:
    # MAX's shape_to_tensor and a Dim used as a tensor: a symbolic dim is its size when the
    # model runs (gd.ops.dim_size), in the reference and in the model alike
    feed = np.zeros((5, 3), np.float32)
    with graph((DType.float32, ["batch", 3])) as g:
        (x,) = g.inputs
        shape = ops.shape_to_tensor(x.shape)
        total = Dim("batch") * 2 + ops.constant(np.int64(1), DType.int64, device=CPU)
        assert (shape.dtype, shape.shape, total.shape) == (DType.int64, [2], [])
        g.output(shape, total)
    for got in (gd.evaluate(g, [feed]), run(export(g), [feed])):
        assert [v.tolist() for v in got] == [[5, 3], 11]
    with graph((DType.float32, [4])) as g:  # a name no input has: built, refused at run
        g.output(ops.shape_to_tensor([2, "n"]))
    with pytest.raises(gd.ShapeError, match=r"'n' is not a dimension of any graph input"):
        gd.evaluate(g, [np.zeros(4, np.float32)])


def test_control_flow_with_maxs_methods_inside() -> None:
    """cond with out_types and while_loop return lists; values inside the branches and the
    loop body are TensorValues (x.max() keeps the axis, i < 3 is MAX's not >=)."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out_t = [TensorType(DType.float32, [2, 1], CPU)]
    with graph((DType.bool, []), (DType.float32, [2, 3])) as g:
        p, x = g.inputs
        (y,) = ops.cond(p, out_t, lambda: x.max(), lambda: ops.min(x, axis=-1))
        i, s = ops.while_loop(
            [ops.constant(0, DType.int32, CPU), x], lambda i, s: i < 3, lambda i, s: (i + 1, s * 2)
        )
        g.output(y, i, s)
    assert isinstance(y, TensorValue) and y.type == TensorType(DType.float32, [2, 1], CPU)
    for pred, want in ((True, a.max(-1, keepdims=True)), (False, a.min(-1, keepdims=True))):
        for got in (evaluate(g, np.array(pred), a), run(g, [np.array(pred), a])):
            floats.assert_bits(got[0], want)  # a maximum or a minimum
            assert got[1].tolist() == 3 and got[1].dtype == np.int32
            floats.assert_bits(got[2], a * 8)  # three doublings: exact


def test_control_flow_keeps_maxs_types() -> None:
    with graph((DType.bool, []), (DType.float16, [2]), (DType.float32, [2])) as g:
        p, h, f = g.inputs
        with pytest.raises(OpTypeError, match=r"out_types\[0\] is TensorType\(dtype=float16"):
            ops.cond(p, [TensorType(DType.float16, [2], CPU)], lambda: h, lambda: f)
        with pytest.raises(OpTypeError, match="return 1 values and out_types lists 2"):
            ops.cond(p, [TensorType(DType.float16, [2], CPU)] * 2, lambda: h, lambda: h)
        assert ops.cond(p, None, lambda: None, lambda: None) == []  # no results, as in MAX
        with pytest.raises(OpTypeError, match=r"variable 0 starts as TensorType\(dtype=float16"):
            ops.while_loop(h, lambda v: ops.sum(v, 0)[0] < 10, lambda v: v.cast(DType.float32))


def test_subgraphs_are_added_and_called_as_in_max() -> None:
    """graph.add_subgraph (by forward or in a with block) and ops.call, which returns a list:
    one ONNX local function, called twice; weights are arguments."""
    t = TensorType(DType.float32, ["n", 3], CPU)
    w = np.arange(9, dtype=np.float32).reshape(3, 3) / 8
    with graph((DType.float32, ["n", 3])) as g:
        (x,) = g.inputs
        wt = TensorType(DType.float32, [3, 3], CPU)
        with g.add_subgraph("layer", input_types=[t, wt]) as layer:
            v, m = layer.inputs
            layer.output(ops.relu(v @ m) + 1)
        double = g.add_subgraph("double", lambda v: v * 2, input_types=[t])
        weight = ops.constant(w, DType.float32, CPU)
        (h,) = ops.call(layer, x, weight)
        (h,) = ops.call(layer, h, weight)
        out = ops.call(double, h)
        assert isinstance(out, list) and isinstance(out[0], TensorValue)
        g.output(out[0])
        with pytest.raises(UnsupportedError, match=r"prefix='layer0\.'"):
            ops.call(layer, x, weight, prefix="layer0.")
    a = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    one = np.maximum(a @ w, 0) + 1
    want = 2 * (np.maximum(one @ w, 0) + 1)
    model = export(g)
    assert sorted(f.name for f in model.functions) == ["double", "layer"]
    assert [n.op_type for n in model.graph.node].count("layer") == 2
    # two float32 evaluations of two layers (tests/floats.py's rule, carried through: e1 =
    # γ_3 |a| @ |w| + u |h1| for the first layer's dot products and its + 1; the second reads
    # values within e1: e2 = ((1 + γ_3) e1 + γ_3 |h1|) @ |w| + u |h2|; * 2 exact): 2 * 2 e2
    g3 = floats.gamma(3, np.float32)
    w64, a64 = w.astype(np.float64), a.astype(np.float64)
    h1 = np.maximum(a64 @ w64, 0) + 1
    e1 = g3 * np.abs(a64) @ np.abs(w64) + U32 * h1
    e2 = ((1 + g3) * e1 + g3 * h1) @ np.abs(w64) + U32 * (np.maximum(h1 @ w64, 0) + 1)
    for got in (evaluate(g, a), run(model, [a])):
        floats.assert_close(got[0], want, 4 * e2 * (1 + 2.0**-20), "two layers")


# ---------------------------------------------------------------------------- constants


def constant_outcome(lit: str, dt: str) -> str:
    with Graph("c"):
        try:
            return ops.constant(eval(lit), DType[dt], CPU).dtype.name
        except (TypeError, ValueError) as e:
            return f"error: {type(e).__name__}"


# MAX stores a float into bool when int(value) is 0 or 1; what it stores is not recorded,
# and graphdsl refuses a float for bool as for the integer dtypes (an OpTypeError)
FLOAT_INTO_BOOL = {"-0.0", "0.0", "0.1", "0.5", "1.0", "1.5"}


def test_constants_as_max_graph_makes_them() -> None:
    """ops.constant(literal, dtype, device) on every recorded literal and dtype: the dtype
    where max.graph made the constant, an error where it refused (ints out of the dtype's
    range, floats for integer dtypes); floats go to floating dtypes unchecked (rounded)."""
    bad, checked = [], 0
    for dt, cells in PROMOTION["constant"].items():
        for lit, want in cells.items():
            got = constant_outcome(lit, dt)
            checked += 1
            if dt == "bool" and lit in FLOAT_INTO_BOOL:
                assert (want, got) == ("bool", "error: OpTypeError"), (lit, got)
            elif got.startswith("error") != want.startswith("error") or (
                not want.startswith("error") and got != want
            ):
                bad.append(f"constant({lit}, {dt}): max.graph {want}, graphdsl {got}")
    assert checked > 700 and not bad, "\n".join(bad)


def test_constant_rules_and_values() -> None:
    with Graph("c") as g:
        arr = ops.constant(np.array([0.5, 1.5]))
        assert (arr.dtype, arr.device) == (DType.float64, CPU)
        assert ops.constant(np.ones(2, np.float32), device=GPU).device == GPU
        with pytest.raises(ValueError, match="DType must match input dtype"):
            ops.constant(np.array([0.5]), DType.float32)
        with pytest.raises(TypeError, match="must explicitly set a dtype and device"):
            ops.constant(1, DType.int32)
        with pytest.raises(TypeError, match="must explicitly set a dtype and device"):
            ops.constant(1, device=CPU)
        with pytest.raises(ValueError, match="Array literals must be rectangular"):
            ops.constant([[1, 2], [3]], DType.int8, CPU)
        with pytest.raises(gd.LiteralError, match="value 128 out of range for DType int8"):
            ops.constant([127, 128], DType.int8, CPU)
        big = ops.constant(16777217, DType.float32, CPU)  # MAX's documented rounding
        lst = ops.constant([[1, 2], [3, 4]], DType.int8, CPU)
        inf = ops.constant(1e300, DType.float16, CPU)
        g.output(big, lst, inf)
    b, li, f = gd.evaluate(g, [])
    assert b.tolist() == 16777216.0 and b.dtype == np.float32
    assert li.tolist() == [[1, 2], [3, 4]] and li.dtype == np.int8
    assert f.tolist() == math.inf and f.dtype == np.float16


# ---------------------------------------------------------------------------- devices


def test_devices_are_recorded() -> None:
    assert str(GPU) == "gpu:0" and DeviceRef("gpu", 0) == GPU and DeviceRef.GPU(-1).id == 0
    with pytest.raises(ValueError, match="unknown device kind"):
        DeviceRef("tpu")
    g = graph((DType.float32, [2]), (DType.float32, [2]))
    x, y = g.inputs
    assert (x.device, g.devices) == (CPU, [CPU])
    z = (x + y).to(GPU)
    w = 1 + z  # a literal has no device: the result is on z's
    assert (z.device, w.device, (x * 2).device) == (GPU, GPU, CPU)
    assert ops.transfer_to(x, CPU) is x
    assert g.devices == [CPU, GPU]
    ops.assert_same_device(z, w)
    with pytest.raises(ValueError, match="must be on the same device"):
        ops.assert_same_device(x, other=z)
    with pytest.raises(ValueError, match="must be on the same device"):  # as MAX refuses it
        x + z
    g.output(w, x * 2)
    assert [t.device for t in g.output_types] == [GPU, CPU]
    assert [n.op_type for n in export(g).graph.node] == ["Add", "Add", "Mul"]  # no transfer


def test_providers_follow_the_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph with values on a GPU asks for CUDA first, by default in run(); onnxruntime
    falls back to CPU (with one warning) where CUDA is not available."""
    t = [TensorType(DType.float32, [2], GPU)]
    with Graph("gpu", input_types=t) as g:
        g.output(g.inputs[0] * 2)
    assert providers_for(g) == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert providers_for(graph((DType.float32, [2]))) == ["CPUExecutionProvider"]
    assert providers_for(gd.Graph("plain")) == ["CPUExecutionProvider"]
    feed = [np.array([1.0, 2.0], np.float32)]
    monkeypatch.setattr(_run, "_warned_fallback", False)  # run() warns once per process
    if "CUDAExecutionProvider" in ort.get_available_providers():
        assert xo.run(g, feed)[0].tolist() == [2.0, 4.0]  # (run()'s own default providers)
    else:
        with pytest.warns(RuntimeWarning, match=r"\['CUDAExecutionProvider'\] are not available"):
            assert xo.run(g, feed)[0].tolist() == [2.0, 4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CPU graph asks for nothing else
        with graph((DType.float32, [2])) as cpu_graph:
            cpu_graph.output(cpu_graph.inputs[0] + 1)
        assert xo.run(cpu_graph, feed)[0].tolist() == [2.0, 3.0]


# ---------------------------------------------------------------------------- weights


def test_weights_and_constant_external() -> None:
    w = Weight("layer.w", DType.float32, [2, 2])
    with graph((DType.float32, [1, 2])) as g:
        x = g.inputs[0].tensor
        wv = g.add_weight(w)
        b = ops.constant_external("layer.b", TensorType(DType.float32, [2], GPU))
        with pytest.raises(ValueError, match="same device"):  # MAX refuses mixed devices
            x @ wv + b
        g.output(x @ wv + b.to(CPU), ops.add(x, w))  # a Weight as an op operand
    assert (wv.device, b.device) == (CPU, GPU)
    data = {"layer.w": np.array([[1, 2], [3, 4]], np.float32), "layer.b": np.ones(2, "f4")}
    model = export(g, weights=data)
    out, plus = run(model, {"input0": np.array([[1.0, 1.0]], np.float32)})
    # [1, 1] @ w + 1: sums of small integers, exact by construction (checked)
    terms = np.concatenate([floats.matmul_terms(np.ones((1, 2)), data["layer.w"]),
                            np.ones((1, 2, 1))], -1)  # fmt: skip
    floats.assert_exact_sum(out, np.array([[5.0, 7.0]], np.float32), terms, "x @ w + b")
    assert plus.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(UnsupportedError, match="quantization_encoding"):
        Weight("q", DType.uint8, [4], quantization_encoding="Q4_K")
    with Graph("p"), pytest.raises(UnsupportedError, match="placeholders"):
        ops.constant_external("p", TensorType(DType.float32, [1], CPU), is_placeholder=True)


# ---------------------------------------------------------------------------- the docs page


def test_docs_page_lists_the_covered_and_missing_ops() -> None:
    text = (Path(__file__).parent.parent / "docs" / "max.md").read_text()
    covered = text[text.index("### Covered") : text.index("How the ops graphdsl.max added")]
    missing = text[text.index("### Missing") : text.index("## The oracle")]
    rows = [ln.split("|")[1] for ln in missing.splitlines() if ln.startswith("| `")]
    assert re.findall(r"`(\w+)`", covered) == ops._OPS
    assert sorted(re.findall(r"`(\w+)`", "".join(rows))) == sorted(ops.MISSING)
    assert f"### Covered ({len(ops._OPS)})" in text
    assert f"### Missing ({len(ops.MISSING)})" in text


def test_mlir_placeholders_and_max_private_helpers() -> None:
    """graphdsl has no MLIR: MAX's Context, Location and KernelLibrary are placeholders that
    Graph accepts and ignores; anything real raises UnsupportedError. MAX's private
    dtype_promotion helpers follow the max-graph policy."""
    from graphdsl.max import KernelLibrary, UnsupportedError, dtype_promotion, mlir
    from graphdsl.max.driver import CPU as DriverCPU
    from graphdsl.max.driver import Tensor

    with mlir.default_mlir_context(), mlir.Location.unknown():
        g = Graph("placeholders", input_types=[TensorType(DType.int8, [2], CPU)],
                  kernel_library=KernelLibrary(), context=mlir.Context())  # fmt: skip
    assert g.inputs[0].type == TensorType(DType.int8, [2], CPU)
    with pytest.raises(UnsupportedError, match="custom kernels"):
        KernelLibrary(paths=["kernels.mojopkg"])
    with pytest.raises(UnsupportedError, match="kernel_library"):
        Graph("g", kernel_library=object())
    assert dtype_promotion._DTYPE_MIN_AND_MAX_FULL_PRECISION[DType.float32] == (-(2**24), 2**24)
    with Graph("weak"):
        assert dtype_promotion._promote_to_strong(2**24, DType.float32, CPU).dtype == DType.float32
        with pytest.raises(ValueError, match="Unsafe cast"):
            dtype_promotion._promote_to_strong(2**24 + 1, DType.float32, CPU)
        t = Tensor(DType.float64, [], DriverCPU())
        t[()] = 0.5
        with pytest.raises(ValueError, match="Unsafe cast"):
            dtype_promotion._promote_to_strong(t, DType.int32, CPU)
    assert DeviceRef.from_device(DriverCPU()) == CPU and CPU.to_device() == DriverCPU()


def test_max_argument_checks_and_torch_style_methods() -> None:
    """max.graph's refusals of arguments graphdsl's own ops take, MAX's words first; and
    MAX's PyTorch-style TensorValue methods."""
    f32, i8 = TensorType(DType.float32, [2, 3], CPU), TensorType(DType.int8, [2, 3], CPU)
    with Graph("checks", input_types=[f32, TensorType(DType.float64, [2, 3], CPU), i8]) as g:
        x, y, i = (v.tensor for v in g.inputs)
        words = "The input dtype 'DType.float32' and updates dtype 'DType.float64' must match."
        index = ops.cast(i, DType.int64)
        with pytest.raises(ValueError, match=re.escape(words)):
            ops.scatter(x, y, index)
        with pytest.raises(ValueError, match=re.escape("Invalid indices dtype: 'DType.int8'.")):
            ops.scatter(x, x, i)
        with pytest.raises(ValueError, match="All inputs to stack must be the same rank"):
            ops.stack([x, x[0]])
        with pytest.raises(ValueError, match="Repeats must all be positive"):
            ops.tile(x, [1, 0])
        w = ops.constant(np.ones((1, 1, 1, 1), np.float16), device=CPU)
        i32 = ops.reshape(ops.cast(i, DType.int32), [1, 2, 3, 1])
        with pytest.raises(ValueError, match="Unsafe cast from si32 to f32"):
            ops.conv2d(i32, w)
        with pytest.raises(IndexError, match="Axis axis_2 out of range"):
            _ = x[0].T
        with pytest.raises(TypeError, match="is not a container"):
            _ = 1 in x
        assert x.unflatten(1, (3, -1)).shape == [2, 3, 1]
        assert [p.shape for p in x.unbind(1)] == [[2], [2], [2]]
        assert x.repeat(2, 1, 2).shape == [2, 2, 6] and x.swapaxes(0, 1).shape == [3, 2]
        assert x.amin(axis=(0, 1)).shape == [] and x.size(-1) == 3
        g.output(x.flip(1), x.masked_fill(x > 0, 0.0))
    a = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    flipped, filled = gd.evaluate(g, [a, a.astype(np.float64), a.astype(np.int8)])
    np.testing.assert_array_equal(flipped, a[:, ::-1])
    np.testing.assert_array_equal(filled, np.where(a > 0, 0, a))
