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

HELPERS = {"implicit_cast"}  # MAX's helper: builds casts, is no op of its own
ALIASES = {"clamp": "clip"}  # second public names: the same function as the op's
FAMILIES = ["activation", "cast", "elementwise", "logic", "nn", "reduction", "shape", "unary"]


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


@pytest.mark.parametrize("name", sorted(set(gd.ops.__all__) - HELPERS - set(ALIASES)))
def test_op_has_every_piece(name: str) -> None:
    assert missing_pieces(name) == [], f"gd.ops.{name} lacks: {missing_pieces(name)}"


def test_aliases_are_second_names_of_ops() -> None:
    for alias, name in ALIASES.items():
        assert alias in gd.ops.__all__ and name in OPS
        assert getattr(gd.ops, alias) is getattr(gd.ops, name)


def test_public_ops_are_the_registered_ones() -> None:
    exported = set(gd.ops.__all__) - HELPERS - set(ALIASES)
    assert exported == set(OPS), (
        f"registered but not in gd.ops.__all__: {sorted(set(OPS) - exported)}; "
        f"in gd.ops.__all__ but not registered: {sorted(exported - set(OPS))}"
    )
    by_module = set()
    for family in FAMILIES:
        module = importlib.import_module(f"graphdsl.ops.{family}")
        by_module |= set(module.__all__) - {"cast_array"} - HELPERS - set(ALIASES)
    assert by_module == exported
    assert {op.family for op in OPS.values()} == set(FAMILIES)


def test_an_unknown_op_lacks_everything() -> None:
    # the check above can fail: an op defined nowhere misses all five pieces
    assert len(missing_pieces("frobnicate")) == 5
