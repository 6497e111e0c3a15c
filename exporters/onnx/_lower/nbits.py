"""onnxruntime's ``MatMulNBits`` (com.microsoft) for ``qmatmul`` under ``export(exact=False)``
(exporters/onnx/_lower/quant.py lowers every other qmatmul, and asks this module first).

MatMulNBits, ``export(exact=False)``. A qmatmul whose weight is a 4-bit constant quantized
in blocks of K (``axis=0``, ``block_size`` 16, 32, 64, 128 or 256: powers of two, all that
onnxruntime 1.31 takes; any other block size is an ExportError), x float32 or float16, on the
CPU target, becomes com.microsoft's MatMulNBits (bits=4): the weight packed as uint8
[N, n_blocks, block_size / 2] (each value's unsigned code, int4's plus 8, two to a byte along
K, the first in the low four bits; the last block padded with its zero point's code), the
scales transposed to [N * n_blocks] in x's dtype, and the zero points' codes packed the same
way to [N * ceil(n_blocks / 2)] (int4 without a zero point: none, MatMulNBits' default code 8
stands for 0; uint4 without one: codes 0). It keeps the weight at 4 bits at run time
(benchmarks/int4_matmul.py measures it). Every other qmatmul keeps the exact lowering under
exact=False (8-bit weights, other layouts, a weight computed in the graph, bfloat16, other
targets). The node sits in a model-local function named ``com.microsoft.MatMulNBits...``
(domain graphdsl.local; its doc_string states the bound below), so that its opset import
reaches the node wherever the qmatmul is: in the main graph, a branch, a loop body or a
called subgraph's function; onnxruntime inlines it when it loads the model.

Its accuracy_level is export()'s ``accuracy_level`` (0, 1 or 4). The bounds, per output
element, against the reference (x @ w with w = (q - zero_point) * scale rounded to x's
dtype, summed in float32), with K terms, codes c (of q) and z (of the zero point) in
[0, 15], scales s, M = sum_k |x_k| |s_k| (c_k + z_k), u the unit roundoff of float32
(2**-24), u_x that of x's dtype, s_x its smallest subnormal and γ_n = n u / (1 - n u)
(tests/floats.py):

- level 0 (and 1): onnxruntime dequantizes each weight in float32 (at most two roundings of
  terms of at most |s| (c + z)) and sums in float32; float16 x is converted to float32
  (onnxruntime's CPU provider does so but on ARM64): within γ_{K+2} M of the exact sum.
  The reference is within γ_K M + u_x (1 + γ_K) M + (1 + γ_K) s_x / 2 sum_k |x_k| of it (its
  float32 sum, and its rounding of each weight to x's dtype). Together:
  ``floats.dot_bound(M, K + 2)`` (2 γ_{K+2} M, and the rounding of both results to x's
  dtype) plus E = u_x (1 + γ_K) M + (1 + γ_K) s_x / 2 sum_k |x_k|.
- level 4: x is quantized to int8 per block of ``block_size`` along K (MLAS: scale m / 127
  for the block's largest |x|, m, rounded to nearest), which moves each x_k by at most
  γ_3 |x_k| + (1 + u) m / 254; the integer sums are exact and the rest is float32 arithmetic
  on at most 2 K terms of three factors: within γ_{2K+5} M + (1 + γ_{2K+3}) Q of the exact
  sum, where Q = sum_k |s_k| (c_k + z_k) m_k / 254 and m_k is the largest |x| of k's block
  (for block maxima above 2**-119: no underflow in the activation scales). Together with
  the reference's distance: ``floats.dot_bound(M, 2 K + 5)`` plus (1 + γ_{2K+3}) Q + E.
  Q is the int8 rounding of x, about 1 / 254 of the block's largest |x| per term: far above
  float32's rounding (measured on random layers: the largest errors are 1 to 3 % of it).
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import TYPED, T
from exporters.onnx._lower.control import DOMAIN, FUNCTIONS, Functions
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol

__all__ = ["FOUR_BIT", "NBITS_ACCURACY_LEVELS", "NBITS_BLOCK_SIZES", "matmul_nbits",
           "nbits_product"]

FOUR_BIT = (T.int4, T.uint4)
NBITS_BLOCK_SIZES = (16, 32, 64, 128, 256)
NBITS_ACCURACY_LEVELS = (0, 1, 4)  # the levels the module's doc bounds


def _constant(node: Symbol, at: int) -> np.ndarray | None:
    """The value of ``node``'s operand ``at`` where it is a constant (None if it has none)."""
    if at >= len(node.inputs) or node.inputs[at].op != "constant":
        return None
    return np.asarray(node.inputs[at].attrs["value"])


def _packed(codes: np.ndarray) -> np.ndarray:
    """4-bit codes (0..15) two to a byte along the last axis, the first in the low four bits
    (an odd count padded with 0)."""
    if codes.shape[-1] % 2:
        pad = np.zeros((*codes.shape[:-1], 1), codes.dtype)
        codes = np.concatenate([codes, pad], axis=-1)
    low, high = codes[..., 0::2].astype(np.uint8), codes[..., 1::2].astype(np.uint8)
    return np.asarray(low | (high << 4), np.uint8)


