"""Per-target kernel capability tables: which (ONNX op, element type) pairs have kernels."""

from __future__ import annotations

from dataclasses import dataclass, field

from exporters.onnx._kernels import load_kernels

__all__ = [
    "CPU_BEFORE",
    "CUDA_BROKEN",
    "CUDA_QUIRKS",
    "HALF_ACCUMULATES_F32",
    "ROUNDS_ONCE",
    "TARGETS",
    "Target",
]

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


# (op key -> float16 / bfloat16 types) whose kernel multiplies in the half type's products
# (exact in float32), accumulates in float32 and rounds the result to the half type, which
# export(exact=False) uses instead of float32 between two Casts (tensor cores for MatMul):
# - MatMul on CUDA: cuBLAS's GEMM with half / bfloat16 inputs and outputs and
#   CUBLAS_COMPUTE_32F (onnxruntime's math/matmul.cc, MatMulImpl -> cublasGemmHelper). In
#   CUBLAS_DEFAULT_MATH, which onnxruntime uses, cuBLAS may split the contraction (split-K)
#   and reduce the S partial sums in the half type ("reduced precision reduction"), as
#   PyTorch's default allows too: the bound in docs/semantics.md (section "exact=False")
#   counts the S slices. Not bit for bit the reference's float32 sum rounded once: within
#   that bound, so only where exact=False asks for it.
HALF_ACCUMULATES_F32: dict[str, dict[str, frozenset[str]]] = {
    "cpu": {},
    "cuda": {"MatMul": frozenset({"FLOAT16", "BFLOAT16"})},
}


# (op key -> element types) that onnxruntime-gpu 1.31.1's CUDA provider registers (it places
# such a node on the GPU) but whose kernel fails at run time or computes otherwise than the
# lowerings assume: the exporter does not emit them for target "cuda" (a lowering rewrites
# them, or widens, or takes the CPU provider's kernel where CUDA registers none). Measured on
# an H200 (2026-11-26: shared/gpu/cuda-h200-2026-11-26.tsv, and scripts/probe_cuda.py's
# node-by-node comparison with the CPU provider over the test matrix).
CUDA_BROKEN: dict[str, frozenset[str]] = {
    # "Unimplemented 'to' argument value: 11" (float8 -> double, NOT_IMPLEMENTED at run time);
    # double -> float8 "must define saturate" (only saturate=1 runs); float8 -> bfloat16
    # reinterprets the bits (10 -> 524288): each goes through float32 (Builder.cast)
    "Cast": frozenset({"FLOAT8E4M3FN->DOUBLE", "FLOAT8E5M2->DOUBLE", "DOUBLE->FLOAT8E4M3FN",
                       "DOUBLE->FLOAT8E5M2", "FLOAT8E4M3FN->BFLOAT16", "FLOAT8E5M2->BFLOAT16"}),
    # reduction="add": "element_type N not implemented for ScatterND operator" but for
    # float32 and float16 (atomic adds)
    "ScatterND_add": frozenset({"BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16",
                                "UINT32", "UINT64", "DOUBLE", "BFLOAT16"}),
    # NaN -> 0 (the reference: the lowest value), +inf and values past the range wrap
    # (float16 65504 / 0.37 -> 0 in uint8): the composed form instead
    "QuantizeLinear": frozenset({"FLOAT", "FLOAT16", "BFLOAT16"}),
    "QuantizeLinear_uint8": frozenset({"FLOAT", "FLOAT16", "BFLOAT16"}),
    # Sign(NaN) is 0 (the reference and the CPU kernel: NaN)
    "Sign": frozenset({"FLOAT", "DOUBLE", "FLOAT16", "BFLOAT16"}),
    # double: computed to float32's precision (6.65751488e-04 for 6.65751502e-04)
    "Softmax": frozenset({"DOUBLE"}),
    "LogSoftmax": frozenset({"DOUBLE"}),
    # double and float16: half-pixel coordinates in float32, weights and sums in the half
    # type (1e-7 off in float64, 2e-3 in float16): the gathered taps instead, as on the CPU
    # (Resize_linear below)
    "Resize_cubic": frozenset({"DOUBLE", "FLOAT16"}),
    # int64 sums saturate at the type's limits (the reference wraps)
    "ReduceSum": frozenset({"INT64"}),
    # from scripts/probe_cuda.py's kernel measurement (cuda.json's "differs"), where the
    # lowerings would use the kernel: the per-axis QuantizeLinear gives 1, 0, 2 for a NaN
    # scale (the reference, and the CPU kernel: the lowest value) and wraps -inf to -128;
    # LayerNormalization of float64 computes in float32 (1.2247357368469238 for
    # 1.2247356859086223); linear Resize of int32 and uint8 gives zeros past the first row;
    # integer Pow saturates (the reference wraps); ReduceMax of int64 rounds through float64
    # (2**63 - 1 for the largest of 1, 2**63 - 2 and 7)
    "QuantizeLinear_axis": frozenset({"FLOAT", "FLOAT16"}),
    "QuantizeLinear_uint8_axis": frozenset({"FLOAT", "FLOAT16"}),
    "LayerNormalization": frozenset({"DOUBLE"}),
    "Resize_linear": frozenset({"DOUBLE", "FLOAT16", "INT32", "UINT8"}),
    "Pow": frozenset({"INT32", "INT64"}),
    "Pow_exp_int64": frozenset({"INT32", "INT64"}),
    "Pow_exp_float": frozenset({"INT32", "INT64"}),
    "ReduceMax": frozenset({"INT64"}),
}
# placed on no provider in a run() session (optimizations on) though documented, and run by
# the kernel probe (one node, optimizations off): "Provider type for ConvTranspose node with
# name '' is not set" at load (the H200 suite run, float64 conv2d_transpose); the exporter
# treats the pair as registered nowhere and computes it otherwise
CUDA_UNREGISTERED: dict[str, frozenset[str]] = {"ConvTranspose": frozenset({"DOUBLE"})}

