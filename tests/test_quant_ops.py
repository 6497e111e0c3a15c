"""Quantization ops: quantize, dequantize and qmatmul (the quant family).

Goldens are written out by hand from ONNX's QuantizeLinear and DequantizeLinear formulas
(saturate(round_half_even(x / scale) + zero_point), (q - zero_point) * scale) and checked on
both backends: ``gd.evaluate`` and the exported model on onnxruntime's CPU provider, bit for
bit (tests/floats.py: quantize and dequantize round once; qmatmul's sums are bit for bit only
where its inputs make them exact, which the helper checks, and within a derived bound
elsewhere). Type tables follow the rules' statement under every policy (x and scale join through
the policy; q and the zero point never promote); user errors say what is wrong and what to
do; explain() words each conversion. The export's structure (native QuantizeLinear,
DequantizeLinear + MatMul with the weight kept int8), the composed form for targets without
the kernels, the hand-measured kernel list and the onnxruntime behaviours the lowerings rely
on are pinned last.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import floats
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from backend import export, run
from onnx import TensorProto, helper, numpy_helper

import graphdsl as gd
from exporters.onnx._kernels import load_kernels
from exporters.onnx._lower import quant as quant_lowering
from exporters.onnx._targets import TARGETS, Target
from graphdsl import DType
from graphdsl.passes import canonicalize, dce, fold_constants

T = DType
nan, inf = math.nan, math.inf
POLICIES = gd.policy_names()
FLOATS = [T.float16, T.bfloat16, T.float32, T.float64]
SCALES = (T.float32, T.float16, T.bfloat16)


def both(g: gd.Graph, feeds: dict[str, Any],
         sums: dict[int, np.ndarray] | None = None) -> list[np.ndarray]:  # fmt: skip
    """The reference's results, after checking that onnxruntime gives the same bits: dtype,
    shape, NaN places, values and the sign of zeros; output k in ``sums`` is a qmatmul whose
    sums (of the terms given) must be exact by construction (checked), zero signs aside."""
    with np.errstate(over="ignore"):  # (1e30 is inf in float16)
        arrays = {s.attrs["name"]: np.asarray(feeds[s.attrs["name"]], s.dtype.np)
                  for s in g.inputs}  # fmt: skip
    want = gd.evaluate(g, arrays)
    got = run(export(g, check="full"), arrays)
    for k, (w, r) in enumerate(zip(want, got, strict=True)):
        if sums is not None and k in sums:
            floats.assert_exact_sum(r, w, sums[k], f"output {k}")
        else:
            same(r, w)
    return want


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit: quantize and dequantize round once (tests/floats.py)."""
    floats.assert_bits(got, want)


def check(got: np.ndarray, want: Any, dt: DType) -> None:
    same(got, np.asarray(want, np.float64).astype(dt.np))


def check_sum(got: np.ndarray, want: Any, terms: np.ndarray, dt: DType) -> None:
    """A qmatmul's result against its golden: exact sums, checked (tests/floats.py)."""
    floats.assert_exact_sum(got, np.asarray(want, np.float64).astype(dt.np), terms)


def qterms(x: Any, w: np.ndarray, scale: Any, dt: DType, zero_point: Any = 0,
           block: int = 1) -> np.ndarray:  # fmt: skip
    """The products of ``x @ dequantize(w)`` in float64: the weight dequantized as the op
    does, (w - zero_point) * scale rounded once to ``dt`` (per column, or per ``block`` rows
    of K when the scale is 2-D)."""
    s = np.asarray(scale, np.float64)
    z = np.asarray(zero_point, np.float64)
    if s.ndim == 2:
        s, z = np.repeat(s, block, axis=0)[: len(w)], np.repeat(z, block, axis=0)[: len(w)]
    deq = ((w.astype(np.float64) - z) * s).astype(np.float32).astype(dt.np)
    return floats.matmul_terms(np.asarray(x, np.float64).astype(dt.np), deq)


def one_input(dt: DType, shape: tuple[int | str, ...], build: Callable[[gd.Symbol], Any],
              policy: str = "default") -> gd.Graph:  # fmt: skip
    g = gd.Graph("q", input_types={"x": gd.TensorType(dt, shape)}, policy=policy)
    g.output(build(g.inputs[0]))
    return g


# ---------------------------------------------------------------- quantize

X = [0.0, -0.0, 1.0, 3.0, 5.0, -1.0, -3.0, -5.0, 0.9, 255.0, 256.0, 1e30, -1e30, inf, -inf, nan]
# x / 2: 0, -0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.45, 127.5, 128, big, -big, inf, -inf, NaN
HALVES_INT8 = [0, 0, 0, 2, 2, 0, -2, -2, 0, 127, 127, 127, -128, 127, -128, -128]
HALVES_UINT8_ZP128 = [128, 128, 128, 130, 130, 128, 126, 126, 128, 255, 255, 255, 0, 255, 0, 0]


@pytest.mark.parametrize("dt", SCALES)
def test_quantize_rounds_half_to_even_saturates_and_sends_nan_to_the_lowest(dt: DType) -> None:
    two = np.array(2.0, dt.np)
    g = one_input(dt, (len(X),), lambda x: gd.ops.quantize(x, two))
    check(both(g, {"x": X})[0], HALVES_INT8, T.int8)
    zp = np.array(128, np.uint8)
    g = one_input(dt, (len(X),), lambda x: gd.ops.quantize(x, two, zp, "uint8"))
    check(both(g, {"x": X})[0], HALVES_UINT8_ZP128, T.uint8)


