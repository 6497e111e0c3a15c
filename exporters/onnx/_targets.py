"""Per-target kernel capability tables: which (ONNX op, element type) pairs have kernels."""

from __future__ import annotations

from dataclasses import dataclass

from exporters.onnx._kernels import load_kernels

__all__ = ["TARGETS", "Target"]

# Ops every provider has for int64 shape data and control flow: assumed where a table does
# not list them (the CPU table measures Shape, Gather and Slice per element type). If and
# Loop move values of every type (tests/test_control_flow.py runs them on each on the CPU)
_STRUCTURAL = frozenset({"Shape", "Gather", "Scan", "ConstantOfShape", "Slice", "If", "Loop"})


@dataclass(frozen=True)
class Target:
    name: str
    kernels: dict[str, frozenset[str]]
    provider: str

    def has(self, op: str, type_name: str) -> bool:
        kernels = self.kernels.get(op)
        if kernels is None:
            return op in _STRUCTURAL
        return type_name in kernels

    def has_cast(self, src: str, dst: str) -> bool:
        return f"{src}->{dst}" in self.kernels.get("Cast", frozenset())


TARGETS = {
    "cpu": Target("cpu", load_kernels("cpu").kernels, "CPUExecutionProvider"),
    "cuda": Target("cuda", load_kernels("cuda").kernels, "CUDAExecutionProvider"),
}
