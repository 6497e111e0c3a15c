"""Kernel tables: which (ONNX op, element type) pairs an onnxruntime provider has a kernel for.

The tables are package data, ``exporters/onnx/kernels/<target>.json``: ``cpu.json`` is measured
and written by ``scripts/probe_ort_kernels.py --write``; ``cuda.json`` is measured on a GPU and
written by ``scripts/probe_cuda.py --write``, and ``cuda_documented.json`` was transcribed from
onnxruntime's documentation (its rows stand where the measurement has none).  Each file holds
``provenance`` (how, when and on which versions the table was obtained, with explanatory
``notes``) and ``kernels``: op -> onnx.TensorProto type names, where "Cast" holds "FROM->TO"
pairs.  ``cpu.json`` also holds ``upcast_kernels``, the
pairs that run only because onnxruntime computes them in float32.  ``dump_kernels`` is the one
serialization (sorted keys and type lists), so an unchanged table rewrites byte-identically.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__all__ = ["KernelTable", "Kernels", "dump_kernels", "load_kernels"]

Kernels = dict[str, frozenset[str]]


@dataclass(frozen=True)
class KernelTable:
    provenance: dict[str, Any]
    kernels: Kernels
    upcast_kernels: Kernels = field(default_factory=dict)  # written only where non-empty


@functools.cache
def load_kernels(target: str) -> KernelTable:
    """The kernel table of ``target`` ("cpu", "cuda" or "cuda_documented"), read from the
    package data once."""
    path = resources.files("exporters.onnx") / "kernels" / f"{target}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return KernelTable(
        provenance=data["provenance"],
        kernels=_sets(data["kernels"]),
        upcast_kernels=_sets(data.get("upcast_kernels", {})),
    )


def dump_kernels(table: KernelTable) -> str:
    """The JSON text of ``table``: sorted keys and type lists, one name a line."""
    data: dict[str, Any] = {"provenance": table.provenance, "kernels": _lists(table.kernels)}
    if table.upcast_kernels:
        data["upcast_kernels"] = _lists(table.upcast_kernels)
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _sets(table: dict[str, list[str]]) -> Kernels:
    return {op: frozenset(types) for op, types in table.items()}


def _lists(table: Kernels) -> dict[str, list[str]]:
    return {op: sorted(types) for op, types in table.items()}