def test_quantize_adds_the_zero_point_after_rounding_and_saturates_the_sum() -> None:
    # per channel along axis 0: row 0 by 0.5 then -1, row 1 by 0.25 then +10
    x = [[1.25, -0.25, 63.0], [0.125, -0.375, 30.0]]
    scale, zp = np.array([0.5, 0.25], np.float32), np.array([-1, 10], np.int8)
    g = one_input(T.float32, (2, 3), lambda v: gd.ops.quantize(v, scale, zp, axis=0))
    # 2.5 -> 2 (not 1.5 -> 2 after adding), -0.5 -> 0, 126; 0.5 -> 0, -1.5 -> -2, 120 + 10
    check(both(g, {"x": x})[0], [[1, -1, 125], [10, 8, 127]], T.int8)


def test_quantize_in_blocks_the_last_one_short() -> None:
    scale = np.array([[1.0, 10.0, 0.1]], np.float32)  # blocks of 2 along axis 1: 2 + 2 + 1
    g = one_input(T.float32, (1, 5), lambda v: gd.ops.quantize(v, scale, axis=1, block_size=2))
    check(both(g, {"x": [[2.5, 3.5, 25.0, -15.0, 0.7]]})[0], [[2, 4, 2, -2, 7]], T.int8)
    g = one_input(T.float32, (1, 5), lambda v: gd.ops.quantize(v, scale, axis=-1, block_size=2))
    assert g.outputs[0].attrs["axis"] == 1


def test_quantize_of_float16_divides_in_float32() -> None:
    # 10.5078125 / 0.10888671875 = 96.5022 in float32 (96.5 in float16: 96 after rounding);
    # 12.2890625 / 1.2939453125 = 9.4974 (9.5 in float16: 10); onnxruntime divides so too
    x = np.array([10.5078125, 12.2890625], np.float16)
    s = np.array([0.10888671875, 1.2939453125], np.float16)
    g = one_input(T.float16, (2,), lambda v: gd.ops.quantize(v, s, axis=0, dtype="uint8"))
    check(both(g, {"x": x})[0], [97, 9], T.uint8)


# ---------------------------------------------------------------- dequantize


def test_dequantize_goldens_per_tensor() -> None:
    g = one_input(T.uint8, (5,), lambda q: gd.ops.dequantize(q, np.float32(0.5), np.uint8(128)))
    check(both(g, {"x": [0, 127, 128, 129, 255]})[0], [-64.0, -0.5, 0.0, 0.5, 63.5], T.float32)


def test_dequantize_rounds_once_to_a_narrow_scale_dtype() -> None:
    # float16(0.1) = 0.0999755859375: 100 * it = 9.99755859375 -> 10.0; 127 * it rounds down;
    # 3 * it = 0.2999267578125 is a tie in float16 (1228.5 units of 2**-12): to even, 1228
    q = [100, -128, 127, 3]
    g = one_input(T.int8, (4,), lambda v: gd.ops.dequantize(v, np.array(0.1, np.float16)))
    check(both(g, {"x": q})[0], [10.0, -12.796875, 12.6953125, 0.2998046875], T.float16)
    # bfloat16(0.3) = 0.30078125: 100 * it = 30.078125 -> 30.125, 127 * it -> 38.25
    bf = np.array(0.3, ml_dtypes.bfloat16)
    g = one_input(T.int8, (4,), lambda v: gd.ops.dequantize(v, bf))
    check(both(g, {"x": q})[0], [30.125, -38.5, 38.25, 0.90234375], T.bfloat16)


def test_dequantize_per_channel_and_in_blocks() -> None:
    q = [[1, 2, 3, 4, 5], [-1, -2, -3, -4, -128]]
    per_row = np.array([0.5, 2.0], np.float32)
    g = one_input(T.int8, (2, 5), lambda v: gd.ops.dequantize(v, per_row, axis=0))
    check(both(g, {"x": q})[0], [[0.5, 1, 1.5, 2, 2.5], [-2, -4, -6, -8, -256]], T.float32)
    blocks = np.array([[1.0, 0.5, 4.0], [0.25, 1.0, 2.0]], np.float32)  # blocks of 2, 2, 1
    zp = np.array([[1, 0, 5], [0, -4, 0]], np.int8)
    g = one_input(T.int8, (2, 5), lambda v: gd.ops.dequantize(v, blocks, zp, 1, 2))
    want = [[0, 1, 1.5, 2, 0], [-0.25, -0.5, 1, 0, -256]]
    check(both(g, {"x": q})[0], want, T.float32)


