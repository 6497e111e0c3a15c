"""graphdsl: typed compute graphs with lattice dtype promotion and explicit casts."""

from __future__ import annotations

from graphdsl import nn, ops, passes
from graphdsl import printing as printing  # registers print(graph), to_dot
from graphdsl import verify as verify  # registers Graph.verify
from graphdsl.builtin_policies import implicit_cast_type, policy, policy_names
from graphdsl.dtypes import DType, DTypeError, Kind, dtype
from graphdsl.evaluate import evaluate
from graphdsl.graph import Graph, GraphError, OpTypeError, Symbol, TensorType
from graphdsl.inputs import InputError
from graphdsl.lattice import Lattice, LatticeError, Weak
from graphdsl.literals import LiteralError
from graphdsl.ops import implicit_cast
from graphdsl.policies import LiteralRule, Policy, Promoted, PromotionError
from graphdsl.shapes import ShapeError
from graphdsl.types import IndexRangeError
from graphdsl.weights import WeightError, Weights, load_weights, save_weights

bool_ = DType.bool
bool = DType.bool  # gd.bool, as jnp.bool
int8, int16, int32, int64 = DType.int8, DType.int16, DType.int32, DType.int64
uint8, uint16, uint32, uint64 = DType.uint8, DType.uint16, DType.uint32, DType.uint64
float16, bfloat16, float32, float64 = DType.float16, DType.bfloat16, DType.float32, DType.float64
complex64, complex128 = DType.complex64, DType.complex128
float8_e4m3fn, float8_e5m2 = DType.float8_e4m3fn, DType.float8_e5m2
float8_e4m3fnuz, float8_e5m2fnuz = DType.float8_e4m3fnuz, DType.float8_e5m2fnuz
float8_e8m0fnu, float4_e2m1fn = DType.float8_e8m0fnu, DType.float4_e2m1fn
float6_e2m3fn, float6_e3m2fn = DType.float6_e2m3fn, DType.float6_e3m2fn
int4, uint4 = DType.int4, DType.uint4
tensor_float32, index, address = DType.tensor_float32, DType.index, DType.address

__all__ = [
    "DType",
    "DTypeError",
    "Graph",
    "GraphError",
    "IndexRangeError",
    "InputError",
    "Kind",
    "Lattice",
    "LatticeError",
    "LiteralError",
    "LiteralRule",
    "OpTypeError",
    "Policy",
    "Promoted",
    "PromotionError",
    "ShapeError",
    "Symbol",
    "TensorType",
    "Weak",
    "WeightError",
    "Weights",
    "address",
    "bfloat16",
    "bool",
    "bool_",
    "complex64",
    "complex128",
    "dtype",
    "evaluate",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float16",
    "float32",
    "float64",
    "implicit_cast",
    "implicit_cast_type",
    "index",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "load_weights",
    "nn",
    "ops",
    "passes",
    "policy",
    "policy_names",
    "save_weights",
    "tensor_float32",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
