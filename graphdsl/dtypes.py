"""Element types: :class:`DType`, its facts (kind, bits, storage, range), and parsing.

>>> from graphdsl import DType, dtype
>>> DType.int16.kind, DType.int16.bits
(<Kind.signed: 'signed'>, 16)
>>> dtype("bf16"), dtype("si32"), dtype("ui8")
(DType.bfloat16, DType.int32, DType.uint8)
>>> dtype("i8")
Traceback (most recent call last):
    ...
graphdsl.dtypes.DTypeError: 'i8' is ambiguous: as a numpy type code it means int64, ...
"""

from __future__ import annotations

import builtins
import difflib
import enum
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["DType", "DTypeError", "Kind", "dtype", "to_e8m0"]


class DTypeError(TypeError):
    """A value that does not name a dtype, or names two different ones.

    >>> import graphdsl as gd
    >>> gd.dtype("flaot32")
    Traceback (most recent call last):
        ...
    graphdsl.dtypes.DTypeError: unknown dtype 'flaot32'; did you mean 'float32'?
    """


class Kind(enum.Enum):
    """The category of a dtype, ordered bool < signed/unsigned < float < complex.

    >>> import graphdsl as gd
    >>> gd.float16.kind, gd.uint8.kind.is_integer
    (<Kind.float: 'float'>, True)
    >>> [k.name for k in gd.Kind if k.rank == gd.Kind.signed.rank]
    ['signed', 'unsigned']
    """

    __hash__ = object.__hash__  # members are singletons: identity hash, C speed

    bool = "bool"
    signed = "signed"
    unsigned = "unsigned"
    float = "float"
    complex = "complex"

    @property
    def rank(self) -> int:
        """Position in bool < integer < float < complex (signed and unsigned share a rank)."""
        return _KIND_RANK[self]

    @property
    def is_integer(self) -> builtins.bool:
        return self in (Kind.signed, Kind.unsigned)


_KIND_RANK = {Kind.bool: 0, Kind.signed: 1, Kind.unsigned: 1, Kind.float: 2, Kind.complex: 3}


class DType(enum.Enum):
    """An element type. Members carry their kind, bit width, storage dtype and table codes.

    ``tensor_float32`` is stored as float32 (it is a compute mode, not a storage format);
    ``index`` and ``address`` are word-size unsigned integers stored as uint64 (MAX).

    >>> DType.float16.np
    dtype('float16')
    >>> DType.bfloat16.np
    dtype(bfloat16)
    >>> DType.uint8.min, DType.uint8.max
    (0, 255)
    """

    __hash__ = object.__hash__  # members are singletons: identity hash, C speed

    bool = "bool"
    int8 = "int8"
    int16 = "int16"
    int32 = "int32"
    int64 = "int64"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"
    complex64 = "complex64"
    complex128 = "complex128"
    float8_e4m3fn = "float8_e4m3fn"
    float8_e5m2 = "float8_e5m2"
    float8_e4m3fnuz = "float8_e4m3fnuz"
    float8_e5m2fnuz = "float8_e5m2fnuz"
    float8_e8m0fnu = "float8_e8m0fnu"
    float6_e2m3fn = "float6_e2m3fn"
    float6_e3m2fn = "float6_e3m2fn"
    float4_e2m1fn = "float4_e2m1fn"
    int4 = "int4"
    uint4 = "uint4"
    tensor_float32 = "tensor_float32"
    index = "index"
    address = "address"

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> Kind:
        return _FACTS[self][0]

    @property
    def bits(self) -> int:
        """Bits of one element as the type is defined (tensor_float32 counts 19)."""
        return _FACTS[self][1]

    @property
    def np(self) -> np.dtype[Any]:
        """The numpy (or ml_dtypes) dtype that stores values of this type."""
        return _STORAGE[self]

    @property
    def code(self) -> str:
        """Short code used in tables and IR text (bit-width notation: i8 = int8, f16, bf16)."""
        return _FACTS[self][2]

    @property
    def is_float(self) -> builtins.bool:
        return self.kind is Kind.float

    @property
    def is_integer(self) -> builtins.bool:
        return self.kind.is_integer

    @property
    def is_inexact(self) -> builtins.bool:
        return self.kind in (Kind.float, Kind.complex)

    @property
    def min(self) -> int | float:
        """Smallest finite value (the most negative)."""
        return _range(self)[0]

    @property
    def max(self) -> int | float:
        """Largest finite value."""
        return _range(self)[1]

    @property
    def mantissa_bits(self) -> int:
        """Bits of precision, counting the implicit bit (integers: value bits)."""
        if self.kind is Kind.complex:
            return int(np.finfo(self.np).nmant) + 1
        if self is DType.tensor_float32:
            return 11
        if self.kind is Kind.float:
            info = ml_dtypes.finfo(self.np)  # type: ignore[no-untyped-call]
            return int(info.nmant) + 1
        if self is DType.bool:
            return 1
        return self.bits - (1 if self.kind is Kind.signed else 0)


