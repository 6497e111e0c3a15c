"""Promotion tables transcribed cell by cell from ../shared/seeds/ (the spec).

Every table below is typed-in data copied from a seed document, never computed from a lattice,
so that tests can compare an implementation (or a lattice) against what was published.

Conventions:

* Each grid is a dict keyed by ``(row_code, col_code)`` in the seed's OWN notation, and its values
  are the seed's own code strings.  Row = first operand, column = second operand.
* Notations collide across seeds: ``u8``/``i8`` mean uint64/int64 in seeds 000 and 002
  (byte widths) but uint8/int8 in seed 001 (bit widths); in seed 004 ``i1`` is bool and ``i8``
  is int8.  Always go through the matching ``*_NAMES`` map to get canonical dtype names.
* Canonical names: bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 bfloat16 float16
  float32 float64 complex64 complex128 index address tensor_float32; weak types stay
  ``"i*"``, ``"f*"``, ``"c*"``.
* ``"-"`` (NumPy table only) means "no promotion defined" in the seed.

Published cells known to contradict their own document's lattice are listed in comments next
to the table (they are transcribed as published, not corrected).
"""

from __future__ import annotations

import re


def _grid(text: str) -> dict[tuple[str, str], str]:
    """Parse a whitespace grid: first line = column codes, each next line = row code then cells.

    A wide table may be split into column bands separated by blank lines; each band follows the
    same rule (its own header line, then one line per row).  Raises ``ValueError`` on a ragged
    line or on a cell given twice.
    """
    cells: dict[tuple[str, str], str] = {}
    for band in re.split(r"\n[ \t]*\n", text):
        lines = [line for line in band.splitlines() if line.strip()]
        if not lines:
            continue
        cols = lines[0].split()
        for line in lines[1:]:
            row, *values = line.split()
            if len(values) != len(cols):
                raise ValueError(f"ragged grid line: {line!r}")
            for col, value in zip(cols, values, strict=True):
                if (row, col) in cells:
                    raise ValueError(f"cell ({row}, {col}) given twice")
                cells[row, col] = value
    return cells


# ---------------------------------------------------------------------------------------------
# Seed 000: JAX "Type promotion semantics", jax.numpy.promote_types binary table (18 x 18).
# Byte-width codes: u8 = uint64, i8 = int64, f2 = float16, c8 = complex64, c16 = complex128.
# Seed renders it with "|" separators (header row has no leading corner cell and a trailing
# empty cell).  All 324 cells agree with the seed-001 final lattice (plus b1 -> i*); symmetric.
# ---------------------------------------------------------------------------------------------

# fmt: off
JAX_000_CODES = (
    "b1", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8",
    "bf", "f2", "f4", "f8", "c8", "c16", "i*", "f*", "c*",
)
# fmt: on
JAX_000 = _grid("""
     b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8   c16  i*   f*   c*
b1   b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8   c16  i*   f*   c*
u1   u1   u1   u2   u4   u8   i2   i2   i4   i8   bf   f2   f4   f8   c8   c16  u1   f*   c*
u2   u2   u2   u2   u4   u8   i4   i4   i4   i8   bf   f2   f4   f8   c8   c16  u2   f*   c*
u4   u4   u4   u4   u4   u8   i8   i8   i8   i8   bf   f2   f4   f8   c8   c16  u4   f*   c*
u8   u8   u8   u8   u8   u8   f*   f*   f*   f*   bf   f2   f4   f8   c8   c16  u8   f*   c*
i1   i1   i2   i4   i8   f*   i1   i2   i4   i8   bf   f2   f4   f8   c8   c16  i1   f*   c*
i2   i2   i2   i4   i8   f*   i2   i2   i4   i8   bf   f2   f4   f8   c8   c16  i2   f*   c*
i4   i4   i4   i4   i8   f*   i4   i4   i4   i8   bf   f2   f4   f8   c8   c16  i4   f*   c*
i8   i8   i8   i8   i8   f*   i8   i8   i8   i8   bf   f2   f4   f8   c8   c16  i8   f*   c*
bf   bf   bf   bf   bf   bf   bf   bf   bf   bf   bf   f4   f4   f8   c8   c16  bf   bf   c8
f2   f2   f2   f2   f2   f2   f2   f2   f2   f2   f4   f2   f4   f8   c8   c16  f2   f2   c8
f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f8   c8   c16  f4   f4   c8
f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   c16  c16  f8   f8   c16
c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c16  c8   c16  c8   c8   c8
c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16
i*   i*   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8   c16  i*   f*   c*
f*   f*   f*   f*   f*   f*   f*   f*   f*   f*   bf   f2   f4   f8   c8   c16  f*   f*   c*
c*   c*   c*   c*   c*   c*   c*   c*   c*   c*   c8   c8   c8   c16  c8   c16  c*   c*   c*
""")
JAX_000_NAMES = {
    "b1": "bool",
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "bf": "bfloat16",
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
    "c8": "complex64",
    "c16": "complex128",
    "i*": "i*",
    "f*": "f*",
    "c*": "c*",
}

