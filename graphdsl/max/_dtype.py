"""MAX's ``DType`` (``max.dtype.DType``): its 21 members in its order, with its values and
methods (``is_float()``, ``is_integral()``, ``size_in_bits``, ``to_numpy()`` ...), as
tests/data/max_graph_api.json records them.

graphdsl's core has its own :class:`graphdsl.DType`, with every member of MAX's (and int4,
uint4, which MAX lacks); :func:`to_core` and :func:`from_core` convert by name.

>>> from graphdsl.max import DType
>>> DType.float32.is_float(), DType.int8.is_integral(), DType.bfloat16.size_in_bits
(True, True, 16)
>>> DType.float32, str(DType.float32), DType.from_numpy(np.dtype("int64"))
(float32, 'DType.float32', int64)
"""

from __future__ import annotations

import builtins
import enum
from typing import Any

import numpy as np

from graphdsl.dtypes import DType as CoreDType
from graphdsl.max._errors import UnsupportedError

__all__ = ["DType", "from_core", "to_core"]


class DType(enum.Enum):
    """A tensor element type, as max.graph's ``DType`` (values are MAX's).

    >>> import numpy as np
    >>> from graphdsl.max import DType
    >>> DType.bfloat16.is_half(), DType.uint8.is_unsigned_integral(), DType.float16.size_in_bytes
    (True, True, 2)
    >>> DType("f32"), DType.int8.value, DType.int64.to_numpy(), DType.from_numpy(np.float16)
    (float32, 135, dtype('int64'), float16)
    """

    bool = 1
    int8 = 135
    int16 = 137
    int32 = 139
    int64 = 141
    uint8 = 134
    uint16 = 136
    uint32 = 138
    uint64 = 140
    float16 = 79
    float32 = 81
    float64 = 82
    bfloat16 = 80
    float4_e2m1fn = 64
    float6_e2m3fn = 65
    float6_e3m2fn = 66
    float8_e8m0fnu = 73
    float8_e4m3fn = 75
    float8_e4m3fnuz = 76
    float8_e5m2 = 77
    float8_e5m2fnuz = 78

    @classmethod
    def _missing_(cls, value: object) -> DType | None:
        if isinstance(value, str):  # MLIR's names: DType("f32"); others raise KeyError
            return _FROM_MLIR[value]
        return None

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return f"DType.{self.name}"

    def is_float(self) -> builtins.bool:
        """Whether the dtype is a floating-point type (the sub-byte ones included)."""
        return self.value & 64 != 0 and self.value < 128

    def is_integral(self) -> builtins.bool:
        """Whether the dtype is a (signed or unsigned) integer type."""
        return self.value >= 128

    def is_signed_integral(self) -> builtins.bool:
        """Whether the dtype is a signed integer type."""
        return self.is_integral() and self.value & 1 == 1

    def is_unsigned_integral(self) -> builtins.bool:
        """Whether the dtype is an unsigned integer type."""
        return self.is_integral() and self.value & 1 == 0

    def is_float8(self) -> builtins.bool:
        """Whether the dtype is one of the 8-bit floating-point types."""
        return self in _FLOAT8

    def is_half(self) -> builtins.bool:
        """Whether the dtype is a 16-bit floating-point type (float16, bfloat16)."""
        return self in (DType.float16, DType.bfloat16)

    @property
    def size_in_bits(self) -> int:
        """The bits of one element."""
        return _BITS[self]

    @property
    def size_in_bytes(self) -> int:
        """The bytes one element takes (a sub-byte type takes one)."""
        return (_BITS[self] + 7) // 8

    @property
    def align(self) -> int:
        """The alignment of one element, in bytes."""
        return self.size_in_bytes

    def to_numpy(self) -> np.dtype[Any]:
        """numpy's dtype, as MAX gives it (float8 types as uint8; bfloat16 and the sub-byte
        floats raise ValueError)."""
        found = _TO_NUMPY.get(self)
        if found is None:
            raise ValueError(f"unsupported DType to convert to NumPy: {self}")
        return np.dtype(found)

    @staticmethod
    def from_numpy(dtype: Any) -> DType:
        """The DType of a numpy dtype (ValueError for one MAX has none of)."""
        np_type = dtype.type if isinstance(dtype, np.dtype) else dtype
        for d, t in _TO_NUMPY.items():
            if t is np_type and not d.is_float8():
                return d
        raise ValueError(f"unsupported NumPy dtype: {dtype}")


