"""graphdsl.max's GGUF Q4_0 ops (issue 31, item 4) against max 26.7's, recorded on its CPU by
scripts/record_max_gguf.py into tests/data/max_gguf_q4_0.json: ``dequantize`` bit for bit;
``qmatmul`` as graphdsl states it (the product of the float values: exact here, small
integers times float16 scales of few bits), MAX's own within its 8-bit rounding of lhs; a
constant weight exported with exact=False as onnxruntime's MatMulNBits."""

from __future__ import annotations

import json
from pathlib import Path

import floats
import numpy as np
import pytest

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl.max import DeviceRef, DType, Graph, TensorType, UnsupportedError, Weight, ops
from graphdsl.max._quant import decode_q4_0
from graphdsl.max.quantization import QuantizationEncoding
from graphdsl.shapes import ShapeError

GOLDEN = json.loads((Path(__file__).parent / "data" / "max_gguf_q4_0.json").read_text())
Q = np.array(GOLDEN["q"], np.uint8)  # (32, 36): 32 rows of two blocks
X = np.array(GOLDEN["x"], np.float32)  # (2, 64)
Q4 = QuantizationEncoding.Q4_0
CPU = DeviceRef.CPU()


def _numpy_weight(q: np.ndarray) -> np.ndarray:
    values, scales = decode_q4_0(q)
    per_value = np.repeat(scales.astype(np.float32), 32, axis=-1)
    return values.astype(np.float32) * per_value


def test_dequantize_equals_max_bit_for_bit() -> None:
    with Graph("deq", input_types=[TensorType(DType.uint8, list(Q.shape), CPU)]) as g:
        g.output(ops.dequantize(Q4, g.inputs[0].tensor))
    want = np.array(GOLDEN["dequantize"], np.float32)
    floats.assert_bits(gd.evaluate(g, [Q])[0], want, "evaluate")
    floats.assert_bits(run(export(g), [Q])[0], want, "onnxruntime")
    floats.assert_bits(_numpy_weight(Q), want, "decode_q4_0")


def test_dequantize_reads_every_float16_scale() -> None:
    """Scales of every kind (normal, subnormal, zeros, inf, NaN, negative), as numpy reads
    the two bytes as a float16."""
    scales = np.array([1.0, -2.5, 6e-8, -0.0, 0.0, np.inf, -np.inf, np.nan, 65504, 2**-14],
                      np.float16)  # fmt: skip
    codes = np.random.default_rng(3).integers(0, 256, size=(scales.size, 16), dtype=np.uint8)
    q = np.concatenate([scales.view(np.uint8).reshape(-1, 2), codes], axis=1).reshape(2, -1)
    with Graph("deq", input_types=[TensorType(DType.uint8, list(q.shape), CPU)]) as g:
        g.output(ops.dequantize(Q4, g.inputs[0].tensor))
    with np.errstate(invalid="ignore"):
        want = _numpy_weight(q)
    floats.assert_bits(gd.evaluate(g, [q])[0], want, "evaluate")
    floats.assert_bits(run(export(g), [q])[0], want, "onnxruntime")


@pytest.mark.parametrize("constant", [True, False])
def test_qmatmul_is_the_product_of_the_dequantized_weight(constant: bool) -> None:
    types = [TensorType(DType.float32, list(X.shape), CPU)]
    if not constant:
        types.append(TensorType(DType.uint8, list(Q.shape), CPU))
    with Graph("qmm", input_types=types) as g:
        w = ops.constant(Q, DType.uint8, CPU) if constant else g.inputs[1].tensor
        g.output(ops.qmatmul(Q4, None, g.inputs[0].tensor, w))
    feeds = [X] if constant else [X, Q]
    # small integers times float16 scales of few bits: every product and sum is exact
    want = (X.astype(np.float64) @ _numpy_weight(Q).astype(np.float64).T).astype(np.float32)
    floats.assert_bits(gd.evaluate(g, feeds)[0], want, "evaluate")
    floats.assert_bits(run(export(g), feeds)[0], want, "export()")
    fast = export(g, exact=False)
    nbits = [n.op_type for f in fast.functions for n in f.node if n.domain == "com.microsoft"]
    assert nbits == (["MatMulNBits"] if constant else [])
    floats.assert_bits(run(fast, feeds)[0], want, "exact=False, accuracy_level 0")
    # MAX's kernel rounds lhs to 8 bits per block of 32 (Q8_0: scale max|x| / 127) first:
    # each term moves by up to (max|x| / 254) |w|, so its result is within that of ours
    got = np.array(GOLDEN["qmatmul"], np.float32)
    block_max = np.abs(X).reshape(2, -1, 32).max(axis=-1).repeat(32, axis=-1)
    allowed = (block_max / 254) @ np.abs(_numpy_weight(Q)).T * (1 + 2**-10) + 1e-6
    assert np.all(np.abs(got - want) <= allowed)
    assert np.abs(got - want).max() > 0.1  # (it does differ: not the float product)


def test_quantized_weights_and_errors() -> None:
    w = Weight("w", DType.uint8, [32, 36], quantization_encoding=Q4)
    assert w.quantization_encoding is Q4
    with Graph("w", input_types=[TensorType(DType.float32, [2, 64], CPU)]) as g:
        g.output(ops.qmatmul(Q4, None, g.inputs[0].tensor, g.add_weight(w)))
    want = (X.astype(np.float64) @ _numpy_weight(Q).astype(np.float64).T).astype(np.float32)
    floats.assert_bits(gd.evaluate(g, [X], weights={"w": Q})[0], want, "a Q4_0 Weight")
    with Graph("k4", input_types=[TensorType(DType.uint8, list(Q.shape), CPU)]) as g, \
            pytest.raises(UnsupportedError, match="Q4_0 only"):  # fmt: skip
        ops.dequantize(QuantizationEncoding.Q4_K, g.inputs[0].tensor)
    with pytest.raises(UnsupportedError, match="not supported by graphdsl"):
        Weight("k", DType.uint8, [4], quantization_encoding=QuantizationEncoding.Q6_K)
    with Graph("bad", input_types=[TensorType(DType.uint8, [2, 20], CPU)]) as g, \
            pytest.raises(ShapeError, match="multiple of 18"):  # fmt: skip
        ops.dequantize(Q4, g.inputs[0].tensor)