# ---------------------------------------------------------------------------------------------
# Seed 001: JAX design note, appendix "JAX Type Promotion: jax.numpy" (18 x 18).
# Bit-width codes: u8 = uint8, i8 = int8, f16 = float16, c64 = complex64, c128 = complex128.
# All cells agree with JAX_LATTICE_001 (plus b -> i*) and, code for code, with JAX_000.
# ---------------------------------------------------------------------------------------------

# fmt: off
JNP_001_CODES = (
    "b", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
    "bf16", "f16", "f32", "f64", "c64", "c128", "i*", "f*", "c*",
)
# fmt: on
JNP_001 = _grid("""
     b    u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
b    b    u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
u8   u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 u8   f*   c*
u16  u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 u16  f*   c*
u32  u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 u32  f*   c*
u64  u64  u64  u64  u64  u64  f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 u64  f*   c*
i8   i8   i16  i32  i64  f*   i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i8   f*   c*
i16  i16  i16  i32  i64  f*   i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 i16  f*   c*
i32  i32  i32  i32  i64  f*   i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 i32  f*   c*
i64  i64  i64  i64  i64  f*   i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 i64  f*   c*
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128 bf16 bf16 c64
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128 f16  f16  c64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 f32  f32  c64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  c128
c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 c64  c64  c64
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
i*   i*   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
f*   f*   f*   f*   f*   f*   f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 f*   f*   c*
c*   c*   c*   c*   c*   c*   c*   c*   c*   c*   c64  c64  c64  c128 c64  c128 c*   c*   c*
""")
JNP_001_NAMES = {
    "b": "bool",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "bf16": "bfloat16",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
    "i*": "i*",
    "f*": "f*",
    "c*": "c*",
}

