"""The built-in promotion lattices, each a few lines of data (type -> immediate parents).

Tables shown to users are generated from these; the seeds' published tables live in the
tests as goldens.
"""

from __future__ import annotations

from graphdsl.dtypes import DType
from graphdsl.lattice import Lattice, Node, Weak

__all__ = ["ANVIL", "ARRAY_API", "JAX", "JAX_STRICT", "JAX_X32", "MAX", "MAX_GRAPH"]

T = DType
i_, f_, c_ = Weak.int, Weak.float, Weak.complex
_F8 = [T.float8_e4m3fn, T.float8_e5m2]

# JAX's standard lattice (jax/_src/dtypes.py, seed 001's final lattice), x64 edges.
# float8 types are leaves under f*: a weak float yields to them, nothing else promotes
# to them, so the lattice is partial (float8 x float16 is undefined, as in JAX).
_JAX: dict[Node, list[Node]] = {
    T.bool: [i_],
    i_: [T.uint8, T.int8],
    T.uint8: [T.int16, T.uint16],
    T.uint16: [T.int32, T.uint32],
    T.uint32: [T.int64, T.uint64],
    T.uint64: [f_],
    T.int8: [T.int16],
    T.int16: [T.int32],
    T.int32: [T.int64],
    T.int64: [f_],
    f_: [*_F8, T.bfloat16, T.float16, c_],
    T.bfloat16: [T.float32],
    T.float16: [T.float32],
    T.float32: [T.float64, T.complex64],
    T.float64: [T.complex128],
    c_: [T.complex64],
    T.complex64: [T.complex128],
}
JAX = Lattice("jax", _JAX, partial=True)

# x64 disabled: JAX canonicalizes 64-bit results to 32 bits, so u32 -> i64 becomes
# u32 -> i32 and the 64-bit types leave the lattice.
JAX_X32 = Lattice(
    "jax-x32",
    {
        T.bool: [i_],
        i_: [T.uint8, T.int8],
        T.uint8: [T.int16, T.uint16],
        T.uint16: [T.int32, T.uint32],
        T.uint32: [T.int32],
        T.int8: [T.int16],
        T.int16: [T.int32],
        T.int32: [f_],
        f_: [*_F8, T.bfloat16, T.float16, c_],
        T.bfloat16: [T.float32],
        T.float16: [T.float32],
        T.float32: [T.complex64],
        c_: [T.complex64],
    },
    partial=True,
)

_INTS = [T.uint8, T.uint16, T.uint32, T.uint64, T.int8, T.int16, T.int32, T.int64]
_FLOATS = [*_F8, T.bfloat16, T.float16, T.float32, T.float64]

# jax_numpy_dtype_promotion='strict': only weak types promote, within their kind.
JAX_STRICT = Lattice(
    "jax-strict",
    {
        T.bool: [],
        i_: [f_, *_INTS],
        f_: [c_, *_FLOATS],
        c_: [T.complex64, T.complex128],
    },
    partial=True,
)

# Modular MAX (seed 003): bfloat16 above float16, tensor_float32 above float32,
# index and address behave as uint64, 64-bit integers go to float16.
MAX = Lattice(
    "max",
    {
        T.bool: [T.int8, T.uint8],
        T.int8: [T.int16],
        T.int16: [T.int32],
        T.int32: [T.int64],
        T.int64: [T.float16],
        T.uint8: [T.int16, T.uint16],
        T.uint16: [T.int32, T.uint32],
        T.uint32: [T.int64, T.uint64],
        T.uint64: [T.float16],
        T.index: [T.uint64],
        T.address: [T.uint64],
        T.float16: [T.bfloat16],
        T.bfloat16: [T.float32],
        T.float32: [T.tensor_float32],
        T.tensor_float32: [T.float64],
    },
)

# Modular max.graph 26 (the `max` Python package), as recorded in
# tests/data/max_graph_promotion.json. Not a lattice: an edge is an exact conversion (every
# value of the child is a value of the parent), and two dtypes promote only when one converts
# exactly into the other (int8 x uint8, float16 x bfloat16, int64 x float64 are errors,
# although int16, float32 and nothing bound them above). The one exception: an 8-bit integer
# or float8 meeting a different float8 (or an 8-bit integer meeting a float8) computes in
# float16, one of their two minimal upper bounds (bfloat16 is the other).
MAX_GRAPH = Lattice(
    "max-graph",
    {
        T.bool: [T.uint8, T.int8, *_F8],
        T.uint8: [T.uint16, T.int16, T.float16, T.bfloat16],
        T.uint16: [T.uint32, T.int32, T.float32],
        T.uint32: [T.uint64, T.int64, T.float64],
        T.int8: [T.int16, T.float16, T.bfloat16],
        T.int16: [T.int32, T.float32],
        T.int32: [T.int64, T.float64],
        T.float8_e4m3fn: [T.float16, T.bfloat16],
        T.float8_e5m2: [T.float16, T.bfloat16],
        T.float16: [T.float32],
        T.bfloat16: [T.float32],
        T.float32: [T.float64],
    },
    comparable_only=True,
    joins={
        (T.float8_e4m3fn, T.float8_e5m2): T.float16,
        **{(i, f): T.float16 for i in (T.int8, T.uint8) for f in _F8},
    },
)

# {anvil} (seed 004): its known x known table is this lattice; uint64 sits below int64.
ANVIL = Lattice(
    "anvil",
    {
        T.bool: [T.int8, T.uint8],
        T.int8: [T.int16],
        T.int16: [T.int32],
        T.int32: [T.int64],
        T.int64: [T.float32],
        T.uint8: [T.int16, T.uint16],
        T.uint16: [T.int32, T.uint32],
        T.uint32: [T.int64, T.uint64],
        T.uint64: [T.int64],
        T.float32: [T.float64],
    },
)

# The Array API's required promotions (seed 002) plus floating/complex; mixed kinds and
# int64 x uint64 stay undefined.
ARRAY_API = Lattice(
    "array-api",
    {
        T.bool: [],
        T.int8: [T.int16],
        T.int16: [T.int32],
        T.int32: [T.int64],
        T.uint8: [T.int16, T.uint16],
        T.uint16: [T.int32, T.uint32],
        T.uint32: [T.int64, T.uint64],
        T.float16: [T.float32],
        T.float32: [T.float64, T.complex64],
        T.float64: [T.complex128],
        T.complex64: [T.complex128],
    },
    partial=True,
)