def test_one_scale_for_every_element_in_any_layout() -> None:
    # onnxruntime takes a one-element scale as per tensor, and then refuses a block_size
    g = gd.Graph("one", input_types={"v": gd.TensorType(gd.float32, (1,)),
                                     "x": gd.TensorType(gd.float32, (1, 3))})  # fmt: skip
    v, x = g.inputs
    half, zp = np.array([0.5], np.float32), np.array([3], np.int8)
    s11, z11 = np.array([[0.5]], np.float32), np.array([[1]], np.int8)
    q = gd.ops.quantize(x, s11, z11, axis=1, block_size=4)  # one block of 3
    g.output(gd.ops.quantize(v, half, zp, axis=0, block_size=1),
             gd.ops.quantize(x, half, axis=0),
             gd.ops.dequantize(q, s11, z11, axis=1, block_size=4))  # fmt: skip
    outs = both(g, {"v": [1.25], "x": [[1.25, -0.75, 3.0]]})
    check(outs[0], [5], T.int8)  # 2.5 -> 2, + 3
    check(outs[1], [[2, -2, 6]], T.int8)
    check(outs[2], [[1.0, -1.0, 3.0]], T.float32)  # (2 + 1 - 1) / 2, (-2 + 1 - 1) / 2, ...


def test_dequantize_of_a_constant_weight_stays_a_run_time_op() -> None:
    g = gd.Graph("dq", input_types={"x": gd.TensorType(gd.float32, (2, 64))})
    (x,) = g.inputs
    g.output(x @ gd.ops.dequantize(g.constant(np.ones((64, 32), np.int8)), np.float32(0.5)))
    ops = Counter(n.op for n in dce(fold_constants(g)).nodes)
    assert ops["dequantize"] == 1  # 8 KB of float32 from 2 KB of int8: not folded
    small = gd.Graph("dq", input_types={"x": gd.TensorType(gd.float32, (2, 4))})
    (x,) = small.inputs
    half = np.array(0.5, np.float32)
    small.output(x @ gd.ops.dequantize(small.constant(np.ones((4, 2), np.int8)), half))
    assert Counter(n.op for n in dce(fold_constants(small)).nodes)["dequantize"] == 0  # tiny


# ---------------------------------------------------------------- qmatmul

W = np.array([[1, -2], [0, 127], [-128, 4]], np.int8)


def test_qmatmul_per_output_channel_and_per_tensor() -> None:
    g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, ("batch", 3))})
    (x,) = g.inputs
    g.output(gd.ops.qmatmul(x, W, np.array([0.5, 0.25], np.float32)),
             gd.ops.qmatmul(x, W, np.float32(2.0), axis=None))  # fmt: skip
    x = [[1.0, 2.0, 0.5], [0.0, -1.0, 4.0]]
    terms = [qterms(x, W, [0.5, 0.25], T.float32), qterms(x, W, [2.0, 2.0], T.float32)]
    per_channel, per_tensor = both(g, {"x": x}, dict(enumerate(terms)))
    # [1, 2, 0.5] @ W = [1 - 64, -2 + 254 + 2] = [-63, 254]; [0, -1, 4] @ W = [-512, -111]
    check_sum(per_channel, [[-31.5, 63.5], [-256.0, -27.75]], terms[0], T.float32)
    check_sum(per_tensor, [[-126.0, 508.0], [-1024.0, -222.0]], terms[1], T.float32)


def test_qmatmul_blocks_of_k_with_a_zero_point() -> None:
    w = np.array([[10, 0], [12, 1], [130, 128], [126, 255]], np.uint8)
    scale = np.array([[0.5, 1.0], [0.25, 2.0]], np.float32)  # blocks of 2 rows of K
    zp = np.array([[10, 0], [128, 128]], np.uint8)
    # dequantized: [[0, 0], [1, 1], [0.5, 0], [-0.5, 254]]
    g = one_input(T.float32, (1, 4), lambda x: gd.ops.qmatmul(x, w, scale, zp, 0, 2))
    x = [[3.0, 1.0, 2.0, 4.0]]
    terms = qterms(x, w, scale, T.float32, zp, block=2)
    got = both(g, {"x": x}, {0: terms})[0]
    check_sum(got, [[0.0 + 1 + 1 - 2, 1 + 1016.0]], terms, T.float32)


@pytest.mark.parametrize("dt", [T.float16, T.bfloat16])
def test_qmatmul_in_a_narrow_float_rounds_the_weight_then_the_product(dt: DType) -> None:
    scale = np.array([0.1, 0.3], dt.np)
    g = one_input(dt, (1, 3), lambda x: gd.ops.qmatmul(x, W, scale))
    x = [[1.0, 2.0, 0.5]]
    # the sums are exact in float32, where the op accumulates (not in the narrow dtype: the
    # weight's 11 or 8 bits times x's spread wider), so both sides are the exact sum rounded
    # once to dt, bit for bit
    terms = qterms(x, W, scale, dt)
    assert floats.exactly_summable(terms, floats.compute_dtype(dt))
    got = both(g, {"x": x})[0]
    w = (W.astype(np.float32) * scale.astype(np.float32)).astype(dt.np).astype(np.float64)
    check(got, (np.array(x) @ w).astype(np.float32), dt)


def test_qmatmul_with_a_symbolic_batch_bound_to_other_sizes_and_zero() -> None:
    g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, ("batch", 3))})
    (x,) = g.inputs
    g.output(gd.ops.qmatmul(x, W, np.array([0.5, 0.25], np.float32)))
    model = export(g, check="full")
    for n in (0, 1, 5):
        xs = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        terms = qterms(xs, W, [0.5, 0.25], T.float32)
        floats.assert_exact_sum(run(model, {"x": xs})[0], gd.evaluate(g, {"x": xs})[0], terms)