# Seed 001, appendix "NumPy Type Promotion" (18 x 18, same codes as JNP_001; "-" = undefined,
# i.e. the whole bf16 row and column).  NumPy's rules are not a lattice; symmetric as published.
NUMPY_001_CODES = JNP_001_CODES
NUMPY_001 = _grid("""
     b    u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
b    b    u8   u16  u32  u64  i8   i16  i32  i64  -    f16  f32  f64  c64  c128 i64  f64  c128
u8   u8   u8   u16  u32  u64  i16  i16  i32  i64  -    f16  f32  f64  c64  c128 u8   f64  c128
u16  u16  u16  u16  u32  u64  i32  i32  i32  i64  -    f32  f32  f64  c64  c128 u16  f64  c128
u32  u32  u32  u32  u32  u64  i64  i64  i64  i64  -    f64  f64  f64  c128 c128 u32  f64  c128
u64  u64  u64  u64  u64  u64  f64  f64  f64  f64  -    f64  f64  f64  c128 c128 u64  f64  c128
i8   i8   i16  i32  i64  f64  i8   i16  i32  i64  -    f16  f32  f64  c64  c128 i8   f64  c128
i16  i16  i16  i32  i64  f64  i16  i16  i32  i64  -    f32  f32  f64  c64  c128 i16  f64  c128
i32  i32  i32  i32  i64  f64  i32  i32  i32  i64  -    f64  f64  f64  c128 c128 i32  f64  c128
i64  i64  i64  i64  i64  f64  i64  i64  i64  i64  -    f64  f64  f64  c128 c128 i64  f64  c128
bf16 -    -    -    -    -    -    -    -    -    -    -    -    -    -    -    -    -    -
f16  f16  f16  f32  f64  f64  f16  f32  f64  f64  -    f16  f32  f64  c64  c128 f16  f16  c64
f32  f32  f32  f32  f64  f64  f32  f32  f64  f64  -    f32  f32  f64  c64  c128 f32  f32  c64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  -    f64  f64  f64  c128 c128 f64  f64  c128
c64  c64  c64  c64  c128 c128 c64  c64  c128 c128 -    c64  c64  c128 c64  c128 c64  c64  c64
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 -    c128 c128 c128 c128 c128 c128 c128 c128
i*   i64  u8   u16  u32  u64  i8   i16  i32  i64  -    f16  f32  f64  c64  c128 i64  f64  c128
f*   f64  f64  f64  f64  f64  f64  f64  f64  f64  -    f16  f32  f64  c64  c128 f64  f64  c128
c*   c128 c128 c128 c128 c128 c128 c128 c128 c128 -    c64  c64  c128 c64  c128 c128 c128 c128
""")
NUMPY_001_NAMES = JNP_001_NAMES

# Seed 001, section "Type Promotion in JAX": the final lattice dict, verbatim (codes as in seed
# 001).  It has no node for bool; the tables imply the extra edge b -> i*.
# fmt: off
JAX_LATTICE_001: dict[str, list[str]] = {
    "i*": ["u8", "i8"], "f*": ["c*", "f16", "bf16"], "c*": ["c64"],
    "u8": ["u16", "i16"], "u16": ["u32", "i32"], "u32": ["u64", "i64"], "u64": ["f*"],
    "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f16": ["f32"], "bf16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
    "c64": ["c128"],
}
# fmt: on

# ---------------------------------------------------------------------------------------------
# Seed 002: Array API type-promotion proposal.  Each table is flattened onto one line in the
# seed: header (column codes), then each row = row label followed by its cells.
# Byte-width codes: u8 = uint64, i8 = int64, f2 = float16, f8 = float64.
# ---------------------------------------------------------------------------------------------

# 15 tokens = 3 column codes + 3 rows x (label + 3 cells).
ARRAY_API_FLOAT_CODES = ("f2", "f4", "f8")
ARRAY_API_FLOAT = _grid("""
    f2  f4  f8
f2  f2  f4  f8
f4  f4  f4  f8
f8  f8  f8  f8
""")

# 24 tokens = 4 column codes + 4 rows x (label + 4 cells).
ARRAY_API_UNSIGNED_CODES = ("u1", "u2", "u4", "u8")
ARRAY_API_UNSIGNED = _grid("""
    u1  u2  u4  u8
u1  u1  u2  u4  u8
u2  u2  u2  u4  u8
u4  u4  u4  u4  u8
u8  u8  u8  u8  u8
""")

# 24 tokens = 4 column codes + 4 rows x (label + 4 cells).
ARRAY_API_SIGNED_CODES = ("i1", "i2", "i4", "i8")
ARRAY_API_SIGNED = _grid("""
    i1  i2  i4  i8
i1  i1  i2  i4  i8
i2  i2  i2  i4  i8
i4  i4  i4  i4  i8
i8  i8  i8  i8  i8
""")

