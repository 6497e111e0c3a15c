"""No modules import each other in a circle, counting every import, and the core never
imports the exporters (STYLE.md item 13).

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING:``
(an annotation is a dependency too: a reader follows it). ``tests/test_layers.py`` checks
the layers on the imports that run; this test makes sure that no circle hides behind
``TYPE_CHECKING``. A circle that is the right shape stays only as an edge in
:data:`ALLOWED`, with its reason, and only while that edge is an annotation's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest
from test_layers import modules  # (the modules of graphdsl and exporters, by dotted name)

# (importer, imported) -> why this edge, which closes a circle, stays; it must be type-only
ALLOWED: dict[tuple[str, str], str] = {
    ("graphdsl.symbol", "graphdsl.graph"): (
        "Graph and Symbol are the IR's two types and refer to each other: a graph holds its "
        "symbols, and each symbol its graph (Symbol.graph). symbol.py names Graph only in "
        "annotations (its operators call self.graph._apply: nothing imported at run time). "
        "Without this edge they would be one module, or Symbol.graph a protocol repeating "
        "Graph's surface for every caller of sym.graph (torch.fx's node.py and graph.py have "
        "the same shape)"
    ),
    ("exporters.onnx._carried", "exporters.onnx._builder"): (
        "Builder.cast rounds a value into a carried dtype (float4/float6/e8m0/int4) with the "
        "node sequences of _carried.round_into, which emits them through the builder that "
        "called it; _carried names Builder and V only in annotations (it makes V through "
        "type(v)), and keeping the roundings in their own module keeps _builder.py under 500 "
        "lines"
    ),
    ("graphdsl.max._value_compat", "graphdsl.max._value"): (
        "TensorValue's PyTorch-style methods (unflatten, unbind, repeat, flip...) live in a "
        "base class of it in their own module, keeping _value.py near 500 lines; they return "
        "TensorValues, named only in annotations (they build through graphdsl.max.ops and "
        "_value.apply, which register themselves there)"
    ),
}

# (importer, imported) -> why this module of graphdsl may import the exporters: the one bridge
BRIDGES: dict[tuple[str, str], str] = {
    ("graphdsl.max.engine", "exporters.onnx"): (
        "MAX's engine runs graphs: a MAX program ends with InferenceSession(...).load(graph) "
        "and model.execute(...), which graphdsl.max.engine provides by exporting the graph to "
        "ONNX and running it on onnxruntime, so it needs exporters.onnx (export, Session). It "
        "imports them inside Model's constructor only (importing graphdsl.max or "
        "graphdsl.max.engine loads no exporter), and nothing else of graphdsl imports "
        "graphdsl.max.engine; the reverse edge exporters.onnx -> graphdsl.max (providers_for "
        "reads a MAX graph's devices) leaves out the engine, so no circle closes"
    ),
}


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, relative ones resolved from ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(module: str, path: Path, known: set[str]) -> dict[str, bool]:
    """The modules of ``known`` that ``module`` (the file at ``path``) imports anywhere in
    it, each with whether every import of it is under ``if TYPE_CHECKING:``."""
    found: dict[str, bool] = {}

    def add(name: str, type_only: bool) -> None:
        if name in known:
            found[name] = found.get(name, True) and type_only

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name, type_only)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, path.name == "__init__.py", node)
            # ``from pkg import sub``: the submodule; the package only for its own names
            subs = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known]
            for sub in subs:
                add(sub, type_only)
            if len(subs) < len(node.names):
                add(source, type_only)
        for child in ast.iter_child_nodes(node):
            visit(child, type_only or _type_checking_block(node))

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


def import_graph() -> nx.DiGraph:
    """Modules and their imports; each edge's ``type_only`` says whether it is only an
    annotation's."""
    mods = modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        for target, type_only in imports(name, path, set(mods)).items():
            # a package's __init__ gathering its own modules is not a dependency of theirs
            if target != name and not target.startswith(name + "."):
                g.add_edge(name, target, type_only=type_only)
    return g


def _edge(g: nx.DiGraph, a: str, b: str) -> str:
    return f"{a} -> {b}" + (" (TYPE_CHECKING)" if g.edges[a, b]["type_only"] else "")


def test_no_import_circles() -> None:
    g = import_graph()
    for a, b in ALLOWED:
        assert g.has_edge(a, b), f"ALLOWED lists {a} -> {b}, which is gone: remove it"
        assert g.edges[a, b]["type_only"], (
            f"{a} -> {b} is allowed as an annotation's import only, and {a} now imports "
            f"{b} at run time; break the circle instead"
        )
    kept = nx.DiGraph(g)
    kept.remove_edges_from(ALLOWED)
    circles = []
    for part in nx.strongly_connected_components(kept):
        if len(part) > 1:
            cycle = nx.find_cycle(kept.subgraph(part))
            circles.append("; ".join(_edge(g, a, b) for a, b in cycle))
    assert not circles, "modules importing each other in a circle:\n" + "\n".join(circles)


def test_the_core_never_imports_the_exporters() -> None:
    g = import_graph()
    for a, b in BRIDGES:
        assert g.has_edge(a, b), f"BRIDGES lists {a} -> {b}, which is gone: remove it"
    wrong = [_edge(g, a, b) for a, b in g.edges if (a, b) not in BRIDGES
             and a.split(".")[0] == "graphdsl" and b.split(".")[0] == "exporters"]  # fmt: skip
    assert not wrong, "graphdsl imports exporters:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("code", "type_only"),
    [
        ("def f():\n    import graphdsl.graph\n", False),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import graphdsl.graph\n", True),
        ("from . import graph\n", False),
    ],
)
def test_every_import_is_found(code: str, type_only: bool, tmp_path: Path) -> None:
    # the checks above can fail: imports inside functions, type-only ones and relative ones
    path = tmp_path / "m.py"
    path.write_text(code)
    assert imports("graphdsl.m", path, {"graphdsl.graph"}) == {"graphdsl.graph": type_only}


def test_allowed_edges_say_why() -> None:
    assert all(len(why) > 40 for why in [*ALLOWED.values(), *BRIDGES.values()])