def test_scales_of_a_symbolic_axis_come_as_inputs() -> None:
    g = gd.Graph("s", input_types={"x": gd.TensorType(gd.float32, ("n", 2)),
                                   "s": gd.TensorType(gd.float32, ("n",))})  # fmt: skip
    x, s = g.inputs
    q = gd.ops.quantize(x, s, axis=0)
    g.output(q, gd.ops.dequantize(q, s, axis=0))
    model = export(g, check="full")
    for n in (0, 3):
        feeds = {"x": np.arange(2 * n, dtype=np.float32).reshape(n, 2) - 2.5,
                 "s": np.arange(1, n + 1, dtype=np.float32) / 2}  # fmt: skip
        for r, w in zip(run(model, feeds), gd.evaluate(g, feeds), strict=True):
            same(r, w)
    feeds = {"x": np.array([[-2.5, -1.5], [-0.5, 0.5], [1.5, 2.5]], np.float32),
             "s": np.array([0.5, 1.0, 1.5], np.float32)}  # fmt: skip
    q_want, dq_want = gd.evaluate(g, feeds)
    check(q_want, [[-5, -3], [0, 0], [1, 2]], T.int8)
    check(dq_want, [[-2.5, -1.5], [0, 0], [1.5, 3.0]], T.float32)


# ---------------------------------------------------------------- types


def _join(p: gd.Policy, a: DType, b: DType) -> DType | None:
    try:
        return p.decide(a, False, b, False).result.dtype
    except gd.PromotionError:
        return None


@pytest.mark.parametrize("policy", POLICIES)
def test_type_tables_under_every_policy(policy: str) -> None:
    """x and scale join under the policy (float32/float16/bfloat16 or an error); quantize
    gives the quantized dtype, dequantize the scale's, qmatmul the join; q and the zero point
    keep their dtype (no cast of a quantized value, ever)."""
    p = gd.policy(policy)
    for xd in FLOATS:
        for sd in FLOATS:
            g = gd.Graph("t", input_types={"x": gd.TensorType(xd, (2, 3)),
                                           "s": gd.TensorType(sd, ())}, policy=policy)  # fmt: skip
            x, s = g.inputs
            join = _join(p, xd, sd)
            builds: dict[str, Callable[[], gd.Symbol]] = {
                "quantize": partial(gd.ops.quantize, x, s, np.uint8(3), "uint8"),
                "qmatmul": partial(gd.ops.qmatmul, x, W, s, np.int8(1), axis=None),
            }
            for name, build in builds.items():
                if join is None:
                    with pytest.raises(gd.PromotionError):
                        build()
                    continue
                if join not in SCALES:
                    with pytest.raises(gd.OpTypeError, match="float32, float16 or bfloat16"):
                        build()
                    continue
                node = build()
                quantized = T.uint8 if name == "quantize" else T.int8
                assert node.dtype is (quantized if name == "quantize" else join), (name, xd, sd)
                assert node.in_dtypes[0] is join and node.in_dtypes[-1] is quantized
                if name == "qmatmul":
                    assert node.in_dtypes[1] is T.int8  # the weight
        for qd in (T.int8, T.uint8):
            g = gd.Graph("t", input_types={"q": gd.TensorType(qd, (4,))}, policy=policy)
            (q,) = g.inputs
            if xd in SCALES:
                node = gd.ops.dequantize(q, np.array(0.5, xd.np), 1)
                assert node.dtype is xd and node.in_dtypes == (qd, xd, qd)
            else:
                with pytest.raises(gd.OpTypeError, match="float32, float16 or bfloat16"):
                    gd.ops.dequantize(q, np.array(0.5, xd.np))
            # a Python number alone is a float32 scale (the policy's default float may be
            # float64, which ONNX's quantization does not take)
            assert gd.ops.dequantize(q, 0.5).type == gd.TensorType(T.float32, (4,))


def test_a_literal_scale_joins_with_x() -> None:
    g = gd.Graph("t", input_types={"h": gd.TensorType(gd.float16, (3,))})
    (h,) = g.inputs
    assert gd.ops.quantize(h, 0.1).in_dtypes == (T.float16, T.float16)
    assert gd.ops.qmatmul(h, W, 0.5, axis=None).dtype is T.float16
    assert gd.ops.quantize(h, 2).in_dtypes == (T.float16, T.float16)  # a Python int too


