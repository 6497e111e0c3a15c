"""The built-in promotion lattices, each a few lines of data (type -> immediate parents).

Tables shown to users are generated from these; the seeds' published tables live in the
tests as goldens.
"""

from __future__ import annotations

import itertools

from graphdsl.dtypes import DType
from graphdsl.lattice import Lattice, Node, Weak

__all__ = ["ANVIL", "ARRAY_API", "JAX", "JAX_STRICT", "JAX_X32", "MAX", "MAX_GRAPH"]

T = DType
i_, f_, c_ = Weak.int, Weak.float, Weak.complex
_F8 = [T.float8_e4m3fn, T.float8_e5m2]
# the other small floats ml_dtypes, JAX and MAX have: leaves under f* in JAX's lattices (as
# float8); MAX's graph promotes them as its float8 types
_SMALL = [*_F8, T.float8_e4m3fnuz, T.float8_e5m2fnuz, T.float8_e8m0fnu, T.float6_e2m3fn,
          T.float6_e3m2fn, T.float4_e2m1fn]  # fmt: skip
# int4 and uint4: leaves under i* in JAX's lattices (they promote only with weak types)
_I4 = [T.uint4, T.int4]

# JAX's standard lattice (jax/_src/dtypes.py, seed 001's final lattice), x64 edges.
# float8 types (and the other small floats) are leaves under f*: a weak float yields to them,
# nothing else promotes to them, so the lattice is partial (float8 x float16 is undefined, as
# in JAX); int4 and uint4 are leaves under i* likewise (jax/_src/dtypes.py, JAX 0.10).
_JAX: dict[Node, list[Node]] = {
    T.bool: [i_],
    i_: [T.uint8, T.int8, *_I4],
    T.uint8: [T.int16, T.uint16],
    T.uint16: [T.int32, T.uint32],
    T.uint32: [T.int64, T.uint64],
    T.uint64: [f_],
    T.int8: [T.int16],
    T.int16: [T.int32],
    T.int32: [T.int64],
    T.int64: [f_],
    f_: [*_SMALL, T.bfloat16, T.float16, c_],
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
        i_: [T.uint8, T.int8, *_I4],
        T.uint8: [T.int16, T.uint16],
        T.uint16: [T.int32, T.uint32],
        T.uint32: [T.int32],
        T.int8: [T.int16],
        T.int16: [T.int32],
        T.int32: [f_],
        f_: [*_SMALL, T.bfloat16, T.float16, c_],
        T.bfloat16: [T.float32],
        T.float16: [T.float32],
        T.float32: [T.complex64],
        c_: [T.complex64],
    },
    partial=True,
)

_INTS = [*_I4, T.uint8, T.uint16, T.uint32, T.uint64, T.int8, T.int16, T.int32, T.int64]
_FLOATS = [*_SMALL, T.bfloat16, T.float16, T.float32, T.float64]

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
# tests/data/max_graph_promotion.json. MAX's sub-byte and fnuz floats promote as its float8
# types (recorded cell by cell), e8m0 too, although its conversions from bool (no zero) and
# to float16 (2**127) are not exact; int4 and uint4 are not MAX DTypes.
# Not a lattice: an edge is an exact conversion (every value of the child is a value of the
# parent), and two dtypes promote only when one converts
# exactly into the other (int8 x uint8, float16 x bfloat16, int64 x float64 are errors,
# although int16, float32 and nothing bound them above). The one exception: an 8-bit integer
# or float8 meeting a different float8 (or an 8-bit integer meeting a float8) computes in
# float16, one of their two minimal upper bounds (bfloat16 is the other).
MAX_GRAPH = Lattice(
    "max-graph",
    {
        T.bool: [T.uint8, T.int8, *_SMALL],
        T.uint8: [T.uint16, T.int16, T.float16, T.bfloat16],
        T.uint16: [T.uint32, T.int32, T.float32],
        T.uint32: [T.uint64, T.int64, T.float64],
        T.int8: [T.int16, T.float16, T.bfloat16],
        T.int16: [T.int32, T.float32],
        T.int32: [T.int64, T.float64],
        **{f: [T.float16, T.bfloat16] for f in _SMALL},
        T.float16: [T.float32],
        T.bfloat16: [T.float32],
        T.float32: [T.float64],
    },
    comparable_only=True,
    joins={
        **{(a, b): T.float16 for a, b in itertools.combinations(_SMALL, 2)},
        **{(i, f): T.float16 for i in (T.int8, T.uint8) for f in _SMALL},
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
