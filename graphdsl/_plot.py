"""Matplotlib rendering of DAGs (optional: the ``plot`` extra), for lattices and graphs."""

from __future__ import annotations

from typing import Any

import networkx as nx

__all__ = ["draw_digraph"]


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
