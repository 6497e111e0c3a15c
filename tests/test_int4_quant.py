"""4-bit weights (int4 and uint4) in the quantization ops, ``gd.ops.quantize_weights``, and
their ONNX export: INT4/UINT4 initializers with DequantizeLinear + MatMul under
``exact=True``, onnxruntime's MatMulNBits under ``exact=False``.

Comparisons follow tests/floats.py. quantize and dequantize round once: bit for bit, on
both backends. The exact export's matmul sums in float32 in its own order:
``floats.assert_matmul`` (bit for bit where the sums are exact by construction, else within
``floats.dot_bound``). MatMulNBits computes otherwise; :func:`nbits_bound` is the bound
exporters/onnx/_lower/nbits.py derives for each accuracy level (its derivation is there),
evaluated here from the operands. Each test names what it would catch.
"""

from __future__ import annotations

import math
from typing import Any

import floats
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from backend import cpu_only, run
from onnx import TensorProto, helper, numpy_helper

import graphdsl as gd
from exporters.onnx import ExportError, export
from exporters.onnx._lower import quant as quant_lowering
from exporters.onnx._targets import TARGETS, Target
from graphdsl import DType

T = DType
nan, inf = math.nan, math.inf
# (weight dtype, symmetric): int4 without a zero point, int4 and uint4 with one
KINDS = [("int4", True), ("int4", False), ("uint4", False)]
BLOCKS = [32, 64, 128]
SHAPES = [(256, 24), (200, 13)]  # K divisible by every block size, and not (N odd too)
XTYPES = [T.float32, T.float16]