# The CPU table (cpu.json) is measured on onnxruntime 1.32. Before a release listed here
# (pyproject admits 1.31), these CPU kernels are missing or compute otherwise, measured on
# 1.31.0 and 1.31.1 with scripts/probe_ort_kernels.py and the test matrix (.ci/run's pass on
# the oldest versions): the CPU target leaves them out where the installed onnxruntime is
# older, and the lowerings compute those pairs as they do where a kernel is missing (in
# float32, or composed). Quirk names (CPU_QUIRKS) mark behaviours rewritten around instead.
CPU_BEFORE: dict[tuple[int, int], dict[str, frozenset[str]]] = {
    (1, 32): {
        # no bfloat16 Pad (NOT_IMPLEMENTED at load)
        **{key: frozenset({"BFLOAT16"}) for key in ("Pad", "Pad_edge", "Pad_reflect")},
        # float16 QuantizeLinear wraps +inf (-128 for int8, 0 for uint8): through float32
        "QuantizeLinear": frozenset({"FLOAT16"}),
        "QuantizeLinear_uint8": frozenset({"FLOAT16"}),
        # uint8 MaxPool with a dilation fails to load (pool_attributes.h)
        "MaxPool": frozenset({"UINT8"}),
    },
}
CPU_QUIRKS_BEFORE: dict[tuple[int, int], frozenset[str]] = {
    # blocked QuantizeLinear sends NaN to the highest value (the reference: the lowest)
    (1, 32): frozenset({"blocked_quantize_nan"}),
}