# Mixed unsigned x signed: columns are UNSIGNED (u1 u2 u4), rows are SIGNED (i1 i2 i4).
# The seed line has only 15 tokens = 3 column codes + 3 rows x (label + 3 cells); a complete
# table would have 19.  The i8 row ("i8 i8 i8 i8": (i8, u1|u2|u4) -> i8) is missing from the
# published text and is deliberately NOT added here.  (i8, u8) is excluded by the proposal.
ARRAY_API_MIXED_ROWS = ("i1", "i2", "i4")
ARRAY_API_MIXED_COLS = ("u1", "u2", "u4")
ARRAY_API_MIXED = _grid("""
    u1  u2  u4
i1  i2  i4  i8
i2  i2  i4  i8
i4  i4  i4  i8
""")

ARRAY_API_NAMES = {
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
}

# ---------------------------------------------------------------------------------------------
# Seed 003: MAX graph type_promotion reference table (16 x 16, full dtype names).  The seed
# concatenates names without separators; tokenized by greedy longest match.  Split here into
# four column bands of four columns to fit the line length.
# Cells that contradict the MAX lattice (index -> uint64, address -> uint64, bool -> int8,uint8,
# ...) and the seed's own prose ("never promote other types to them", "behave as uint64"),
# transcribed as published; they also make the table asymmetric:
#   (bool, index) = int64     but lattice uint64, and (index, bool) = uint64
#   (bool, address) = int64   but lattice uint64, and (address, bool) = uint64
#   (int8, index) = index     but lattice float16, and (index, int8) = float16
#   (int8, address) = address but lattice float16, and (address, int8) = float16
# ---------------------------------------------------------------------------------------------

# fmt: off
MAX_003_CODES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "index", "address", "float16", "bfloat16", "float32", "tensor_float32", "float64",
)
# fmt: on
MAX_003 = _grid("""
               bool           int8           int16          int32
bool           bool           int8           int16          int32
int8           int8           int8           int16          int32
int16          int16          int16          int16          int32
int32          int32          int32          int32          int32
int64          int64          int64          int64          int64
uint8          uint8          int16          int16          int32
uint16         uint16         int32          int32          int32
uint32         uint32         int64          int64          int64
uint64         uint64         float16        float16        float16
index          uint64         float16        float16        float16
address        uint64         float16        float16        float16
float16        float16        float16        float16        float16
bfloat16       bfloat16       bfloat16       bfloat16       bfloat16
float32        float32        float32        float32        float32
tensor_float32 tensor_float32 tensor_float32 tensor_float32 tensor_float32
float64        float64        float64        float64        float64

               int64          uint8          uint16         uint32
bool           int64          uint8          uint16         uint32
int8           int64          int16          int32          int64
int16          int64          int16          int32          int64
int32          int64          int32          int32          int64
int64          int64          int64          int64          int64
uint8          int64          uint8          uint16         uint32
uint16         int64          uint16         uint16         uint32
uint32         int64          uint32         uint32         uint32
uint64         float16        uint64         uint64         uint64
index          float16        uint64         uint64         uint64
address        float16        uint64         uint64         uint64
float16        float16        float16        float16        float16
bfloat16       bfloat16       bfloat16       bfloat16       bfloat16
float32        float32        float32        float32        float32
tensor_float32 tensor_float32 tensor_float32 tensor_float32 tensor_float32
float64        float64        float64        float64        float64

               uint64         index          address        float16
bool           uint64         int64          int64          float16
int8           float16        index          address        float16
int16          float16        float16        float16        float16
int32          float16        float16        float16        float16
int64          float16        float16        float16        float16
uint8          uint64         uint64         uint64         float16
uint16         uint64         uint64         uint64         float16
uint32         uint64         uint64         uint64         float16
uint64         uint64         uint64         uint64         float16
index          uint64         index          uint64         float16
address        uint64         uint64         address        float16
float16        float16        float16        float16        float16
bfloat16       bfloat16       bfloat16       bfloat16       bfloat16
float32        float32        float32        float32        float32
tensor_float32 tensor_float32 tensor_float32 tensor_float32 tensor_float32
float64        float64        float64        float64        float64

               bfloat16       float32        tensor_float32 float64
bool           bfloat16       float32        tensor_float32 float64
int8           bfloat16       float32        tensor_float32 float64
int16          bfloat16       float32        tensor_float32 float64
int32          bfloat16       float32        tensor_float32 float64
int64          bfloat16       float32        tensor_float32 float64
uint8          bfloat16       float32        tensor_float32 float64
uint16         bfloat16       float32        tensor_float32 float64
uint32         bfloat16       float32        tensor_float32 float64
uint64         bfloat16       float32        tensor_float32 float64
index          bfloat16       float32        tensor_float32 float64
address        bfloat16       float32        tensor_float32 float64
float16        bfloat16       float32        tensor_float32 float64
bfloat16       bfloat16       float32        tensor_float32 float64
float32        float32        float32        tensor_float32 float64
tensor_float32 tensor_float32 tensor_float32 tensor_float32 float64
float64        float64        float64        float64        float64
""")
MAX_003_NAMES = {
    "bool": "bool",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "index": "index",
    "address": "address",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "tensor_float32": "tensor_float32",
    "float64": "float64",
}

