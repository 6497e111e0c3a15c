"""Per-target kernel capability tables: which (ONNX op, element type) pairs have kernels."""

from __future__ import annotations

from dataclasses import dataclass

from exporters.onnx._kernels import load_kernels

__all__ = ["TARGETS", "Target"]

# Ops the lowering emits only on int64 shape data or as control flow; every provider has them.
_STRUCTURAL = frozenset({"Shape", "Gather", "Scan", "ConstantOfShape", "Slice"})


@dataclass(frozen=True)
class Target:
    name: str
    kernels: dict[str, frozenset[str]]
    provider: str

    def has(self, op: str, type_name: str) -> bool:
        if op in _STRUCTURAL:
            return True
        return type_name in self.kernels.get(op, frozenset())

    def has_cast(self, src: str, dst: str) -> bool:
        return f"{src}->{dst}" in self.kernels.get("Cast", frozenset())


TARGETS = {
    "cpu": Target("cpu", load_kernels("cpu").kernels, "CPUExecutionProvider"),
    "cuda": Target("cuda", load_kernels("cuda").kernels, "CUDAExecutionProvider"),
}