# Behaviours of the CUDA kernels that the lowerings rewrite around (Target.quirk), measured
# as CUDA_BROKEN was; each name is read by the lowering it names.
CUDA_QUIRKS: dict[str, str] = {
    "empty_reduction_fails": "Reduce* over an empty axis fail (reduction_ops.cc: "
    "PrepareForReduce); the CPU kernels give the identity",
    "topk_order": "TopK's bitonic sort compares NaN as equal to everything, pads its work "
    "with the lowest (highest) finite value, which sorts above -inf (below +inf) and comes "
    "back as an index past the axis, and its radix sort orders -0.0 before +0.0: the key is "
    "finite, NaN-free and zero-signless (selection.py)",
    "maxpool_lowest": "MaxPool starts from the lowest finite value: a window of -inf (or "
    "padding and -inf) gives -max instead of -inf (vision.py)",
    "conv_skips_padding": "Conv (cuDNN) leaves the zero padding out of the sums: an inf or NaN "
    "filter tap over padding gives no NaN, and a sum of -0.0 products stays -0.0 (vision.py)",
    "logsoftmax_unshifted": "LogSoftmax computes x - (max + log(sum)), which loses log(sum) "
    "next to a large max (65534 gives -0.69140625 for -0.6931472): shifted first (nn.py)",
    "cumsum_order": "CumSum sums from +0.0 (a lone -0.0 gives +0.0) and its reverse sums add "
    "in forward order (0.6000000238 for 0.5999999046): reversed with Slice, sign repaired",
    "prod_zero_sign": "ReduceProd gives +0.0 for a product of -0.0 (selection of the sign by "
    "the count of negative factors, reduction.py)",
    "scatter_duplicates": "ScatterElements and ScatterND write repeated indices in no fixed "
    "order (the reference: the last write wins): duplicates are written the last value",
    "unchecked_indices": "Gather, GatherElements, GatherND, ScatterElements and ScatterND "
    "read and write out of range indices without an error: the exporter checks them",
    "blocked_quantization": "QuantizeLinear and DequantizeLinear with block_size fail "
    "('Unsupported quantization type'): composed",
    "float8_cast_fusion": "onnxruntime's cast optimizers fuse float8 -> float32 -> bfloat16 "
    "into the broken float8 -> bfloat16 Cast: a '+ -0.0' (exact) between them",
    "gelu_rank0": "Gelu refuses a rank-0 input ('Input 0 is expected to have 1 or more "
    "dimensions'): a scalar runs as a [1] (activation.py)",
    "empty_trilu_fails": "Trilu of an empty tensor fails (cudaErrorInvalidValue): where a "
    "dimension may be 0, the band is a mask and a Where (indexing.py)",
}


@dataclass(frozen=True)
class Target:
    """An onnxruntime provider as the lowerings see it.

    ``kernels``: the (op key, type) pairs whose kernels compute what the lowerings assume.
    ``registered``: what the provider claims (places on itself), a superset; None: the same
    as ``kernels``. ``fallback``: the provider behind it in a session (CPU behind CUDA),
    whose kernel runs a pair the provider does not register. ``quirks``: named behaviours
    of its kernels that the lowerings rewrite around (CUDA_QUIRKS).
    """

    name: str
    kernels: dict[str, frozenset[str]]
    provider: str
    # ROUNDS_ONCE's entry for the target: empty unless given
    rounds_once_kernels: dict[str, frozenset[str]] = field(default_factory=dict)
    registered: dict[str, frozenset[str]] | None = None
    fallback: Target | None = None
    quirks: frozenset[str] = frozenset()
    # HALF_ACCUMULATES_F32's entry for the target: empty unless given
    half_accumulating_kernels: dict[str, frozenset[str]] = field(default_factory=dict)

    def has(self, op: str, type_name: str) -> bool:
        kernels = self.kernels.get(op)
        if kernels is None:
            return op in _STRUCTURAL
        return type_name in kernels

    def registers(self, op: str, type_name: str) -> bool:
        """Does the provider place an ``op`` node of ``type_name`` on itself (whether or not
        its kernel is one the lowerings use)?"""
        if self.registered is None:
            return self.has(op, type_name)
        kernels = self.registered.get(op)
        return op in _STRUCTURAL if kernels is None else type_name in kernels

    def falls_back(self, op: str, type_name: str) -> bool:
        """Would onnxruntime run ``op`` on ``type_name`` on the fallback provider (this one
        registers no kernel for it, the fallback has one)?"""
        fb = self.fallback
        return fb is not None and not self.registers(op, type_name) and fb.has(op, type_name)

    def has_cast(self, src: str, dst: str) -> bool:
        return f"{src}->{dst}" in self.kernels.get("Cast", frozenset())

    def runs_cast(self, src: str, dst: str) -> bool:
        """A Cast from ``src`` to ``dst`` runs right here or on the fallback provider."""
        return self.has_cast(src, dst) or self.falls_back("Cast", f"{src}->{dst}")

    def quirk(self, name: str) -> bool:
        """Does the provider's kernel behave as CUDA_QUIRKS[name] says?"""
        return name in self.quirks

    def rounds_once(self, op: str, type_name: str) -> bool:
        """Does ``op`` (a table key) have a kernel for the narrow float ``type_name`` that
        computes in float32 and rounds its result once (ROUNDS_ONCE)? Then a lowering may run
        it in the narrow type itself instead of in float32 between two Casts."""
        return type_name in self.rounds_once_kernels.get(op, ()) and self.has(op, type_name)


    def accumulates_f32(self, op: str, type_name: str) -> bool:
        """Does ``op`` have a kernel for the half type ``type_name`` that accumulates in
        float32 and rounds to it at the end (HALF_ACCUMULATES_F32)? ``export(exact=False)``
        runs it in the half type."""
        kernels = self.half_accumulating_kernels.get(op, ())
        return type_name in kernels and self.has(op, type_name)


