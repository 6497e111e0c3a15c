"""Layers import only downward, and no modules import each other in a cycle.

Every import counts, at module level and inside functions (``if TYPE_CHECKING:`` blocks do
not run and are not counted). A module imports within its own layer or below it; the IR at
the bottom knows nothing of ops, passes, printing or exporters (a convenience such as
``print(graph)`` is registered by the layer that owns it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("graphdsl", "exporters")

# lowest first; a package (its __init__) stands with its modules unless listed
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"graphdsl.dtypes", "graphdsl._dim_attrs", "graphdsl.dims", "graphdsl.shapes",
              "graphdsl._source", "graphdsl._table", "graphdsl._plot"}),
    ("promotion", {"graphdsl.lattice", "graphdsl.lattices", "graphdsl.notation",
                   "graphdsl.literals", "graphdsl._promotion_types", "graphdsl._promotion_rules",
                   "graphdsl.policies", "graphdsl.builtin_policies"}),
    ("ir", {"graphdsl.types", "graphdsl.symbol", "graphdsl.opdef", "graphdsl._op_typing",
            "graphdsl._py_values", "graphdsl.graph", "graphdsl.inputs", "graphdsl.verify",
            "graphdsl.regions"}),
    ("ops", {"graphdsl.ops"}),
    ("passes", {"graphdsl.passes"}),
    ("faces", {"graphdsl", "graphdsl.evaluate", "graphdsl.printing", "graphdsl._scripts",
               "graphdsl.cli", "graphdsl.__main__", "graphdsl.weights", "graphdsl.max",
               "graphdsl.nn"}),
    # graphdsl.max.engine runs MAX's graphs on onnxruntime: above the exporters it imports
    ("exporters", {"exporters", "graphdsl.max.engine"}),
]  # fmt: skip


def modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = f.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = f
    return found


def layer_of(module: str) -> int:
    """The layer of ``module``: its own entry, else that of the closest listed package."""
    name = module
    while name:
        for k, (_, members) in enumerate(LAYERS):
            # the top package "graphdsl" is a face of its own; its modules are listed one
            # by one, so that a new module must be given a layer
            if name in members and (name == module or name != "graphdsl"):
                return k
        name = name.rpartition(".")[0]
    raise LookupError(module)


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the file at ``path`` imports, anywhere in it."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node):
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from pkg import sub``: the submodule; the package only for its own names
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return {m for m in found if m in known}


def import_graph() -> nx.DiGraph:
    mods = modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        for target in imports(path, set(mods)):
            # a package's __init__ gathering its own modules is not a dependency of theirs
            if target != name and not target.startswith(name + "."):
                g.add_edge(name, target)
    return g


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for m in modules():
        try:
            layer_of(m)
        except LookupError:
            unplaced.append(m)
    assert not unplaced, f"modules without a layer (add them to LAYERS): {unplaced}"


def test_no_import_cycles() -> None:
    g = import_graph()
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    loops = [(a, b) for a, b in g.edges if a == b]
    assert not cycles and not loops, f"import cycles: {cycles or loops}"


def test_layers_import_only_downward() -> None:
    upward = []
    for a, b in import_graph().edges:
        la, lb = layer_of(a), layer_of(b)
        if lb > la:
            upward.append(f"{a} ({LAYERS[la][0]}) imports {b} ({LAYERS[lb][0]})")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


@pytest.mark.parametrize(
    ("source", "target"),
    [("graphdsl.graph", "graphdsl.printing"), ("graphdsl.ops.shape", "graphdsl.passes.rewrite")],
)
def test_the_check_names_an_upward_import(source: str, target: str, tmp_path: Path) -> None:
    # the test above can fail: an import inside a function of a lower layer is found
    code = f"def f():\n    import {target}\n"
    path = tmp_path / "m.py"
    path.write_text(code)
    assert imports(path, {target}) == {target}
    assert layer_of(target) > layer_of(source)


def test_type_checking_imports_are_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import graphdsl.graph\n"
    )
    assert imports(path, {"graphdsl.graph"}) == set()
