"""Lowerings of the quantization ops (graphdsl.ops.quant): ONNX's QuantizeLinear and
DequantizeLinear (opset 21: per tensor, per axis, blocked) where the target has the kernel,
else composed exactly from Cast, Div, Round, Add, Clip, Sub and Mul; ``qmatmul`` is a
DequantizeLinear of the stored weight, then MatMul, or under ``export(exact=False)``
onnxruntime's MatMulNBits for a 4-bit weight (below).

Measured on onnxruntime 1.32.0's CPU provider (tests/test_quant_ops.py pins each): its
QuantizeLinear divides x by the scale in float32 (float16 operands widened; x * (1 / scale)
would differ: 4956 of 200000 values for a scale of 0.3), rounds half to even, adds the zero
point, saturates, and gives the dtype's lowest value for NaN, in every layout; its
DequantizeLinear gives (q - zero_point) * scale rounded once, for float32 and float16 scales.
Neither has a bfloat16 kernel: bfloat16 runs the float32 one (the widening is exact and the
float32 results are the same). The reference computes these same steps (graphdsl.ops.quant).

Kernels. exporters/onnx/kernels/cpu.json has no entries for these ops yet (the probe,
scripts/probe_ort_kernels.py, now covers them, but has not been re-run): until it has,
``MEASURED_CPU`` below holds the pairs measured by hand on onnxruntime 1.32.0 (CPU provider,
graph optimizations off, no cast inserted by onnxruntime). A table entry, once there, takes
precedence; a target with neither (CUDA's transcribed table) gets the composed form (where
onnxruntime's constant folding then makes a float copy of a constant weight).

int4 and uint4. Inside a model they are carried in int8/uint8 (exporters/onnx/_carried.py),
so these ops take such a value as the int8/uint8 tensor holding it: the same arithmetic,
exactly. quantize to int4/uint4 is QuantizeLinear to the carrier, then a Clip to [-8, 7] or
[0, 15] (saturating twice saturates to the narrower range; NaN's lowest int8/uint8 value
clips to int4's/uint4's). A constant 4-bit operand of dequantize or qmatmul (a quantized
weight, and its zero point) is stored as an INT4/UINT4 initializer, two values a byte, and
dequantized by DequantizeLinear of that type (opset 21; ``MEASURED_CPU_4BIT``: onnxruntime
1.31 and 1.32 give (q - zero_point) * scale rounded once for float32 and float16 scales, per
tensor, per axis and blocked, bit for bit with the reference). The int8 copy the exporter
made of the constant is then dropped where nothing else reads it (in the model's main graph;
with external data its bytes stay in the data file). A 4-bit value computed in the graph,
an input or a weight stays in its carrier.

qmatmul and onnxruntime's optimizer. The weight stays an int8/uint8 (or int4/uint4)
initializer and DequantizeLinear (which onnxruntime's constant folding skips) makes its float
copy per call, then MatMul: the reference's x @ dequantize(w), within float32 summation order.
With all of onnxruntime's default optimizations a float32 DequantizeLinear + MatMul is fused
into its MatMulNBits (the weight kept narrow), whose default accuracy_level 4 quantizes x to
int8 per block: not the reference's product (measured: 7.4x the float32 summation bound on a
1024 x 1024 layer). ``exporters.onnx.run`` leaves that fusion out (QDQSelectorActionTransformer
in exporters/onnx/_optimizers.py) and lets constant folding dequantize constant weights once
at load (float32 in memory: _optimizers.session_config); other sessions that want the fused
kernel with float32 arithmetic set the session config entry
``session.qdq_matmulnbits_accuracy_level`` to "0" (examples/int8_mlp.py measures both).
Where a bias Add follows a 2-D MatMul, onnxruntime's MatMul + Add -> Gemm fusion comes first
and the DequantizeLinear stays. Cost (1.32, one thread, a 1024 x 1024 layer): its per-axis
DequantizeLinear takes about 1.4 ms, so that layer runs in 1.5 ms at batch 1 against 59 us
with float32 weights; the fused kernel at accuracy level 0 takes as long (27 us at level 4).
MatMulInteger would quantize x (not exact).

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

from typing import Any

import numpy as np
from onnx import TensorProto, helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._carried import CARRIER
from exporters.onnx._lower._common import SymbolicDims, T, half_matmul, register
from exporters.onnx._lower._index import arange
from exporters.onnx._lower.control import DOMAIN, FUNCTIONS, Functions
from exporters.onnx._types import onnx_type, type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.shapes import Shape

__all__ = [
    "MEASURED_CPU",
    "MEASURED_CPU_4BIT",
    "NBITS_ACCURACY_LEVELS",
    "NBITS_BLOCK_SIZES",
    "dequantized",
]

# (key -> the first input's types); keys as the probe names them: the quantized dtype of
# QuantizeLinear's result, the scale's dtype of DequantizeLinear's
MEASURED_CPU: dict[str, frozenset[str]] = {
    "QuantizeLinear": frozenset({"FLOAT", "FLOAT16"}),  # x's type; int8 result
    "QuantizeLinear_uint8": frozenset({"FLOAT", "FLOAT16"}),
    "DequantizeLinear": frozenset({"INT8", "UINT8"}),  # q's type; float32 scale
    "DequantizeLinear_float16": frozenset({"INT8", "UINT8"}),
    "DequantizeLinear_bfloat16": frozenset(),
}
# DequantizeLinear of stored INT4/UINT4 tensors (the probe knows 4-bit values only in their
# carriers), measured by hand on onnxruntime 1.31.0 and 1.32.0's CPU provider
MEASURED_CPU_4BIT: dict[str, frozenset[str]] = {
    "DequantizeLinear": frozenset({"INT4", "UINT4"}),
    "DequantizeLinear_float16": frozenset({"INT4", "UINT4"}),
    "DequantizeLinear_bfloat16": frozenset(),
}
_Q_KEY = {T.int8: "QuantizeLinear", T.uint8: "QuantizeLinear_uint8"}
_DQ_KEY = {T.float32: "DequantizeLinear", T.float16: "DequantizeLinear_float16",
           T.bfloat16: "DequantizeLinear_bfloat16"}  # fmt: skip
FOUR_BIT = (T.int4, T.uint4)
_ONNX_4BIT = {T.int4: TensorProto.INT4, T.uint4: TensorProto.UINT4}
NBITS_BLOCK_SIZES = (16, 32, 64, 128, 256)
NBITS_ACCURACY_LEVELS = (0, 1, 4)  # the levels the module's doc bounds


def _has(b: Builder, key: str, d: DType) -> bool:
    if d in FOUR_BIT:  # a stored INT4/UINT4 tensor
        name = TensorProto.DataType.Name(_ONNX_4BIT[d])
        return b.target.name == "cpu" and name in MEASURED_CPU_4BIT.get(key, frozenset())
    kernels = b.target.kernels.get(key)
    if kernels is not None:
        return type_name(d) in kernels
    return b.target.name == "cpu" and type_name(d) in MEASURED_CPU.get(key, frozenset())


def _constant(node: Symbol, at: int) -> np.ndarray | None:
    """The value of ``node``'s operand ``at`` where it is a constant (None if it has none)."""
    if at >= len(node.inputs) or node.inputs[at].op != "constant":
        return None
    return np.asarray(node.inputs[at].attrs["value"])