def _without(table: dict[str, frozenset[str]], drop: dict[str, frozenset[str]]) -> dict[
    str, frozenset[str]
]:
    return {op: types - drop.get(op, frozenset()) for op, types in table.items()}


def _pairs(names: list[str]) -> dict[str, frozenset[str]]:
    """{"Mod[FLOAT]", ...} as {"Mod": {"FLOAT"}, ...}."""
    found: dict[str, set[str]] = {}
    for name in names:
        op, _, rest = name.partition("[")
        found.setdefault(op, set()).add(rest.rstrip("]"))
    return {op: frozenset(types) for op, types in found.items()}


def cuda_tables() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(what the CUDA provider registers, what of it runs right), by op key: the rows measured
    on a GPU (cuda.json, scripts/probe_cuda.py) and, for the op keys the measurement did not
    reach, the rows of onnxruntime's documentation (cuda_documented.json); less
    CUDA_UNREGISTERED. A measured pair that failed at run time is registered (onnxruntime
    places it on the GPU, no CPU fallback takes it) and does not run; nor does CUDA_BROKEN."""
    measured = load_kernels("cuda")
    failing = _pairs(measured.provenance.get("excluded_run_errors", []))
    rows = {**load_kernels("cuda_documented").kernels, **{
        op: types | failing.get(op, frozenset()) for op, types in measured.kernels.items()}}
    registered = _without(rows, CUDA_UNREGISTERED)
    return registered, _without(_without(registered, failing), CUDA_BROKEN)


def installed_onnxruntime() -> tuple[int, int]:
    """The (major, minor) release of the onnxruntime this process imports."""
    import onnxruntime

    major, minor = onnxruntime.__version__.split(".")[:2]
    return int(major), int(minor)


def cpu_target(release: tuple[int, int]) -> Target:
    """The CPU target for onnxruntime ``release``: cpu.json less CPU_BEFORE's pairs of the
    releases after it, with CPU_QUIRKS_BEFORE's quirks."""
    kernels = load_kernels("cpu").kernels
    quirks: frozenset[str] = frozenset()
    for since, pairs in CPU_BEFORE.items():
        if release < since:
            kernels = _without(kernels, pairs)
    for since, names in CPU_QUIRKS_BEFORE.items():
        if release < since:
            quirks |= names
    return Target("cpu", kernels, "CPUExecutionProvider", ROUNDS_ONCE["cpu"], quirks=quirks)


_CPU = cpu_target(installed_onnxruntime())
_CUDA_REGISTERED, _CUDA_KERNELS = cuda_tables()

TARGETS = {
    "cpu": _CPU,
    "cuda": Target(
        "cuda",
        _CUDA_KERNELS,
        "CUDAExecutionProvider",
        ROUNDS_ONCE["cuda"],
        registered=_CUDA_REGISTERED,
        fallback=_CPU,
        quirks=frozenset(CUDA_QUIRKS),
        half_accumulating_kernels=HALF_ACCUMULATES_F32["cuda"],
    ),
}