def weights(k: int, n: int, dt: str, symmetric: bool, block: int,
            seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:  # fmt: skip
    """A random [k, n] weight, quantized by gd.ops.quantize_weights in blocks of K."""
    w = np.random.default_rng(seed).standard_normal((k, n)).astype(np.float32)
    return gd.ops.quantize_weights(w, dt, block, 0, symmetric)


def activations(m: int, k: int, dt: DType, seed: int = 1) -> np.ndarray:
    """x of spread magnitudes (2**-3 to 2**3 times a normal draw): block maxima vary."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)) * 2.0 ** rng.integers(-3, 4, (m, k))
    return x.astype(dt.np)


def qmatmul_graph(xdt: DType, k: int, q: np.ndarray, scale: np.ndarray, zp: np.ndarray | None,
                  block: int | None, axis: int | None = 0) -> gd.Graph:  # fmt: skip
    """x [batch, k] @ the weight, and the weight dequantized alone (a second output)."""
    g = gd.Graph("q4", input_types={"x": gd.TensorType(xdt, ("batch", k))})
    s = scale.astype(xdt.np)
    z = None if zp is None else g.constant(zp)
    y = gd.ops.qmatmul(g.inputs[0], q, s, z, axis=axis, block_size=block)
    g.output(y, gd.ops.dequantize(g.constant(q), s, z, axis=axis, block_size=block))
    return g


def nbits_bound(
    x: np.ndarray, q: np.ndarray, zp: np.ndarray | None, scale: np.ndarray, block: int,
    level: int, got: np.ndarray, want: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """exporters/onnx/_lower/nbits.py's bound for MatMulNBits against the reference, per
    output element: with codes c and z in [0, 15] (int4's plus 8; int4 without a zero point:
    z = 8, uint4 without one: z = 0), M = sum_k |x_k| |s_k| (c_k + z_k) and, for level 4,
    Q = sum_k |s_k| (c_k + z_k) m_k / 254 (m_k: the largest |x| of k's block of K),

    - level 0: dot_bound(M, K + 2) + E, E = u_x (1 + γ_K) M + (1 + γ_K) s_x / 2 sum |x|;
    - level 4: dot_bound(M, 2 K + 5) + (1 + γ_{2K+3}) Q + E."""
    k = q.shape[0]
    offset = 8.0 if q.dtype == ml_dtypes.int4 else 0.0
    c = q.astype(np.float64) + offset
    if zp is None:
        z = np.full_like(c, 8.0 if offset else 0.0)
    else:
        z = np.repeat(zp.astype(np.float64) + offset, block, axis=0)[:k]
    s = np.repeat(np.abs(scale.astype(np.float64)), block, axis=0)[:k]
    weight = s * (c + z)  # [K, N]: |s| (c + z), an upper bound of |w| and of each term
    ax = np.abs(x.astype(np.float64))
    total = ax @ weight
    xdt = np.dtype(x.dtype)
    u_x = floats.unit_roundoff(xdt)
    s_x = float(ml_dtypes.finfo(xdt).smallest_subnormal)  # type: ignore[no-untyped-call]
    g_k = floats.gamma(k, np.float32)
    extra = u_x * (1 + g_k) * total + (1 + g_k) * s_x / 2 * ax.sum(axis=-1, keepdims=True)
    if level in (0, 1):
        bound = floats.dot_bound(total, k + 2, want.dtype, got, want) + extra
    else:
        blocks = -(-k // block)
        padded = np.zeros((*ax.shape[:-1], blocks * block))
        padded[..., :k] = ax
        m = padded.reshape(*ax.shape[:-1], blocks, block).max(axis=-1)
        m_k = np.repeat(m, block, axis=-1)[..., :k]
        quantization = (m_k / 254) @ weight
        bound = (floats.dot_bound(total, 2 * k + 5, want.dtype, got, want) + extra
                 + (1 + floats.gamma(2 * k + 3, np.float32)) * quantization)  # fmt: skip
    return np.asarray(bound * (1 + 2.0**-40))  # (evaluated in float64: made an upper bound)


def reference_weight(q: np.ndarray, zp: np.ndarray | None, scale: np.ndarray, block: int,
                     xdt: DType) -> np.ndarray:  # fmt: skip
    """The weight qmatmul multiplies by: (q - zp) * scale in float32 (one rounding), then
    rounded to x's dtype; written out here, apart from the op's reference."""
    k = q.shape[0]
    v = q.astype(np.float32)
    if zp is not None:
        v = v - np.repeat(zp.astype(np.float32), block, axis=0)[:k]
    s = np.repeat(scale.astype(xdt.np).astype(np.float32), block, axis=0)[:k]
    return (v * s).astype(xdt.np)


def _ops(g: onnx.GraphProto | onnx.FunctionProto) -> list[str]:
    return [n.op_type for n in g.node]


def _inits(model: onnx.ModelProto) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {t.name: (TensorProto.DataType.Name(t.data_type), tuple(t.dims))
            for t in model.graph.initializer}  # fmt: skip


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


# ---------------------------------------------------------------- quantize_weights


@pytest.mark.parametrize("block", [*BLOCKS, 3, None])
@pytest.mark.parametrize(("dt", "symmetric"), [*KINDS, ("int8", True), ("uint8", False)])
def test_quantize_weights_is_quantize_with_its_stated_scales(
    dt: str, symmetric: bool, block: int | None
) -> None:
    """q is exactly gd.ops.quantize's result for the returned scale and zero point; the
    scale is the docstring's formula; each dequantized entry lies within scale / 2 of w."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((200, 13)) * 2.0 ** rng.integers(-4, 4, (200, 13))).astype(np.float32)
    axis = 0 if block is not None else 1  # per block of K, or per output channel
    q, scale, zp = gd.ops.quantize_weights(w, dt, block, axis, symmetric)
    d = gd.dtype(dt)
    assert q.dtype == d.np and q.shape == w.shape and scale.dtype == np.float32
    assert (zp is None) == symmetric
    g = gd.Graph("q", input_types={"w": gd.TensorType(gd.float32, w.shape)})
    z = None if zp is None else g.constant(zp)
    g.output(gd.ops.quantize(g.inputs[0], scale, z, d, axis, block))
    floats.assert_bits(gd.evaluate(g, {"w": w})[0], q, "q against gd.ops.quantize")
    # the scale, per block (or column): from the block's range with 0, in float64
    if block is None:
        lo, hi = np.minimum(w.min(axis=0), 0.0), np.maximum(w.max(axis=0), 0.0)
    else:
        nb = -(-200 // block)
        pad = np.zeros((nb * block, 13), np.float32)
        pad[:200] = w
        blocks = pad.reshape(nb, block, 13)
        lo, hi = np.minimum(blocks.min(axis=1), 0.0), np.maximum(blocks.max(axis=1), 0.0)
    lo, hi = lo.astype(np.float64), hi.astype(np.float64)
    if symmetric:
        want = np.maximum(-lo, hi) / d.max
        assert np.abs(q.astype(np.int64)).max() <= d.max  # a symmetric grid: -8 unused
    else:
        want = (hi - lo) / (d.max - d.min)
    floats.assert_bits(scale, want.astype(np.float32), "scale")
    reps = block if block is not None else 1
    s = np.repeat(scale, reps, axis=0)[:200] if block is not None else scale[None, :]
    deq = q.astype(np.float64)
    if zp is not None:
        deq = deq - (np.repeat(zp, reps, axis=0)[:200] if block is not None else zp[None, :])
    deq = deq * s
    # scale / 2, and the float32 roundings of the scale and of w / scale (a few ulps of w)
    slack = np.abs(w).astype(np.float64) * 2.0**-21 + s.astype(np.float64) * 2.0**-21
    assert np.all(np.abs(deq - w) <= s / 2 + slack)


def test_quantize_weights_of_zeros_and_narrow_floats() -> None:
    """An all-zero block takes scale 1 (not 0, which would make NaN of 0 / 0); float16 and
    bfloat16 weights convert exactly; a negative axis counts from the end."""
    w = np.zeros((64, 2), np.float32)
    w[32:, 1] = [0.5] * 32
    q, scale, zp = gd.ops.quantize_weights(w, "uint4", 32, -2, symmetric=False)
    assert scale[0].tolist() == [1.0, 1.0] and scale[1, 0] == 1.0
    assert scale[1, 1] == np.float32(0.5 / 15)
    assert zp is not None and zp.astype(int).tolist() == [[0, 0], [0, 0]]
    assert q[:32].astype(int).max() == 0 and q[32:, 1].astype(int).tolist() == [15] * 32
    for narrow in (np.float16, ml_dtypes.bfloat16):
        wn = np.linspace(-3, 3, 64).reshape(32, 2).astype(narrow)
        got = gd.ops.quantize_weights(wn, block_size=16)
        want = gd.ops.quantize_weights(wn.astype(np.float32), block_size=16)
        floats.assert_bits(got[0], want[0])
        floats.assert_bits(got[1], want[1])


QW_ERRORS: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("symmetric uint4", {"dtype": "uint4"}, ValueError,
     "symmetric quantization needs a signed dtype.*symmetric=False for uint4"),
    ("int16", {"dtype": "int16"}, TypeError, "int4, uint4, int8 or uint8, not int16"),
    ("a bad dtype name", {"dtype": "int3"}, TypeError, "quantize_weights: dtype"),
    ("block 0", {"block_size": 0}, gd.ShapeError, "block_size must be a positive int"),
    ("axis 2", {"axis": 2}, gd.ShapeError, "axis 2 is out of range"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "kwargs", "error", "match"), QW_ERRORS,
                         ids=[e[0] for e in QW_ERRORS])  # fmt: skip
def test_quantize_weights_errors(what: str, kwargs: dict[str, Any], error: type[Exception],
                                 match: str) -> None:  # fmt: skip
    with pytest.raises(error, match=match):
        gd.ops.quantize_weights(np.ones((64, 4), np.float32), **kwargs)


def test_quantize_weights_refuses_what_no_scale_represents() -> None:
    with pytest.raises(ValueError, match="NaN or infinite"):
        gd.ops.quantize_weights(np.array([[1.0, nan]], np.float32), block_size=None, axis=1)
    with pytest.raises(ValueError, match="NaN or infinite"):  # inf once in float32
        gd.ops.quantize_weights(np.array([[1e300, 0.0]]), block_size=None, axis=1)
    with pytest.raises(TypeError, match="must be a float array, got dtype int32"):
        gd.ops.quantize_weights(np.ones((4, 4), np.int32))
    with pytest.raises(gd.ShapeError, match="at least one dimension"):
        gd.ops.quantize_weights(np.float32(1.0))


# ---------------------------------------------------------------- the ops on 4 bits


def both(g: gd.Graph, feeds: dict[str, Any]) -> list[np.ndarray]:
    """The reference's results, after checking onnxruntime gives the same bits."""
    arrays = {s.attrs["name"]: np.asarray(feeds[s.attrs["name"]], s.dtype.np) for s in g.inputs}
    want = gd.evaluate(g, arrays)
    for k, (r, w) in enumerate(zip(run(export(g, check="full"), arrays), want, strict=True)):
        floats.assert_bits(r, w, f"output {k}")
    return want


@pytest.mark.parametrize("dt", [T.float32, T.float16, T.bfloat16])
def test_quantize_to_4_bits_saturates_rounds_half_to_even_and_sends_nan_lowest(dt: DType) -> None:
    x = [0.0, 1.0, 3.0, 5.0, -3.0, 14.0, 15.0, 16.0, -17.0, 100.0, inf, -inf, nan]
    # x / 2: 0, 0.5, 1.5, 2.5, -1.5, 7, 7.5, 8, -8.5, 50, inf, -inf, NaN
    g = gd.Graph("q", input_types={"x": gd.TensorType(dt, (len(x),))})
    two = np.array(2.0, dt.np)
    g.output(gd.ops.quantize(g.inputs[0], two, dtype="int4"),
             gd.ops.quantize(g.inputs[0], two, np.array(3, ml_dtypes.uint4), "uint4"),
             gd.ops.quantize(g.inputs[0], two, np.array(-2, ml_dtypes.int4), "int4"))  # fmt: skip
    q, u, z = both(g, {"x": x})
    assert q.dtype == ml_dtypes.int4 and u.dtype == ml_dtypes.uint4
    assert q.astype(int).tolist() == [0, 0, 2, 2, -2, 7, 7, 7, -8, 7, 7, -8, -8]
    assert u.astype(int).tolist() == [3, 3, 5, 5, 1, 10, 11, 11, 0, 15, 15, 0, 0]
    assert z.astype(int).tolist() == [-2, -2, 0, 0, -4, 5, 6, 6, -8, 7, 7, -8, -8]


def test_quantize_to_4_bits_in_blocks_with_zero_points() -> None:
    g = gd.Graph("q", input_types={"x": gd.TensorType(gd.float32, (2, 5))})
    scale = np.array([[1.0, 0.5, 2.0], [0.25, 4.0, 1.0]], np.float32)  # blocks of 2 along 1
    zp = np.array([[8, 0, 15], [1, 2, 3]], ml_dtypes.uint4)
    g.output(gd.ops.quantize(g.inputs[0], scale, zp, "uint4", axis=1, block_size=2))
    (u,) = both(g, {"x": [[2.5, -9.0, 3.0, 1.25, 8.0], [0.375, 1.0, 100.0, -6.0, 2.5]]})
    # 2 + 8, -9 + 8 = -1 -> 0; 6, 2 (2.5 half to even); 4 + 15 -> 15; 2 + 1, 4 + 1; 25 + 2,
    # -2 + 2 (saturating: 15, 0); 2 + 3
    assert u.astype(int).tolist() == [[10, 0, 6, 2, 15], [3, 5, 15, 0, 5]]


@pytest.mark.parametrize("scale_dt", [T.float32, T.float16, T.bfloat16])
def test_dequantize_4_bit_goldens(scale_dt: DType) -> None:
    """(q - zero_point) * scale of int4/uint4 inputs and constants, per tensor, per axis and
    in blocks (the last short), bit for bit (float16: 7 * 0.1 rounds once)."""
    g = gd.Graph("dq", input_types={"q": gd.TensorType(gd.int4, (2, 5)),
                                    "u": gd.TensorType(gd.uint4, (5,))})  # fmt: skip
    q, u = g.inputs
    tenth = np.array(0.1, scale_dt.np)
    blocks = np.array([[1.0, 0.5, 4.0], [0.25, 1.0, 2.0]], scale_dt.np)  # blocks of 2, 2, 1
    zp = np.array([[1, 0, -8], [7, -4, 0]], ml_dtypes.int4)
    const = g.constant(np.array([[-8, 7, 0, 1, -1], [3, -3, 5, -5, 2]], ml_dtypes.int4))
    three = np.array(3, ml_dtypes.uint4)
    g.output(gd.ops.dequantize(q, tenth), gd.ops.dequantize(u, tenth, three),
             gd.ops.dequantize(q, blocks, zp, axis=1, block_size=2),
             gd.ops.dequantize(const, blocks, zp, axis=1, block_size=2))  # fmt: skip
    feeds = {"q": [[-8, 7, 0, 1, -1], [3, -3, 5, -5, 2]], "u": [0, 3, 15, 7, 1]}
    outs = both(g, feeds)
    t = tenth.astype(np.float32)  # (q - zp) * 0.1 in float32, rounded once to the scale's dtype
    floats.assert_bits(outs[0], (np.array(feeds["q"], np.float32) * t).astype(scale_dt.np))
    floats.assert_bits(outs[1], (np.array([-3, 0, 12, 4, -2], np.float32) * t).astype(scale_dt.np))
    want = [[-9.0, 6.0, 0.0, 0.5, 28.0], [-1.0, -2.5, 9.0, -1.0, 4.0]]
    floats.assert_bits(outs[2], np.array(want, np.float32).astype(scale_dt.np))
    floats.assert_bits(outs[3], outs[2])


def test_4_bit_ops_composed_where_a_target_lacks_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without QuantizeLinear and DequantizeLinear kernels the composed forms compute the
    same bits for 4-bit values (NaN to the lowest, saturation, blocks, zero points)."""
    cpu = TARGETS["cpu"]
    kernels = {k: v for k, v in cpu.kernels.items() if "uantizeLinear" not in k}
    monkeypatch.setitem(TARGETS, "cpu", Target("cpu", kernels, cpu.provider))
    monkeypatch.setattr(quant_lowering, "MEASURED_CPU", {})
    monkeypatch.setattr(quant_lowering, "MEASURED_CPU_4BIT", {})
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float32, (2, 5))})
    (x,) = g.inputs
    scale = np.array([[1.0, 0.5, 2.0], [0.25, 4.0, 1.0]], np.float32)
    zp = np.array([[8, 0, 15], [1, 2, 3]], ml_dtypes.uint4)
    izp = np.array([[-8, 0, 7], [1, -2, 3]], ml_dtypes.int4)
    q = gd.ops.quantize(x, scale, izp, "int4", axis=1, block_size=2)
    g.output(q, gd.ops.quantize(x, scale, zp, "uint4", axis=1, block_size=2),
             gd.ops.dequantize(q, scale, izp, axis=1, block_size=2),
             gd.ops.dequantize(g.constant(zp), np.float32(0.5),
                               np.array(3, ml_dtypes.uint4)))  # fmt: skip
    model = export(g, check="full")
    assert not {"QuantizeLinear", "DequantizeLinear"} & set(_ops(model.graph))
    outs = both(g, {"x": [[2.5, -9.0, 3.0, nan, 8.0], [0.375, 1.0, 100.0, -6.0, -inf]]})
    assert outs[0].astype(int).tolist() == [[-6, -8, 6, -8, 7], [3, 5, 7, -4, -8]]
    assert outs[1].astype(int).tolist() == [[10, 0, 6, 0, 15], [3, 5, 15, 0, 0]]


def test_4_bit_type_rules_and_errors() -> None:
    g = gd.Graph("t", input_types={"x": gd.TensorType(gd.float16, (2, 32))})
    (x,) = g.inputs
    q = np.zeros((32, 3), ml_dtypes.uint4)
    node = gd.ops.qmatmul(x, q, np.array(0.5, np.float32), np.array(8, ml_dtypes.uint4), axis=None)
    assert node.dtype is T.float32 and node.in_dtypes == (T.float32, T.uint4, T.float32, T.uint4)
    assert gd.ops.quantize(x, 0.5, dtype="uint4").in_dtypes == (T.float16, T.float16)
    with pytest.raises(gd.OpTypeError, match="zero_point is int4, but it must have the "
                                             "quantized dtype uint4"):  # fmt: skip
        gd.ops.dequantize(g.constant(q), np.float32(1), np.array(0, ml_dtypes.int4))
    with pytest.raises(gd.OpTypeError, match=r"zero_point is uint4.*dtype int4.*dtype=gd.uint4"):
        gd.ops.quantize(x, 0.5, np.array(1, ml_dtypes.uint4), "int4")
    with pytest.raises(gd.LiteralError, match="9"):  # a zero point literal must fit int4
        gd.ops.dequantize(g.constant(np.zeros(4, ml_dtypes.int4)), np.float32(1), 9)


# ---------------------------------------------------------------- export, exact=True


@cpu_only
@pytest.mark.parametrize("xdt", XTYPES)
@pytest.mark.parametrize(("k", "n"), SHAPES)
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize(("dt", "symmetric"), KINDS)
def test_exact_export_keeps_4_bit_initializers(
    dt: str, symmetric: bool, block: int, k: int, n: int, xdt: DType
) -> None:
    """exact=True: the weight (and zero point) are INT4/UINT4 initializers of their shapes
    (no int8 copy), dequantized by a blocked DequantizeLinear, then MatMul; onnxruntime's
    dequantized weight equals the reference bit for bit, its product within the float32
    dot-product bound (tests/floats.py)."""
    q, scale, zp = weights(k, n, dt, symmetric, block)
    g = qmatmul_graph(xdt, k, q, scale, zp, block)
    model = export(g, check="full")
    four = "INT4" if dt == "int4" else "UINT4"
    nb = -(-k // block)
    want_inits = [(four, (k, n)), ("FLOAT" if xdt is T.float32 else "FLOAT16", (nb, n))]
    if zp is not None:
        want_inits.append((four, (nb, n)))
    assert sorted(_inits(model).values()) == sorted(want_inits)
    dqs = [nd for nd in model.graph.node if nd.op_type == "DequantizeLinear"]
    assert len(dqs) == 2 and all(_attrs(d) == {"axis": 0, "block_size": block} for d in dqs)
    assert dqs[0].input[0] == dqs[1].input[0]  # one initializer for both uses
    assert "MatMul" in _ops(model.graph)
    x = activations(5, k, xdt)
    got_y, got_w = run(model, {"x": x})
    want_y, want_w = gd.evaluate(g, {"x": x})
    weight = reference_weight(q, zp, scale, block, xdt)
    floats.assert_bits(want_w, weight, "the reference's dequantized weight")
    floats.assert_bits(got_w, want_w, "dequantize")
    floats.assert_matmul(got_y, want_y, x, weight, "qmatmul")


@cpu_only
@pytest.mark.parametrize("dt", ["int4", "uint4"])
def test_exact_export_of_other_layouts_and_a_4_bit_input(dt: str) -> None:
    """Per output channel and per tensor the weight stays 4-bit too; a 4-bit graph input is
    an int8/uint8 carrier tensor (run() converts), dequantized as such, bit for bit."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((40, 6)).astype(np.float32)
    q, scale, zp = gd.ops.quantize_weights(w, dt, None, 1, symmetric=dt == "int4")
    d = gd.dtype(dt)
    g = gd.Graph("l", input_types={"x": gd.TensorType(gd.float32, (3, 40)),
                                   "v": gd.TensorType(d, (40, 6))})  # fmt: skip
    x, v = g.inputs
    g.output(gd.ops.qmatmul(x, q, scale, zp, axis=1),
             gd.ops.qmatmul(x, q, scale[2], None if zp is None else zp[2], axis=None),
             gd.ops.dequantize(v, scale, zp, axis=1))  # fmt: skip
    model = export(g, check="full")
    types = sorted(t for t, dims in _inits(model).values() if dims == (40, 6))
    assert types == ["INT4" if dt == "int4" else "UINT4"]
    feeds = {"x": activations(3, 40, T.float32), "v": q}
    got, want = run(model, feeds), gd.evaluate(g, feeds)
    for k, s in ((0, scale), (1, np.full(6, scale[2], np.float32))):
        z = None if zp is None else (zp if k == 0 else np.full(6, zp[2], zp.dtype))
        weight = reference_weight(q, None if z is None else z[None, :], s[None, :], 40, T.float32)
        floats.assert_matmul(got[k], want[k], feeds["x"], weight, f"output {k}")
    floats.assert_bits(got[2], want[2], "dequantize of an input")


# ---------------------------------------------------------------- export, exact=False


def _nbits_run(g: gd.Graph, level: int, feeds: dict[str, np.ndarray]) -> tuple[Any, list[Any]]:
    model = export(g, check="full", exact=False, accuracy_level=level)
    return model, run(model, feeds)


@cpu_only
@pytest.mark.parametrize("level", [0, 4])
@pytest.mark.parametrize("xdt", XTYPES)
@pytest.mark.parametrize(("k", "n"), SHAPES)
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize(("dt", "symmetric"), [*KINDS, ("uint4", True)])
def test_matmul_nbits_within_its_derived_bound(
    dt: str, symmetric: bool, block: int, k: int, n: int, xdt: DType, level: int
) -> None:
    """exact=False: one MatMulNBits (in its model-local function) with the weight packed as
    the module's doc says, no other copy of it; onnxruntime's result within
    :func:`nbits_bound` of the reference, at batch 1 and 5 (its kernels differ)."""
    if symmetric and dt == "uint4":  # uint4 without a zero point: codes 0, explicit
        w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
        q, scale, _ = gd.ops.quantize_weights(np.abs(w), "uint4", block, 0, symmetric=False)
        zp = None
    else:
        q, scale, zp = weights(k, n, dt, symmetric, block)
    g = qmatmul_graph(xdt, k, q, scale, zp, block)
    x = activations(5, k, xdt)
    model, (got, _) = _nbits_run(g, level, {"x": x})
    (fn,) = model.functions
    (nbits,) = fn.node
    assert (nbits.op_type, nbits.domain) == ("MatMulNBits", "com.microsoft")
    assert _attrs(nbits) == {"K": k, "N": n, "bits": 4, "block_size": block,
                             "accuracy_level": level}  # fmt: skip
    assert [(o.domain, o.version) for o in fn.opset_import] == [("com.microsoft", 1)]
    calls = [nd for nd in model.graph.node if nd.op_type == fn.name]
    assert len(calls) == 1 and calls[0].domain == "graphdsl.local"
    nb = -(-k // block)
    has_zp = zp is not None or dt == "uint4"
    assert len(calls[0].input) == (4 if has_zp else 3)
    inits = _inits(model)
    assert inits[calls[0].input[1]] == ("UINT8", (n, nb, block // 2))
    assert inits[calls[0].input[2]] == ("FLOAT" if xdt is T.float32 else "FLOAT16", (n * nb,))
    if has_zp:
        assert inits[calls[0].input[3]] == ("UINT8", (n * -(-nb // 2),))
    assert not [v for v in inits.values() if v[1] == (k, n) and v[0] in ("INT8", "UINT8")]
    assert "MatMul" not in _ops(model.graph)
    want = gd.evaluate(g, {"x": x})[0]
    bound = nbits_bound(x, q, zp, scale.astype(xdt.np), block, level, got, want)
    floats.assert_close(got, want, bound, f"MatMulNBits, accuracy level {level}")
    one = run(model, {"x": x[:1]})[0]  # batch 1: onnxruntime's kernels for one row
    floats.assert_close(one, want[:1], bound[:1], f"MatMulNBits, level {level}, batch 1")


@cpu_only
def test_matmul_nbits_level_4_does_quantize_x() -> None:
    """The level-4 bound is not vacuous here: its results leave the level-0 bound (x is
    quantized to int8; measured on this repository's x86-64 machines, where MLAS has the
    int8 kernels), and the quantization term is what covers them."""
    q, scale, zp = weights(256, 24, "int4", True, 32)
    g = qmatmul_graph(T.float32, 256, q, scale, zp, 32)
    x = activations(5, 256, T.float32)
    want = gd.evaluate(g, {"x": x})[0]
    _, (got, _) = _nbits_run(g, 4, {"x": x})
    level0 = nbits_bound(x, q, zp, scale, 32, 0, got, want)
    assert (np.abs(got.astype(np.float64) - want) > level0).any()


@cpu_only
@pytest.mark.parametrize("dt", ["int4", "uint4"])
def test_matmul_nbits_packing_bit_for_bit(dt: str) -> None:
    """x the identity and power-of-two scales: each result is one dequantized weight, exact
    in any arithmetic, so onnxruntime must give the reference's bits; a code, nibble, block
    or zero point packed in the wrong place shows (K = 200: a short last block, 7 blocks: an
    odd count of packed zero points; N = 13)."""
    k, n, block = 200, 13, 32
    rng = np.random.default_rng(9)
    d = gd.dtype(dt)
    lo, hi = int(d.min), int(d.max) + 1
    q = rng.integers(lo, hi, (k, n)).astype(d.np)
    zp = rng.integers(lo, hi, (7, n)).astype(d.np)
    scale = (2.0 ** rng.integers(-6, 3, (7, n))).astype(np.float32)
    g = qmatmul_graph(T.float32, k, q, scale, zp, block)
    x = np.eye(k, dtype=np.float32)
    _, (got, _) = _nbits_run(g, 0, {"x": x})
    want = gd.evaluate(g, {"x": x})[0]
    terms = floats.matmul_terms(x, reference_weight(q, zp, scale, block, T.float32))
    floats.assert_exact_sum(got, want, terms, "MatMulNBits of the identity")


@cpu_only
def test_matmul_nbits_in_a_branch_a_called_subgraph_and_inlined() -> None:
    """The function that holds MatMulNBits carries its opset import wherever the qmatmul is:
    an If branch, a called subgraph's local function, the subgraph inlined."""
    q, scale, _ = weights(64, 8, "int4", True, 32)
    g = gd.Graph("nest", input_types={"x": gd.TensorType(gd.float32, ("b", 64)), "p": gd.bool})
    x, p = g.inputs

    def layer(v: gd.Symbol) -> gd.Symbol:
        return gd.ops.qmatmul(v, q, scale, axis=0, block_size=32)

    branch = gd.ops.cond(p, lambda: layer(x), lambda: layer(x * 2))
    with g.subgraph("layer", {"v": gd.TensorType(gd.float32, ("m", 64))}) as sub:
        sub.output(layer(sub.inputs[0]))
    called = gd.ops.call(sub, x)
    assert isinstance(called, gd.Symbol) and isinstance(branch, gd.Symbol)
    g.output(called, branch)
    xs = activations(3, 64, T.float32)
    for functions in (True, False):
        for pred in (True, False):
            model = export(g, check="full", exact=False, functions=functions)
            feeds = {"x": xs, "p": np.array(pred)}
            got, want = run(model, feeds), gd.evaluate(g, feeds)
            xin = xs if pred else xs * 2
            for r, w, a in ((got[0], want[0], xs), (got[1], want[1], xin)):
                floats.assert_close(r, w, nbits_bound(a, q, None, scale, 32, 0, r, w))
            names = [f.name for f in model.functions]
            assert sum(nm.startswith("com.microsoft.MatMulNBits") for nm in names) == 1


@cpu_only
def test_exact_false_falls_back_to_the_exact_lowering_elsewhere() -> None:
    """An 8-bit weight, a 4-bit one per channel or computed in the graph, and a bfloat16 x
    keep DequantizeLinear + MatMul under exact=False (no MatMulNBits)."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 8)).astype(np.float32)
    q8, s8, _ = gd.ops.quantize_weights(w, "int8", 32)
    q4c, s4c, _ = gd.ops.quantize_weights(w, "int4", None, 1)
    q4, s4, _ = gd.ops.quantize_weights(w, "int4", 32)
    g = gd.Graph("fb", input_types={"x": gd.TensorType(gd.float32, (2, 64)),
                                    "h": gd.TensorType(gd.bfloat16, (2, 64)),
                                    "v": gd.TensorType(gd.int4, (64, 8))})  # fmt: skip
    x, h, v = g.inputs
    g.output(gd.ops.qmatmul(x, q8, s8, axis=0, block_size=32),
             gd.ops.qmatmul(x, q4c, s4c, axis=1),
             gd.ops.qmatmul(x, v, s4, axis=0, block_size=32),
             gd.ops.qmatmul(h, q4, s4.astype(ml_dtypes.bfloat16), axis=0,
                            block_size=32))  # fmt: skip
    model = export(g, check="full", exact=False)
    assert not model.functions
    assert _ops(model.graph).count("DequantizeLinear") == 4
    feeds = {"x": activations(2, 64, T.float32), "h": activations(2, 64, T.bfloat16), "v": q4}
    got, want = run(model, feeds), gd.evaluate(g, feeds)
    for k, r in enumerate(got):
        assert r.dtype == want[k].dtype and r.shape == want[k].shape


def test_matmul_nbits_refuses_a_block_size_it_cannot_take() -> None:
    w = np.random.default_rng(0).standard_normal((96, 4)).astype(np.float32)
    q, scale, _ = gd.ops.quantize_weights(w, block_size=48)
    g = qmatmul_graph(T.float32, 96, q, scale, None, 48)
    match = (
        r"qmatmul at .*MatMulNBits, which takes a block_size of 16, 32, 64, 128 or 256 "
        r"\(powers of two\), not 48 on target 'cpu'; quantize the weight .*block_size=32.*"
        r"or export with exact=True"
    )
    with pytest.raises(ExportError, match=match):
        export(g, exact=False)
    export(g, check="full")  # exact=True takes any block size


def test_accuracy_level_takes_the_bounded_levels() -> None:
    g = gd.Graph("q4", input_types={"x": gd.TensorType(gd.float32, ("batch", 64))})
    q, sc, _ = gd.ops.quantize_weights(np.ones((64, 8), np.float32), block_size=32)
    g.output(gd.ops.qmatmul(g.inputs[0], q, sc, axis=0, block_size=32))
    with pytest.raises(ExportError, match=r"accuracy_level=2: MatMulNBits' level is 0 or 1"):
        export(g, exact=False, accuracy_level=2)
    model = export(g, exact=False, accuracy_level=4)
    node = next(n for f in model.functions for n in f.node if n.op_type == "MatMulNBits")
    assert [a.i for a in node.attribute if a.name == "accuracy_level"] == [4]



# ---------------------------------------------------------------- onnxruntime


def _dq_model(name: str, scale_type: int) -> onnx.ModelProto:
    """DequantizeLinear of an INT4 or UINT4 initializer by a scale of ``scale_type``."""
    d = ml_dtypes.int4 if name == "INT4" else ml_dtypes.uint4
    q = numpy_helper.from_array(np.array([0, 7, 3], d), "q")
    node = helper.make_node("DequantizeLinear", ["q", "s"], ["y"])
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([node], "m", [vi("s", scale_type, [])], [vi("y", scale_type, None)],
                              [q])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


@pytest.mark.parametrize("key", sorted(quant_lowering.MEASURED_CPU_4BIT))
def test_the_hand_measured_4_bit_kernels_still_hold(key: str) -> None:
    """MEASURED_CPU_4BIT: DequantizeLinear of INT4/UINT4 runs (graph optimizations off) for
    the scale types listed, and not for the others."""
    scales = {"DequantizeLinear": TensorProto.FLOAT,
              "DequantizeLinear_float16": TensorProto.FLOAT16,
              "DequantizeLinear_bfloat16": TensorProto.BFLOAT16}  # fmt: skip
    for name in ("INT4", "UINT4"):
        so = ort.SessionOptions()
        so.log_severity_level = 4
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        model = _dq_model(name, scales[key]).SerializeToString()
        failure = ""
        try:
            ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        except Exception as e:  # only a missing kernel may fail here
            failure = str(e)
        assert not failure or "Could not find an implementation" in failure, failure
        assert (not failure) == (name in quant_lowering.MEASURED_CPU_4BIT[key]), (key, name)