# kind, bits, code
_FACTS: dict[DType, tuple[Kind, int, str]] = {
    DType.bool: (Kind.bool, 8, "b"),
    DType.int8: (Kind.signed, 8, "i8"),
    DType.int16: (Kind.signed, 16, "i16"),
    DType.int32: (Kind.signed, 32, "i32"),
    DType.int64: (Kind.signed, 64, "i64"),
    DType.uint8: (Kind.unsigned, 8, "u8"),
    DType.uint16: (Kind.unsigned, 16, "u16"),
    DType.uint32: (Kind.unsigned, 32, "u32"),
    DType.uint64: (Kind.unsigned, 64, "u64"),
    DType.float16: (Kind.float, 16, "f16"),
    DType.bfloat16: (Kind.float, 16, "bf16"),
    DType.float32: (Kind.float, 32, "f32"),
    DType.float64: (Kind.float, 64, "f64"),
    DType.complex64: (Kind.complex, 64, "c64"),
    DType.complex128: (Kind.complex, 128, "c128"),
    DType.float8_e4m3fn: (Kind.float, 8, "f8e4m3fn"),
    DType.float8_e5m2: (Kind.float, 8, "f8e5m2"),
    DType.float8_e4m3fnuz: (Kind.float, 8, "f8e4m3fnuz"),
    DType.float8_e5m2fnuz: (Kind.float, 8, "f8e5m2fnuz"),
    DType.float8_e8m0fnu: (Kind.float, 8, "f8e8m0fnu"),
    DType.float6_e2m3fn: (Kind.float, 6, "f6e2m3fn"),
    DType.float6_e3m2fn: (Kind.float, 6, "f6e3m2fn"),
    DType.float4_e2m1fn: (Kind.float, 4, "f4e2m1fn"),
    DType.int4: (Kind.signed, 4, "int4"),
    DType.uint4: (Kind.unsigned, 4, "uint4"),
    DType.tensor_float32: (Kind.float, 19, "tf32"),
    DType.index: (Kind.unsigned, 64, "index"),
    DType.address: (Kind.unsigned, 64, "address"),
}

# the ones numpy stores through ml_dtypes under their own names
_ML_DTYPES = (DType.float8_e4m3fnuz, DType.float8_e5m2fnuz, DType.float8_e8m0fnu,
              DType.float6_e2m3fn, DType.float6_e3m2fn, DType.float4_e2m1fn, DType.int4,
              DType.uint4)  # fmt: skip
_STORAGE: dict[DType, np.dtype[Any]] = {
    d: np.dtype(d.value) for d in DType if d.value in np.sctypeDict and d is not DType.bool
}
_STORAGE.update(
    {
        DType.bool: np.dtype(np.bool_),
        DType.bfloat16: np.dtype(ml_dtypes.bfloat16),
        DType.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
        DType.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
        **{d: np.dtype(getattr(ml_dtypes, d.value)) for d in _ML_DTYPES},
        DType.tensor_float32: np.dtype(np.float32),
        DType.index: np.dtype(np.uint64),
        DType.address: np.dtype(np.uint64),
    }
)