_BITS: dict[DType, int] = {
    DType.bool: 8,
    DType.int8: 8,
    DType.int16: 16,
    DType.int32: 32,
    DType.int64: 64,
    DType.uint8: 8,
    DType.uint16: 16,
    DType.uint32: 32,
    DType.uint64: 64,
    DType.float16: 16,
    DType.float32: 32,
    DType.float64: 64,
    DType.bfloat16: 16,
    DType.float4_e2m1fn: 4,
    DType.float6_e2m3fn: 6,
    DType.float6_e3m2fn: 6,
    DType.float8_e8m0fnu: 8,
    DType.float8_e4m3fn: 8,
    DType.float8_e4m3fnuz: 8,
    DType.float8_e5m2: 8,
    DType.float8_e5m2fnuz: 8,
}
_FLOAT8 = frozenset(d for d in DType if d.name.startswith("float8"))
_TO_NUMPY: dict[DType, type] = {
    DType.bool: np.bool_,
    DType.int8: np.int8,
    DType.int16: np.int16,
    DType.int32: np.int32,
    DType.int64: np.int64,
    DType.uint8: np.uint8,
    DType.uint16: np.uint16,
    DType.uint32: np.uint32,
    DType.uint64: np.uint64,
    DType.float8_e8m0fnu: np.uint8,
    DType.float8_e4m3fn: np.uint8,
    DType.float8_e4m3fnuz: np.uint8,
    DType.float8_e5m2: np.uint8,
    DType.float8_e5m2fnuz: np.uint8,
    DType.float16: np.float16,
    DType.float32: np.float32,
    DType.float64: np.float64,
}
_MLIR = {
    "bool": "i1",
    "int8": "si8",
    "int16": "si16",
    "int32": "si32",
    "int64": "si64",
    "uint8": "ui8",
    "uint16": "ui16",
    "uint32": "ui32",
    "uint64": "ui64",
    "float4_e2m1fn": "f4e2m1fn",
    "float6_e2m3fn": "f6e2m3fn",
    "float6_e3m2fn": "f6e3m2fn",
    "float8_e8m0fnu": "f8e8m0fnu",
    "float8_e4m3fn": "f8e4m3fn",
    "float8_e4m3fnuz": "f8e4m3fnuz",
    "float8_e5m2": "f8e5m2",
    "float8_e5m2fnuz": "f8e5m2fnuz",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "bfloat16": "bf16",
}
_FROM_MLIR: dict[str, DType] = {v: DType[k] for k, v in _MLIR.items()}


# ---------------------------------------------------------------------------- the boundary


def to_core(d: Any) -> CoreDType:
    """A MAX DType (or a graphdsl one, or a name) as graphdsl's.

    >>> from graphdsl.max._dtype import to_core
    >>> to_core(DType.bfloat16)
    DType.bfloat16
    """
    if isinstance(d, CoreDType):
        return d
    if isinstance(d, DType):
        return CoreDType[d.name]
    if isinstance(d, str):
        return to_core(DType[d]) if d in DType.__members__ else CoreDType[d]
    raise TypeError(f"expected a DType, got {d!r}")


def from_core(d: CoreDType) -> DType:
    """graphdsl's dtype as MAX's (every graphdsl dtype MAX has; others raise).

    >>> from graphdsl import int8
    >>> from graphdsl.max._dtype import from_core
    >>> from_core(int8)
    int8
    """
    found = DType.__members__.get(d.name)
    if found is None:
        raise UnsupportedError(f"graphdsl's {d.name} has no MAX DType")
    return found
