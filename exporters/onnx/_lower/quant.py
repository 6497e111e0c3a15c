"""Lowerings of the quantization ops (graphdsl.ops.quant): ONNX's QuantizeLinear and
DequantizeLinear (opset 21: per tensor, per axis, blocked) where the target has the kernel,
else composed exactly from Cast, Div, Round, Add, Clip, Sub and Mul; ``qmatmul`` is a
DequantizeLinear of the stored int8/uint8 weight, then MatMul.

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

qmatmul and onnxruntime's optimizer. The weight stays an int8/uint8 initializer and
DequantizeLinear (which onnxruntime's constant folding skips) makes its float copy per call,
then MatMul: the reference's x @ dequantize(w), within float32 summation order. With all of
onnxruntime's default optimizations a float32 DequantizeLinear + MatMul is fused into its
MatMulNBits (8 bits, the weight kept as uint8), whose default accuracy_level 4 quantizes x to
int8 per block: not the reference's product (measured: 7.4x the float32 summation bound on a
1024 x 1024 layer). ``exporters.onnx.run`` leaves that fusion out (QDQSelectorActionTransformer
in exporters/onnx/_optimizers.py); other sessions that want the fused kernel with float32
arithmetic set the session config entry ``session.qdq_matmulnbits_accuracy_level`` to "0"
(examples/int8_mlp.py measures both).
Where a bias Add follows a 2-D MatMul, onnxruntime's MatMul + Add -> Gemm fusion comes first
and the DequantizeLinear stays. Cost (1.32, one thread, a 1024 x 1024 layer): its per-axis
DequantizeLinear takes about 1.4 ms, so that layer runs in 1.5 ms at batch 1 against 59 us
with float32 weights; the fused kernel at accuracy level 0 takes as long (27 us at level 4).
MatMulInteger would quantize x (not exact); MatMulNBits is a com.microsoft operator (not
ONNX, and not checked by onnx.checker or run by its reference evaluator).
"""

from __future__ import annotations

from typing import Any

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, half_matmul, register
from exporters.onnx._lower._index import arange
from exporters.onnx._types import onnx_type, type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.shapes import Shape

# (key -> the first input's types); keys as the probe names them: the quantized dtype of
# QuantizeLinear's result, the scale's dtype of DequantizeLinear's
MEASURED_CPU: dict[str, frozenset[str]] = {
    "QuantizeLinear": frozenset({"FLOAT", "FLOAT16"}),  # x's type; int8 result
    "QuantizeLinear_uint8": frozenset({"FLOAT", "FLOAT16"}),
    "DequantizeLinear": frozenset({"INT8", "UINT8"}),  # q's type; float32 scale
    "DequantizeLinear_float16": frozenset({"INT8", "UINT8"}),
    "DequantizeLinear_bfloat16": frozenset(),
}
_Q_KEY = {T.int8: "QuantizeLinear", T.uint8: "QuantizeLinear_uint8"}
_DQ_KEY = {T.float32: "DequantizeLinear", T.float16: "DequantizeLinear_float16",
           T.bfloat16: "DequantizeLinear_bfloat16"}  # fmt: skip


def _has(b: Builder, key: str, d: DType) -> bool:
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

    def zero_point(self, b: Builder, zp: V) -> V:
        """The zero point in the scale's shape as ONNX takes it (graphdsl takes [] beside
        [1] per tensor)."""
        want = self.scale_shape
        if self.single and want not in ((), (1,)):
            want = ()
        if self.zp_shape == want:
            return zp
        return b.node("Reshape", [zp.name, b.int64s([int(d) for d in want])], zp.dtype)

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


# ---------------------------------------------------------------- quantize


@register("quantize")
def _quantize(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, scale = args[0], args[1]
    zp = args[2] if len(args) > 2 else None
    to: DType = node.attrs["dtype"]
    layout = _Layout(node, node.inputs[0].shape, 1)
    key = _Q_KEY[to]
    # float16 has its own kernel; bfloat16 runs float32's (it divides in float32 anyway)
    cd = next((c for c in (x.dtype, T.float32) if _has(b, key, c)), None)
    if layout.blocked_refused(b, quantize=True):
        cd = None
    if cd is None:
        return _quantize_composed(b, x, scale, zp, to, layout, dims)
    ins = [b.cast(x, cd).name, layout.scale(b, b.cast(scale, cd)).name]
    attrs = layout.attrs()
    if zp is None:
        attrs["output_dtype"] = onnx_type(to)
    else:
        ins.append(layout.zero_point(b, zp).name)
    return b.node("QuantizeLinear", ins, to, **attrs)


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
    return dequantized(b, args[0], args[1], args[2] if len(args) > 2 else None, layout, dims)


def dequantized(b: Builder, q: V, scale: V, zp: V | None, layout: _Layout, dims: SymbolicDims) -> V:
    """(q - zp) * scale in the scale's dtype: DequantizeLinear where the target has it for
    that scale dtype; else the float32 one on the widened scale (exact: (q - zp) has 9 bits,
    a float16 or bfloat16 scale 11 or 8, so the float32 product is exact and rounds once, in
    the Cast); else composed (Cast, Sub, Mul in float32, as exact)."""
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


# ---------------------------------------------------------------- qmatmul


@register("qmatmul")
def _qmatmul(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # the weight dequantized to x's dtype (rounded once), then matmul's lowering: float16 and
    # bfloat16 multiply in float32 (the CPU table has no narrow MatMul) and round once
    x, q, scale = args[0], args[1], args[2]
    layout = _Layout(node, node.inputs[1].shape, 2)
    w = dequantized(b, q, scale, args[3] if len(args) > 3 else None, layout, dims)
    half = half_matmul(b, x.dtype)  # export(exact=False) on CUDA: in the half type
    return b.elementwise("MatMul", [x, w], narrow_in_f32=not half)
