# Transcribed (by hand, via a throwaway script) from onnxruntime's operator kernel table:
#   microsoft/onnxruntime docs/OperatorKernels.md, section
#   "Operators implemented by CUDAExecutionProvider", domain ai.onnx,
#   stored revision 001d12d2623fd411ce0f83d05abb5e82304a3389 (a recent main; it already lists
#   opset-23/24/25 kernels such as Attention 24+, Cast 23+).  NOT measured: no GPU was used.
# For each op the row whose OpSet Version range covers a node imported at opset 21 was used
# (that is the range containing the op's since_version <= 21, e.g. Add 14+, Cast [21, 22],
# Reshape [21, 22], ReduceMax 18+, IsNaN 20+, Where 16+, Pow 15+).
#
# Same shape as exporters/_ort_cpu_kernels.py: op -> onnx.TensorProto type names; "Cast" holds
# "FROM->TO" pairs; "Mod" = Mod(fmod=0), "Mod_fmod" = Mod(fmod=1); "Pow" = same-type base and
# exponent, "Pow_exp_int64" / "Pow_exp_float" = base of the listed type with an INT64 / FLOAT
# exponent; "Where" lists the X/Y type.  Only the 17 element types probed on CPU are considered
# (float8 *fnuz, int4/uint4, float4e2m1 and string are omitted).
#
# Notes:
# * BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot: no CUDA kernel listed at all (entries
#   are empty; onnxruntime would place such nodes on the CPU EP).
# * Mod: the doc lists one type set (bfloat16, double, float, float16, int32, int64, uint32,
#   uint64) without distinguishing fmod.  The ONNX spec requires fmod=1 for floating types
#   and the CPU EP rejects fmod=0 floats at run time, so "Mod" keeps only the integer types.
# * Cast [21, 22]: T1/T2 cover all 15 non-complex probed types (T2 also adds float4e2m1).
# * Complex types: no CUDA kernel for any listed op.
# * Versus the measured CPU table: CUDA adds bfloat16 to most arithmetic/unary ops, but has
#   no 8/16-bit integer Mod or comparisons, no int8/uint8 Max/Min, no integer MatMul or
#   ArgMax, no int32/uint32 Clip, no int64 ReduceMean/ReduceProd, no bool ReduceMax/Min and
#   no int8/uint32 Where.

"""onnxruntime CUDA EP kernel coverage at opset 21, from onnxruntime documentation."""

from __future__ import annotations

