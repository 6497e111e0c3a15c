"""Per-target kernel capability tables: which (ONNX op, element type) pairs have kernels."""

from __future__ import annotations

from dataclasses import dataclass, field

from exporters.onnx._kernels import load_kernels

__all__ = ["ROUNDS_ONCE", "TARGETS", "Target"]

# Ops every provider has for int64 shape data and control flow: assumed where a table does
# not list them (the CPU table measures Shape, Gather and Slice per element type; the CUDA
# table lists all seven from onnxruntime's documentation). If and Loop move values of every
# type (tests/test_control_flow.py runs them on each on the CPU)
_STRUCTURAL = frozenset({"Shape", "Gather", "Scan", "ConstantOfShape", "Slice", "If", "Loop"})

# (op key -> float16 / bfloat16 types) whose kernel computes in float32 and rounds its result
# to the half type once, as graphdsl's reference rounds each op's result once: a node in the
# half type is then the reference's op (to float32 rounding of the float32 computation, as the
# float32 kernel between two Casts would be), and needs no Cast pair. Read in onnxruntime's
# CUDA sources (onnxruntime/core/providers/cuda/...), not in its documentation, and not
# measured (no GPU):
# - LayerNormalization: nn/layer_norm.cc registers (T, U) = (MLFloat16, float) and
#   (BFloat16, float); nn/layer_norm_impl.cu accumulates mean and variance in U = float
#   (Welford) and writes static_cast<V>(gamma * inv_std_dev * (x - mean) + beta), all in float.
# - Softmax, LogSoftmax: math/softmax.cc dispatches half and BFloat16 with
#   AccumulationType_t = float (softmax_impl.cu instantiates (half, half, float) and
#   (BFloat16, BFloat16, float), warpwise and blockwise): max, sum and the quotient (or
#   x - max - log(sum)) in float, one conversion to the output. LogSoftmax has no bfloat16
#   kernel in the table.
# - Erf: cu_inc/common.cuh's _Erf(half) is half(erff(float(a))), _Erf(BFloat16) is
#   BFloat16(erff(float(a))).
# - Gelu (approximate="none") on float16: tensor/gelu_impl.cu's OP_Gelu<half> is
#   half(_Gelu(float(a))). Not bfloat16: the generic OP_Gelu<BFloat16> computes
#   a * _Normcdf(a) with _Normcdf(BFloat16) rounded to bfloat16 first (two roundings).
# - Add, Sub, Mul, Div: math/binary_elementwise_ops_impl.h's functors are a + b, a - b, a * b,
#   a / b; on half, CUDA's __hadd, __hsub, __hmul, __hdiv (IEEE, round to nearest even); on
#   BFloat16, cu_inc/common.cuh computes in float and converts once (to nearest even). float32
#   holds 24 >= 2p + 2 bits of a p-bit significand (p = 11, 8): the float32 step and the
#   rounding to the half type give the correctly rounded result, as the reference's
#   (exporters/onnx/_lower/_common.py's simple() asks, for add, sub, mul and div).
# Left out: "Gelu_tanh" (tensor/gelu_approximate_impl.cu's FastGeluKernel computes in half /
# half2 and BFloat16 arithmetic, a rounding per step), MatMul (cuBLAS with half inputs runs
# CUBLAS_COMPUTE_32F, but onnxruntime's default math mode, CUBLAS_DEFAULT_MATH, does not set
# CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: split-K partial sums may be rounded to the
# half type), and the CPU: its half kernels of these ops either do not exist or run wrapped in
# Casts to float32 (cpu.json's upcast_kernels), which the lowerings write explicitly instead.
ROUNDS_ONCE: dict[str, dict[str, frozenset[str]]] = {
    "cpu": {},
    "cuda": {
        "LayerNormalization": frozenset({"FLOAT16", "BFLOAT16"}),
        "Softmax": frozenset({"FLOAT16", "BFLOAT16"}),
        "LogSoftmax": frozenset({"FLOAT16"}),
        "Erf": frozenset({"FLOAT16", "BFLOAT16"}),
        "Gelu": frozenset({"FLOAT16"}),
        **{op: frozenset({"FLOAT16", "BFLOAT16"}) for op in ("Add", "Sub", "Mul", "Div")},
    },
}


@dataclass(frozen=True)
class Target:
    name: str
    kernels: dict[str, frozenset[str]]
    provider: str
    # ROUNDS_ONCE's entry for the target: empty unless given
    rounds_once_kernels: dict[str, frozenset[str]] = field(default_factory=dict)

    def has(self, op: str, type_name: str) -> bool:
        kernels = self.kernels.get(op)
        if kernels is None:
            return op in _STRUCTURAL
        return type_name in kernels

    def has_cast(self, src: str, dst: str) -> bool:
        return f"{src}->{dst}" in self.kernels.get("Cast", frozenset())

    def rounds_once(self, op: str, type_name: str) -> bool:
        """Does ``op`` (a table key) have a kernel for the narrow float ``type_name`` that
        computes in float32 and rounds its result once (ROUNDS_ONCE)? Then a lowering may run
        it in the narrow type itself instead of in float32 between two Casts."""
        return type_name in self.rounds_once_kernels.get(op, ()) and self.has(op, type_name)


TARGETS = {
    "cpu": Target("cpu", load_kernels("cpu").kernels, "CPUExecutionProvider", ROUNDS_ONCE["cpu"]),
    "cuda": Target(
        "cuda", load_kernels("cuda").kernels, "CUDAExecutionProvider", ROUNDS_ONCE["cuda"]
    ),
}
