"""Lattice construction, validation, joins and rendering."""

from __future__ import annotations

import itertools
import subprocess
import sys

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphdsl as gd
from graphdsl import DType as T
from graphdsl import builtin_policies, lattices
from graphdsl.lattice import Lattice, Weak, _topological


def test_cycle_is_rejected_and_named() -> None:
    with pytest.raises(gd.LatticeError, match="has a cycle: int8 -> int16 -> int8"):
        gd.Lattice("loop", {T.int8: [T.int16], T.int16: [T.int8]})


def _agrees_with_networkx(parents: dict) -> None:
    graph = nx.DiGraph()
    for child, ps in parents.items():
        graph.add_node(child)
        graph.add_edges_from((child, p) for p in ps)
    order = _topological(parents)
    if not nx.is_directed_acyclic_graph(graph):
        assert order is None
        return
    assert order == list(nx.topological_sort(graph))


def test_order_and_upper_bounds_are_networkxs() -> None:
    # the lattices are made without networkx (kept out of a process that only runs a model):
    # their node order is networkx's topological_sort, their upper bounds its descendants
    made = [p.lattice for p in builtin_policies._POLICIES.values()]
    made += [v for v in vars(lattices).values() if isinstance(v, Lattice)]
    for lat in made:
        assert list(nx.topological_sort(lat.graph)) == list(lat.nodes), lat.name
        for n in lat.nodes:
            assert lat.upper_bounds(n) == frozenset(nx.descendants(lat.graph, n)) | {n}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 9), st.lists(st.integers(0, 9), max_size=4), max_size=10))
def test_topological_order_is_networkxs_on_any_graph(parents: dict[int, list[int]]) -> None:
    _agrees_with_networkx(parents)  # (cycles included: None where networkx finds one)


def test_importing_graphdsl_and_its_exporter_leaves_networkx_out() -> None:
    code = "import sys, graphdsl, exporters.onnx; print('networkx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.strip() == "False"


def test_two_minimal_upper_bounds_name_the_pair_and_the_bounds() -> None:
    # seed 001's right-hand non-lattice: A, B -> C, D
    with pytest.raises(gd.LatticeError) as e:
        gd.Lattice("ab-cd", {T.int8: [T.int16, T.uint16], T.uint8: [T.int16, T.uint16]})
    assert "int8 and uint8 have no least upper bound" in str(e.value)
    assert "int16, uint16 are unordered" in str(e.value)


def test_no_upper_bound_needs_partial() -> None:
    # seed 001's left-hand non-lattice: A -> B, C
    parents = {T.int8: [T.int16, T.uint16]}
    with pytest.raises(gd.LatticeError, match="int16 and uint16 have no common upper bound"):
        gd.Lattice("fork", parents)
    lat = gd.Lattice("fork", parents, partial=True)
    assert lat.join(T.int16, T.uint16) is None
    assert lat.join(T.int8, T.uint16) is T.uint16


def test_partial_lattice_still_rejects_non_unique_bounds() -> None:
    with pytest.raises(gd.LatticeError, match="no least upper bound"):
        gd.Lattice("x", {T.int8: [T.int16, T.uint16], T.uint8: [T.int16, T.uint16]}, partial=True)


def test_join_path_and_order() -> None:
    lat = gd.policy("jax").lattice
    assert lat.join(T.int8, T.uint8) is T.int16
    assert lat.join(T.int64, T.uint64) is Weak.float
    assert lat.join(T.bfloat16, T.float16) is T.float32
    path = lat.path(T.bool, T.int16)
    assert path[:2] == [T.bool, Weak.int] and path[-1] is T.int16 and len(path) == 4
    assert all(b in lat.parents[a] for a, b in itertools.pairwise(path))
    assert lat.leq(T.uint8, T.int16) and not lat.leq(T.int16, T.uint8)
    assert lat.join(T.float8_e4m3fn, T.float16) is None  # JAX: float8 does not promote


def test_builtin_lattices_are_valid_and_cover_what_design_says() -> None:
    covers = {
        "max": {T.index, T.address, T.tensor_float32, T.bfloat16},
        "anvil": {T.bool, T.uint64, T.float32, T.float64},
        "jax": {T.complex128, T.float8_e5m2},
    }
    for name, dts in covers.items():
        assert dts <= set(gd.policy(name).lattice.dtypes())
    assert T.tensor_float32 not in gd.policy("default").lattice
    assert not gd.policy("max").lattice.partial and not gd.policy("anvil").lattice.partial


def test_to_dot() -> None:
    dot = gd.policy("max").lattice.to_dot()
    assert dot.startswith('digraph "max" {')
    assert '"index" -> "uint64";' in dot and '"float16" -> "bfloat16";' in dot
    assert dot.count("->") == sum(len(p) for p in gd.policy("max").lattice.parents.values())


def test_to_png(tmp_path: object) -> None:
    pytest.importorskip("matplotlib", reason="PNG output needs the plot extra")
    out = f"{tmp_path}/jax.png"
    gd.policy("jax").lattice.to_png(out)
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_tables_are_generated_in_md_and_csv() -> None:
    lat = gd.Lattice("t", {T.bool: [T.int8], T.int8: [T.int16], T.uint8: [T.int16]})
    md = lat.table()
    assert md.splitlines()[0] == "|   | bool | uint8 | int8 | int16 |"
    assert "| int8 | int8 | int16 | int8 | int16 |" in md
    csv = lat.table(fmt="csv")
    assert csv.splitlines()[1] == "bool,bool,int16,int8,int16"
    with pytest.raises(ValueError, match="unknown table format"):
        lat.table(fmt="html")


def test_custom_policy_from_a_lattice() -> None:
    lat = gd.Lattice(
        "f8-extended",
        {T.bool: [T.int32], T.int32: [T.float32], T.float8_e4m3fn: [T.float16],
         T.float16: [T.float32]},
    )  # fmt: skip
    p = gd.Policy("mine", lat, literals="anvil")
    assert p.promote_types(T.float8_e4m3fn, T.int32) is T.float32
    assert p.common_dtype(T.float8_e4m3fn, T.float32, False, True) == (T.float8_e4m3fn, False)
    with pytest.raises(gd.PromotionError, match="int8 is not in the f8-extended lattice"):
        p.promote_types(T.int8, T.int32)