class _Layout:
    """Where a node's scale and zero point sit against its quantized value (of ``shape``)."""

    def __init__(self, node: Symbol, shape: Shape, scale_at: int) -> None:
        self.shape = shape
        self.axis: int | None = node.attrs["axis"]
        self.block: int | None = node.attrs.get("block_size")
        self.scale_shape = node.inputs[scale_at].shape
        zp = node.inputs[scale_at + 1] if len(node.inputs) > scale_at + 1 else None
        self.zp_shape = None if zp is None else zp.shape
        # one scale for every element (per channel or in blocks of an axis of size 1 too):
        # onnxruntime takes a one-element scale as per tensor, and then refuses a block_size
        # ("block_size must be 0 for per-tensor quantization", measured)
        self.single = all(d == 1 for d in self.scale_shape)

    def blocked_refused(self, b: Builder, quantize: bool = False) -> bool:
        """Is this a blocked layout that the target's kernels refuse (CUDA's: 'Unsupported
        quantization type', CUDA_QUIRKS) or, for ``quantize``, get wrong (onnxruntime 1.31's
        CPU kernel sends NaN to the highest value: _targets.CPU_QUIRKS_BEFORE)?"""
        blocked = self.axis is not None and not self.single and self.block is not None
        wrong = quantize and b.target.quirk("blocked_quantize_nan")
        return blocked and (b.target.quirk("blocked_quantization") or wrong)

    def attrs(self) -> dict[str, Any]:
        """QuantizeLinear's and DequantizeLinear's attributes (ONNX's axis defaults to 1)."""
        if self.axis is None or self.single:
            return {}
        if self.block is None:
            return {"axis": self.axis}
        return {"axis": self.axis, "block_size": self.block}

    def scale(self, b: Builder, scale: V) -> V:
        """The scale as ONNX takes it: one element per tensor is a scalar or [1]."""
        if self.single and self.scale_shape not in ((), (1,)):
            return b.node("Reshape", [scale.name, b.int64s([])], scale.dtype)
        return scale

    def zero_point_shape(self) -> tuple[int, ...]:
        """The zero point's shape as ONNX takes it: the scale's (graphdsl takes [] beside
        [1] per tensor, and one element in any shape for one scale)."""
        want = self.scale_shape
        if self.single and want not in ((), (1,)):
            want = ()
        return tuple(int(d) for d in want)

    def zero_point(self, b: Builder, zp: V) -> V:
        """The zero point in the shape ONNX takes (:meth:`zero_point_shape`)."""
        want = self.zero_point_shape()
        if self.zp_shape == want:
            return zp
        return b.node("Reshape", [zp.name, b.int64s(want)], zp.dtype)

    def aligned(self, b: Builder, v: V, dims: SymbolicDims) -> V:
        """A scale or zero point ``v`` made to broadcast against the value (for the composed
        forms): as is per tensor (a [1] against a scalar value made [] too), [n, 1, ..., 1]
        per axis, and per block each block's entry gathered for every index of the axis."""
        rank = len(self.shape)
        if self.axis is None:  # a scalar value: a [1] scale or zero point made [] too
            if rank == 0:
                return b.node("Reshape", [v.name, b.int64s([])], v.dtype)
            return v
        if self.block is None:
            if self.axis == rank - 1:
                return v
            target = (self.shape[self.axis], *(1,) * (rank - self.axis - 1))
            return b.node("Reshape", [v.name, dims.shape_tensor(target)], v.dtype)
        n = int(self.shape[self.axis])  # each index's block, i // block, in the model
        index = b.node("Div", [arange(b, n).name, b.scalar(self.block, T.int64).name], T.int64)
        return b.node("Gather", [v.name, index.name], v.dtype, axis=self.axis)


