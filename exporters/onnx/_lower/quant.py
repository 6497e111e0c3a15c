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

MatMulNBits under ``export(exact=False)``: exporters/onnx/_lower/nbits.py (its bounds too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from exporters.onnx._builder import Builder, V
from exporters.onnx._carried import CARRIER
from exporters.onnx._lower._common import SymbolicDims, T, half_matmul, register
from exporters.onnx._lower._index import arange
from exporters.onnx._lower.control import FUNCTIONS, Functions
from exporters.onnx._lower.nbits import FOUR_BIT, _constant, _packed, matmul_nbits
from exporters.onnx._types import onnx_type, type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.shapes import Shape

__all__ = ["MEASURED_CPU", "MEASURED_CPU_4BIT", "dequantized"]

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
_ONNX_4BIT = {T.int4: TensorProto.INT4, T.uint4: TensorProto.UINT4}


def _has(b: Builder, key: str, d: DType) -> bool:
    if d in FOUR_BIT:  # a stored INT4/UINT4 tensor
        name = TensorProto.DataType.Name(_ONNX_4BIT[d])
        return b.target.name == "cpu" and name in MEASURED_CPU_4BIT.get(key, frozenset())
    kernels = b.target.kernels.get(key)
    if kernels is not None:
        return type_name(d) in kernels
    return b.target.name == "cpu" and type_name(d) in MEASURED_CPU.get(key, frozenset())


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


# ---------------------------------------------------------------- qmatmul


@register("qmatmul")
def _qmatmul(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # the weight dequantized to x's dtype (rounded once), then matmul's lowering: float16 and
    # bfloat16 multiply in float32 (the CPU table has no narrow MatMul) and round once
    x, q, scale = args[0], args[1], args[2]
    layout = _Layout(node, node.inputs[1].shape, 2)
    if not b.exact:
        fused = matmul_nbits(b, node, x, scale, layout.axis, layout.block)
        if fused is not None:
            return fused
    w = dequantized(b, q, scale, args[3] if len(args) > 3 else None, layout, dims, node, 1)
    half = half_matmul(b, x.dtype)  # export(exact=False) on CUDA: in the half type
    return b.elementwise("MatMul", [x, w], narrow_in_f32=not half)
