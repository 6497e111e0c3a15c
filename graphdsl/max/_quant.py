"""MAX's GGUF-quantized ops, ``dequantize`` and ``qmatmul``, for the ``Q4_0`` encoding
(graphdsl/max/quantization.py states its layout).

``dequantize`` is composed of graphdsl's integer ops: each block's float16 scale from its two
bytes (sign, exponent from a table of powers of two, mantissa), the codes from the low and high
four bits; every step exact, so the result equals max 26.7's ``dequantize`` bit for bit.

``qmatmul(encoding, None, lhs, rhs)`` is ``lhs @ dequantize(rhs).T`` (rhs holds the N output
rows, each K values in blocks along K). Where rhs is a constant, it becomes graphdsl's
``qmatmul`` of an int4 weight in blocks of 32 along K with float16 scales, which
``export(exact=False)`` makes onnxruntime's MatMulNBits (the weight at 4 bits at run time);
elsewhere the dequantized weight is computed in the graph. graphdsl computes the product of
the float values (within a float32 matmul's bound); MAX's kernel first rounds lhs to 8 bits per
block (as llama.cpp's Q8_0), which moves a result by up to about |lhs| |w| / 254 per term
(measured: 0.84 on results of size 360), as MatMulNBits' ``accuracy_level=4`` does.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

import graphdsl.ops as gd
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.max._common import _value
from graphdsl.max._errors import UnsupportedError
from graphdsl.max._value import TensorValue, maxop
from graphdsl.max._value import tv as _tv
from graphdsl.max.quantization import QuantizationConfig, QuantizationEncoding
from graphdsl.shapes import ShapeError

__all__ = ["decode_q4_0", "dequantize", "qmatmul"]

_BLOCK, _BYTES = 32, 18


def _q4_0(encoding: Any, what: str) -> None:
    if encoding is not QuantizationEncoding.Q4_0:
        raise UnsupportedError(
            f"{what} with encoding {encoding!r}: graphdsl implements Q4_0 only (of MAX's "
            f"{[e.value for e in QuantizationEncoding]}); dequantize the weight to float32 "
            "first (with gguf's own tools) or quantize it as Q4_0"
        )


def _blocks(q: Symbol, what: str) -> int:
    """The number of Q4_0 blocks in each row of ``q`` (uint8, static last axis of 18 n)."""
    last = q.shape[-1] if q.rank else None
    if q.dtype is not DType.uint8 or not isinstance(last, int) or last % _BYTES:
        raise ShapeError(
            f"{what}: a Q4_0 tensor is uint8 with a static last dimension that is a multiple "
            f"of {_BYTES} (the bytes of a block of {_BLOCK} values), got {q.type}"
        )
    return last // _BYTES


def decode_q4_0(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A Q4_0 array (..., 18 n) as (codes - 8, int8 (..., 32 n); scales, float16 (..., n))."""
    b = np.ascontiguousarray(q, np.uint8).reshape(*q.shape[:-1], -1, _BYTES)
    scales = b[..., :2].copy().view(np.float16)[..., 0]
    codes = b[..., 2:]
    values = np.concatenate([codes & 0xF, codes >> 4], axis=-1).astype(np.int8) - 8
    return values.reshape(*q.shape[:-1], -1), scales


# 2 ** (e - 25) for a float16 exponent field e (e = 0: the subnormals' 2 ** -24)
_POWERS = np.array([2.0**-24] + [2.0 ** (e - 25) for e in range(1, 32)], np.float32)


def _dequantize(q: Symbol) -> Symbol:
    n = _blocks(q, "dequantize")
    lead = tuple(q.shape[:-1])
    b = gd.cast(gd.reshape(q, (*lead, n, _BYTES)), DType.int32)
    bits = b[..., 0:1] + b[..., 1:2] * 256  # the scale's float16 bits, (..., n, 1)
    sign, exponent, mantissa = bits // 32768, (bits // 1024) % 32, bits % 1024
    power = gd.gather(q.graph.constant(_POWERS), exponent, axis=0)
    normal = gd.cast(gd.where(exponent == 0, mantissa, mantissa + 1024), DType.float32) * power
    special = gd.where(mantissa == 0, np.float32(np.inf), np.float32(np.nan))
    magnitude = gd.where(exponent == 31, special, normal)
    scale = gd.where(sign == 1, -magnitude, magnitude)
    codes = b[..., 2:]
    values = gd.concat([codes % 16, codes // 16], axis=-1) - 8  # (..., n, 32)
    return gd.reshape(gd.cast(values, DType.float32) * scale, (*lead, n * _BLOCK))


@maxop("dequantize")
def dequantize(encoding: QuantizationEncoding, quantized: TensorValue) -> TensorValue:
    """The float32 values of a Q4_0 tensor (``(..., 18 n)`` uint8 to ``(..., 32 n)``)."""
    _q4_0(encoding, "dequantize")
    return _tv(_dequantize(_value(quantized, "dequantize")))


@maxop("qmatmul")
def qmatmul(
    encoding: QuantizationEncoding,
    config: QuantizationConfig | None,
    lhs: TensorValue,
    *rhs: TensorValue,
) -> TensorValue:
    """``lhs @ dequantize(rhs).T`` for a Q4_0 ``rhs`` ``(N, 18 K / 32)`` (the module's doc)."""
    _q4_0(encoding, "qmatmul")
    if config is not None or len(rhs) != 1:
        raise UnsupportedError(
            "qmatmul(Q4_0, ...) takes config=None and one quantized right-hand side, got "
            f"config={config!r} and {len(rhs)} of them"
        )
    x, w = _value(lhs, "qmatmul"), _value(rhs[0], "qmatmul")
    n = _blocks(w, "qmatmul")
    if w.rank != 2 or x.rank < 1 or x.shape[-1] != n * _BLOCK:
        raise ShapeError(
            f"qmatmul: rhs must be 2-D (N, 18 * K / 32) with K = lhs's last dimension, got "
            f"lhs {x.type} and rhs {w.type} ({n * _BLOCK} values per row)"
        )
    if w.op == "constant":  # a 4-bit weight in blocks of K: MatMulNBits under exact=False
        values, scales = decode_q4_0(np.asarray(w.attrs["value"]))
        weight = np.ascontiguousarray(values.T).astype(ml_dtypes.int4)  # (K, N)
        return _tv(gd.qmatmul(x, weight, np.ascontiguousarray(scales.T), axis=0,
                              block_size=_BLOCK))  # fmt: skip
    return _tv(gd.matmul(x, gd.transpose(_dequantize(w))))
