"""MAX's ``max.graph.quantization``: the GGUF-style encodings (``QuantizationEncoding``), their
block layouts and ``QuantizationConfig``, with MAX's names and values.

graphdsl implements ``Q4_0`` (``ops.dequantize``, ``ops.qmatmul``, and ``Weight``'s
``quantization_encoding``); the other encodings are named so that MAX code imports, and raise
:class:`~graphdsl.max.UnsupportedError` where used. Q4_0 (GGML's layout, which MAX's kernels
read: checked against max 26.7's ``dequantize``, tests/test_graphdsl_max_gguf.py): each block
of 32 values is 18 bytes, a float16 scale ``d`` (little-endian) and 16 bytes of 4-bit codes,
value j from the low four bits of byte j and value 16 + j from its high four bits; each
value is ``(code - 8) * d``.

>>> from graphdsl.max.quantization import QuantizationEncoding
>>> q = QuantizationEncoding.Q4_0
>>> q.name, q.elements_per_block, q.block_size
('q4_0', 32, 18)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["BlockParameters", "QuantizationConfig", "QuantizationEncoding"]


class BlockParameters(NamedTuple):
    """How many values a block holds and how many bytes it takes."""

    elements_per_block: int
    block_size: int


class QuantizationEncoding(enum.Enum):
    """A GGUF-style block quantization (MAX's enum; graphdsl implements Q4_0)."""

    Q4_0 = "Q4_0"
    Q4_K = "Q4_K"
    Q5_K = "Q5_K"
    Q6_K = "Q6_K"
    GPTQ = "GPTQ"

    @property
    def name(self) -> str:  # (MAX's: lower case)
        return self.value.lower()

    @property
    def block_parameters(self) -> BlockParameters:
        """The block layout (a KeyError for GPTQ, which has none, as MAX's)."""
        return _BLOCKS[self]

    @property
    def elements_per_block(self) -> int:
        return self.block_parameters.elements_per_block

    @property
    def block_size(self) -> int:
        """Bytes per block."""
        return self.block_parameters.block_size

    @property
    def is_gguf(self) -> bool:
        return self is not QuantizationEncoding.GPTQ


# GGML's layouts: Q4_0 d + 16 bytes; the K-quants' super-blocks of 256 values
_BLOCKS = {
    QuantizationEncoding.Q4_0: BlockParameters(32, 18),
    QuantizationEncoding.Q4_K: BlockParameters(256, 144),
    QuantizationEncoding.Q5_K: BlockParameters(256, 176),
    QuantizationEncoding.Q6_K: BlockParameters(256, 210),
}


@dataclass(frozen=True)
class QuantizationConfig:
    """MAX's quantization parameters (GPTQ's; graphdsl implements no GPTQ)."""

    quant_method: str
    bits: int
    group_size: int
    desc_act: bool = False
    sym: bool = False