def test_no_cast_of_a_quantized_value_and_explain_says_why_each_conversion() -> None:
    g = gd.Graph("e", input_types={"q": gd.TensorType(gd.int8, (4,)),
                                   "h": gd.TensorType(gd.float16, (4,)),
                                   "s": gd.float32})  # fmt: skip
    q, h, s = g.inputs
    g.output(gd.ops.dequantize(q, 0.1, 3), gd.ops.quantize(h, s, 7),
             gd.ops.qmatmul(h, np.ones((4, 2), np.int8), s, axis=None))  # fmt: skip
    lowered = canonicalize(g)
    casts = [n for n in lowered.nodes if n.op == "cast"]
    assert [c.inputs[0].attrs.get("name") for c in casts] == ["h"]  # h -> float32, once
    text = g.explain()
    lines = text.splitlines()
    assert lines[0] == "graph e, policy 'default': 5 implicit conversions"
    want = [
        "dequantize at *: literal 0.1 -> constant float32 (operand types int8[4], float32?[], "
        "int32?[]); rule: dequantize's type rule takes this operand as float32",
        "dequantize at *: literal 3 -> constant int8 (operand types int8[4], float32?[], "
        "int32?[]); rule: int8 x int32? -> int8: *",
        "quantize at *: operand 0 %h float16 -> float32 (operand types float16[4], float32[], "
        "int32?[]); rule: float16 x float32 -> float32: *",
        "quantize at *: literal 7 -> constant int8 (operand types float16[4], float32[], "
        "int32?[]); rule: quantize's type rule takes this operand as int8",
        "qmatmul at *: operand 0 %h float16 -> float32 (operand types float16[4], int8[4, 2], "
        "float32[]); rule: float16 x float32 -> float32: *",
    ]
    body = [line.strip() for line in lines[1:] if not line.strip().startswith("|")]
    assert len(body) == len(want), text
    for got, pattern in zip(body, want, strict=True):
        regex = ".*".join(re.escape(part) for part in pattern.split("*"))
        assert re.fullmatch(regex, got), f"{got!r} !~ {pattern!r}"


def _graph_2x4(dt: DType = T.float32) -> gd.Symbol:
    g = gd.Graph("err", input_types={"x": gd.TensorType(dt, (2, 4))})
    return g.inputs[0]


def _sym(dt: DType, shape: tuple[int | str, ...]) -> gd.Symbol:
    g = gd.Graph("err", input_types={"x": gd.TensorType(dt, shape)})
    return g.inputs[0]