def _range(d: DType) -> tuple[int | float, int | float]:
    if d is DType.bool:
        return 0, 1
    if d.kind.is_integer:
        info = ml_dtypes.iinfo(d.np) if d.bits == 4 else np.iinfo(d.np)  # type: ignore[no-untyped-call]
        return int(info.min), int(info.max)
    if d.kind is Kind.complex:
        finfo = np.finfo(d.np)
        return float(finfo.min), float(finfo.max)
    f = ml_dtypes.finfo(d.np)  # type: ignore[no-untyped-call]
    return float(f.min), float(f.max)


# --------------------------------------------------------------------------- parsing

_NAMES: dict[str, DType] = {d.value: d for d in DType}
_NAMES.update({d.code: d for d in DType})
_NAMES.update(
    {
        "bool_": DType.bool,
        "b1": DType.bool,
        "pred": DType.bool,
        "bf": DType.bfloat16,
        "half": DType.float16,
        "single": DType.float32,
        "double": DType.float64,
        "float": DType.float64,
        "int": DType.int64,
        "complex": DType.complex128,
        "cfloat": DType.complex64,
        "cdouble": DType.complex128,
        "u1": DType.uint8,
        "tensor_float_32": DType.tensor_float32,
        "float8e4m3fn": DType.float8_e4m3fn,
        "float8e5m2": DType.float8_e5m2,
        "f8_e4m3fn": DType.float8_e4m3fn,
        "f8_e5m2": DType.float8_e5m2,
        "f8e4m3": DType.float8_e4m3fn,
        "e4m3": DType.float8_e4m3fn,
        "e5m2": DType.float8_e5m2,
        "idx": DType.index,
        "f8_e4m3fnuz": DType.float8_e4m3fnuz,
        "f8_e5m2fnuz": DType.float8_e5m2fnuz,
        "f8_e8m0fnu": DType.float8_e8m0fnu,
        "e8m0": DType.float8_e8m0fnu,
        "f4_e2m1fn": DType.float4_e2m1fn,
        "fp4": DType.float4_e2m1fn,
        "si4": DType.int4,
        "ui4": DType.uint4,
        "s4": DType.int4,
    }
)
for _bits in (8, 16, 32, 64):
    _NAMES[f"si{_bits}"] = DType(f"int{_bits}")
    _NAMES[f"ui{_bits}"] = DType(f"uint{_bits}")

# Codes whose reading as a numpy type code (bytes) differs from their reading as a
# bit-width code. Each maps to (numpy reading, bit-width reading).
_AMBIGUOUS_CODES: dict[str, tuple[str, str]] = {
    "i1": ("int8", "bool (1-bit integer, as in MLIR and {anvil})"),
    "i2": ("int16", "a 2-bit integer (int2)"),
    "i4": ("int32", "a 4-bit integer (int4)"),
    "i8": ("int64", "int8"),
    "u2": ("uint16", "a 2-bit unsigned integer (uint2)"),
    "u4": ("uint32", "a 4-bit unsigned integer (uint4)"),
    "u8": ("uint64", "uint8"),
    "f2": ("float16", "a 2-bit float"),
    "f4": ("float32", "a 4-bit float (float4_e2m1)"),
    "f8": ("float64", "an 8-bit float (float8_e4m3fn or float8_e5m2)"),
    "c8": ("complex64", "an 8-bit complex"),
    "c16": ("complex128", "a 16-bit complex"),
}

_PY_TYPES: dict[type, DType] = {
    bool: DType.bool,
    int: DType.int64,
    float: DType.float64,
    complex: DType.complex128,
}