def _carried(v: V) -> V:
    """A 4-bit value as the int8/uint8 tensor that carries it (the same values)."""
    return V(v.name, CARRIER[v.dtype]) if v.dtype in FOUR_BIT else v


# ---------------------------------------------------------------- quantize


@register("quantize")
def _quantize(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, scale = args[0], args[1]
    zp = args[2] if len(args) > 2 else None
    to: DType = node.attrs["dtype"]
    layout = _Layout(node, node.inputs[0].shape, 1)
    carrier = CARRIER.get(to, to)  # int4/uint4: to int8/uint8, then clipped
    key = _Q_KEY[carrier]
    # float16 has its own kernel; bfloat16 runs float32's (it divides in float32 anyway)
    cd = next((c for c in (x.dtype, T.float32) if _has(b, key, c)), None)
    if layout.blocked_refused(b, quantize=True):
        cd = None
    if cd is None:
        return _quantize_composed(b, x, scale, zp, to, layout, dims)
    ins = [b.cast(x, cd).name, layout.scale(b, b.cast(scale, cd)).name]
    attrs = layout.attrs()
    if zp is None:
        attrs["output_dtype"] = onnx_type(carrier)
    else:
        ins.append(layout.zero_point(b, _carried(zp)).name)
    q = b.node("QuantizeLinear", ins, carrier, **attrs)
    if carrier is to:
        return q
    low, high = b.scalar(to.min, carrier), b.scalar(to.max, carrier)
    return V(b.elementwise("Clip", [q, low, high]).name, to)


def _quantize_composed(
    b: Builder, x: V, scale: V, zp: V | None, to: DType, layout: _Layout, dims: SymbolicDims
) -> V:
    """The reference's steps in float32: Div (correctly rounded, as the kernel divides),
    Round (half to even), the zero point added, Clip to the dtype's range; the Cast of those
    integers is exact, but that of NaN is not (onnxruntime gives 0): NaN takes the lowest
    value, as the kernel gives it."""
    f = T.float32
    v = b.elementwise("Div", [b.cast(x, f), layout.aligned(b, b.cast(scale, f), dims)])
    v = b.elementwise("Round", [v])
    if zp is not None:
        v = b.elementwise("Add", [v, layout.aligned(b, b.cast(zp, f), dims)])
    v = b.elementwise("Clip", [v, b.scalar(to.min, f), b.scalar(to.max, f)])
    nan = b.elementwise("IsNaN", [v], result_bool=True)
    return b.select(nan, b.scalar(to.min, to), b.cast(v, to))


# ---------------------------------------------------------------- dequantize


@register("dequantize")
def _dequantize(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    layout = _Layout(node, node.inputs[0].shape, 1)
    zp = args[2] if len(args) > 2 else None
    return dequantized(b, args[0], args[1], zp, layout, dims, node, 0)


def dequantized(
    b: Builder, q: V, scale: V, zp: V | None, layout: _Layout, dims: SymbolicDims,
    node: Symbol | None = None, q_at: int = 0,
) -> V:  # fmt: skip
    """(q - zp) * scale in the scale's dtype: DequantizeLinear where the target has it for
    that scale dtype; else the float32 one on the widened scale (exact: (q - zp) has 9 bits,
    a float16 or bfloat16 scale 11 or 8, so the float32 product is exact and rounds once, in
    the Cast); else composed (Cast, Sub, Mul in float32, as exact). A 4-bit q: stored as
    INT4/UINT4 where ``node``'s operand ``q_at`` is a constant (:func:`_dequantize_stored`),
    else taken in its int8/uint8 carrier."""
    if q.dtype in FOUR_BIT:
        if node is not None:
            stored = _dequantize_stored(b, node, q_at, scale, layout)
            if stored is not None:
                return stored
        q, zp = _carried(q), None if zp is None else _carried(zp)
    out = scale.dtype
    native = _DQ_KEY[out] if _has(b, _DQ_KEY[out], q.dtype) else None
    if layout.blocked_refused(b):
        native = None
    elif native is None and _has(b, "DequantizeLinear", q.dtype):
        native, scale = "DequantizeLinear", b.cast(scale, T.float32)
    if native is not None:
        ins = [q.name, layout.scale(b, scale).name]
        if zp is not None:
            ins.append(layout.zero_point(b, zp).name)
        return b.cast(b.node("DequantizeLinear", ins, scale.dtype, **layout.attrs()), out)
    f = T.float32
    v = b.cast(q, f)
    if zp is not None:
        v = b.elementwise("Sub", [v, layout.aligned(b, b.cast(zp, f), dims)])
    v = b.elementwise("Mul", [v, layout.aligned(b, b.cast(scale, f), dims)])
    return b.cast(v, out)


def _dequantize_stored(b: Builder, node: Symbol, q_at: int, scale: V, layout: _Layout) -> V | None:
    """DequantizeLinear of INT4/UINT4 initializers holding ``node``'s constant 4-bit operand
    ``q_at`` and its zero point (operand ``q_at + 2``, if any), where the target has the
    kernel (the scale's dtype's, or float32's on the widened scale: exact, as above); None
    where an operand is not a constant, or the opset is below 21 (INT4's)."""
    d, out = node.inputs[q_at].dtype, scale.dtype
    q, zp = _constant(node, q_at), _constant(node, q_at + 2)
    functions: Functions | None = b.memo.get(FUNCTIONS)
    if q is None or (len(node.inputs) > q_at + 2 and zp is None) or layout.blocked_refused(b):
        return None
    if functions is None or functions.opset < 21:
        return None
    if _has(b, _DQ_KEY[out], d):
        s = scale
    elif _has(b, "DequantizeLinear", d):
        s = b.cast(scale, T.float32)
    else:
        return None
    ins = [_initializer_4bit(b, node.inputs[q_at], q, q.shape), layout.scale(b, s).name]
    if zp is not None:
        ins.append(_initializer_4bit(b, node.inputs[q_at + 2], zp, layout.zero_point_shape()))
    b.bypassed = True  # (the int8 copies of the constants: dropped where nothing reads them)
    return b.cast(b.node("DequantizeLinear", ins, s.dtype, **layout.attrs()), out)


def _initializer_4bit(b: Builder, s: Symbol, value: np.ndarray, shape: tuple[int, ...]) -> str:
    """The INT4/UINT4 initializer of constant ``s`` (of ``value``, in ``shape``): two values
    a byte, the first in the low four bits (ONNX's packing); one per constant and shape."""
    key = ("4-bit initializer", id(s), shape)
    name: str | None = b.memo.get(key)
    if name is not None:
        return name
    d = s.dtype
    codes = value.astype(d.np).astype(np.int8).reshape(-1).view(np.uint8) & 0x0F
    packed = _packed(codes)
    name = b.fresh("const4")
    if b.external is not None and packed.nbytes >= 1024:
        t = b.external.tensor(packed, T.uint8, name)  # its bytes to the data file
        del t.dims[:]
    else:
        t = TensorProto()
        t.name = name
        t.raw_data = packed.tobytes()
    t.data_type = _ONNX_4BIT[d]
    t.dims.extend(shape)
    b.initializers.add().CopyFrom(t)
    b.memo[key] = name
    return name


def _packed(codes: np.ndarray) -> np.ndarray:
    """4-bit codes (0..15) two to a byte along the last axis, the first in the low four bits
    (an odd count padded with 0)."""
    if codes.shape[-1] % 2:
        pad = np.zeros((*codes.shape[:-1], 1), codes.dtype)
        codes = np.concatenate([codes, pad], axis=-1)
    low, high = codes[..., 0::2].astype(np.uint8), codes[..., 1::2].astype(np.uint8)
    return np.asarray(low | (high << 4), np.uint8)


# ---------------------------------------------------------------- qmatmul


@register("qmatmul")
def _qmatmul(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # the weight dequantized to x's dtype (rounded once), then matmul's lowering: float16 and
    # bfloat16 multiply in float32 (the CPU table has no narrow MatMul) and round once
    x, q, scale = args[0], args[1], args[2]
    layout = _Layout(node, node.inputs[1].shape, 2)
    if not b.exact:
        fused = _matmul_nbits(b, node, x, scale, layout)
        if fused is not None:
            return fused
    w = dequantized(b, q, scale, args[3] if len(args) > 3 else None, layout, dims, node, 1)
    half = half_matmul(b, x.dtype)  # export(exact=False) on CUDA: in the half type
    return b.elementwise("MatMul", [x, w], narrow_in_f32=not half)


def _matmul_nbits(b: Builder, node: Symbol, x: V, scale: V, layout: _Layout) -> V | None:
    """onnxruntime's MatMulNBits for a constant 4-bit weight in blocks of K, x float32 or
    float16, on the CPU target (the module's doc); None for every other qmatmul."""
    d = node.inputs[1].dtype
    if d not in FOUR_BIT or layout.axis != 0 or layout.block is None:
        return None
    if b.target.name != "cpu" or x.dtype not in (T.float32, T.float16):
        return None
    q, zp = _constant(node, 1), _constant(node, 3)
    if q is None or (len(node.inputs) > 3 and zp is None) or q.size == 0:
        return None
    size = layout.block
    if size not in NBITS_BLOCK_SIZES:
        raise b.fail(
            f"export(exact=False) makes a 4-bit weight in blocks of K onnxruntime's "
            f"MatMulNBits, which takes a block_size of 16, 32, 64, 128 or 256 (powers of two), "
            f"not {size}",
            "quantize the weight in blocks of one of those (gd.ops.quantize_weights(w, "
            "block_size=32)), or export with exact=True (DequantizeLinear + MatMul)",
        )
    k, n = (int(v) for v in node.inputs[1].shape)
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
           _nbits_scales(b, node, scale, blocks, n).name]  # fmt: skip
    if zcodes is not None:
        ins.append(b.const(_packed(zcodes.T).reshape(-1), T.uint8, "nbits_zero_points").name)
    name = _nbits_function(b, k, n, size, b.accuracy_level, zcodes is not None)
    out = b.node(name, ins, x.dtype, "matmul_nbits")
    b.nodes[-1].domain = DOMAIN
    return out


def _nbits_scales(b: Builder, node: Symbol, scale: V, blocks: int, n: int) -> V:
    """The [n_blocks, N] scale as MatMulNBits takes it: [N * n_blocks], N major."""
    value = _constant(node, 2)
    if value is not None:
        flat = np.ascontiguousarray(value.reshape(blocks, n).T).reshape(-1)
        return b.const(flat, scale.dtype, "nbits_scales")
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
    if any(p.name == name for p in functions.protos):
        return name
    nbits = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=k, N=n,
                             bits=4, block_size=size, accuracy_level=level)  # fmt: skip
    what = ("float32 arithmetic, within floats.dot_bound(M, K + 2) + E" if level in (0, 1)
            else "x quantized to int8 per block, within floats.dot_bound(M, 2 K + 5) + "
            "(1 + γ_{2K+3}) Q + E")  # fmt: skip
    doc = (f"graphdsl qmatmul under export(exact=False): x @ ((q - zero_point) * scale) by "
           f"onnxruntime's com.microsoft MatMulNBits, a 4-bit [{k}, {n}] weight in blocks of "
           f"{size} along K, accuracy_level {level}: {what} of the reference "
           "(exporters/onnx/_lower/quant.py states M, Q, E and the derivation)")  # fmt: skip
    functions.protos.append(helper.make_function(
        DOMAIN, name, inputs, ["Y"], [nbits],
        opset_imports=[helper.make_opsetid("com.microsoft", 1)], doc_string=doc,
    ))  # fmt: skip
    return name
