"""Numbered text IR and Graphviz dot for graphs.

Values are numbered at print time (``%0``, ``%1``...); inputs print by name. Every value
shows its type, with ``?`` on ambiguous ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphdsl.graph import Graph, Symbol, register_extension, value_names
from graphdsl.regions import regions_of

__all__ = ["draw_graph", "format_attrs", "format_graph", "to_dot", "value_names"]


def _value_str(v: Any) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= 6:
            items = ", ".join(repr(x.item()) for x in v.reshape(-1))
            return f"[{items}]" if v.ndim else repr(v.item())
        return f"<{v.size} elements>"
    return repr(v)


def format_attrs(node: Symbol) -> str:
    parts = []
    for k, v in node.attrs.items():
        if k.startswith("_") or v is None or k == "regions":  # (graphs print below the node)
            continue
        if k == "value":
            parts.append(_value_str(v))
        else:
            parts.append(f"{k}={v.name if hasattr(v, 'name') and not isinstance(v, str) else v}")
    return ", ".join(parts)


def _namer(graph: Graph) -> Callable[[Symbol], str]:
    """The IR's value names (:func:`~graphdsl.graph.value_names`); a value that is no node of
    ``graph`` (in a graph corrupted by hand) is numbered after them when first printed."""
    names = value_names(graph)

    def name(s: Symbol) -> str:
        hit = names.get(id(s))
        if hit is None:
            hit = names[id(s)] = f"%{len(names) - len(graph.inputs)}"
        return hit

    return name


def format_graph(graph: Graph) -> str:
    """The numbered text of ``graph``; a graph nested in a node (a branch, a loop body, a
    called subgraph: :mod:`graphdsl.regions`) follows the node's line, indented, numbered on
    its own, once (``-> dtypes``: what its results take in the node)."""
    return "\n".join(_graph_lines(graph, f"graph {graph.name}", set()))


def _graph_lines(graph: Graph, title: str, shown: set[int]) -> list[str]:
    name = _namer(graph)
    head = ", ".join(f"{name(s)}: {s.type}" for s in graph.inputs)
    lines = [f"{title}({head}) {{"]
    for node in graph.nodes:
        if node.op == "input":
            continue
        res = name(node)
        args = ", ".join(name(i) for i in node.inputs)
        attrs = format_attrs(node)
        rhs = " ".join(x for x in (node.op, args) if x)
        if attrs:
            rhs = f"{rhs} {attrs}" if not args else f"{rhs}, {attrs}"
        lines.append(f"  {res}: {node.type} = {rhs}")
        for r in regions_of(node.attrs):
            if id(r.graph) not in shown:
                shown.add(id(r.graph))
                results = ", ".join(d.name for d in r.results)
                label = f"{r.role} {r.graph.name}" if r.role == "call" else r.role
                arrow = f" -> {results if len(r.results) == 1 else f'({results})'}"
                nested = _graph_lines(r.graph, label, shown)
                nested[0] = nested[0][:-2] + arrow + " {"
                lines.extend("    " + line for line in nested)
    if graph.outputs:
        lines.append("  return " + ", ".join(name(o) for o in graph.outputs))
    lines.append("}")
    return lines


def to_dot(graph: Graph) -> str:
    """Graphviz dot; Cast nodes are orange, literals and constants grey."""
    name = _namer(graph)
    lines = [f'digraph "{graph.name}" {{', "  rankdir=TB;", "  node [shape=box, style=rounded];"]
    for node in graph.nodes:
        n = name(node)
        label = f"{n} = {node.op}" if node.op != "input" else n
        attrs = format_attrs(node)
        if attrs and node.op != "input":
            label += f" {attrs}"
        label += f"\\n{node.type}"
        style = ""
        if node.op == "cast":
            style = ', style="rounded,filled", fillcolor="#f4a261"'
        elif node.op in ("literal", "constant"):
            style = ', style="rounded,filled", fillcolor="#e0e0e0"'
        elif node.op == "input":
            style = ', style="rounded,filled", fillcolor="#a8dadc"'
        lines.append(f'  "{n}" [label="{label}"{style}];')
        for i in node.inputs:
            lines.append(f'  "{name(i)}" -> "{n}";')
    for k, o in enumerate(graph.outputs):
        lines.append(f'  "out{k}" [shape=plaintext];')
        lines.append(f'  "{name(o)}" -> "out{k}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw_graph(graph: Graph, path: str) -> None:
    """Draw ``graph`` as a PNG (the ``plot`` extra); Cast nodes are orange."""
    import networkx as nx

    from graphdsl._plot import draw_digraph

    names = value_names(graph)
    g = nx.DiGraph()
    labels: dict[Any, str] = {}
    for node in graph.nodes:
        g.add_node(id(node))
        extra = format_attrs(node) if node.op != "input" else ""
        op = "" if node.op == "input" else f" = {node.op}"
        labels[id(node)] = f"{names[id(node)]}{op}\n{extra}\n{node.type}".replace("\n\n", "\n")
        for i in node.inputs:
            g.add_edge(id(i), id(node))
    casts = {id(n) for n in graph.nodes if n.op == "cast"}
    consts = {id(n) for n in graph.nodes if n.op in ("constant", "literal")}
    draw_digraph(g, labels, path, title=f"graph {graph.name}", highlight=casts, dashed=consts)


register_extension("format", format_graph)
register_extension("to_dot", to_dot)