def dtype(x: object) -> DType:
    """Return the :class:`DType` that ``x`` names.

    Accepts a DType, a numpy dtype or scalar type (including ml_dtypes' bfloat16 and
    float8 types), Python ``bool``/``int``/``float``/``complex`` (numpy's widths: int64,
    float64, complex128) and names: full names, bit-width codes (``f32``, ``bf16``,
    ``u8``... see below), MLIR-style ``si32``/``ui8``.

    A code whose numpy reading differs from its bit-width reading (``"i8"`` is int64 to
    numpy and int8 by bit width; likewise i1 i2 i4 u2 u4 u8 f2 f4 f8 c8 c16) is rejected:
    write the full name.

    >>> dtype("float32"), dtype("f32"), dtype(float), dtype(bool)
    (DType.float32, DType.float32, DType.float64, DType.bool)
    >>> import numpy as np, ml_dtypes
    >>> dtype(np.int16), dtype(np.dtype("uint32")), dtype(ml_dtypes.bfloat16)
    (DType.int16, DType.uint32, DType.bfloat16)
    >>> dtype("flaot32")
    Traceback (most recent call last):
        ...
    graphdsl.dtypes.DTypeError: unknown dtype 'flaot32'; did you mean 'float32'?
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        return _parse_name(x)
    if isinstance(x, type) and x in _PY_TYPES:
        return _PY_TYPES[x]
    try:
        npdt = np.dtype(x)  # type: ignore[call-overload]
    except TypeError:
        raise DTypeError(
            f"cannot interpret {x!r} (of type {type(x).__name__}) as a dtype"
        ) from None
    for d in (DType.bool, *_BY_STORAGE_ORDER):
        if _STORAGE[d] == npdt:
            return d
    raise DTypeError(f"numpy dtype {npdt} has no graphdsl DType")


# storage lookup prefers the real types over the aliases stored as them
_BY_STORAGE_ORDER = [
    d for d in DType if d not in (DType.bool, DType.tensor_float32, DType.index, DType.address)
]


def _parse_name(name: str) -> DType:
    key = name.strip()
    low = key.lower()
    if low in _AMBIGUOUS_CODES:
        numpy_reading, bit_reading = _AMBIGUOUS_CODES[low]
        suggest = bit_reading if bit_reading.isidentifier() else None
        fix = f"'{numpy_reading}' or '{suggest}'" if suggest else f"'{numpy_reading}'"
        raise DTypeError(
            f"{name!r} is ambiguous: as a numpy type code it means {numpy_reading}, "
            f"as a bit-width code it means {bit_reading}; write {fix}"
        )
    for candidate in (key, low, low.replace("-", "_")):
        if candidate in _NAMES:
            return _NAMES[candidate]
    close = difflib.get_close_matches(low, list(_NAMES), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known names: {', '.join(_NAMES)}"
    raise DTypeError(f"unknown dtype {name!r}{hint}")


def to_e8m0(x: np.ndarray) -> np.ndarray:
    """float8_e8m0fnu (the powers of two 2**-127..2**127, and NaN) from float32: the nearer
    power of two, a tie (1.5 * 2**k) up, as ml_dtypes 0.6 rounds (0.5 rounds a tie to the
    even exponent: this is the rule whichever is installed); below 2**-127, 2**-127; zero,
    negatives, infinities, NaN and values rounding past 2**127 give NaN.

    >>> to_e8m0(np.array([0.75, 3.0, 0.0], np.float32)).astype(np.float32)
    array([ 1.,  4., nan], dtype=float32)
    """
    xf = np.asarray(x, dtype=np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        valid = np.isfinite(xf) & (xf > 0)
        m, e = np.frexp(np.where(valid, xf, 1.0))  # x = m * 2**e, m in [0.5, 1)
        r = np.ldexp(1.0, e - 1) * np.where(m >= 0.75, 2.0, 1.0)
        r = np.maximum(r, 2.0**-127)
        r = np.where(valid & (r <= 2.0**127), r, np.nan)
    return np.asarray(r.astype(np.float32).astype(DType.float8_e8m0fnu.np))
