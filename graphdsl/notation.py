"""Table notations: the codes each seed document writes dtypes in.

Seed 000 (JAX) writes byte widths (``i1`` = int8, ``f2`` = float16, ``bf``), seed 004
({anvil}) bit widths with ``i1`` for bool and ``ui8``, seed 003 (MAX) full names. A
policy's generated table uses the notation of its seed, so it compares with the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graphdsl.dtypes import DType, Kind
from graphdsl.lattice import Weak

__all__ = ["ANVIL_CODES", "BIT_CODES", "JAX_CODES", "NAME_CODES", "Notation", "notation_for"]


@dataclass(frozen=True)
class Notation:
    """Codes a policy's tables are printed in (the notation of its seed document)."""

    code: Callable[[DType], str]
    ambiguous: Callable[[DType, Kind], str]
    order: tuple[DType, ...] = ()

    def sort(self, dts: list[DType]) -> list[DType]:
        rank = {d: i for i, d in enumerate(self.order)}
        return sorted(dts, key=lambda d: rank.get(d, len(rank))) if rank else dts

_STANDARD = [
    DType.bool,
    DType.uint8,
    DType.uint16,
    DType.uint32,
    DType.uint64,
    DType.int8,
    DType.int16,
    DType.int32,
    DType.int64,
    DType.bfloat16,
    DType.float16,
    DType.float32,
    DType.float64,
    DType.complex64,
    DType.complex128,
]


def _byte_code(d: DType) -> str:
    """Seed 000's codes: b1, u1..u8 and i1..i8 by bytes, bf, f2..f8, c8, c16."""
    if d is DType.bool:
        return "b1"
    if d is DType.bfloat16:
        return "bf"
    if d not in _STANDARD:
        return d.code
    prefix = {Kind.signed: "i", Kind.unsigned: "u", Kind.float: "f", Kind.complex: "c"}[d.kind]
    return f"{prefix}{d.np.itemsize}"


JAX_CODES = Notation(
    code=_byte_code,
    ambiguous=lambda d, k: str(Weak.of(k)) if Weak.of(k) else _byte_code(d),
    order=tuple(_STANDARD),
)
ANVIL_CODES = Notation(
    code=lambda d: "i1" if d is DType.bool else d.code.replace("u", "ui"),
    ambiguous=lambda d, k: ("i1" if d is DType.bool else d.code.replace("u", "ui")) + "?",
    order=(
        DType.bool,
        DType.int8,
        DType.int16,
        DType.int32,
        DType.int64,
        DType.uint8,
        DType.uint16,
        DType.uint32,
        DType.uint64,
    ),
)
NAME_CODES = Notation(
    code=lambda d: d.name,
    ambiguous=lambda d, k: d.name + "?",
    order=(
        DType.bool, DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8, DType.uint16,
        DType.uint32, DType.uint64, DType.index, DType.address, DType.float16, DType.bfloat16,
        DType.float32, DType.tensor_float32, DType.float64,
    ),
)
BIT_CODES = Notation(code=lambda d: d.code, ambiguous=lambda d, k: d.code + "?")

_BY_POLICY = {
    "jax": JAX_CODES,
    "jax-x32": JAX_CODES,
    "jax-strict": JAX_CODES,
    "default": ANVIL_CODES,
    "anvil": ANVIL_CODES,
    "max": NAME_CODES,
    "array-api": JAX_CODES,
}


def notation_for(policy_name: str) -> Notation:
    """The codes a policy's tables print in (bit-width codes for user policies)."""
    return _BY_POLICY.get(policy_name, BIT_CODES)