F32 = np.float32
ERRORS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("quantize an int", lambda: gd.ops.quantize(_graph_2x4(T.int16), F32(1)), gd.OpTypeError,
     r"int16\[2, 4\], float32\?\[\] \(in argument order\): quantize's x must be floating.*cast"),
    ("quantize to int16", lambda: gd.ops.quantize(_graph_2x4(), F32(1), dtype="int16"),
     gd.OpTypeError, "int8, uint8, int4 or uint4, not int16.*dtype=gd.int8"),
    ("quantize in float64", lambda: gd.ops.quantize(_graph_2x4(T.float64), F32(1)),
     gd.OpTypeError, r"x and scale promote to float64 under policy 'default'.*cast the x and "
     "scale to float32"),
    ("a uint8 zero point of an int8 quantize",
     lambda: gd.ops.quantize(_graph_2x4(), F32(1), np.array(3, np.uint8)), gd.OpTypeError,
     "zero_point is uint8, but it must have the quantized dtype int8.*dtype=gd.uint8"),
    ("a float zero point", lambda: gd.ops.dequantize(_sym(T.int8, (4,)), F32(1), 0.5),
     gd.OpTypeError, "zero_point is float32, but it must have the quantized dtype int8"),
    ("dequantize a float", lambda: gd.ops.dequantize(_graph_2x4(), F32(1)), gd.OpTypeError,
     "dequantize's q must be int8, uint8, int4 or uint4.*to quantize floats, use "
     "gd.ops.quantize"),
    ("dequantize an int32", lambda: gd.ops.dequantize(_sym(T.int32, (4,)), F32(1)),
     gd.OpTypeError, "q must be int8, uint8, int4 or uint4.*int32"),
    ("an integer scale tensor",
     lambda: gd.ops.dequantize(_sym(T.int8, (4,)), np.array(2, np.int32)), gd.OpTypeError,
     "dequantize's scale must be floating .* it is int32"),
    ("a float64 scale", lambda: gd.ops.dequantize(_sym(T.int8, (4,)), np.array(2.0)),
     gd.OpTypeError, "scale is float64 under policy 'default'.*cast the scale to float32"),
    ("a vector scale without an axis",
     lambda: gd.ops.quantize(_graph_2x4(), np.ones(4, F32)), gd.ShapeError,
     r"without an axis the scale is one number.*shape \(4,\); for per-channel scales pass axis="),
    ("a per-channel scale of the wrong length",
     lambda: gd.ops.quantize(_graph_2x4(), np.ones(4, F32), axis=0), gd.ShapeError,
     r"per-channel scales along axis 0 of \(2, 4\) need a scale of shape \(2,\), got \(4,\)"),
    ("a zero point of another shape",
     lambda: gd.ops.dequantize(_sym(T.int8, (2, 4)), np.ones(4, F32), np.int8(1), axis=1),
     gd.ShapeError, r"need a zero point of shape \(4,\), got \(\)"),
    ("blocks without an axis",
     lambda: gd.ops.quantize(_graph_2x4(), np.ones((2, 2), F32), block_size=2), gd.ShapeError,
     "block_size=2 needs the axis its blocks run along; pass axis="),
    ("a blocked scale of the wrong shape",
     lambda: gd.ops.quantize(_graph_2x4(), np.ones((2, 3), F32), axis=1, block_size=2),
     gd.ShapeError, r"blocks of 2 along axis 1 of \(2, 4\) \(ceil\(4 / 2\) there\) need a "
     r"scale of shape \(2, 2\), got \(2, 3\)"),
    ("a zero block size", lambda: gd.ops.quantize(_graph_2x4(), np.ones((2, 2), F32), axis=1,
                                                  block_size=0), gd.ShapeError,
     "block_size must be a positive int"),
    ("blocks along a symbolic axis",
     lambda: gd.ops.quantize(_sym(T.float32, ("n", 4)), np.ones((1, 4), F32), axis=0,
                             block_size=2), gd.ShapeError, "need a static size there, not 'n'"),
    ("an axis out of range", lambda: gd.ops.quantize(_graph_2x4(), np.ones(4, F32), axis=2),
     gd.ShapeError, "axis 2 is out of range for a value of rank 2"),
    ("a batched weight", lambda: gd.ops.qmatmul(_graph_2x4(), np.ones((2, 4, 3), np.int8),
                                                np.ones(3, F32)), gd.ShapeError,
     r"qmatmul takes an x of rank >= 1 and a \[K, N\] weight"),
    ("mismatched K", lambda: gd.ops.qmatmul(_graph_2x4(), np.ones((3, 2), np.int8),
                                            np.ones(2, F32)), gd.ShapeError,
     r"x's last dimension 4 must equal the weight's first 3 \(K\)"),
    ("a float weight", lambda: gd.ops.qmatmul(_graph_2x4(), np.ones((4, 2), F32),
                                              np.ones(2, F32)), gd.OpTypeError,
     "qmatmul's weight must be int8, uint8, int4 or uint4"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "build", "error", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_user_errors_say_what_is_wrong_and_what_to_do(
    what: str, build: Callable[[], Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build()


def test_a_zero_point_literal_must_fit_the_quantized_dtype() -> None:
    with pytest.raises(gd.LiteralError, match="300"):
        gd.ops.dequantize(_sym(T.uint8, (4,)), F32(1), 300)


# ---------------------------------------------------------------- export


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_export_structure_native() -> None:
    # the CPU target's nodes (CUDA composes QuantizeLinear: its kernel sends NaN to 0)
    scale = np.array([0.5, 0.25], np.float32)
    f16, bf16 = scale.astype(np.float16), scale.astype(ml_dtypes.bfloat16)
    cases = {
        "quantize": (T.float32, lambda x: gd.ops.quantize(x, np.float32(0.1)),
                     ["QuantizeLinear"]),
        # bfloat16: float32's kernel (no bfloat16 one; it divides in float32 anyway)
        "quantize_bf16": (T.bfloat16, lambda x: gd.ops.quantize(x, 0.5),
                          ["Cast", "Cast", "QuantizeLinear"]),
        "qmatmul": (T.float32, lambda x: gd.ops.qmatmul(x, W, scale),
                    ["DequantizeLinear", "MatMul"]),
        # float16: its own DequantizeLinear; MatMul in float32 (no float16 kernel), rounded
        "qmatmul_f16": (T.float16, lambda x: gd.ops.qmatmul(x, W, f16),
                        ["DequantizeLinear", "Cast", "Cast", "MatMul", "Cast"]),
        # bfloat16: float32's DequantizeLinear, rounded to bfloat16 once (and back)
        "qmatmul_bf16": (T.bfloat16, lambda x: gd.ops.qmatmul(x, W, bf16),
                         ["Cast", "DequantizeLinear", "Cast", "Cast", "Cast", "MatMul", "Cast"]),
    }  # fmt: skip
    for name, (dt, build, want) in cases.items():
        model = export(one_input(dt, ("batch", 3), build), check="full", target="cpu")
        assert _ops(model) == want, (name, _ops(model))
    # the weight stays an int8 initializer, its scale float32 beside it
    model = export(one_input(T.float32, ("batch", 3), lambda x: gd.ops.qmatmul(x, W, scale)))
    types = {tuple(t.dims): TensorProto.DataType.Name(t.data_type) for t in model.graph.initializer}
    assert types == {(3, 2): "INT8", (2,): "FLOAT"}
    (dq,) = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    assert {a.name: helper.get_attribute_value(a) for a in dq.attribute} == {"axis": 1}


def _composed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the CPU target one without QuantizeLinear and DequantizeLinear kernels."""
    cpu = TARGETS["cpu"]
    kernels = {k: v for k, v in cpu.kernels.items() if "uantizeLinear" not in k}  # both ops
    monkeypatch.setitem(TARGETS, "cpu", Target("cpu", kernels, cpu.provider))
    monkeypatch.setattr(quant_lowering, "MEASURED_CPU", {})


def _specials(dt: DType, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spec = np.array([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 126.5, 127.5, -128.5, 255.5,
                     1e30, -1e30, inf, -inf, nan, 1e-30], np.float64)  # fmt: skip
    vals = np.where(rng.integers(0, 2, n) == 0, rng.choice(spec, n),
                    rng.standard_normal(n) * 10.0 ** rng.integers(-2, 3, n))  # fmt: skip
    with np.errstate(all="ignore"):
        return vals.astype(dt.np)


@pytest.mark.parametrize("dt", SCALES)
def test_composed_lowering_is_exact_where_a_target_lacks_the_kernels(
    dt: DType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _composed(monkeypatch)
    g = gd.Graph("c", input_types={"x": gd.TensorType(dt, (6, 4)),
                                   "q": gd.TensorType(gd.int8, (6, 4)),
                                   "u": gd.TensorType(gd.uint8, (6, 4))})  # fmt: skip
    x, q, u = g.inputs
    rng = np.random.default_rng(7)
    per_col = (rng.uniform(0.01, 3, 4)).astype(dt.np)
    blocks = (rng.uniform(0.01, 3, (2, 4))).astype(dt.np)
    w = np.arange(-6, 6).reshape(3, 4).astype(np.int8)
    pow2 = np.array([0.5, 2.0, 0.25, 1.0], dt.np)  # exact products: exact sums for small x
    g.output(
        gd.ops.quantize(x, np.array(2.0, dt.np)),
        gd.ops.quantize(x, per_col, rng.integers(0, 256, 4).astype(np.uint8), "uint8", axis=1),
        gd.ops.quantize(x, blocks, rng.integers(-128, 128, (2, 4)).astype(np.int8), axis=0,
                        block_size=5),
        gd.ops.dequantize(q, np.array(0.37, dt.np)),
        gd.ops.dequantize(u, per_col, np.arange(4).astype(np.uint8), axis=1),
        gd.ops.dequantize(q, blocks, axis=0, block_size=4),
        gd.ops.qmatmul(x[:, :3], w, per_col),
        gd.ops.qmatmul(x[:, :3], w, pow2),
    )  # fmt: skip
    model = export(g, check="full", target="cpu")  # (the CPU table, without its Q/DQ rows)
    assert not {"QuantizeLinear", "DequantizeLinear"} & set(_ops(model))
    feeds = {"x": _specials(dt, 24, 1).reshape(6, 4),
             "q": rng.integers(-128, 128, (6, 4)).astype(np.int8),
             "u": rng.integers(0, 256, (6, 4)).astype(np.uint8)}  # fmt: skip
    cpu = ["CPUExecutionProvider"]
    want = gd.evaluate(g, feeds)
    got = run(model, feeds, providers=cpu)
    for r, v in zip(got[:6], want[:6], strict=True):  # quantize, dequantize: rounded once
        same(r, v)
    # the qmatmuls: sums in any order, of the weight dequantized (q * scale rounded to dt)
    # times x; per_col's products are not exact (its scales are not powers of two), so
    # within the bound of a dot product of 3 (tests/floats.py), NaN and infinities alike
    for k, scale in ((6, per_col), (7, pow2)):
        terms = qterms(feeds["x"][:, :3], w, scale, dt)
        with np.errstate(all="ignore"):
            s = np.abs(terms).sum(axis=-1)
        bound = floats.dot_bound(s, 3, dt, got[k], want[k])
        floats.assert_close(got[k], want[k], bound, f"output {k}")
    # finite x in quarters: pow2's sums are exact by construction (checked), per_col's not
    finite = {**feeds, "x": (rng.integers(-8, 8, (6, 4)) / 4).astype(dt.np)}
    got, want = run(model, finite, providers=cpu), gd.evaluate(g, finite)
    exact = qterms(finite["x"][:, :3], w, pow2, dt)
    floats.assert_exact_sum(got[7], want[7], exact, "qmatmul, power-of-two scales")
    terms = qterms(finite["x"][:, :3], w, per_col, dt)
    assert not floats.exactly_summable(terms, dt)  # (else the bound below would be moot)
    bound = floats.dot_bound(np.abs(terms).sum(axis=-1), 3, dt, got[6], want[6])
    floats.assert_close(got[6], want[6], bound, "qmatmul, per-column scales")


# ---------------------------------------------------------------- onnxruntime


def _model(node: onnx.NodeProto, inputs: list[onnx.ValueInfoProto], out: int,
           inits: list[onnx.TensorProto] = ()) -> onnx.ModelProto:  # type: ignore[assignment]  # fmt: skip
    graph = helper.make_graph([node], "m", inputs,
                              [helper.make_tensor_value_info(node.output[0], out, None)],
                              initializer=list(inits))  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _session(model: onnx.ModelProto, optimized: str | None = None, **config: str) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if optimized is None:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    else:
        so.optimized_model_filepath = optimized
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


_TYPES = {"FLOAT": TensorProto.FLOAT, "FLOAT16": TensorProto.FLOAT16,
          "BFLOAT16": TensorProto.BFLOAT16, "INT8": TensorProto.INT8,
          "UINT8": TensorProto.UINT8}  # fmt: skip


def _probe(key: str, type_name: str) -> bool:
    """Does onnxruntime's CPU provider run ``key`` with its first input of ``type_name``,
    graph optimizations off, without casts of its own around it?"""
    vi = helper.make_tensor_value_info
    t = _TYPES[type_name]
    if key.startswith("QuantizeLinear"):
        out = TensorProto.UINT8 if key.endswith("uint8") else TensorProto.INT8
        node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=out)
        model = _model(node, [vi("x", t, [2]), vi("s", t, [])], out)
    else:
        scale = {"DequantizeLinear": "FLOAT"}.get(key, key.rsplit("_", 1)[-1].upper())
        node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"])
        model = _model(node, [vi("x", t, [2]), vi("s", _TYPES[scale], [])], _TYPES[scale])
    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.log_severity_level = 4
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.optimized_model_filepath = f"{tmp}/m.onnx"
        failure = ""
        try:
            ort.InferenceSession(model.SerializeToString(), so,
                                 providers=["CPUExecutionProvider"])  # fmt: skip
        except Exception as e:  # only a missing kernel may fail here
            failure = str(e)
        if failure:
            assert "Could not find an implementation" in failure, failure
            return False
        return _ops(onnx.load(f"{tmp}/m.onnx")) == [node.op_type]


@pytest.mark.parametrize("key", sorted(quant_lowering.MEASURED_CPU))
def test_the_hand_measured_kernels_still_hold(key: str) -> None:
    """MEASURED_CPU (until the probe's table lists these ops): each pair runs natively, and
    the float and quantized types it leaves out have no kernel."""
    listed = quant_lowering.MEASURED_CPU[key]
    candidates = ("FLOAT", "FLOAT16", "BFLOAT16") if key.startswith("Q") else ("INT8", "UINT8")
    for t in candidates:
        assert _probe(key, t) == (t in listed), (key, t)
    # once measured by the probe, its table must agree (cpu.json as measured, on onnxruntime
    # 1.32: the CPU target on 1.31 leaves float16 out, _targets.CPU_BEFORE)
    table = load_kernels("cpu").kernels.get(key)
    if table is not None:
        assert {t for t in candidates if t in table} == set(listed), (key, sorted(table))


def test_onnxruntime_quantizes_as_the_reference_does() -> None:
    """QuantizeLinear divides (x * (1 / scale) would differ), rounds half to even, adds the
    zero point after rounding, saturates, and sends NaN to the lowest value."""
    vi = helper.make_tensor_value_info
    rng = np.random.default_rng(0)
    k = rng.integers(-100, 100, 20000)
    x = ((k + 0.5) * np.float64(np.float32(0.3))).astype(np.float32)  # near ties
    s = np.float32(0.3)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    model = _model(node, [vi("x", TensorProto.FLOAT, [x.size])], TensorProto.INT8,
                   [numpy_helper.from_array(np.asarray(s), "s"),
                    numpy_helper.from_array(np.asarray(5, np.int8), "z")])  # fmt: skip
    got = _session(model).run(None, {"x": x})[0]
    div = np.clip(np.rint(x / s) + 5, -128, 127).astype(np.int8)
    by_reciprocal = np.clip(np.rint(x * (np.float32(1) / s)) + 5, -128, 127).astype(np.int8)
    assert np.array_equal(got, div) and not np.array_equal(got, by_reciprocal)
    specials = np.array([nan, inf, -inf, 1e30, 0.125, 0.375], np.float32)
    model = _model(node, [vi("x", TensorProto.FLOAT, [6])], TensorProto.INT8,
                   [numpy_helper.from_array(np.asarray(0.25, np.float32), "s"),
                    numpy_helper.from_array(np.asarray(5, np.int8), "z")])  # fmt: skip
    got = _session(model).run(None, {"x": specials})[0]
    # 0.125 / 0.25 = 0.5 -> 0, + 5; 0.375 / 0.25 = 1.5 -> 2, + 5 (not round(6.5) = 6)
    assert got.tolist() == [-128, 127, -128, 127, 5, 7]


def test_onnxruntime_fuses_qmatmul_and_its_default_accuracy_quantizes_x(tmp_path: Any) -> None:
    """What the lowering's doc says of onnxruntime's default optimizations: DequantizeLinear
    + MatMul becomes MatMulNBits with the weight kept as 8 bits; its default accuracy level
    quantizes x (off the float32 bound), accuracy level 0 computes in float32 (within it)."""
    rng = np.random.default_rng(0)
    k, n = 256, 64
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    scale = rng.uniform(0.001, 0.01, n).astype(np.float32)
    g = gd.Graph("fused", input_types={"x": gd.TensorType(gd.float32, ("batch", k))})
    g.output(gd.ops.qmatmul(g.inputs[0], w, scale))
    model = export(g)
    x = rng.standard_normal((4, k)).astype(np.float32)
    exact = x.astype(np.float64) @ (w.astype(np.float64) * scale)
    bound = k * np.finfo(np.float32).eps * (np.abs(x) @ np.abs(w * scale.astype(np.float64)))
    path = str(tmp_path / "opt.onnx")
    default = _session(model, path).run(None, {"x": x})[0]
    fused = onnx.load(path)
    assert [(n.op_type, n.domain) for n in fused.graph.node] == [("MatMulNBits", "com.microsoft")]
    assert {TensorProto.DataType.Name(t.data_type) for t in fused.graph.initializer} == {
        "UINT8", "FLOAT"}  # fmt: skip
    assert (np.abs(default - exact) > bound).any()
    config = {"session.qdq_matmulnbits_accuracy_level": "0"}
    level0 = _session(model, str(tmp_path / "opt0.onnx"), **config).run(None, {"x": x})[0]
    # (bound: 2 k u Σ|x w|, over γ_k Σ|x w| for one float32 evaluation: tests/floats.py)
    floats.assert_close(level0.astype(np.float64), exact, bound, "accuracy level 0")
    unfused = run(model, {"x": x})[0].astype(np.float64)  # run(): not fused
    floats.assert_close(unfused, exact, bound, "run()")
