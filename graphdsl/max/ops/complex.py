"""``max.graph.ops.complex``: complex numbers as interleaved pairs (a last axis of 2: real,
imaginary), as MAX keeps them."""

from __future__ import annotations

from graphdsl.max._extra import as_interleaved_complex
from graphdsl.max._extra import complex_mul as mul
from graphdsl.max._shape import reshape, stack

__all__ = ["as_interleaved_complex", "mul", "reshape", "stack"]
