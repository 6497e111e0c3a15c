"""``max.graph.ops.reduction``: MAX's reductions (the reduced axis stays with size 1)."""

from __future__ import annotations

from graphdsl.max._elementwise import argmax, argmin, max, mean, min, prod, sum

__all__ = ["argmax", "argmin", "max", "mean", "min", "prod", "sum"]
