"""DType facts and parsing, including the codes that numpy and bit widths read differently."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import graphdsl as gd
from graphdsl import DType, Kind


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("float32", DType.float32), ("f32", DType.float32), ("bf16", DType.bfloat16),
        ("bfloat16", DType.bfloat16), ("bf", DType.bfloat16), ("si32", DType.int32),
        ("ui8", DType.uint8), ("u1", DType.uint8), ("i16", DType.int16), ("u64", DType.uint64),
        ("f16", DType.float16), ("f64", DType.float64), ("c64", DType.complex64),
        ("c128", DType.complex128), ("b1", DType.bool), ("pred", DType.bool),
        ("tf32", DType.tensor_float32), ("index", DType.index), ("address", DType.address),
        ("float8_e4m3fn", DType.float8_e4m3fn), ("f8e5m2", DType.float8_e5m2),
        ("Float32", DType.float32), ("half", DType.float16), ("double", DType.float64),
    ],
)  # fmt: skip
def test_parse_names(text: str, want: DType) -> None:
    assert gd.dtype(text) is want


@pytest.mark.parametrize(
    ("code", "numpy_reading"),
    [
        ("i8", "int64"), ("u2", "uint16"), ("u4", "uint32"), ("u8", "uint64"), ("i2", "int16"),
        ("i4", "int32"), ("f2", "float16"), ("f4", "float32"), ("f8", "float64"),
        ("c8", "complex64"), ("c16", "complex128"), ("i1", "int8"),
    ],
)  # fmt: skip
def test_ambiguous_codes_are_rejected_naming_both_readings(code: str, numpy_reading: str) -> None:
    with pytest.raises(gd.DTypeError, match="ambiguous") as e:
        gd.dtype(code)
    msg = str(e.value)
    assert f"numpy type code it means {numpy_reading}" in msg
    assert "bit-width code it means" in msg
    assert np.dtype(code) == np.dtype(numpy_reading)  # numpy really reads it that way


def test_unknown_name_gets_a_suggestion() -> None:
    with pytest.raises(gd.DTypeError, match="did you mean 'float32'"):
        gd.dtype("flaot32")
    with pytest.raises(gd.DTypeError, match="did you mean 'bfloat16'"):
        gd.dtype("bfloat61")


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (np.float32, DType.float32), (np.dtype("int16"), DType.int16), (np.bool_, DType.bool),
        (ml_dtypes.bfloat16, DType.bfloat16), (ml_dtypes.float8_e4m3fn, DType.float8_e4m3fn),
        (bool, DType.bool), (int, DType.int64), (float, DType.float64),
        (complex, DType.complex128), (DType.uint32, DType.uint32), (np.uint64, DType.uint64),
    ],
)  # fmt: skip
def test_parse_types(value: object, want: DType) -> None:
    assert gd.dtype(value) is want


def test_bad_objects() -> None:
    with pytest.raises(gd.DTypeError, match="cannot interpret"):
        gd.dtype(3.5)
    with pytest.raises(gd.DTypeError, match="no graphdsl DType"):
        gd.dtype(np.dtype("datetime64[s]"))


def test_facts() -> None:
    assert DType.uint8.kind is Kind.unsigned and DType.int8.kind is Kind.signed
    assert DType.bfloat16.np == np.dtype(ml_dtypes.bfloat16)
    assert DType.tensor_float32.np == np.float32 and DType.index.np == np.uint64
    assert (DType.int8.min, DType.int8.max) == (-128, 127)
    assert DType.float16.max == 65504.0
    assert DType.bfloat16.mantissa_bits == 8 and DType.float32.mantissa_bits == 24
    assert DType.int64.mantissa_bits == 63
    assert [d.bits for d in (DType.bool, DType.complex128, DType.float8_e5m2)] == [8, 128, 8]
    assert all(gd.dtype(d.name) is d for d in DType)


def test_module_aliases() -> None:
    assert gd.int8 is DType.int8 and gd.float32 is DType.float32 and gd.bool is DType.bool
    assert gd.bfloat16 is DType.bfloat16 and gd.uint64 is DType.uint64
