"""Matplotlib rendering of lattices and graphs (optional: the ``plot`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    from graphdsl.lattice import Lattice

__all__ = ["draw_digraph", "draw_lattice"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "drawing PNGs needs matplotlib: pip install 'graphdsl[plot]' "
            "(or use the dot output, which needs nothing)"
        ) from e
    return plt


def draw_digraph(
    graph: nx.DiGraph,
    labels: dict[Any, str],
    path: str,
    *,
    title: str,
    highlight: set[Any] | None = None,
    dashed: set[Any] | None = None,
) -> None:
    """Draw a DAG left to right by topological generation and save it as a PNG."""
    plt = _pyplot()
    pos: dict[Any, tuple[float, float]] = {}
    generations = list(nx.topological_generations(graph))
    for x, gen in enumerate(generations):
        ordered = sorted(gen, key=lambda n: labels[n])
        for y, n in enumerate(ordered):
            pos[n] = (float(x), y - (len(ordered) - 1) / 2)
    width = max(6.0, 1.6 * len(generations))
    height = max(3.0, 0.9 * max(len(g) for g in generations))
    fig, ax = plt.subplots(figsize=(width, height))
    highlight = highlight or set()
    dashed = dashed or set()
    colors = [
        "#f4a261" if n in highlight else "#e0e0e0" if n in dashed else "#a8dadc" for n in graph
    ]
    nx.draw_networkx_edges(graph, pos, ax=ax, arrowsize=14, node_size=1800, edge_color="#555")
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=colors, node_size=1800, edgecolors="#333")
    nx.draw_networkx_labels(graph, pos, labels=labels, ax=ax, font_size=8)
    ax.set_title(title)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_lattice(lattice: Lattice, path: str) -> None:
    """Draw a lattice's Hasse diagram; weak types are grey."""
    from graphdsl.lattice import Weak, node_name

    labels = {n: node_name(n) for n in lattice.graph}
    weak = {n for n in lattice.graph if isinstance(n, Weak)}
    draw_digraph(
        lattice.graph, labels, path, title=f"{lattice.name} promotion lattice", dashed=weak
    )


def draw_graph(graph: Any, path: str) -> None:
    """Draw a graphdsl Graph; Cast nodes are orange."""
    from graphdsl.printing import format_attrs, value_names

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