CUDA_KERNELS: dict[str, frozenset[str]] = {
    "Add": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Sub": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Mul": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Div": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Max": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Min": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Pow": frozenset(
        {
            "INT32",
            "INT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Mod": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
        }
    ),
    "Mod_fmod": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Pow_exp_int64": frozenset(
        {
            "INT32",
            "INT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Pow_exp_float": frozenset(
        {
            "INT32",
            "INT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Neg": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Abs": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Sign": frozenset(
        {
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Exp": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Log": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Sqrt": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Sin": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Cos": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Tanh": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Sigmoid": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Relu": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Floor": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Ceil": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Round": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Reciprocal": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Not": frozenset(
        {
            "BOOL",
        }
    ),
    "BitwiseNot": frozenset(),
    "Identity": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
            "FLOAT8E4M3FN",
            "FLOAT8E5M2",
        }
    ),
    "Equal": frozenset(
        {
            "BOOL",
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Less": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "LessOrEqual": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Greater": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "GreaterOrEqual": frozenset(
        {
            "INT32",
            "INT64",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "And": frozenset(
        {
            "BOOL",
        }
    ),
    "Or": frozenset(
        {
            "BOOL",
        }
    ),
    "Xor": frozenset(
        {
            "BOOL",
        }
    ),
    "BitwiseAnd": frozenset(),
    "BitwiseOr": frozenset(),
    "BitwiseXor": frozenset(),
    "IsNaN": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
            "FLOAT8E4M3FN",
            "FLOAT8E5M2",
        }
    ),
    "IsInf": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
            "FLOAT8E4M3FN",
            "FLOAT8E5M2",
        }
    ),
    "MatMul": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "ReduceSum": frozenset(
        {
            "INT32",
            "INT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "ReduceMean": frozenset(
        {
            "INT32",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "ReduceMax": frozenset(
        {
            "INT32",
            "INT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "ReduceMin": frozenset(
        {
            "INT8",
            "INT32",
            "INT64",
            "UINT8",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "ReduceProd": frozenset(
        {
            "INT32",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Reshape": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
            "FLOAT8E4M3FN",
            "FLOAT8E5M2",
        }
    ),
    "Transpose": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Expand": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Concat": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Unsqueeze": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Squeeze": frozenset(
        {
            "BOOL",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Where": frozenset(
        {
            "INT32",
            "INT64",
            "UINT8",
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Cast": frozenset(
        {
            "BOOL->BOOL",
            "BOOL->INT8",
            "BOOL->INT16",
            "BOOL->INT32",
            "BOOL->INT64",
            "BOOL->UINT8",
            "BOOL->UINT16",
            "BOOL->UINT32",
            "BOOL->UINT64",
            "BOOL->FLOAT16",
            "BOOL->BFLOAT16",
            "BOOL->FLOAT",
            "BOOL->DOUBLE",
            "BOOL->FLOAT8E4M3FN",
            "BOOL->FLOAT8E5M2",
            "INT8->BOOL",
            "INT8->INT8",
            "INT8->INT16",
            "INT8->INT32",
            "INT8->INT64",
            "INT8->UINT8",
            "INT8->UINT16",
            "INT8->UINT32",
            "INT8->UINT64",
            "INT8->FLOAT16",
            "INT8->BFLOAT16",
            "INT8->FLOAT",
            "INT8->DOUBLE",
            "INT8->FLOAT8E4M3FN",
            "INT8->FLOAT8E5M2",
            "INT16->BOOL",
            "INT16->INT8",
            "INT16->INT16",
            "INT16->INT32",
            "INT16->INT64",
            "INT16->UINT8",
            "INT16->UINT16",
            "INT16->UINT32",
            "INT16->UINT64",
            "INT16->FLOAT16",
            "INT16->BFLOAT16",
            "INT16->FLOAT",
            "INT16->DOUBLE",
            "INT16->FLOAT8E4M3FN",
            "INT16->FLOAT8E5M2",
            "INT32->BOOL",
            "INT32->INT8",
            "INT32->INT16",
            "INT32->INT32",
            "INT32->INT64",
            "INT32->UINT8",
            "INT32->UINT16",
            "INT32->UINT32",
            "INT32->UINT64",
            "INT32->FLOAT16",
            "INT32->BFLOAT16",
            "INT32->FLOAT",
            "INT32->DOUBLE",
            "INT32->FLOAT8E4M3FN",
            "INT32->FLOAT8E5M2",
            "INT64->BOOL",
            "INT64->INT8",
            "INT64->INT16",
            "INT64->INT32",
            "INT64->INT64",
            "INT64->UINT8",
            "INT64->UINT16",
            "INT64->UINT32",
            "INT64->UINT64",
            "INT64->FLOAT16",
            "INT64->BFLOAT16",
            "INT64->FLOAT",
            "INT64->DOUBLE",
            "INT64->FLOAT8E4M3FN",
            "INT64->FLOAT8E5M2",
            "UINT8->BOOL",
            "UINT8->INT8",
            "UINT8->INT16",
            "UINT8->INT32",
            "UINT8->INT64",
            "UINT8->UINT8",
            "UINT8->UINT16",
            "UINT8->UINT32",
            "UINT8->UINT64",
            "UINT8->FLOAT16",
            "UINT8->BFLOAT16",
            "UINT8->FLOAT",
            "UINT8->DOUBLE",
            "UINT8->FLOAT8E4M3FN",
            "UINT8->FLOAT8E5M2",
            "UINT16->BOOL",
            "UINT16->INT8",
            "UINT16->INT16",
            "UINT16->INT32",
            "UINT16->INT64",
            "UINT16->UINT8",
            "UINT16->UINT16",
            "UINT16->UINT32",
            "UINT16->UINT64",
            "UINT16->FLOAT16",
            "UINT16->BFLOAT16",
            "UINT16->FLOAT",
            "UINT16->DOUBLE",
            "UINT16->FLOAT8E4M3FN",
            "UINT16->FLOAT8E5M2",
            "UINT32->BOOL",
            "UINT32->INT8",
            "UINT32->INT16",
            "UINT32->INT32",
            "UINT32->INT64",
            "UINT32->UINT8",
            "UINT32->UINT16",
            "UINT32->UINT32",
            "UINT32->UINT64",
            "UINT32->FLOAT16",
            "UINT32->BFLOAT16",
            "UINT32->FLOAT",
            "UINT32->DOUBLE",
            "UINT32->FLOAT8E4M3FN",
            "UINT32->FLOAT8E5M2",
            "UINT64->BOOL",
            "UINT64->INT8",
            "UINT64->INT16",
            "UINT64->INT32",
            "UINT64->INT64",
            "UINT64->UINT8",
            "UINT64->UINT16",
            "UINT64->UINT32",
            "UINT64->UINT64",
            "UINT64->FLOAT16",
            "UINT64->BFLOAT16",
            "UINT64->FLOAT",
            "UINT64->DOUBLE",
            "UINT64->FLOAT8E4M3FN",
            "UINT64->FLOAT8E5M2",
            "FLOAT16->BOOL",
            "FLOAT16->INT8",
            "FLOAT16->INT16",
            "FLOAT16->INT32",
            "FLOAT16->INT64",
            "FLOAT16->UINT8",
            "FLOAT16->UINT16",
            "FLOAT16->UINT32",
            "FLOAT16->UINT64",
            "FLOAT16->FLOAT16",
            "FLOAT16->BFLOAT16",
            "FLOAT16->FLOAT",
            "FLOAT16->DOUBLE",
            "FLOAT16->FLOAT8E4M3FN",
            "FLOAT16->FLOAT8E5M2",
            "BFLOAT16->BOOL",
            "BFLOAT16->INT8",
            "BFLOAT16->INT16",
            "BFLOAT16->INT32",
            "BFLOAT16->INT64",
            "BFLOAT16->UINT8",
            "BFLOAT16->UINT16",
            "BFLOAT16->UINT32",
            "BFLOAT16->UINT64",
            "BFLOAT16->FLOAT16",
            "BFLOAT16->BFLOAT16",
            "BFLOAT16->FLOAT",
            "BFLOAT16->DOUBLE",
            "BFLOAT16->FLOAT8E4M3FN",
            "BFLOAT16->FLOAT8E5M2",
            "FLOAT->BOOL",
            "FLOAT->INT8",
            "FLOAT->INT16",
            "FLOAT->INT32",
            "FLOAT->INT64",
            "FLOAT->UINT8",
            "FLOAT->UINT16",
            "FLOAT->UINT32",
            "FLOAT->UINT64",
            "FLOAT->FLOAT16",
            "FLOAT->BFLOAT16",
            "FLOAT->FLOAT",
            "FLOAT->DOUBLE",
            "FLOAT->FLOAT8E4M3FN",
            "FLOAT->FLOAT8E5M2",
            "DOUBLE->BOOL",
            "DOUBLE->INT8",
            "DOUBLE->INT16",
            "DOUBLE->INT32",
            "DOUBLE->INT64",
            "DOUBLE->UINT8",
            "DOUBLE->UINT16",
            "DOUBLE->UINT32",
            "DOUBLE->UINT64",
            "DOUBLE->FLOAT16",
            "DOUBLE->BFLOAT16",
            "DOUBLE->FLOAT",
            "DOUBLE->DOUBLE",
            "DOUBLE->FLOAT8E4M3FN",
            "DOUBLE->FLOAT8E5M2",
            "FLOAT8E4M3FN->BOOL",
            "FLOAT8E4M3FN->INT8",
            "FLOAT8E4M3FN->INT16",
            "FLOAT8E4M3FN->INT32",
            "FLOAT8E4M3FN->INT64",
            "FLOAT8E4M3FN->UINT8",
            "FLOAT8E4M3FN->UINT16",
            "FLOAT8E4M3FN->UINT32",
            "FLOAT8E4M3FN->UINT64",
            "FLOAT8E4M3FN->FLOAT16",
            "FLOAT8E4M3FN->BFLOAT16",
            "FLOAT8E4M3FN->FLOAT",
            "FLOAT8E4M3FN->DOUBLE",
            "FLOAT8E4M3FN->FLOAT8E4M3FN",
            "FLOAT8E4M3FN->FLOAT8E5M2",
            "FLOAT8E5M2->BOOL",
            "FLOAT8E5M2->INT8",
            "FLOAT8E5M2->INT16",
            "FLOAT8E5M2->INT32",
            "FLOAT8E5M2->INT64",
            "FLOAT8E5M2->UINT8",
            "FLOAT8E5M2->UINT16",
            "FLOAT8E5M2->UINT32",
            "FLOAT8E5M2->UINT64",
            "FLOAT8E5M2->FLOAT16",
            "FLOAT8E5M2->BFLOAT16",
            "FLOAT8E5M2->FLOAT",
            "FLOAT8E5M2->DOUBLE",
            "FLOAT8E5M2->FLOAT8E4M3FN",
            "FLOAT8E5M2->FLOAT8E5M2",
        }
    ),
    "Softmax": frozenset(
        {
            "FLOAT16",
            "BFLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "ArgMax": frozenset(
        {
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
    "Clip": frozenset(
        {
            "INT8",
            "INT64",
            "UINT8",
            "UINT64",
            "FLOAT16",
            "FLOAT",
            "DOUBLE",
        }
    ),
}