def matmul_nbits(
    b: Builder, node: Symbol, x: V, scale: V, axis: int | None, block: int | None
) -> V | None:
    """onnxruntime's MatMulNBits for a constant 4-bit weight in blocks of K, x float32 or
    float16, on the CPU target (the module's doc); None for every other qmatmul."""
    d = node.inputs[1].dtype
    if d not in FOUR_BIT or axis != 0 or block is None:
        return None
    if b.target.name != "cpu" or x.dtype not in (T.float32, T.float16):
        return None
    q, zp = _constant(node, 1), _constant(node, 3)
    if q is None or (len(node.inputs) > 3 and zp is None) or q.size == 0:
        return None
    size = block
    if size not in NBITS_BLOCK_SIZES:
        raise b.fail(
            f"export(exact=False) makes a 4-bit weight in blocks of K onnxruntime's "
            f"MatMulNBits, which takes a block_size of 16, 32, 64, 128 or 256 (powers of two), "
            f"not {size}",
            "quantize the weight in blocks of one of those (gd.ops.quantize_weights(w, "
            "block_size=32)), or export with exact=True (DequantizeLinear + MatMul)",
        )
    scale_value = _constant(node, 2)
    value = scale if scale_value is None else scale_value
    out = nbits_product(b, x, q, zp, value, d, size, scale.dtype)
    if out.dtype is node.dtype:  # its type, for onnx's inference (exporters/onnx/_export.py)
        b.memo.setdefault(TYPED, []).append((out.name, node))
    return out


def nbits_product(b: Builder, x: V, q: np.ndarray, zp: np.ndarray | None,
                  scale: V | np.ndarray, d: DType, size: int, scale_dtype: DType) -> V:  # fmt: skip
    """x @ ((q - zp) * scale) as one MatMulNBits call: ``q`` the [K, N] codes of ``d`` (int4
    or uint4), ``zp`` None or its [n_blocks, N] (or flat) zero points, ``scale`` the
    [n_blocks, N] scales of ``scale_dtype`` (a value, or the data of a constant)."""
    k, n = (int(v) for v in q.shape)
    blocks = -(-k // size)
    offset = 8 if d is T.int4 else 0  # MatMulNBits' codes are unsigned: int4's plus 8
    codes = q.astype(np.int16) + offset  # [K, N]
    zcodes = None if zp is None else zp.reshape(blocks, n).astype(np.int16) + offset
    if zcodes is None and d is T.uint4:  # (MatMulNBits' default zero point is code 8)
        zcodes = np.zeros((blocks, n), np.int16)
    padded = np.empty((blocks * size, n), np.int16)
    padded[:k] = codes
    padded[k:] = 8 if zcodes is None else zcodes[-1]  # (the last block's padding: zeros)
    weight = _packed(padded.T.reshape(n, blocks, size))  # [N, n_blocks, block_size / 2]
    ins = [x.name, b.const(weight, T.uint8, "nbits_weight").name,
           _nbits_scales(b, scale, scale_dtype, blocks, n).name]  # fmt: skip
    if zcodes is not None:
        ins.append(b.const(_packed(zcodes.T).reshape(-1), T.uint8, "nbits_zero_points").name)
    name = _nbits_function(b, k, n, size, b.accuracy_level, zcodes is not None)
    out = b.node(name, ins, x.dtype, "matmul_nbits")
    b.nodes[-1].domain = DOMAIN
    return out


def _nbits_scales(b: Builder, scale: V | np.ndarray, dt: DType, blocks: int, n: int) -> V:
    """The [n_blocks, N] scale as MatMulNBits takes it: [N * n_blocks], N major."""
    if isinstance(scale, np.ndarray):
        flat = np.ascontiguousarray(scale.reshape(blocks, n).T).reshape(-1)
        return b.const(flat, dt, "nbits_scales")
    t = b.node("Transpose", [scale.name], scale.dtype, perm=[1, 0])
    return b.node("Reshape", [t.name, b.int64s([-1])], scale.dtype)


def _nbits_function(b: Builder, k: int, n: int, size: int, level: int, zero_points: bool) -> str:
    """The model-local function (domain graphdsl.local) holding one MatMulNBits node of
    these attributes, made once: its opset import of com.microsoft goes with the node into
    any graph or function that calls it (the module's doc)."""
    functions: Functions = b.memo[FUNCTIONS]
    name = f"com.microsoft.MatMulNBits.K{k}.N{n}.block{size}.level{level}"
    inputs = ["A", "B", "scales"]
    if zero_points:
        name += ".zero_points"
        inputs.append("zero_points")
    nbits = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=k, N=n,
                             bits=4, block_size=size, accuracy_level=level)  # fmt: skip
    what = ("float32 arithmetic, within floats.dot_bound(M, K + 2) + E" if level in (0, 1)
            else "x quantized to int8 per block, within floats.dot_bound(M, 2 K + 5) + "
            "(1 + γ_{2K+3}) Q + E")  # fmt: skip
    doc = (f"graphdsl qmatmul under export(exact=False): x @ ((q - zero_point) * scale) by "
           f"onnxruntime's com.microsoft MatMulNBits, a 4-bit [{k}, {n}] weight in blocks of "
           f"{size} along K, accuracy_level {level}: {what} of the reference "
           "(exporters/onnx/_lower/nbits.py states M, Q, E and the derivation)")  # fmt: skip
    return functions.contrib(name, inputs, ["Y"], nbits, doc)