# ---------------------------------------------------------------------------------------------
# Seed 004: {anvil} "Type Promotion Rules".  Codes: i1 = bool, i8 = int8, ui8 = uint8, ...
# ANVIL_KNOWN: "Type promotion rules (row x column)", both operands known; symmetric, and
# reproduced exactly by bool -> i8,ui8; i8 -> i16 -> i32 -> i64 -> f32 -> f64;
# ui8 -> i16,ui16; ui16 -> i32,ui32; ui32 -> i64,ui64; ui64 -> i64.
# ANVIL_AMBIGUOUS: "Promotion rules: ambiguous (row) x known (column)"; asymmetric by design.
# ---------------------------------------------------------------------------------------------

ANVIL_CODES = ("i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f32", "f64")
ANVIL_KNOWN = _grid("""
     i1   i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i1   i1   i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i8   i8   i8   i16  i32  i64  i16  i32  i64  i64  f32  f64
i16  i16  i16  i16  i32  i64  i16  i32  i64  i64  f32  f64
i32  i32  i32  i32  i32  i64  i32  i32  i64  i64  f32  f64
i64  i64  i64  i64  i64  i64  i64  i64  i64  i64  f32  f64
ui8  ui8  i16  i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
ui16 ui16 i32  i32  i32  i64  ui16 ui16 ui32 ui64 f32  f64
ui32 ui32 i64  i64  i64  i64  ui32 ui32 ui32 ui64 f32  f64
ui64 ui64 i64  i64  i64  i64  ui64 ui64 ui64 ui64 f32  f64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
""")
ANVIL_AMBIGUOUS = _grid("""
     i1   i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i1   i1   i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i8   i8   i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i16  i16  i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i32  i32  i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
i64  i64  i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
ui8  ui8  i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
ui16 ui16 i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
ui32 ui32 i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
ui64 ui64 i8   i16  i32  i64  ui8  ui16 ui32 ui64 f32  f64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f32  f64
""")
ANVIL_NAMES = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "f32": "float32",
    "f64": "float64",
}

# Worked common_dtype(...) calls printed in seed 004:
# (a, b, a_ambiguous, b_ambiguous, published dtype, published ambiguous or None if not printed).
# Omitted ambiguity arguments default to FALSE.  Printed dtypes are "<stablehlo::FloatType>
# @ value: int N", transcribed as fN.  Note the seed's prose before the third call describes it
# backwards ("first type is a known f64 and the second is an ambiguous f32 ... result is an
# f64"); the code and printed output (known f32, ambiguous f64 -> f32) are what is recorded.
ANVIL_COMMON_DTYPE_EXAMPLES: list[tuple[str, str, bool, bool, str, bool | None]] = [
    ("f64", "f32", False, False, "f64", None),
    ("i64", "f32", False, False, "f32", None),
    ("f32", "f64", False, True, "f32", False),
    ("f32", "f64", True, True, "f64", True),
    ("f32", "f64", False, False, "f64", False),
]
