"""Every op in ``gd.ops`` is complete: registered by its family, lowered to ONNX, a row of
the (op, dtype) matrix, drawn by the fuzzer, and documented with a runnable example.

docs/adding-an-op.md walks through adding one; this test names what a new op still lacks.
"""

from __future__ import annotations

import importlib

import pytest
from fuzz_graphs import FAMILY
from onnx_cases import CASES

import graphdsl as gd
from exporters.onnx._lower import LOWER
from graphdsl.opdef import OPS

# MAX's helper implicit_cast builds casts, is no op of its own; quantize_weights is numpy
# only (it quantizes a weight for qmatmul) and builds no node
HELPERS = {"implicit_cast", "quantize_weights"}
ALIASES = {"clamp": "clip"}  # second public names: the same function as the op's
# public functions that build other ops (MAX's and PyTorch's names for compositions): no
# node, lowering or matrix row of their own; each builds only the ops listed
COMPOSITES = {
    "chunk": {"split"}, "flatten": {"reshape"}, "one_hot": {"cast", "range", "expand_dims",
    "equal"}, "outer": {"expand_dims", "mul"}, "permute": {"transpose"},
    "repeat_interleave": {"reshape", "expand_dims", "broadcast_to"},
    "rotary_embedding": {"negative", "concat", "mul", "add"},
    "stack": {"expand_dims", "concat"}, "tril": {"band_part"}, "triu": {"band_part"},
    "unsqueeze": {"expand_dims"},
}  # fmt: skip
FAMILIES = ["activation", "cast", "control", "elementwise", "indexing", "logic", "nn", "norm",
            "quant", "reduction", "selection", "shape", "unary", "vision", "pooling", "slicing",
            "layers", "debug", "dynamic", "image", "ordering", "random", "scatter_reduce", "gqa"]


def missing_pieces(name: str) -> list[str]:
    """What op ``name`` lacks of the five pieces every op has."""
    missing = []
    fn = getattr(gd.ops, name, None)
    opdef = OPS.get(name)
    if opdef is None:
        missing.append("a definition (define() in its family module of graphdsl/ops/)")
    elif fn is None or not fn.__module__.endswith(f".{opdef.family}"):
        missing.append(f"a public function gd.ops.{name} in graphdsl/ops/{opdef.family}.py")
    if name not in LOWER:
        missing.append("a lowering (register() in exporters/onnx/_lower/)")
    if not any(k == name or k.startswith(f"{name}_") for k in CASES):
        missing.append("a row of the (op, dtype) matrix (tests/onnx_cases.py)")
    if name not in FAMILY:
        missing.append("a fuzz weight (FAMILY in tests/fuzz_graphs.py)")
    if fn is None or ">>>" not in (fn.__doc__ or ""):
        missing.append("a docstring example")
    return missing


@pytest.mark.parametrize(
    "name", sorted(set(gd.ops.__all__) - HELPERS - set(ALIASES) - set(COMPOSITES))
)
def test_op_has_every_piece(name: str) -> None:
    assert missing_pieces(name) == [], f"gd.ops.{name} lacks: {missing_pieces(name)}"


def test_aliases_are_second_names_of_ops() -> None:
    for alias, name in ALIASES.items():
        assert alias in gd.ops.__all__ and name in OPS
        assert getattr(gd.ops, alias) is getattr(gd.ops, name)


def test_public_ops_are_the_registered_ones() -> None:
    exported = set(gd.ops.__all__) - HELPERS - set(ALIASES) - set(COMPOSITES)
    assert exported == set(OPS), (
        f"registered but not in gd.ops.__all__: {sorted(set(OPS) - exported)}; "
        f"in gd.ops.__all__ but not registered: {sorted(exported - set(OPS))}"
    )
    by_module = set()
    for family in FAMILIES:
        module = importlib.import_module(f"graphdsl.ops.{family}")
        by_module |= set(module.__all__) - {"cast_array"} - HELPERS - set(ALIASES)
        by_module -= set(COMPOSITES)
    assert by_module == exported
    assert {op.family for op in OPS.values()} == set(FAMILIES)


def test_an_unknown_op_lacks_everything() -> None:
    # the check above can fail: an op defined nowhere misses all five pieces
    assert len(missing_pieces("frobnicate")) == 5


def _built_ops(name: str) -> set[str]:
    """The ops composite ``name`` builds on a small int32 input."""
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.int32, (2, 3))})
    (x,) = g.inputs
    before = len(g.nodes)
    calls = {
        "chunk": lambda: gd.ops.chunk(x, 2, axis=1), "flatten": lambda: gd.ops.flatten(x),
        "one_hot": lambda: gd.ops.one_hot(x, 4), "outer": lambda: gd.ops.outer(x[0], x[1]),
        "permute": lambda: gd.ops.permute(x, [1, 0]),
        "repeat_interleave": lambda: gd.ops.repeat_interleave(x, 2, axis=0),
        "rotary_embedding": lambda: gd.ops.rotary_embedding(x, x[:, :2], x[:, :2]),
        "stack": lambda: gd.ops.stack([x, x]), "tril": lambda: gd.ops.tril(x),
        "triu": lambda: gd.ops.triu(x), "unsqueeze": lambda: gd.ops.unsqueeze(x, 0),
    }  # fmt: skip
    calls[name]()
    return {n.op for n in g.nodes[before:]} - {"slice_tensor", "literal"}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_build_only_their_ops_and_have_examples(name: str) -> None:
    fn = getattr(gd.ops, name)
    assert ">>>" in (fn.__doc__ or ""), f"gd.ops.{name} lacks a docstring example"
    assert name not in OPS and _built_ops(name) == COMPOSITES[name]
